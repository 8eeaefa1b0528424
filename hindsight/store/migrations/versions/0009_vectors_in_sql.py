"""Vectors in SQL: pgvector on PostgreSQL, a vector outbox for an index kept apart; the replica
model goes.

* PostgreSQL: ``experiences.embedding`` becomes pgvector's ``vector`` (the extension is
  created when the store is opened, ``hindsight.store.pgvector.ensure_pgvector``); each stored
  embedding (float32 little-endian bytes) is converted in place, so no lesson is re-embedded.
  The HNSW index is built when a memory first opens the store with its embedder's dimension.
* ``vector_outbox`` replaces ``vector_log`` and ``vector_replicas``: the changes an index kept
  apart from SQL (Qdrant Edge, a Qdrant server) must apply, deleted once applied. The log's
  entries and positions are dropped, and with them the ``meta`` keys of the log: an index kept
  apart is rebuilt from the rows when a memory first opens it (``meta.vector_index`` names
  none yet).

Revision ID: 0009_vectors_in_sql
Revises: 0008_scoring_payload
Create Date: 2027-02-02

Types are spelled out (not imported from ``hindsight.store.types``), as in ``0001_initial``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sqlalchemy as sa
from alembic import op

revision: str = "0009_vectors_in_sql"
down_revision: str | None = "0008_scoring_payload"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)
_AUTO = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_META = sa.table("meta", sa.column("key", sa.String), sa.column("value", sa.Text))
_LOG_KEYS = ("vector_log_id", "vector_log_floor")
_PAGE = 1000


def _convert(to_vector: bool) -> None:
    """Rewrite ``experiences.embedding`` on PostgreSQL: bytea -> vector (``to_vector``) or
    back, through a new column, a page of rows at a time."""
    from pgvector import Vector

    conn = op.get_bind()
    op.execute(
        f"ALTER TABLE experiences ADD COLUMN embedding_new {'vector' if to_vector else 'bytea'}"
    )
    update = sa.text(
        "UPDATE experiences SET embedding_new = "
        + ("CAST(:v AS vector)" if to_vector else ":v")
        + " WHERE id = :id"
    )
    read = sa.text(
        "SELECT id, embedding"
        + ("" if to_vector else "::text")
        + " FROM experiences WHERE id > :after AND embedding IS NOT NULL ORDER BY id LIMIT :n"
    )
    after = ""
    while rows := conn.execute(read, {"after": after, "n": _PAGE}).all():
        if to_vector:
            values = [
                {"id": i, "v": Vector(np.frombuffer(bytes(b), dtype="<f4")).to_text()}
                for i, b in rows
            ]
        else:
            values = [
                {"id": i, "v": np.asarray(Vector.from_text(t).to_list(), "<f4").tobytes()}
                for i, t in rows
            ]
        conn.execute(update, values)
        after = rows[-1][0]
    op.drop_column("experiences", "embedding")
    op.alter_column("experiences", "embedding_new", new_column_name="embedding")


def upgrade() -> None:
    op.create_table(
        "vector_outbox",
        sa.Column("seq", _AUTO, autoincrement=True, nullable=False),
        sa.Column("experience_id", sa.String(36), nullable=False),
        sa.Column("tenant_id", sa.String(200), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_vector_outbox"),
    )
    op.create_index("ix_vector_outbox_experience_id", "vector_outbox", ["experience_id"])
    op.drop_table("vector_replicas")
    op.drop_table("vector_log")
    op.execute(sa.delete(_META).where(_META.c.key.in_(_LOG_KEYS)))
    if op.get_bind().dialect.name == "postgresql":
        _convert(to_vector=True)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _convert(to_vector=False)
    op.execute(sa.delete(_META).where(_META.c.key == "vector_index"))
    op.create_table(
        "vector_log",
        sa.Column("seq", _AUTO, autoincrement=True, nullable=False),
        sa.Column("op", sa.String(16), nullable=False),
        sa.Column("experience_id", sa.String(36), nullable=True),
        sa.Column("tenant_id", sa.String(200), nullable=False),
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
    op.drop_index("ix_vector_outbox_experience_id", "vector_outbox")
    op.drop_table("vector_outbox")
