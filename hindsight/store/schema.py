"""The SQL schema (SQLAlchemy Core tables) as the code sees it.

The database itself is created and upgraded only by the Alembic migrations in
``hindsight/store/migrations``; a test checks that the migrated database matches these tables.
Every table that holds user data has a ``tenant_id`` column so that every query can be scoped by
it (tenant isolation, docs/concepts.md#tenants-and-namespaces).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

from hindsight.store.types import AutoIncrement, Embedding, Json, UtcDateTime

__all__ = [
    "events",
    "experience_sources",
    "experience_stamps",
    "experiences",
    "meta",
    "metadata",
    "prompts",
    "recalls",
    "review_jobs",
    "trajectories",
    "vector_outbox",
]

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

ID = String(36)
TENANT = String(200)

meta = Table(
    "meta",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("value", Text, nullable=False),
)

trajectories = Table(
    "trajectories",
    metadata,
    Column("id", ID, primary_key=True),
    Column("tenant_id", TENANT, nullable=False),
    Column("namespace", String(200), nullable=False),
    Column("task", Text, nullable=False),
    Column("task_type", String, nullable=True),
    Column("tags", Json, nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("reward", Float, nullable=True),
    Column("source", String(16), nullable=False),
    Column("trust", Float, nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("ended_at", UtcDateTime, nullable=True),
    Column("metadata", Json, nullable=False),
    Column("event_count", Integer, nullable=False),
    Column("stored_at", UtcDateTime, nullable=False),
    # Migration 0004: the run's system prompt lives in ``prompts`` (one row per
    # distinct text per tenant), the outcome evidence as JSON, the task group key and where it
    # came from ("explicit": caller / source; "intent": assigned by the review).
    Column("system_prompt_sha256", String(64), nullable=True),
    Column("evidence", Json, nullable=True),
    Column("task_key", String(200), nullable=True),
    Column("task_key_source", String(16), nullable=True),
    Index(None, "tenant_id", "stored_at"),
    Index(None, "tenant_id", "task_key"),
)

#: System prompts / policies, stored once per distinct text per tenant (content-addressed by
#: the SHA-256 hex digest of the UTF-8 text). Never shared across tenants: forgetting
#: a tenant's runs removes the prompts no run of that tenant references any more.
prompts = Table(
    "prompts",
    metadata,
    Column("tenant_id", TENANT, primary_key=True),
    Column("sha256", String(64), primary_key=True),
    Column("text", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

events = Table(
    "events",
    metadata,
    Column(
        "trajectory_id",
        ID,
        ForeignKey("trajectories.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("position", Integer, primary_key=True),
    Column("tenant_id", TENANT, nullable=False),
    Column("event_id", String, nullable=False),
    Column("parent_id", String, nullable=True),
    Column("event_type", String(32), nullable=False),
    Column("timestamp", UtcDateTime, nullable=False),
    Column("content", Text, nullable=False),
    Column("tool_name", String, nullable=True),
    Column("tool_call_id", String, nullable=True),
    Column("tool_args", Json, nullable=True),
    Column("status", String(16), nullable=True),
    Column("latency_ms", Float, nullable=True),
    Column("metadata", Json, nullable=False),
    Index(None, "tenant_id", "tool_name", "status"),
)

experiences = Table(
    "experiences",
    metadata,
    Column("id", ID, primary_key=True),
    Column("tenant_id", TENANT, nullable=False),
    Column("namespace", String(200), nullable=False),
    Column("task_type", String, nullable=True),
    Column("kind", String(32), nullable=False),
    Column("content", Text, nullable=False),
    Column("tools", Json, nullable=False),
    Column("tags", Json, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("importance", Float, nullable=False),
    Column("trust", Float, nullable=False),
    Column("provenance", String(16), nullable=False),
    Column("source_trajectory_ids", Json, nullable=False),
    Column("status", String(16), nullable=False),
    Column("version", Integer, nullable=False),
    Column("parent_id", ID, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("last_recalled_at", UtcDateTime, nullable=True),
    Column("recall_count", Integer, nullable=False),
    Column("helped_count", Integer, nullable=False),
    Column("misled_count", Integer, nullable=False),
    Column("support_count", Integer, nullable=False),
    Column("embedding_model", String, nullable=True),
    Column("reviewer", String, nullable=False),
    Column("metadata", Json, nullable=False),
    # the embedding (pgvector ``vector`` on PostgreSQL, float32 bytes on SQLite): the vector
    # recall searches on PostgreSQL, and what an index kept apart from SQL is rebuilt from
    Column("embedding", Embedding, nullable=True),
    # SHA-256 hex of ``metadata["lesson_key"]`` (migration 0003): the write path
    # folds a lesson into the active experience of its tenant and namespace with the same key.
    # Not a model field: written from the metadata on every insert and update (codec).
    Column("lesson_key_hash", String(64), nullable=True),
    Index(None, "tenant_id", "namespace", "status"),
    Index(None, "tenant_id", "task_type", "status"),
    Index(None, "tenant_id", "lesson_key_hash"),
)

# A per-tenant change counter of ``experiences`` (migration 0007): bumped by database
# triggers on every insert, update and delete of a tenant's experience, whatever process or
# code path writes it, so an in-process cache of reads (the decision-time risk checks,
# ``SqlStore.experiences_about_tool``) knows with one primary-key read whether it is still
# exact. Never written by the application; a row starts at a random value (a row deleted and
# created again does not repeat old stamps); a tenant without a row has no experiences (0).
experience_stamps = Table(
    "experience_stamps",
    metadata,
    Column("tenant_id", TENANT, primary_key=True),
    Column("stamp", BigInteger, nullable=False),
)

experience_sources = Table(
    "experience_sources",
    metadata,
    # One row per (experience, source run): ``Experience.source_trajectory_ids`` as a table,
    # so "the lessons these runs taught" is an index lookup (recall's situation match,
    # docs/concepts.md#recall). Kept equal to the JSON column on every insert and update
    # of an experience; goes with the experience when it is hard-deleted (ON DELETE CASCADE).
    Column(
        "experience_id",
        ID,
        ForeignKey("experiences.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("trajectory_id", ID, primary_key=True),
    Column("tenant_id", TENANT, nullable=False),
    Index(None, "tenant_id", "trajectory_id"),
)

# The vector outbox: one row per change of what a vector index kept apart from SQL (Qdrant
# Edge, a Qdrant server) must hold, written in the transaction of the change and deleted once
# applied (the transactional outbox pattern). Applying an entry makes the point of
# ``experience_id`` match its row as it is then (written, rewritten or removed), so entries
# are applied in any order, and again, with the same result (hindsight.store.outbox). Not
# written when the vectors are in PostgreSQL itself (pgvector).
vector_outbox = Table(
    "vector_outbox",
    metadata,
    Column("seq", AutoIncrement, primary_key=True, autoincrement=True),
    Column("experience_id", ID, nullable=False),
    Column("tenant_id", TENANT, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Index(None, "experience_id"),
)

review_jobs = Table(
    "review_jobs",
    metadata,
    Column("id", ID, primary_key=True),
    Column("tenant_id", TENANT, nullable=False),
    Column(
        "trajectory_id",
        ID,
        ForeignKey("trajectories.id", ondelete="CASCADE"),
        nullable=False,
        unique=True,
    ),
    Column("state", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    # claims lost to a dead worker (its lease expired): not attempts, but bounded
    Column("lost_leases", Integer, nullable=False, server_default="0"),
    Column("last_error", Text, nullable=True),
    Column("lease_owner", String(200), nullable=True),
    Column("lease_expires_at", UtcDateTime, nullable=True),
    Column("run_after", UtcDateTime, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Index(None, "state", "run_after"),
    Index(None, "tenant_id", "state"),
)

recalls = Table(
    "recalls",
    metadata,
    Column("id", AutoIncrement, primary_key=True, autoincrement=True),
    Column("tenant_id", TENANT, nullable=False),
    Column(
        "experience_id",
        ID,
        ForeignKey("experiences.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("trajectory_id", ID, nullable=True),
    Column("recalled_at", UtcDateTime, nullable=False),
    Index(None, "tenant_id", "trajectory_id"),
    Index(None, "experience_id"),
)
