"""Context for the review and task groups: prompts table, trajectory columns.

Revision ID: 0004_trajectory_context
Revises: 0003_lesson_links
Create Date: 2026-12-01

``prompts`` holds each distinct system prompt once per tenant (primary key tenant_id +
sha256); ``trajectories`` gets ``system_prompt_sha256``, ``evidence`` (JSON), ``task_key`` and
``task_key_source`` with an index on (tenant_id, task_key). Existing runs keep NULL in every
new column. Types are spelled out, as in ``0001_initial``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004_trajectory_context"
down_revision: str | None = "0003_lesson_links"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)
_JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
_TENANT = sa.String(200)
_COLUMNS = ("system_prompt_sha256", "evidence", "task_key", "task_key_source")


def upgrade() -> None:
    op.create_table(
        "prompts",
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "sha256", name="pk_prompts"),
    )
    op.add_column("trajectories", sa.Column("system_prompt_sha256", sa.String(64), nullable=True))
    op.add_column("trajectories", sa.Column("evidence", _JSON, nullable=True))
    op.add_column("trajectories", sa.Column("task_key", sa.String(200), nullable=True))
    op.add_column("trajectories", sa.Column("task_key_source", sa.String(16), nullable=True))
    op.create_index("ix_trajectories_tenant_id_task_key", "trajectories", ["tenant_id", "task_key"])


def downgrade() -> None:
    op.drop_index("ix_trajectories_tenant_id_task_key", table_name="trajectories")
    with op.batch_alter_table("trajectories") as batch:
        for name in _COLUMNS:
            batch.drop_column(name)
    op.drop_table("prompts")
