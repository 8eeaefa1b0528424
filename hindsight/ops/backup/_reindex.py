"""Rebuild the vector index from the SQL store after a restore.

Every experience row keeps its embedding (``experiences.embedding``, float32 bytes), so the
index is derived data: it is rewritten from SQL without calling the embedding model.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from hindsight.config import MemoryConfig
from hindsight.ports import VectorIndex

__all__ = ["rebuild_index", "reindex"]


def rebuild_index(store: Any, index: VectorIndex) -> int:
    """Make ``index`` hold exactly one point per live experience of ``store``, and start a
    new vector log, so that every other replica (other processes' indexes) rebuilds too.

    Points of experiences that are not in the store (or deleted) are removed, every live
    experience with a stored embedding is (re)written with its current payload, and the
    index's position is the head of the new log.

    Args:
        store: an open :class:`hindsight.store.SqlStore`.
        index: the index to rewrite (any :class:`hindsight.ports.VectorIndex`).

    Returns:
        The number of points written.
    """
    from hindsight.store.vector_sync import VectorSync

    store.restart_vector_log()
    return VectorSync(store, index).rebuild("restore: the SQL store was replaced")


def reindex(config: MemoryConfig) -> int | None:
    """Rebuild the index ``config`` names from its SQL store (the caller holds the data-dir
    lock of an embedded store). The embedded shard folder is replaced; a Qdrant server's
    collection is brought in line point by point.

    Returns:
        Points written, or ``None`` when ``VECTOR_DB_URL`` is an in-process index
        (``:memory:`` / ``memory://``: nothing persisted, nothing to rebuild).

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
