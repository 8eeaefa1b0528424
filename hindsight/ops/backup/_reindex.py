"""Rebuild the vector index from the SQL store after a restore.

Every experience row keeps its embedding (``experiences.embedding``), so an index kept apart
from SQL is derived data: it is rewritten from SQL without calling the embedding model. With
pgvector the restored rows are the index (the HNSW index is built when a memory opens it).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from hindsight.config import MemoryConfig
from hindsight.ports import WritableVectorIndex

__all__ = ["rebuild_index", "reindex"]


def rebuild_index(store: Any, index: WritableVectorIndex) -> int:
    """Make ``index`` hold exactly one point per live experience of ``store``.

    Points of experiences that are not in the store (or deleted) are removed, and every live
    experience with a stored embedding is (re)written with its current payload; the outbox
    rows the restored store carried are moot then.

    Args:
        store: an open :class:`hindsight.store.SqlStore`.
        index: the index to rewrite (any :class:`hindsight.ports.WritableVectorIndex`).

    Returns:
        The number of points written.
    """
    from hindsight.store.outbox import INDEX_KEY, VectorSync, index_kind

    store.clear_vector_outbox()
    points = VectorSync(store, index).rebuild("restore: the SQL store was replaced")
    store.set_meta(INDEX_KEY, index_kind(index))
    return points


def reindex(config: MemoryConfig) -> int | None:
    """Rebuild the index ``config`` names from its SQL store (the caller holds the data-dir
    lock of an embedded store). The embedded shard folder is replaced; a Qdrant server's
    collection is brought in line point by point.

    Returns:
        Points written (with pgvector: the restored rows that have a vector), or ``None``
        when ``VECTOR_DB_URL`` is an in-process index (``:memory:`` / ``memory://``: nothing
        persisted, nothing to rebuild).

    Raises:
        StoreError: the SQL store or the index cannot be opened.
        EmbedderMismatchError: a Qdrant server collection has another dimension than the
            restored store (drop it, or run ``hindsight reembed``).
    """
    from hindsight.store import SqlStore
    from hindsight.vectors import open_vector_index

    url = (config.vector_db_url or "").strip()
    if url in (":memory:", "memory://"):
        return None
    if not url:
        shutil.rmtree(Path(config.data_dir) / "vectors", ignore_errors=True)
    store = SqlStore(config.sql_url())  # runs the migrations of an older backup
    try:
        if config.vectors_in_sql():
            return int(store.count_vector_rows())
        dimension = store.get_meta("embedding_dimension")
        if not dimension:  # never opened by an engine: no experience, no vector
            return 0
        index = open_vector_index(
            config.vector_db_url,
            data_dir=Path(config.data_dir),
            dimension=int(dimension),
            api_key=config.vector_db_api_key,
        )
        try:
            return rebuild_index(store, index)
        finally:
            index.close()
    finally:
        store.close()
