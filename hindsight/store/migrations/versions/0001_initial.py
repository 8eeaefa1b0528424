"""Initial schema: meta, trajectories, events, experiences, outbox, review_jobs, recalls.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-29

Types are spelled out here (not imported from ``hindsight.store.types``) so this revision keeps
creating the same schema whatever later code does; timestamps are ``timestamptz`` on PostgreSQL
and text on SQLite, JSON is ``jsonb`` on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)
_JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
_AUTO = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_ID = sa.String(36)
_TENANT = sa.String(200)


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_meta"),
    )
    op.create_table(
        "trajectories",
        sa.Column("id", _ID, nullable=False),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("namespace", sa.String(200), nullable=False),
        sa.Column("task", sa.Text(), nullable=False),
        sa.Column("task_type", sa.String(), nullable=True),
        sa.Column("tags", _JSON, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reward", sa.Float(), nullable=True),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("trust", sa.Float(), nullable=False),
        sa.Column("started_at", _TS, nullable=False),
        sa.Column("ended_at", _TS, nullable=True),
        sa.Column("metadata", _JSON, nullable=False),
        sa.Column("event_count", sa.Integer(), nullable=False),
        sa.Column("stored_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_trajectories"),
    )
    op.create_index(
        "ix_trajectories_tenant_id_stored_at", "trajectories", ["tenant_id", "stored_at"]
    )
    op.create_table(
        "events",
        sa.Column("trajectory_id", _ID, nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("event_id", sa.String(), nullable=False),
        sa.Column("parent_id", sa.String(), nullable=True),
        sa.Column("event_type", sa.String(32), nullable=False),
        sa.Column("timestamp", _TS, nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("tool_name", sa.String(), nullable=True),
        sa.Column("tool_call_id", sa.String(), nullable=True),
        sa.Column("tool_args", _JSON, nullable=True),
        sa.Column("status", sa.String(16), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("metadata", _JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["trajectory_id"],
            ["trajectories.id"],
            name="fk_events_trajectory_id_trajectories",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("trajectory_id", "position", name="pk_events"),
    )
    op.create_index(
        "ix_events_tenant_id_tool_name_status", "events", ["tenant_id", "tool_name", "status"]
    )
    op.create_table(
        "experiences",
        sa.Column("id", _ID, nullable=False),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("namespace", sa.String(200), nullable=False),
        sa.Column("task_type", sa.String(), nullable=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("tools", _JSON, nullable=False),
        sa.Column("tags", _JSON, nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("importance", sa.Float(), nullable=False),
        sa.Column("trust", sa.Float(), nullable=False),
        sa.Column("provenance", sa.String(16), nullable=False),
        sa.Column("source_trajectory_ids", _JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("parent_id", _ID, nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Column("last_recalled_at", _TS, nullable=True),
        sa.Column("recall_count", sa.Integer(), nullable=False),
        sa.Column("helped_count", sa.Integer(), nullable=False),
        sa.Column("misled_count", sa.Integer(), nullable=False),
        sa.Column("support_count", sa.Integer(), nullable=False),
        sa.Column("embedding_model", sa.String(), nullable=True),
        sa.Column("reviewer", sa.String(), nullable=False),
        sa.Column("metadata", _JSON, nullable=False),
        sa.Column("embedding", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_experiences"),
    )
    op.create_index(
        "ix_experiences_tenant_id_namespace_status",
        "experiences",
        ["tenant_id", "namespace", "status"],
    )
    op.create_index(
        "ix_experiences_tenant_id_task_type_status",
        "experiences",
        ["tenant_id", "task_type", "status"],
    )
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
    op.create_table(
        "review_jobs",
        sa.Column("id", _ID, nullable=False),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("trajectory_id", _ID, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("lease_expires_at", _TS, nullable=True),
        sa.Column("run_after", _TS, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["trajectory_id"],
            ["trajectories.id"],
            name="fk_review_jobs_trajectory_id_trajectories",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_review_jobs"),
        sa.UniqueConstraint("trajectory_id", name="uq_review_jobs_trajectory_id"),
    )
    op.create_index("ix_review_jobs_state_run_after", "review_jobs", ["state", "run_after"])
    op.create_index("ix_review_jobs_tenant_id_state", "review_jobs", ["tenant_id", "state"])
    op.create_table(
        "recalls",
        sa.Column("id", _AUTO, autoincrement=True, nullable=False),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("experience_id", _ID, nullable=False),
        sa.Column("trajectory_id", _ID, nullable=True),
        sa.Column("recalled_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["experience_id"],
            ["experiences.id"],
            name="fk_recalls_experience_id_experiences",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_recalls"),
    )
    op.create_index("ix_recalls_tenant_id_trajectory_id", "recalls", ["tenant_id", "trajectory_id"])
    op.create_index("ix_recalls_experience_id", "recalls", ["experience_id"])


def downgrade() -> None:
    for table in ("recalls", "review_jobs", "outbox", "experiences", "events", "trajectories"):
        op.drop_table(table)
    op.drop_table("meta")
