"""Lessons across runs: ``experiences.lesson_key_hash`` and ``experience_sources``.

Revision ID: 0003_lesson_links
Revises: 0002_lifecycle
Create Date: 2026-12-01

``experiences`` gets ``lesson_key_hash`` (SHA-256 hex of ``metadata["lesson_key"]``, indexed
with the tenant) so that the write path finds the experience a lesson folds into; the new
table ``experience_sources`` holds one row per (experience, source run), the JSON column
``source_trajectory_ids`` as rows, indexed by (tenant, run) for recall's situation match.
Both are filled from the existing rows. Types are spelled out, as in ``0001_initial``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0003_lesson_links"
down_revision: str | None = "0002_lifecycle"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.String(36)
_TENANT = sa.String(200)
_BATCH = 1000


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def upgrade() -> None:
    op.add_column("experiences", sa.Column("lesson_key_hash", sa.String(64), nullable=True))
    op.create_index(
        "ix_experiences_tenant_id_lesson_key_hash",
        "experiences",
        ["tenant_id", "lesson_key_hash"],
    )
    op.create_table(
        "experience_sources",
        sa.Column("experience_id", _ID, nullable=False),
        sa.Column("trajectory_id", _ID, nullable=False),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.ForeignKeyConstraint(
            ["experience_id"],
            ["experiences.id"],
            name="fk_experience_sources_experience_id_experiences",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("experience_id", "trajectory_id", name="pk_experience_sources"),
    )
    op.create_index(
        "ix_experience_sources_tenant_id_trajectory_id",
        "experience_sources",
        ["tenant_id", "trajectory_id"],
    )
    conn = op.get_bind()
    table = sa.table(
        "experiences",
        sa.column("id", _ID),
        sa.column("tenant_id", _TENANT),
        sa.column("source_trajectory_ids"),
        sa.column("metadata"),
        sa.column("lesson_key_hash", sa.String(64)),
    )
    links = sa.table(
        "experience_sources",
        sa.column("experience_id", _ID),
        sa.column("trajectory_id", _ID),
        sa.column("tenant_id", _TENANT),
    )
    rows = conn.execute(
        sa.select(table.c.id, table.c.tenant_id, table.c.source_trajectory_ids, table.c.metadata)
    ).all()
    pending: list[dict[str, str]] = []
    for exp_id, tenant, sources, meta in rows:
        for tid in dict.fromkeys(_json(sources) or []):
            pending.append({"experience_id": exp_id, "trajectory_id": tid, "tenant_id": tenant})
        key = (_json(meta) or {}).get("lesson_key")
        if isinstance(key, str) and key:
            digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
            conn.execute(
                sa.update(table).where(table.c.id == exp_id).values(lesson_key_hash=digest)
            )
        if len(pending) >= _BATCH:
            conn.execute(sa.insert(links), pending)
            pending = []
    if pending:
        conn.execute(sa.insert(links), pending)


def downgrade() -> None:
    op.drop_table("experience_sources")
    op.drop_index("ix_experiences_tenant_id_lesson_key_hash", table_name="experiences")
    with op.batch_alter_table("experiences") as batch:
        batch.drop_column("lesson_key_hash")
