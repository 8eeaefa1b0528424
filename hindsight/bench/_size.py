"""One benchmark size: fill a store through the write path, then time recall, the end of a
run, and a cold start (docs/benchmarks.md#hindsight-bench)."""

from __future__ import annotations

import collections
import dataclasses
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.bench._data import (
    latency_summary,
    peak_rss_mb,
    synthetic_experiences,
    synthetic_lessons,
)
from hindsight.bench._deploy import Deployment, open_deployment
from hindsight.models import Event, EventStatus, EventType, Trajectory, utcnow
from hindsight.ports import Embedder, FloatMatrix

__all__ = [
    "INGEST_BATCH",
    "QUEUE_RUNS",
    "CachingEmbedder",
    "Progress",
    "bench_size",
    "cold_start_ms",
    "use_embedder",
]

INGEST_BATCH = 200
"""Experiences per :meth:`hindsight.writeback.WriteBack.write` call while filling the store
(a review writes 3-5 at a time; a bulk import writes many)."""
QUEUE_RUNS = 100
"""Finished runs stored (review queued, worker off) to time the end of a run at each size."""
WARMUP_QUERIES = 10
"""Recalls run before timing (first-use costs: statement caches, page cache)."""
_EMBED_CHUNK = 1000

Progress = Callable[[str, float], None]
"""``progress(what, fraction)``: what is running now and how far this size is (0..1)."""


class CachingEmbedder:
    """Wraps an embedder and remembers vectors, so timings can exclude embedding.

    Args:
        inner: the embedder whose ``name``, ``dimension``, ``similarity_floor`` and
            ``dedup_threshold`` it reports, and which embeds texts it has not seen.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.similarity_floor = inner.similarity_floor
        threshold = getattr(inner, "dedup_threshold", None)
        if threshold is not None:
            self.dedup_threshold = threshold
        self._cache: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Vectors of ``texts``, shape ``(len(texts), dimension)``, float32."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, vec in zip(missing, self.inner.embed(missing), strict=True):
                self._cache[text] = vec
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts]).astype(np.float32)


def use_embedder(amem: Any, embedder: Embedder) -> None:
    """Make ``embedder`` the one the open memory ``amem`` embeds with everywhere, so that a
    :class:`CachingEmbedder` filled beforehand takes embedding out of what a benchmark times:
    the engine and its recall pipeline now, and the write side (the guard's screen, dedup,
    task groups, condition mining), which is wired with it at its first use. Same name and
    dimension as the one it replaces (the store recorded them).

    Raises:
        RuntimeError: the write side is wired already (its parts keep the embedder they were
            wired with): call this before the memory's first write.
    """
    if amem._parts.wired is not None:
        raise RuntimeError("use_embedder must be called before the memory's first write")
    amem._parts.embedder = amem.embedder = embedder
    amem._recall = dataclasses.replace(amem._recall, embedder=embedder)


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def _run(i: int, tenant: str) -> Trajectory:
    """A short finished run: a question, one tool call and its result, the answer."""
    return Trajectory(
        tenant_id=tenant,
        task=f"run {i}",
        events=[
            Event(event_type=EventType.USER_MESSAGE, content=f"Where is order {i}?"),
            Event(event_type=EventType.TOOL_CALL, tool_name="get_order", tool_args={"i": i}),
            Event(
                event_type=EventType.TOOL_RESULT,
                tool_name="get_order",
                content='{"status": "shipped"}',
                status=EventStatus.SUCCESS,
            ),
            Event(event_type=EventType.FINAL_ANSWER, content=f"Order {i} has shipped."),
        ],
    )


def bench_size(
    size: int,
    *,
    queries: int = 200,
    parent: Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Fill a fresh store (:func:`~hindsight.bench._deploy.open_deployment`) with ``size``
    synthetic experiences through the write path, and measure it.

    Returns:
        ``{"size", "stored": {"rows", "active", "quarantined", "folded"},
        "ingest_per_s": {"excluding_embedding", "including_embedding"},
        "recall_ms": {"p50", "p95", "p99"}, "queue_ms": {"p50", "p99"}, "peak_rss_mb",
        "cold_start_ms"}``. Ingest is experiences per second through
        :meth:`hindsight.writeback.WriteBack.write` (guard, dedup, SQL, vectors) in batches
        of :data:`INGEST_BATCH`; "including" adds the time the configured embedder took for
        the same texts. Recall is the engine's :meth:`~hindsight.Memory.recall` with the
        query vectors computed beforehand (embedding excluded), scoped to one tenant of
        :data:`~hindsight.bench._data.TENANTS`. ``queue_ms`` is :meth:`store_episode` of a
        finished run with its review queued (what the end of an agent run costs).
        ``peak_rss_mb`` is the process peak so far (MiB). ``cold_start_ms`` is a new
        process importing hindsight, opening this store and recalling once.

    Raises:
        ValueError: ``size`` < 1 or ``queries`` < 1.
        HindsightError: the store cannot be opened or written.
    """
    if size < 1 or queries < 1:
        raise ValueError(f"size and queries must be >= 1, got {size} and {queries}")
    say = progress or (lambda _what, _fraction: None)
    with open_deployment(parent) as dep:
        result = _fill_and_measure(dep, size, queries, say)
        dep.memory.close()
        say(f"{size:,}: cold start", 0.97)
        result["cold_start_ms"] = cold_start_ms(dep.data_dir, tenant=dep.tenants[0])
    say(f"{size:,}: done", 1.0)
    return result


