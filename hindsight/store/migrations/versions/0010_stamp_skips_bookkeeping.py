"""A tenant's change stamp no longer moves for recall bookkeeping.

``experience_stamps`` (revision ``0007_experience_stamps``) was bumped by every write of a row
of ``experiences``, including the recall bookkeeping (``recall_count``, ``last_recalled_at``)
that every recall writes a moment later. A reader caching the tenant's lessons while the stamp
holds (``SqlStore.experiences_about_tool``, behind the decision-time risk checks of
docs/checks.md) lost its cache after each recall, so an agent's first check after its own
recall read and compiled every lesson about the tool again. Nothing that reader returns depends
on the bookkeeping (a check is made of a lesson's text, kind, status, tools, confidence, trust
and metadata), so:

* the update trigger now fires only when an ``UPDATE`` sets a column other than
  ``recall_count`` and ``last_recalled_at`` (``AFTER UPDATE OF <the other columns>``: the
  columns of ``experiences`` as this revision finds them); inserts and deletes bump as before;
* the reader's cached rows carry the bookkeeping as of when they were read (the pending
  counters of this process are still added, ``hindsight.store.recall_buffer``).

A later revision that adds a column to ``experiences`` must create the triggers again
(:func:`create_triggers`), or updates of that column alone do not move the stamp; one that
rebuilds the table on SQLite must do so anyway (the copy drops them).

Revision ID: 0010_stamp_skips_bookkeeping
Revises: 0009_vectors_in_sql
Create Date: 2027-02-20
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_stamp_skips_bookkeeping"
down_revision: str | None = "0009_vectors_in_sql"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Columns the recall bookkeeping writes, and nothing else does on its own.
BOOKKEEPING = ("recall_count", "last_recalled_at")

_SQLITE_BUMP = (
    "INSERT INTO experience_stamps (tenant_id, stamp) VALUES ({row}.tenant_id, "
    "abs(random()) % 4611686018427387904) ON CONFLICT (tenant_id) DO UPDATE SET stamp = stamp + 1"
)


def _watched() -> str:
    """The columns of ``experiences`` whose update moves the stamp, quoted, comma-separated."""
    bind = op.get_bind()
    # the column names only: a plain query, so no type is reflected (pgvector's ``vector``
    # is unknown to SQLAlchemy's inspector and would warn)
    names = list(bind.execute(sa.text("SELECT * FROM experiences WHERE 1 = 0")).keys())
    quote = bind.dialect.identifier_preparer.quote
    return ", ".join(quote(n) for n in names if n not in BOOKKEEPING)


def drop_triggers() -> None:
    """Drop the stamp triggers (the function of ``0007_experience_stamps`` stays)."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS experiences_stamp ON experiences")
        return
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS experiences_stamp_{event}")


def create_triggers(*, skip_bookkeeping: bool = True) -> None:
    """The triggers that bump a tenant's stamp; with ``skip_bookkeeping`` an update that sets
    only :data:`BOOKKEEPING` columns does not (the module docstring)."""
    update = f"UPDATE OF {_watched()}" if skip_bookkeeping else "UPDATE"
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            f"CREATE TRIGGER experiences_stamp AFTER INSERT OR DELETE OR {update} "
            "ON experiences FOR EACH ROW EXECUTE FUNCTION hindsight_bump_experience_stamp()"
        )
        return
    for name, event, row in (
        ("insert", "INSERT", "NEW"),
        ("update", update, "NEW"),
        ("delete", "DELETE", "OLD"),
    ):
        op.execute(
            f"CREATE TRIGGER experiences_stamp_{name} AFTER {event} ON experiences "
            f"BEGIN {_SQLITE_BUMP.format(row=row)}; END"
        )


def upgrade() -> None:
    drop_triggers()
    create_triggers()


def downgrade() -> None:
    drop_triggers()
    create_triggers(skip_bookkeeping=False)
