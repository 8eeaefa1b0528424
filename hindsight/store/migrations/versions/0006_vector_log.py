"""The vector log and its replicas (docs/deploy.md#the-replica-model); lost leases of review
jobs.

* ``vector_log`` replaces ``outbox``: the vector changes are an ordered log that every vector
  index applies from its own position, instead of a queue the first consumer emptied (two
  processes with their own indexes split them). Pending outbox rows are dropped: an index
  without a position in the log is rebuilt from SQL when it is first opened.
* ``vector_replicas``: each index that follows the log (kind, location, position, last seen).
* ``review_jobs.lost_leases``: claims lost to a dead worker, counted apart from attempts.

Revision ID: 0006_vector_log
Revises: 0005_audit_runs
Create Date: 2027-01-12

Types are spelled out (not imported from ``hindsight.store.types``), as in ``0001_initial``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006_vector_log"
down_revision: str | None = "0005_audit_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)
_JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
_AUTO = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_ID = sa.String(36)
_TENANT = sa.String(200)


def upgrade() -> None:
    op.create_table(
        "vector_log",
        sa.Column("seq", _AUTO, autoincrement=True, nullable=False),
        sa.Column("op", sa.String(16), nullable=False),
        sa.Column("experience_id", _ID, nullable=True),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_vector_log"),
    )
    op.create_table(
        "vector_replicas",
        sa.Column("id", sa.String(400), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("log_id", sa.String(36), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("points", sa.BigInteger(), nullable=True),
        sa.Column("started_at", _TS, nullable=False),
        sa.Column("last_seen", _TS, nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("lease_expires_at", _TS, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_vector_replicas"),
    )
    op.drop_table("outbox")
    op.add_column(
        "review_jobs",
        sa.Column("lost_leases", sa.Integer(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    with op.batch_alter_table("review_jobs") as batch:
        batch.drop_column("lost_leases")
    op.create_table(
        "outbox",
        sa.Column("id", _AUTO, autoincrement=True, nullable=False),
        sa.Column("op", sa.String(16), nullable=False),
        sa.Column("experience_id", _ID, nullable=True),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("payload", _JSON, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_outbox"),
    )
    op.drop_table("vector_replicas")
    op.drop_table("vector_log")
