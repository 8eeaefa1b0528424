"""The embedded default :class:`~hindsight.ports.VectorIndex`: one Qdrant Edge shard in a folder.

Layout and tuning, measured on a 2-core machine with 384-d vectors (reproduce with
``tests/benchmarks/bench_vectors.py``):

* One unnamed cosine vector per point; keyword payload indexes on ``tenant_id`` (``is_tenant``),
  ``namespace``, ``task_type``, ``status``, ``kind`` and ``tags``.
* **Search is a filtered scan, not HNSW.** Every search is scoped to one tenant, so the payload
  index narrows it to that tenant's points, which are scored on int8 scalar-quantized copies
  kept in RAM and the best ``2 x limit`` rescored on the original float32 vectors. At 100k
  points this takes ~3 ms p50 for a single tenant and ~0.5 ms with ten tenants, with recall@10
  of 1.000 against exact search. Per-tenant HNSW graphs (``hnsw=True``) were measured too: on
  random 384-d vectors they reached recall@10 0.6 at ``ef=100`` (0.9 only at ``ef=256``, slower
  than the scan), and building them pauses the process for seconds (below). They pay off only
  for tenants far beyond 100k points, where a Qdrant server is the better home anyway.
* **``EdgeShard.optimize()`` holds the Python GIL for its whole run** (qdrant-edge-py 0.9): while
  it runs, no other Python thread of the process runs at all, so a background thread alone does
  not keep reads and writes responsive. Indexing one 100k-point segment that way froze the
  process for 45-60 s (HNSW). What bounds the pause here is the work per call: segments are
  capped at ``segment_kb`` of vector data (default 15,000 KB, i.e. 10,000 384-d vectors), new
  points are optimized one segment at a time, and optimizing a segment without HNSW is linear
  work (quantization and an immutable copy): ~0.2-0.3 s per 10,000 384-d points. A background
  daemon thread runs it as soon as a segment's worth of points is pending; a writer that outruns
  the thread (more than 2 segments pending) runs it inline, so no segment grows unbounded.
* Durability: every update goes through the shard's write-ahead log, so a process killed with
  SIGKILL leaves a shard that loads again (the WAL is replayed). The WAL lock is an OS file
  lock, released by the kernel when the process dies; a second *live* opener gets
  :class:`~hindsight._errors.StoreLockedError`.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import qdrant_edge as qe

from hindsight._errors import EmbedderMismatchError, StoreError, StoreLockedError, UsageError
from hindsight._ids import validate_tenant
from hindsight._lock import private_dir, privatize_tree
from hindsight._vector_contract import (
    FILTER_FIELDS,
    CheckedPoint,
    SearchScope,
    check_dimension,
    check_ids,
    check_points,
    check_search,
    clamp_similarity,
)
from hindsight.ports import FloatMatrix, VectorHit, VectorPoint

__all__ = ["EdgeVectorIndex"]

log = logging.getLogger("hindsight.vectors")

_OPEN: weakref.WeakSet[EdgeVectorIndex] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    """Stop background threads and flush shards a program forgot to close."""
    for index in list(_OPEN):
        try:
            index.close()
        except Exception as err:  # pragma: no cover - best effort at interpreter exit
            log.warning("closing %r at exit failed: %s", index, err)


_T = TypeVar("_T")

_CONFIG_FILE = "edge_config.json"
_PROBE_TENANT = "\x00hindsight-dimension-probe"
_UPSERT_BATCH = 512
_SCROLL_PAGE = 2048
_NEVER_KB = 1 << 40  # a full-scan threshold (KB) no segment reaches
# Score on the int8 copies, rescore the best 2 x limit on the float32 originals.
_SEARCH_PARAMS = qe.SearchParams(
    quantization=qe.QuantizationSearchParams(rescore=True, oversampling=2.0)
)


def _read_stored_dimension(path: Path) -> int | None:
    """The unnamed vector's size recorded in ``edge_config.json``, or None if unreadable."""
    try:
        config = json.loads((path / _CONFIG_FILE).read_text(encoding="utf-8"))
        size = config["vectors"][""]["size"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return size if isinstance(size, int) else None


def _has_shard(path: Path) -> bool:
    segments = path / "segments"
    return (path / _CONFIG_FILE).exists() or (segments.is_dir() and any(segments.iterdir()))


def _hits(points: Sequence[Any], payload: bool = True) -> list[VectorHit]:
    if not payload:
        return [VectorHit(str(p.id), clamp_similarity(p.score)) for p in points]
    return [VectorHit(str(p.id), clamp_similarity(p.score), p.payload) for p in points]


def _batches(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class EdgeVectorIndex:
    """A :class:`~hindsight.ports.VectorIndex` on an embedded Qdrant Edge shard at ``path``.

    Opens the shard if ``path`` holds one, else creates it (cosine distance, unnamed vector,
    payload indexes, int8 quantization). Searches scan the tenant's points through the payload
    index; optimization runs in a background daemon thread, one segment at a time (see the
    module docstring for why and what it costs).

    Args:
        path: the shard folder (created if missing).
        dimension: vector length; must match the shard's when it exists.
        background: ``True`` (default): new points are indexed by a background daemon thread,
            started at open, which also flushes the shard every ``flush_interval`` seconds when
            there were writes. ``False``: no thread; :meth:`upsert` runs the optimizer inline
            every quarter segment of writes (deterministic; for scripts and tests).
        segment_kb: vector data per segment in KB, the unit of optimization work: both the
            indexing threshold and the maximum segment size. Used when the shard is created;
            an existing shard keeps its stored tuning.
        hnsw: build per-tenant HNSW graphs (``m=0``, ``payload_m=16``) in each segment, for
            tenants with far more than 100k points. Costs 1-6 s GIL pauses per segment on 2
            cores and approximate results. Used when the shard is created.
        flush_interval: seconds between background flushes while there are writes.

    Raises:
        EmbedderMismatchError: the existing shard stores vectors of another dimension (the
            message names both).
        StoreLockedError: another live process (or another open index in this process) holds
            the shard's write-ahead-log lock.
        StoreError: the shard could not be created or loaded.
        UsageError: ``dimension`` or ``segment_kb`` is not a positive int.
    """

    def __init__(
        self,
        path: Path,
        dimension: int,
        *,
        background: bool = True,
        segment_kb: int = 15_000,
        hnsw: bool = False,
        flush_interval: float = 5.0,
    ) -> None:
        self.dimension = check_dimension(dimension)
        self.path = Path(path)
        if isinstance(segment_kb, bool) or not isinstance(segment_kb, int) or segment_kb <= 0:
            raise UsageError(f"segment_kb must be a positive integer, got {segment_kb!r}")
        self._background = background
        self._flush_interval = max(0.1, float(flush_interval))
        self.last_error: BaseException | None = None
        self._closed = False
        self._shard: qe.EdgeShard | None = None
        self._state = threading.Lock()  # guards the counters below
        self._optimizing = threading.Lock()  # one optimize at a time
        self._pending = 0  # points written since the last optimize started
        self._dirty_optimize = False  # any write (also delete) since the last optimize
        self._dirty_flush = False  # any write since the last flush
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

        shard = self._open(segment_kb, hnsw)
        self._shard = shard
        try:
            self._ensure_payload_indexes()
            stored_kb = self._stored_segment_kb() or segment_kb
            self.segment_points = max(1, stored_kb * 1024 // (4 * self.dimension))
            self._check_every = max(1, self.segment_points // 4)
            info = self._call(self._live().info)
            unindexed = max(0, info.points_count - info.indexed_vectors_count)
            self._pending = unindexed if unindexed >= self._check_every else 0
            self._dirty_optimize = self._pending > 0
        except BaseException:
            self._shard = None
            shard.close()
            raise
        privatize_tree(self.path)  # the shard's files: 0600 (the library uses the umask)
        if background:
            self._thread = threading.Thread(
                target=self._run, name=f"hindsight-edge-optimizer:{self.path.name}", daemon=True
            )
            self._thread.start()
            if self._pending:
                self._wake.set()
        _OPEN.add(self)

    # -- opening -------------------------------------------------------------------------
    def _open(self, segment_kb: int, hnsw: bool) -> qe.EdgeShard:
        path = self.path
        if _has_shard(path):
            stored = _read_stored_dimension(path)
            if stored is not None and stored != self.dimension:
                raise self._mismatch(stored)
            shard = self._call(lambda: qe.EdgeShard.load(str(path)))
            try:
                self._probe_dimension(shard)
            except BaseException:
                shard.close()
                raise
            return shard
        config = qe.EdgeConfig(
            vectors={"": qe.EdgeVectorParams(size=self.dimension, distance=qe.Distance.Cosine)},
            # m=0: no global graph, every search is tenant-scoped. Without hnsw no graph at all
            # (payload_m=0) and a full-scan threshold no segment reaches: filtered scans only.
            hnsw_config=qe.HnswIndexConfig(
                m=0,
                ef_construct=100,
                full_scan_threshold=2_000 if hnsw else _NEVER_KB,
                payload_m=16 if hnsw else 0,
            ),
            quantization_config=qe.ScalarQuantizationConfig(
                type=qe.ScalarType.Int8, quantile=0.99, memory=qe.Memory.Pinned
            ),
            optimizers=qe.EdgeOptimizersConfig(
                max_segment_size=segment_kb, indexing_threshold=segment_kb
            ),
        )
        try:
            private_dir(path)
        except OSError as err:
            raise StoreError(f"cannot create the vector index folder {path}: {err}") from None
        return self._call(lambda: qe.EdgeShard.create(str(path), config))

    def _mismatch(self, stored: int) -> EmbedderMismatchError:
        return EmbedderMismatchError(
            f"the vector index at {self.path} stores {stored}-d vectors but was opened with "
            f"dimension {self.dimension}: open it with the embedding model it was built with, "
            f"or rebuild its vectors with `hindsight reembed`"
        )

    def _probe_dimension(self, shard: qe.EdgeShard) -> None:
        """Backstop for a shard whose config file is missing: a query tells the stored size."""
        probe = qe.QueryRequest(
            limit=1,
            query=qe.Query.Nearest([1.0] * self.dimension),
            filter=qe.Filter(
                must=[qe.FieldCondition("tenant_id", match=qe.MatchValue(_PROBE_TENANT))]
            ),
        )
        try:
            shard.query(probe)
        except Exception as err:
            message = str(err)
            marker = "expected dim:"
            if marker in message:
                stored = message.split(marker, 1)[1].split(",", 1)[0].strip()
                raise self._mismatch(int(stored) if stored.isdigit() else -1) from None
            raise self._translate(err) from None

    def _stored_segment_kb(self) -> int | None:
        try:
            config = json.loads((self.path / _CONFIG_FILE).read_text(encoding="utf-8"))
            value = (config.get("optimizers") or {}).get("indexing_threshold")
        except (OSError, ValueError, AttributeError):
            return None
        return value if isinstance(value, int) and value > 0 else None

    def _ensure_payload_indexes(self) -> None:
        existing = set(self._call(self._live().info).payload_schema)
        for field in FILTER_FIELDS:
            if field in existing:
                continue
            params = (
                qe.KeywordIndexParams(is_tenant=True)
                if field == "tenant_id"
                else qe.KeywordIndexParams(enable_hnsw=False)
            )
            self._update(qe.UpdateOperation.create_field_index(field, params))

    # -- plumbing ------------------------------------------------------------------------
    def _live(self) -> qe.EdgeShard:
        shard = self._shard
        if shard is None or self._closed:
            raise StoreError(f"the vector index at {self.path} is closed")
        return shard

    def _translate(self, err: Exception) -> StoreError:
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if "WouldBlock" in message or "failed to open WAL" in message:
            return StoreLockedError(
                f"the vector index at {self.path} is already open in another live process (or "
                f"elsewhere in this one; its write-ahead log is locked): an embedded data dir "
                f"serves one process at a time, so stop the other one, or run `hindsight serve` "
                f"and connect over HTTP or MCP"
            )
        if "not initialized" in message and self._closed:
            return StoreError(f"the vector index at {self.path} is closed")
        return StoreError(f"Qdrant Edge ({self.path}): {message}")

    def _call(self, fn: Callable[[], _T]) -> _T:
        try:
            return fn()
        except StoreError:
            raise
        except Exception as err:
            raise self._translate(err) from None

    def _update(self, operation: qe.UpdateOperation) -> None:
        shard = self._live()
        self._call(lambda: shard.update(operation))

    def _tenant_condition(self, tenant: str) -> qe.FieldCondition:
        return qe.FieldCondition("tenant_id", match=qe.MatchValue(tenant))

    def _note_write(self, points: int) -> None:
        """Account for a write; wake the optimizer, or index inline when it is far behind."""
        with self._state:
            self._pending += points
            self._dirty_optimize = True
            self._dirty_flush = True
            pending = self._pending
        # The shard indexes its appendable segment once it exceeds the threshold; asking every
        # quarter segment keeps segments within 1.25x the unit (a no-op optimize is ~0.1 ms).
        if not self._background:
            if pending >= self._check_every:
                self._optimize_now()
        elif pending >= 2 * self.segment_points:
            self._optimize_now()  # backpressure: the background thread fell behind
        elif pending >= self._check_every:
            self._wake.set()

    # -- writes --------------------------------------------------------------------------
    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id (idempotent); payloads are replaced as a whole.

        ``vector`` may be a list of floats or a 1-d numpy row. Large lists are written in
        batches of 512; each batch is durable (WAL) when its call returns.

        Raises:
            TenantRequiredError: a point's payload has no usable ``tenant_id``.
            UsageError: bad id (not a UUID), vector (wrong dimension, NaN) or payload.
            StoreError: the shard failed or is closed.
        """
        checked = check_points(points, self.dimension)
        batch = max(1, min(_UPSERT_BATCH, self.segment_points // 2))
        for chunk in _batches(checked, batch):
            self._update(qe.UpdateOperation.upsert_points([self._edge_point(p) for p in chunk]))
            self._note_write(len(chunk))

    @staticmethod
    def _edge_point(point: CheckedPoint) -> qe.Point:
        return qe.Point(point.id, point.vector.tolist(), point.payload)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids are ignored.

        Raises:
            UsageError: an id is not a UUID.
            StoreError: the shard failed or is closed.
        """
        wanted = check_ids(ids)
        for chunk in _batches(wanted, _UPSERT_BATCH):
            self._update(qe.UpdateOperation.delete_points(list(chunk)))
            self._note_write(0)

    def set_status(self, ids: Sequence[str], status: str) -> None:
        """Set payload ``status`` of the given points; unknown ids are ignored.

        Raises:
            UsageError: an id is not a UUID or ``status`` is empty.
            StoreError: the shard failed or is closed.
        """
        wanted = check_ids(ids)
        if not isinstance(status, str) or not status.strip():
            raise UsageError(f"status must be a non-empty string, got {status!r:.80}")
        for chunk in _batches(wanted, _UPSERT_BATCH):
            selector = qe.Filter(must=[qe.HasIdCondition(set(chunk))])
            self._update(
                qe.UpdateOperation.set_payload_by_filter(selector, {"status": status.strip()})
            )
            self._note_write(0)

    def delete_tenant(self, tenant_id: str) -> None:
        """Delete every point of ``tenant_id``; other tenants are untouched.

        Raises:
            TenantRequiredError: ``tenant_id`` is None, empty or blank.
            StoreError: the shard failed or is closed.
        """
        tenant = validate_tenant(tenant_id)
        selector = qe.Filter(must=[self._tenant_condition(tenant)])
        self._update(qe.UpdateOperation.delete_points_by_filter(selector))
        self._note_write(0)

    # -- reads ---------------------------------------------------------------------------
    def _scope_filter(self, scope: SearchScope) -> qe.Filter:
        def one_of(field: str, values: list[str]) -> qe.FieldCondition:
            match = qe.MatchValue(values[0]) if len(values) == 1 else qe.MatchAny(values)
            return qe.FieldCondition(field, match=match)

        must: list[Any] = [
            self._tenant_condition(scope.tenant_id),
            one_of("namespace", scope.namespaces),
            one_of("status", scope.statuses),
        ]
        if scope.task_type is not None:
            must.append(qe.FieldCondition("task_type", match=qe.MatchValue(scope.task_type)))
        if scope.kinds is not None:
            must.append(one_of("kind", scope.kinds))
        return qe.Filter(must=must)

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
        ``task_type``; best first, ``similarity`` = cosine in [-1, 1].

        Scans the tenant's points on int8 copies and rescores the best ``2 x limit`` on the
        originals (recall@10 1.000 measured at 100k points). Returns ``[]`` without a query
        when ``namespaces`` or
        ``statuses`` is empty or ``limit`` is 0.

        Raises:
            TenantRequiredError: ``tenant_id`` is None, empty or blank.
            UsageError: wrong vector dimension, NaN, negative ``limit``.
            StoreError: the shard failed or is closed.
        """
        scope = check_search(
            self.dimension, vector, tenant_id, namespaces, limit, task_type, statuses, kinds
        )
        if scope.empty:
            return []
        request = self._request(scope)
        shard = self._live()
        return _hits(self._call(lambda: shard.query(request)))

    def _request(self, scope: Any, payload: bool = True) -> qe.QueryRequest:
        return qe.QueryRequest(
            limit=scope.limit,
            query=qe.Query.Nearest(scope.vector.tolist()),
            filter=self._scope_filter(scope),
            params=_SEARCH_PARAMS,
            with_payload=payload,
            with_vector=False,
        )

    def search_many(
        self,
        vectors: FloatMatrix,
        *,
        tenant_id: str,
        namespaces: Sequence[str],
        limit: int,
        task_type: str | None = None,
        statuses: Sequence[str] = ("active",),
        kinds: Sequence[str] | None = None,
        payload: bool = True,
    ) -> list[list[VectorHit]]:
        """:meth:`search` of each row of ``vectors`` (shape ``(n, dimension)``) with the same
        filter, as one planned batch (``EdgeShard.query_batch``: one pass over the segments
        for all of them, the same hits as one :meth:`search` per row). The write path screens
        a batch of lessons this way.

        ``payload=False``: the hits carry ids and similarities only (``payload`` ``None``),
        for callers that read the rows from SQL (dedup and the guard); reading the payloads
        out of the shard is most of the cost of a batch's hits.

        Raises:
            As :meth:`search`.
        """
        scopes = [
            check_search(
                self.dimension, row, tenant_id, namespaces, limit, task_type, statuses, kinds
            )
            for row in vectors
        ]
        if not scopes or scopes[0].empty:
            return [[] for _ in scopes]
        batch = qe.QueryBatchRequest([self._request(scope, payload) for scope in scopes])
        shard = self._live()
        return [_hits(points, payload) for points in self._call(lambda: shard.query_batch(batch))]

    def count(self, tenant_id: str | None = None) -> int:
        """Exact number of points, of one tenant or (``None``) of all tenants.

        Raises:
            TenantRequiredError: ``tenant_id`` is given but empty or blank.
            StoreError: the shard failed or is closed.
        """
        if tenant_id is None:
            request = qe.CountRequest(exact=True)
        else:
            tenant = validate_tenant(tenant_id)
            request = qe.CountRequest(
                exact=True, filter=qe.Filter(must=[self._tenant_condition(tenant)])
            )
        shard = self._live()
        return self._call(lambda: shard.count(request))

    def all_ids(self) -> set[str]:
        """Every point id (canonical UUID strings), scrolled in pages of 2,048.

        Raises:
            StoreError: the shard failed or is closed.
        """
        shard = self._live()
        ids: set[str] = set()
        offset: Any = None
        while True:
            request = qe.ScrollRequest(
                offset=offset, limit=_SCROLL_PAGE, with_payload=False, with_vector=False
            )
            records, offset = self._call(partial(shard.scroll, request))
            ids.update(str(record.id) for record in records)
            if offset is None:
                return ids

    def info(self) -> dict[str, int]:
        """Diagnostics: ``points``, ``indexed_vectors``, ``segments``, ``pending`` (points
        written since the last optimize) and ``segment_points`` (indexing unit).

        Raises:
            StoreError: the shard failed or is closed.
        """
        shard = self._live()
        info = self._call(shard.info)
        return {
            "points": info.points_count,
            "indexed_vectors": info.indexed_vectors_count,
            "segments": info.segments_count,
            "pending": self._pending,
            "segment_points": self.segment_points,
        }

    # -- optimization --------------------------------------------------------------------
    def optimize(self, wait: bool = True) -> bool:
        """Optimize full segments (quantize, make immutable; HNSW if enabled), vacuum deleted
        points and merge small segments.

        ``wait=True`` runs it in the calling thread and returns whether anything changed; the
        call blocks until done, and so does every other Python thread of the process (the
        binding holds the GIL): ~0.2-0.3 s per pending segment of 10,000 384-d points on 2
        cores (seconds with ``hnsw=True``). ``wait=False`` asks the background thread to run
        it soon and returns False (with ``background=False`` it starts a one-off daemon
        thread).

        Raises:
            StoreError: the shard failed or is closed (``wait=True`` only).
        """
        self._live()
        if wait:
            return self._optimize_now()
        if self._thread is not None:
            with self._state:
                self._dirty_optimize = True
            self._wake.set()
        else:
            threading.Thread(target=self._optimize_quietly, daemon=True).start()
        return False

    def _optimize_now(self) -> bool:
        with self._optimizing:
            shard = self._live()
            with self._state:
                self._pending = 0
                self._dirty_optimize = False
            started = time.perf_counter()
            changed = self._call(shard.optimize)
            if changed:
                log.debug("optimized %s in %.2fs", self.path, time.perf_counter() - started)
                privatize_tree(self.path)  # new segment files
            return changed

    def _optimize_quietly(self) -> None:
        try:
            self._optimize_now()
        except StoreError as err:
            if not self._closed:
                self.last_error = err
                log.warning("background optimize of %s failed: %s", self.path, err)

    def _flush_now(self) -> None:
        with self._state:
            self._dirty_flush = False
        shard = self._live()
        self._call(shard.flush)

    def _run(self) -> None:
        """Background loop: woken when a segment's worth of points is pending (or every
        ``flush_interval`` seconds), it optimizes if there were writes since the last optimize
        (a no-op costs ~0.1 ms when nothing is planned) and flushes when there were writes."""
        last_flush = time.monotonic()
        while not self._stop.is_set():
            self._wake.wait(timeout=self._flush_interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                with self._state:
                    must_optimize = self._dirty_optimize
                if must_optimize:
                    self._optimize_now()
                now = time.monotonic()
                if self._dirty_flush and now - last_flush >= self._flush_interval:
                    self._flush_now()
                    last_flush = now
            except StoreError as err:
                if self._closed:
                    return
                self.last_error = err
                log.warning("background maintenance of %s failed: %s", self.path, err)

    kind = "edge"
    """How the store names this index (``meta.vector_index``, ``hindsight doctor``)."""

    # -- closing -------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the background thread (after the optimize it may be running), flush and close
        the shard, releasing its lock. Idempotent; later calls raise :class:`StoreError`.

        Raises:
            StoreError: the final flush failed (the shard is closed anyway).
        """
        if self._closed:
            return
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._optimizing:
            shard, self._shard = self._shard, None
            self._closed = True
        if shard is None:
            return
        try:
            shard.flush()
        except Exception as err:
            raise self._translate(err) from None
        finally:
            shard.close()
            privatize_tree(self.path)

    def __enter__(self) -> EdgeVectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"EdgeVectorIndex({str(self.path)!r}, dimension={self.dimension}, {state})"
