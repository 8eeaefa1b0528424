"""The SQL schema (SQLAlchemy Core tables) as the code sees it.

The database itself is created and upgraded only by the Alembic migrations in
``hindsight/store/migrations``; a test checks that the migrated database matches these tables.
Every table that holds user data has a ``tenant_id`` column so that every query can be scoped by
it (MISSION S9).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

from hindsight.store.types import AutoIncrement, Json, UtcDateTime

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
    "vector_log",
    "vector_replicas",
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
    # Issue 15 (migration 0004): the run's system prompt lives in ``prompts`` (one row per
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
#: the SHA-256 hex digest of the UTF-8 text; issue 15). Never shared across tenants: forgetting
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
    # float32 little-endian bytes of the embedding, so vectors can be rebuilt without re-embedding
    Column("embedding", LargeBinary, nullable=True),
    # SHA-256 hex of ``metadata["lesson_key"]`` (issue 15, migration 0003): the write path
    # folds a lesson into the active experience of its tenant and namespace with the same key.
    # Not a model field: written from the metadata on every insert and update (codec).
    Column("lesson_key_hash", String(64), nullable=True),
    Index(None, "tenant_id", "namespace", "status"),
    Index(None, "tenant_id", "task_type", "status"),
    Index(None, "tenant_id", "lesson_key_hash"),
)

# A per-tenant change counter of ``experiences`` (issue 16, migration 0007): bumped by database
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
    # so "the lessons these runs taught" is an index lookup (recall's situation match, issue
    # 15). Kept equal to the JSON column on every insert and update of an experience; goes
    # with the experience when it is hard-deleted (ON DELETE CASCADE).
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

# The ordered log of vector changes (issue 22): one row per change of what the vector index
# must hold, written in the transaction of the change, in commit order (``seq`` grows with
# commits: see StoreCore._tx). Every vector index is a replica that applies it from its own
# position; no consumer deletes rows (only compaction, of rows older than the retention).
vector_log = Table(
    "vector_log",
    metadata,
    Column("seq", AutoIncrement, primary_key=True, autoincrement=True),
    Column("op", String(16), nullable=False),
    Column("experience_id", ID, nullable=True),
    Column("tenant_id", TENANT, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

# The replicas of the vector log: one row per vector index that follows it (an embedded Qdrant
# Edge shard, an in-process index, a Qdrant server collection), with its position and when it
# was last seen; a shared collection's apply lease (one applier at a time).
vector_replicas = Table(
    "vector_replicas",
    metadata,
    Column("id", String(400), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("location", Text, nullable=False),
    Column("host", String(200), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("log_id", String(36), nullable=False),
    Column("position", BigInteger, nullable=False),
    Column("points", BigInteger, nullable=True),
    Column("started_at", UtcDateTime, nullable=False),
    Column("last_seen", UtcDateTime, nullable=False),
    Column("last_error", Text, nullable=True),
    Column("lease_owner", String(200), nullable=True),
    Column("lease_expires_at", UtcDateTime, nullable=True),
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
