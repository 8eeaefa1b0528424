"""Per-tenant change counter of the experiences (for decision-time risk checks,
docs/checks.md#checking-a-proposed-call).

* ``experience_stamps`` (``tenant_id`` primary key, ``stamp``): bumped by triggers after every
  insert, update and delete of a row of ``experiences``, in the writing transaction, whatever
  process or code path writes it. A reader that caches what it read of a tenant's experiences
  (``SqlStore.experiences_about_tool``) reads the stamp first (one primary-key lookup) and
  reuses its cache while the stamp has not moved.
* SQLite: three ``AFTER`` triggers with an upsert. PostgreSQL: one row-level trigger calling
  ``hindsight_bump_experience_stamp()`` (plpgsql).
* A tenant's row starts at a random value in [0, 2**62) (then +1 per write), here for every
  tenant that has experiences and later at a tenant's first write: a row deleted and created
  again (a benchmark purging its tenant) does not restart at a value a cache saw before. A
  tenant without a row has no experiences (stamp 0).

A later migration that rebuilds ``experiences`` on SQLite (``batch_alter_table`` copies the
table) drops its triggers: it must create them again (:func:`create_triggers`).

Revision ID: 0007_experience_stamps
Revises: 0006_vector_log
Create Date: 2027-01-20
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_experience_stamps"
down_revision: str | None = "0006_vector_log"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE_START = "abs(random()) % 4611686018427387904"
_PG_START = "floor(random() * 4611686018427387904)::bigint"
_SQLITE_BUMP = (
    "INSERT INTO experience_stamps (tenant_id, stamp) VALUES ({row}.tenant_id, "
    f"{_SQLITE_START}) ON CONFLICT (tenant_id) DO UPDATE SET stamp = stamp + 1"
)
_PG_FUNCTION = """
CREATE OR REPLACE FUNCTION hindsight_bump_experience_stamp() RETURNS trigger AS $$
DECLARE
    t varchar;
BEGIN
    IF TG_OP = 'DELETE' THEN
        t := OLD.tenant_id;
    ELSE
        t := NEW.tenant_id;
    END IF;
    INSERT INTO experience_stamps (tenant_id, stamp)
    VALUES (t, floor(random() * 4611686018427387904)::bigint)
    ON CONFLICT (tenant_id) DO UPDATE SET stamp = experience_stamps.stamp + 1;
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""


def create_triggers() -> None:
    """The triggers that bump a tenant's stamp (see the module docstring)."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        op.execute(
            "CREATE TRIGGER experiences_stamp AFTER INSERT OR UPDATE OR DELETE ON experiences "
            "FOR EACH ROW EXECUTE FUNCTION hindsight_bump_experience_stamp()"
        )
        return
    for event, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")):
        op.execute(
            f"CREATE TRIGGER experiences_stamp_{event.lower()} AFTER {event} ON experiences "
            f"BEGIN {_SQLITE_BUMP.format(row=row)}; END"
        )


def upgrade() -> None:
    op.create_table(
        "experience_stamps",
        sa.Column("tenant_id", sa.String(200), nullable=False),
        sa.Column("stamp", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id"),
    )
    start = _PG_START if op.get_bind().dialect.name == "postgresql" else _SQLITE_START
    op.execute(
        "INSERT INTO experience_stamps (tenant_id, stamp) "
        f"SELECT tenant_id, {start} FROM (SELECT DISTINCT tenant_id FROM experiences) AS t"
    )
    create_triggers()


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS experiences_stamp ON experiences")
        op.execute("DROP FUNCTION IF EXISTS hindsight_bump_experience_stamp()")
    else:
        for event in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS experiences_stamp_{event}")
    op.drop_table("experience_stamps")
