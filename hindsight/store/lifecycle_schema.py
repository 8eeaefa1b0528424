"""Tables of the write-back lifecycle (docs/lifecycle.md): versions, the audit trail, run outcomes.

Defined on the same :data:`hindsight.store.schema.metadata` as the core tables and created by
migration ``0002_lifecycle``. Rows of ``experience_versions`` and ``experience_audit`` belong to
one experience and go with it when it is hard-deleted (``ON DELETE CASCADE``, and explicitly by
``forget``); soft deletes keep them.
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, ForeignKey, Index, Integer, String, Table, Text

from hindsight.store.schema import ID, TENANT, metadata
from hindsight.store.types import AutoIncrement, Json, UtcDateTime

__all__ = ["experience_audit", "experience_versions", "outcomes"]

experience_versions = Table(
    "experience_versions",
    metadata,
    # The id of this snapshot; ``Experience.parent_id`` of the next version points here.
    Column("id", ID, primary_key=True),
    Column("tenant_id", TENANT, nullable=False),
    Column(
        "experience_id",
        ID,
        ForeignKey("experiences.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("version", Integer, nullable=False),
    Column("parent_id", ID, nullable=True),
    # The whole experience as it was at this version (``Experience.model_dump(mode="json")``).
    Column("snapshot", Json, nullable=False),
    # What replaced this version: edit / merge / supersede / rollback / restore / compress ...
    Column("change", String(32), nullable=False),
    Column("actor", String(200), nullable=False),
    Column("reason", Text, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Index(None, "tenant_id", "experience_id", "version", unique=True),
)

experience_audit = Table(
    "experience_audit",
    metadata,
    Column("id", AutoIncrement, primary_key=True, autoincrement=True),
    Column("tenant_id", TENANT, nullable=False),
    Column(
        "experience_id",
        ID,
        ForeignKey("experiences.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("at", UtcDateTime, nullable=False),
    # Who: "user", "outcome:<trajectory id>", "dedup", "maintain", "audit", "cli" ...
    Column("actor", String(200), nullable=False),
    # What: confidence / support / status / merge / supersede / conflict / version ...
    Column("action", String(32), nullable=False),
    Column("old_value", Text, nullable=True),
    Column("new_value", Text, nullable=True),
    Column("reason", Text, nullable=True),
    Index(None, "tenant_id", "experience_id", "at"),
)

outcomes = Table(
    "outcomes",
    metadata,
    Column("tenant_id", TENANT, primary_key=True),
    Column("trajectory_id", ID, primary_key=True),
    Column("success", Boolean, nullable=False),
    Column("delta", Float, nullable=False),
    Column("experiences", Json, nullable=False),
    Column("recorded_at", UtcDateTime, nullable=False),
)