def _fill_and_measure(dep: Deployment, size: int, queries: int, say: Progress) -> dict[str, Any]:
    mem = dep.memory
    amem = mem.aio
    texts = synthetic_lessons(size)
    embedder = CachingEmbedder(amem.embedder)
    t0 = time.perf_counter()
    for start in range(0, size, _EMBED_CHUNK):
        say(f"{size:,}: embedding", 0.1 * start / size)
        embedder.embed(texts[start : start + _EMBED_CHUNK])
    embed_s = time.perf_counter() - t0
    use_embedder(amem, embedder)
    exps = synthetic_experiences(
        texts, embedding_model=amem.embedder.name, now=utcnow(), tenants=dep.tenants
    )
    written: dict[str, Any] = {}
    t0 = time.perf_counter()
    for start in range(0, size, INGEST_BATCH):
        say(f"{size:,}: writing", 0.1 + 0.6 * start / size)
        for exp in amem.writeback.write(exps[start : start + INGEST_BATCH]):
            written[exp.id] = exp
    write_s = time.perf_counter() - t0
    optimize = getattr(amem.index, "optimize", None)
    if optimize is not None:
        say(f"{size:,}: indexing vectors", 0.7)
        optimize(wait=True)
    new_ids = {e.id for e in exps}
    rows = [e for i, e in written.items() if i in new_ids]
    statuses = collections.Counter(str(getattr(e.status, "value", e.status)) for e in rows)
    rng = random.Random(11)
    qs = [rng.choice(texts).replace("When", "If", 1) for _ in range(queries)]
    embedder.embed(qs)
    for q in qs[:WARMUP_QUERIES]:
        mem.recall(q, tenant_id=dep.tenants[0])
    lat = []
    for i, q in enumerate(qs):
        if i % 20 == 0:
            say(f"{size:,}: recalling", 0.75 + 0.15 * i / queries)
        lat.append(_timed(partial(mem.recall, q, tenant_id=dep.tenants[i % len(dep.tenants)])))
    say(f"{size:,}: ending runs", 0.9)
    queue = [
        _timed(partial(mem.store_episode, _run(i, dep.tenants[i % len(dep.tenants)])))
        for i in range(QUEUE_RUNS)
    ]
    return {
        "size": size,
        "stored": {
            "rows": len(rows),
            "active": statuses.get("active", 0),
            "quarantined": statuses.get("quarantined", 0),
            "folded": size - len(rows),
        },
        "ingest_per_s": {
            "excluding_embedding": size / write_s,
            "including_embedding": size / (write_s + embed_s),
        },
        "recall_ms": latency_summary(lat),
        "queue_ms": latency_summary(queue, (50, 99)),
        "peak_rss_mb": peak_rss_mb(),
    }


def cold_start_ms(data_dir: Path, *, tenant: str = "t") -> float:
    """Milliseconds for a new Python process to import hindsight, open the store of
    ``data_dir`` (and ``DATABASE_URL`` / ``VECTOR_DB_URL`` when set) and recall once.

    Raises:
        RuntimeError: the process failed (its last stderr line is in the message).
    """
    code = (
        "import time; t=time.perf_counter(); from hindsight import Memory; "
        f"m=Memory(data_dir={str(data_dir)!r}, background_review=False); "
        f"m.recall('order lookup timed out', tenant_id={tenant!r}); "
        "print((time.perf_counter()-t)*1000); m.close()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the cold-start process failed: {last}")
    return float(out.stdout.strip().splitlines()[-1])
