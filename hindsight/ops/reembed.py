"""``hindsight reembed``: rebuild every vector with another embedding model (a store refuses
to open with another model than it was built with; docs/lifecycle.md).

Opening a store with another model than it was built with raises
:class:`~hindsight.EmbedderMismatchError` naming this command. :func:`reembed` works on the
closed store (it takes the data-dir lock itself):

1. marks the store ``reembed_in_progress`` (in ``meta``),
2. embeds every experience (all tenants, every status, so a restore or rollback later finds
   its vector) with the new model, in batches of :data:`BATCH`, and stores each batch's
   embeddings with their model name in one transaction (with pgvector, after dropping the
   HNSW index of the old dimension: a row never is without its vector),
3. PostgreSQL with pgvector: builds the HNSW index of the new dimension; an index kept apart
   from SQL: recreates it for the new dimension (the embedded Qdrant Edge shard folder is
   replaced; a Qdrant server collection is dropped and created again) and writes one point
   per experience that is not deleted,
4. records the new model and dimension in ``meta`` and clears the mark.

Interrupted? Run it again: every step is repeatable, and ``hindsight doctor`` reports a store
whose rows carry two models.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hindsight.config import MemoryConfig

__all__ = ["BATCH", "reembed"]

BATCH = 64
"""Texts per embedding call."""


def _open_index(config: MemoryConfig, dimension: int) -> Any:
    url = (config.vector_db_url or "").strip()
    if not url:
        from hindsight.vectors import EdgeVectorIndex

        path = Path(config.data_dir) / "vectors"
        if path.exists():
            shutil.rmtree(path)
        return EdgeVectorIndex(path, dimension, background=False)
    if url == "memory://":
        from hindsight.vectors import InMemoryVectorIndex

        return InMemoryVectorIndex(dimension)
    from qdrant_client import QdrantClient

    from hindsight.vectors import QdrantClientVectorIndex

    if url != ":memory:":
        client = QdrantClient(url=url, api_key=config.vector_db_api_key, timeout=30)
        try:
            if client.collection_exists("hindsight_experiences"):
                client.delete_collection("hindsight_experiences")
        finally:
            client.close()
    return QdrantClientVectorIndex(url, dimension, api_key=config.vector_db_api_key)


def reembed(
    config: MemoryConfig,
    spec: str,
    *,
    embedder: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Re-embed the store of ``config`` with the model ``spec`` (an ``EMBEDDING_MODEL`` value).

    Args:
        config: where the store is (data dir, database URL, vector DB URL).
        spec: ``hash``, ``hash:<dim>``, ``litellm:<model>``, ``sentence-transformers:<path>``
            or ``local``.
        embedder: an embedder object to use instead of building one from ``spec``.
        progress: called as ``progress(done, total)`` after each batch.

    Returns:
        ``{"from": {"model", "dimension"}, "to": {...}, "experiences": n, "points": m}``.

    Raises:
        UsageError: an unknown spec. StoreLockedError: the store is open elsewhere.
        EmbeddingError: the new model failed (nothing is switched; run it again).
    """
    from hindsight._lock import DataDirLock
    from hindsight.embedders import make_embedder
    from hindsight.store import SqlStore
    from hindsight.store.outbox import VectorSync

    new = embedder or make_embedder(spec, api_base=config.llm_base_url, api_key=config.llm_api_key)
    lock = None
    if config.uses_embedded_vectors() or config.database_url is None:
        Path(config.data_dir).mkdir(parents=True, exist_ok=True)
        lock = DataDirLock(Path(config.data_dir))
        lock.acquire()
    store = SqlStore(config.sql_url())
    try:
        before = {
            "model": store.get_meta("embedding_model"),
            "dimension": store.get_meta("embedding_dimension"),
        }
        store.set_meta("reembed_in_progress", new.name)
        if config.vectors_in_sql():
            from hindsight.store.pgvector import drop_hnsw

            with store._tx(write=True) as conn:
                drop_hnsw(conn)
        rows = store.all_experiences()
        total = len(rows)
        done = 0
        for start in range(0, total, BATCH):
            part = rows[start : start + BATCH]
            vectors = new.embed([r.content for r in part])
            store.set_embeddings({r.id: v for r, v in zip(part, vectors, strict=True)}, new.name)
            done += len(part)
            if progress is not None:
                progress(done, total)
        if config.vectors_in_sql():
            from hindsight.store.pgvector import PgVectorIndex

            points = PgVectorIndex(store, new.dimension).count(None)
        else:
            index = _open_index(config, new.dimension)
            try:
                store.clear_vector_outbox()  # the rebuild writes every point
                points = VectorSync(store, index).rebuild(f"re-embedded with {new.name}")
            finally:
                index.close()
        store.set_meta("embedding_model", new.name)
        store.set_meta("embedding_dimension", str(new.dimension))
        store.set_meta("reembed_in_progress", "")
    finally:
        store.close()
        if lock is not None:
            lock.release()
    return {
        "from": before,
        "to": {"model": new.name, "dimension": str(new.dimension)},
        "experiences": total,
        "points": points,
    }
