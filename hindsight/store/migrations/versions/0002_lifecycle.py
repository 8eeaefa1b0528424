"""Write-back lifecycle (docs/lifecycle.md): experience_versions, experience_audit, outcomes.

Revision ID: 0002_lifecycle
Revises: 0001_initial
Create Date: 2026-11-29

Types are spelled out (not imported from ``hindsight.store.types``), as in ``0001_initial``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002_lifecycle"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)
_JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
_AUTO = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_ID = sa.String(36)
_TENANT = sa.String(200)


def upgrade() -> None:
    op.create_table(
        "experience_versions",
        sa.Column("id", _ID, nullable=False),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("experience_id", _ID, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("parent_id", _ID, nullable=True),
        sa.Column("snapshot", _JSON, nullable=False),
        sa.Column("change", sa.String(32), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["experience_id"],
            ["experiences.id"],
            name="fk_experience_versions_experience_id_experiences",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_experience_versions"),
    )
    op.create_index(
        "ix_experience_versions_tenant_id_experience_id_version",
        "experience_versions",
        ["tenant_id", "experience_id", "version"],
        unique=True,
    )
    op.create_table(
        "experience_audit",
        sa.Column("id", _AUTO, autoincrement=True, nullable=False),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("experience_id", _ID, nullable=False),
        sa.Column("at", _TS, nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("old_value", sa.Text(), nullable=True),
        sa.Column("new_value", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["experience_id"],
            ["experiences.id"],
            name="fk_experience_audit_experience_id_experiences",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_experience_audit"),
    )
    op.create_index(
        "ix_experience_audit_tenant_id_experience_id_at",
        "experience_audit",
        ["tenant_id", "experience_id", "at"],
    )
    op.create_table(
        "outcomes",
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("trajectory_id", _ID, nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("delta", sa.Float(), nullable=False),
        sa.Column("experiences", _JSON, nullable=False),
        sa.Column("recorded_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "trajectory_id", name="pk_outcomes"),
    )


def downgrade() -> None:
    for table in ("outcomes", "experience_audit", "experience_versions"):
        op.drop_table(table)
