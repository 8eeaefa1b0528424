"""The human audit (docs/console.md): audit_runs and audit_verdicts.

Revision ID: 0005_audit_runs
Revises: 0004_trajectory_context
Create Date: 2026-12-01

Types are spelled out (not imported from ``hindsight.store.types``), as in ``0001_initial``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005_audit_runs"
down_revision: str | None = "0004_trajectory_context"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)
_JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
_ID = sa.String(36)
_TENANT = sa.String(200)


def upgrade() -> None:
    op.create_table(
        "audit_runs",
        sa.Column("id", _ID, nullable=False),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("experience_ids", _JSON, nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_runs"),
    )
    op.create_index("ix_audit_runs_tenant_id_created_at", "audit_runs", ["tenant_id", "created_at"])
    op.create_table(
        "audit_verdicts",
        sa.Column("run_id", _ID, nullable=False),
        sa.Column("experience_id", _ID, nullable=False),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("action", sa.String(16), nullable=True),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("at", _TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["audit_runs.id"],
            name="fk_audit_verdicts_run_id_audit_runs",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["experience_id"],
            ["experiences.id"],
            name="fk_audit_verdicts_experience_id_experiences",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", "experience_id", name="pk_audit_verdicts"),
    )


def downgrade() -> None:
    op.drop_table("audit_verdicts")
    op.drop_index("ix_audit_runs_tenant_id_created_at", table_name="audit_runs")
    op.drop_table("audit_runs")
