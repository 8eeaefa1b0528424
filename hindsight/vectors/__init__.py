"""Vector indexes kept apart from the SQL store (:class:`hindsight.ports.WritableVectorIndex`);
on PostgreSQL the default is pgvector in the store itself (:mod:`hindsight.store.pgvector`).

* :class:`EdgeVectorIndex`: the embedded default, a Qdrant Edge shard in ``<data_dir>/vectors``.
* :class:`QdrantClientVectorIndex`: ``qdrant-client`` against a Qdrant server/cluster, or its
  in-process local mode (``":memory:"``). Imported lazily: ``qdrant_client`` takes ~0.7 s to
  import, so cold start does not pay for it unless it is used.
* :class:`InMemoryVectorIndex`: exact numpy brute force, for tests.

Every implementation scopes each search to one tenant, refuses an empty tenant
(:class:`~hindsight._errors.TenantRequiredError`) and returns cosine similarities in [-1, 1].
:func:`open_vector_index` picks one from ``VECTOR_DB_URL``. A new index implements the port
and gets a branch in :func:`open_vector_index` (docs/architecture.md).

May import: the foundation only. The store's vector outbox is applied to an index by
:mod:`hindsight.store.outbox`; no vector index knows the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight._errors import UsageError
from hindsight.ports import WritableVectorIndex
from hindsight.vectors.edge import EdgeVectorIndex
from hindsight.vectors.memory import InMemoryVectorIndex

if TYPE_CHECKING:
    from hindsight.vectors.client import QdrantClientVectorIndex

__all__ = [
    "EdgeVectorIndex",
    "InMemoryVectorIndex",
    "QdrantClientVectorIndex",
    "open_vector_index",
]

MEMORY_URL = "memory://"


def __getattr__(name: str) -> Any:
    if name == "QdrantClientVectorIndex":
        from hindsight.vectors.client import QdrantClientVectorIndex

        return QdrantClientVectorIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_vector_index(
    vector_db_url: str | None,
    *,
    data_dir: Path,
    dimension: int,
    api_key: str | None = None,
) -> WritableVectorIndex:
    """Open the vector index that ``vector_db_url`` (``VECTOR_DB_URL``) names.

    ========================  ===============================================================
    ``vector_db_url``         index
    ========================  ===============================================================
    ``None`` (or blank)       :class:`EdgeVectorIndex` in ``data_dir / "vectors"`` (embedded)
    ``":memory:"``            :class:`QdrantClientVectorIndex`, qdrant-client local mode
    ``"memory://"``           :class:`InMemoryVectorIndex` (tests; nothing persisted)
    ``http(s)://host:port``   :class:`QdrantClientVectorIndex` on a Qdrant server or cluster
    ========================  ===============================================================

    Args:
        vector_db_url: see the table.
        data_dir: the embedded data dir (only used for the Edge shard).
        dimension: the embedder's vector length.
        api_key: API key of the Qdrant server (``VECTOR_DB_API_KEY``), if it needs one.

    Raises:
        UsageError: ``vector_db_url`` is none of the forms above.
        EmbedderMismatchError: the existing index stores vectors of another dimension.
        StoreLockedError: another live process holds the embedded shard.
        StoreError: the index could not be opened or reached.
    """
    url = (vector_db_url or "").strip()
    if not url:
        return EdgeVectorIndex(Path(data_dir) / "vectors", dimension)
    if url == MEMORY_URL:
        return InMemoryVectorIndex(dimension)
    if url == ":memory:" or url.startswith(("http://", "https://")):
        from hindsight.vectors.client import QdrantClientVectorIndex

        return QdrantClientVectorIndex(url, dimension, api_key=api_key)
    raise UsageError(
        "VECTOR_DB_URL must be unset (embedded Qdrant Edge), ':memory:', 'memory://' or an "
        f"http(s):// URL of a Qdrant server, got {vector_db_url!r:.120}"
    )
