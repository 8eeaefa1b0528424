"""A :class:`~hindsight.ports.VectorIndex` on ``qdrant-client``: a Qdrant server or cluster, or
qdrant-client's in-process local mode (``":memory:"``).

Importing this module imports ``qdrant_client`` (~0.7 s); :mod:`hindsight.vectors` only does so
when this class is first used.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any, TypeVar, cast

from qdrant_client import QdrantClient
from qdrant_client import models as qm

from hindsight._errors import EmbedderMismatchError, StoreError, UsageError
from hindsight._ids import validate_tenant
from hindsight._vector_contract import (
    FILTER_FIELDS,
    SearchScope,
    check_dimension,
    check_ids,
    check_points,
    check_search,
    clamp_similarity,
)
from hindsight.ports import FloatMatrix, VectorHit, VectorPoint

__all__ = ["QdrantClientVectorIndex"]

_T = TypeVar("_T")

_BATCH = 512
_SCROLL_PAGE = 2048


_LOCKS_GUARD = threading.Lock()


def _local_lock(client: Any) -> AbstractContextManager[Any]:
    """A lock shared by every user of one local-mode client (``:memory:``), else none.

    qdrant-client's local mode is plain Python over numpy arrays, not safe for a search on
    one thread while another upserts (seen as "index 5 is out of bounds for axis 0 with size
    5" when one thread wrote points while another searched). A server client needs no
    lock."""
    if type(getattr(client, "_client", None)).__name__ != "QdrantLocal":
        return nullcontext()
    lock = getattr(client, "_hindsight_lock", None)
    if lock is None:
        with _LOCKS_GUARD:
            lock = getattr(client, "_hindsight_lock", None)
            if lock is None:
                lock = threading.RLock()
                client._hindsight_lock = lock
    return cast(AbstractContextManager[Any], lock)


class QdrantClientVectorIndex:
    """Vectors in a Qdrant collection reached through ``qdrant-client``.

    ``":memory:"`` runs qdrant-client's local mode in this process (brute force, no payload
    indexes, nothing persisted: tests and small experiments). ``http(s)://host:port`` talks
    to a Qdrant server or cluster, which indexes in the background on its own.

    The collection is created when missing: one unnamed cosine vector, per-tenant HNSW graphs
    (``m=0``, ``payload_m=16``, Qdrant's multitenancy layout) and keyword payload indexes on
    ``tenant_id`` (``is_tenant``), ``namespace``, ``task_type``, ``status``, ``kind``, ``tags``;
    missing payload indexes are added to an existing collection.

    Args:
        url_or_location: ``":memory:"`` or an ``http://`` / ``https://`` URL.
        dimension: vector length; must match an existing collection's.
        collection: collection name.
        api_key: API key for Qdrant Cloud or a secured server.
        timeout: request timeout in seconds (server mode).
        client: an already configured :class:`qdrant_client.QdrantClient` to use instead of
            creating one (``url_or_location`` then only names it in messages); it is not
            closed by :meth:`close`.

    Raises:
        UsageError: ``url_or_location`` is neither ``":memory:"`` nor an http(s) URL, or a bad
            ``dimension`` / ``collection``.
        EmbedderMismatchError: the collection exists with another vector size (both named).
        StoreError: the server is unreachable or refused a request.
    """

    def __init__(
        self,
        url_or_location: str,
        dimension: int,
        *,
        collection: str = "hindsight_experiences",
        api_key: str | None = None,
        timeout: int = 10,
        client: QdrantClient | None = None,
    ) -> None:
        self.dimension = check_dimension(dimension)
        if not isinstance(collection, str) or not collection.strip():
            raise UsageError(f"collection must be a non-empty string, got {collection!r:.80}")
        self.collection = collection.strip()
        location = (url_or_location or "").strip()
        self._owns_client = client is None
        if client is not None:
            self._client = client
        elif location == ":memory:":
            self._client = QdrantClient(location=":memory:")
        elif location.startswith(("http://", "https://")):
            self._client = QdrantClient(url=location, api_key=api_key, timeout=timeout)
        else:
            raise UsageError(
                "the vector database must be ':memory:' or an http(s):// URL of a Qdrant "
                f"server, got {url_or_location!r:.120}"
            )
        self.location = location
        self._closed = False
        self.created = False  # True when this open created the collection (it is empty)
        try:
            self._ensure_collection()
        except BaseException:
            if self._owns_client:
                self._client.close()
            raise

    # -- plumbing ------------------------------------------------------------------------
    def _call(self, fn: Callable[[], _T]) -> _T:
        if self._closed:
            raise StoreError(f"the vector index {self._where()} is closed")
        try:
            with _local_lock(self._client):
                return fn()
        except (StoreError, UsageError):
            raise
        except Exception as err:
            text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise StoreError(f"Qdrant ({self._where()}): {text}") from None

    def _where(self) -> str:
        return f"{self.location} collection {self.collection!r}"

    def _ensure_collection(self) -> None:
        client, name = self._client, self.collection
        if not self._call(lambda: client.collection_exists(name)):
            try:
                self._call(
                    lambda: client.create_collection(
                        name,
                        vectors_config=qm.VectorParams(
                            size=self.dimension, distance=qm.Distance.COSINE
                        ),
                        hnsw_config=qm.HnswConfigDiff(m=0, payload_m=16),
                    )
                )
                self.created = True
            except StoreError:
                if not self._call(lambda: client.collection_exists(name)):
                    raise  # not a lost race with another creator
        info = self._call(lambda: client.get_collection(name))
        vectors = info.config.params.vectors
        if not isinstance(vectors, qm.VectorParams):
            raise StoreError(
                f"Qdrant collection {name!r} at {self.location} uses named vectors; hindsight "
                "needs a collection with one unnamed vector (pick another collection name)"
            )
        if vectors.size != self.dimension:
            raise EmbedderMismatchError(
                f"Qdrant collection {name!r} at {self.location} stores {vectors.size}-d vectors "
                f"but was opened with dimension {self.dimension}: use the embedding model it "
                "was built with, another collection, or rebuild its vectors with "
                "`hindsight reembed`"
            )
        existing = set(info.payload_schema or {})
        for field in FILTER_FIELDS:
            if field in existing:
                continue
            # Only the tenant gets HNSW sub-graphs (m=0 leaves no global graph); a graph per
            # status or namespace value would rebuild the whole collection for nothing.
            tenant = field == "tenant_id"
            params = qm.KeywordIndexParams(
                type=qm.KeywordIndexType.KEYWORD,
                is_tenant=tenant or None,
                enable_hnsw=None if tenant else False,
            )
            with warnings.catch_warnings():
                # Local mode accepts and ignores payload indexes, with a UserWarning each.
                warnings.filterwarnings("ignore", message="Payload indexes have no effect")
                self._call(partial(client.create_payload_index, name, field, field_schema=params))

    @staticmethod
    def _tenant_condition(tenant: str) -> qm.FieldCondition:
        return qm.FieldCondition(key="tenant_id", match=qm.MatchValue(value=tenant))

    # -- writes --------------------------------------------------------------------------
    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id (idempotent), in batches of 512, waiting for each.

        Raises:
            TenantRequiredError: a point's payload has no usable ``tenant_id``.
            UsageError: bad id (not a UUID), vector (wrong dimension, NaN) or payload.
            StoreError: the server failed or the index is closed.
        """
        checked = check_points(points, self.dimension)
        for start in range(0, len(checked), _BATCH):
            batch = [
                qm.PointStruct(id=p.id, vector=p.vector.tolist(), payload=p.payload)
                for p in checked[start : start + _BATCH]
            ]
            self._call(partial(self._client.upsert, self.collection, batch, wait=True))

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids are ignored.

        Raises:
            UsageError: an id is not a UUID.
            StoreError: the server failed or the index is closed.
        """
        wanted = check_ids(ids)
        for start in range(0, len(wanted), _BATCH):
            selector = qm.PointIdsList(points=list(wanted[start : start + _BATCH]))
            self._call(partial(self._client.delete, self.collection, selector, wait=True))

    def set_status(self, ids: Sequence[str], status: str) -> None:
        """Set payload ``status`` of the given points; unknown ids are ignored.

        Raises:
            UsageError: an id is not a UUID or ``status`` is empty.
            StoreError: the server failed or the index is closed.
        """
        wanted = check_ids(ids)
        if not isinstance(status, str) or not status.strip():
            raise UsageError(f"status must be a non-empty string, got {status!r:.80}")
        for start in range(0, len(wanted), _BATCH):
            selector = qm.Filter(
                must=[qm.HasIdCondition(has_id=list(wanted[start : start + _BATCH]))]
            )
            self._call(
                partial(
                    self._client.set_payload,
                    self.collection,
                    {"status": status.strip()},
                    points=selector,
                    wait=True,
                )
            )

    def delete_tenant(self, tenant_id: str) -> None:
        """Delete every point of ``tenant_id``; other tenants are untouched.

        Raises:
            TenantRequiredError: ``tenant_id`` is None, empty or blank.
            StoreError: the server failed or the index is closed.
        """
        tenant = validate_tenant(tenant_id)
        selector = qm.FilterSelector(filter=qm.Filter(must=[self._tenant_condition(tenant)]))
        self._call(lambda: self._client.delete(self.collection, selector, wait=True))

    # -- reads ---------------------------------------------------------------------------
    def _scope_filter(self, scope: SearchScope) -> qm.Filter:
        must: list[qm.Condition] = [
            self._tenant_condition(scope.tenant_id),
            qm.FieldCondition(key="namespace", match=qm.MatchAny(any=scope.namespaces)),
            qm.FieldCondition(key="status", match=qm.MatchAny(any=scope.statuses)),
        ]
        if scope.task_type is not None:
            must.append(
                qm.FieldCondition(key="task_type", match=qm.MatchValue(value=scope.task_type))
            )
        if scope.kinds is not None:
            must.append(qm.FieldCondition(key="kind", match=qm.MatchAny(any=scope.kinds)))
        return qm.Filter(must=must)

    def search(
        self,
        vector: Sequence[float] | FloatMatrix,
        *,
        tenant_id: str,
        namespaces: Sequence[str],
        limit: int,
        task_type: str | None = None,
        statuses: Sequence[str] = ("active",),
        kinds: Sequence[str] | None = None,
    ) -> list[VectorHit]:
        """The ``limit`` nearest points of ``tenant_id`` whose namespace is one of
        ``namespaces``, whose status is one of ``statuses`` and (if given) whose task_type is
        ``task_type``; best first, ``similarity`` = cosine in [-1, 1]. Returns ``[]`` without a
        request when ``namespaces`` or ``statuses`` is empty or ``limit`` is 0.

        Raises:
            TenantRequiredError: ``tenant_id`` is None, empty or blank.
            UsageError: wrong vector dimension, NaN, negative ``limit``.
            StoreError: the server failed or the index is closed.
        """
        scope = check_search(
            self.dimension, vector, tenant_id, namespaces, limit, task_type, statuses, kinds
        )
        if scope.empty:
            return []
        response = self._call(
            lambda: self._client.query_points(
                self.collection,
                query=scope.vector.tolist(),
                query_filter=self._scope_filter(scope),
                limit=scope.limit,
                with_payload=True,
                with_vectors=False,
            )
        )
        return [VectorHit(str(p.id), clamp_similarity(p.score), p.payload) for p in response.points]

    def count(self, tenant_id: str | None = None) -> int:
        """Exact number of points, of one tenant or (``None``) of all tenants.

        Raises:
            TenantRequiredError: ``tenant_id`` is given but empty or blank.
            StoreError: the server failed or the index is closed.
        """
        flt = None
        if tenant_id is not None:
            flt = qm.Filter(must=[self._tenant_condition(validate_tenant(tenant_id))])
        result = self._call(
            lambda: self._client.count(self.collection, count_filter=flt, exact=True)
        )
        return int(result.count)

    def all_ids(self) -> set[str]:
        """Every point id (canonical UUID strings), scrolled in pages of 2,048.

        Raises:
            StoreError: the server failed or the index is closed.
        """
        ids: set[str] = set()
        offset: Any = None
        while True:
            records, offset = self._call(
                partial(
                    self._client.scroll,
                    self.collection,
                    limit=_SCROLL_PAGE,
                    offset=offset,
                    with_payload=False,
                    with_vectors=False,
                )
            )
            ids.update(str(record.id) for record in records)
            if offset is None:
                return ids

    @property
    def shared(self) -> bool:
        """Whether other processes (or other indexes in this one) may write this collection:
        a Qdrant server's, or one reached through a client passed in."""
        return not self._owns_client or self.location != ":memory:"

    @property
    def kind(self) -> str:
        """How the store names this index (``meta.vector_index``, ``hindsight doctor``):
        ``qdrant <server URL without credentials> collection <name>``, or ``memory`` for
        local ``:memory:`` mode."""
        if not self.shared:
            return "memory"
        where = self.location
        if "@" in where.split("//", 1)[-1].split("/", 1)[0]:
            scheme, rest = where.split("//", 1) if "//" in where else ("", where)
            where = f"{scheme}//{rest.split('@', 1)[1]}"
        return f"qdrant {where} collection {self.collection}"

    def close(self) -> None:
        """Close the client unless it was passed in (a local ``:memory:`` collection is gone
        afterwards); later calls raise :class:`StoreError`. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> QdrantClientVectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"QdrantClientVectorIndex({self.location!r}, dimension={self.dimension}, "
            f"collection={self.collection!r})"
        )
