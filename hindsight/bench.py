"""Benchmarks of the embedded default: recall latency, ingest throughput, queuing, cold start.

Run with ``hindsight bench`` or ``python -m hindsight.bench``. Numbers are wall-clock on the
machine it runs on; they are reported, never asserted by tests.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.models import Experience, ExperienceKind, utcnow
from hindsight.ports import Embedder, FloatMatrix

__all__ = ["CachingEmbedder", "bench_size", "percentile", "queue_latency", "synthetic_lessons"]

_TOOLS = [
    "order_query",
    "refund",
    "book_reservation",
    "cancel_reservation",
    "search_flights",
    "update_address",
    "send_email",
    "charge_card",
    "lookup_user",
    "create_invoice",
]
_ERRORS = [
    "timed out at peak hours",
    "rejected an unknown payment method",
    "failed because the amounts did not add up",
    "returned 429 rate limited",
    "needs the reservation id",
    "returned stale data",
    "failed with a 502",
    "rejected a date in the past",
    "requires user confirmation first",
]
_FIXES = [
    "retry once, then fall back to the cache",
    "ask the user for the missing id",
    "split the payment so it adds up to the total",
    "wait one second and retry",
    "confirm the details before calling it",
    "use the cached copy",
    "validate the date before calling it",
]


def synthetic_lessons(n: int, seed: int = 7) -> list[str]:
    """``n`` varied, realistic one-sentence lessons (deterministic for a ``seed``)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        tool, err, fix = rng.choice(_TOOLS), rng.choice(_ERRORS), rng.choice(_FIXES)
        out.append(f"When {tool} {err} (case {i}), {fix}.")
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values``, linear interpolation."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


class CachingEmbedder:
    """Wraps an embedder and remembers vectors, so recall timing can exclude embedding."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.similarity_floor = inner.similarity_floor
        self._cache: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        missing = [t for t in texts if t not in self._cache]
        if missing:
            for text, vec in zip(missing, self.inner.embed(missing), strict=True):
                self._cache[text] = vec
        return np.stack([self._cache[t] for t in texts]).astype(np.float32)


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def bench_size(
    size: int,
    *,
    queries: int = 200,
    tenants: int = 10,
    data_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fill an embedded store with ``size`` experiences and measure it.

    Returns a dict: ``size``, ``recall_ms`` (p50/p95/p99, embedding excluded),
    ``ingest_per_s`` (excluding and including embedding), ``queue_ms`` (p50/p99 of
    storing a finished run and queuing its review).
    """
    from hindsight.memory import Memory
    from hindsight.models import Event, EventStatus, EventType, Trajectory

    say = progress or (lambda _msg: None)
    tmp = tempfile.TemporaryDirectory(prefix="hindsight-bench-") if data_dir is None else None
    root = Path(tmp.name) if tmp is not None else Path(data_dir)  # type: ignore[arg-type]
    try:
        with Memory(data_dir=root, background_review=False) as mem:
            amem = mem.aio
            texts = synthetic_lessons(size)
            say(f"{size}: embedding")
            t0 = time.perf_counter()
            vectors = amem.embedder.embed(texts)
            embed_s = time.perf_counter() - t0
            now = utcnow()
            exps = [
                Experience(
                    tenant_id=f"tenant-{i % tenants}",
                    kind=ExperienceKind.IMPROVEMENT,
                    content=text,
                    task_type=f"type-{i % 7}",
                    confidence=0.5 + (i % 5) / 10,
                    created_at=now,
                    updated_at=now,
                    embedding_model=amem.embedder.name,
                )
                for i, text in enumerate(texts)
            ]
            say(f"{size}: writing")
            t0 = time.perf_counter()
            for start in range(0, size, 2000):
                amem.store.add_experiences(
                    exps[start : start + 2000], vectors[start : start + 2000]
                )
                amem.sync_vectors()
            write_s = time.perf_counter() - t0
            optimize = getattr(amem.index, "optimize", None)
            if optimize is not None:
                say(f"{size}: building the vector index")
                optimize(wait=True)
            amem.embedder = CachingEmbedder(amem.embedder)
            rng = random.Random(11)
            qs = [rng.choice(texts).replace("When", "If") for _ in range(queries)]
            amem.embedder.embed(qs)
            say(f"{size}: recalling")
            for q in qs[:10]:  # warm-up
                mem.recall(q, tenant_id="tenant-0")
            lat = [
                _timed(partial(mem.recall, q, tenant_id=f"tenant-{i % tenants}"))
                for i, q in enumerate(qs)
            ]
            queue = []
            for i in range(100):
                traj = Trajectory(
                    tenant_id="tenant-0",
                    task=f"run {i}",
                    events=[
                        Event(event_type=EventType.USER_MESSAGE, content=f"question {i}"),
                        Event(
                            event_type=EventType.TOOL_CALL,
                            tool_name="order_query",
                            tool_args={"i": i},
                        ),
                        Event(
                            event_type=EventType.TOOL_RESULT,
                            tool_name="order_query",
                            content="ok",
                            status=EventStatus.SUCCESS,
                        ),
                        Event(event_type=EventType.FINAL_ANSWER, content="done"),
                    ],
                )
                queue.append(_timed(partial(mem.store_episode, traj)))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return {
        "size": size,
        "recall_ms": {
            "p50": percentile(lat, 50),
            "p95": percentile(lat, 95),
            "p99": percentile(lat, 99),
        },
        "ingest_per_s": {
            "excluding_embedding": size / write_s,
            "including_embedding": size / (write_s + embed_s),
        },
        "queue_ms": {"p50": percentile(queue, 50), "p99": percentile(queue, 99)},
    }


def _order_run(i: int) -> Any:
    """One finished support run: a timed-out tool call, a working one, the answer."""
    from hindsight.models import Event, EventStatus, EventType, Outcome, Trajectory

    def tool(name: str, output: str, status: EventStatus) -> list[Event]:
        return [
            Event(event_type=EventType.TOOL_CALL, tool_name=name, tool_args={"order_id": str(i)}),
            Event(event_type=EventType.TOOL_RESULT, tool_name=name, content=output, status=status),
        ]

    return Trajectory(
        tenant_id="bench",
        task=f"Where is order {i}?",
        outcome=Outcome.SUCCESS,
        events=[
            Event(event_type=EventType.USER_MESSAGE, content=f"Where is order {i}? Due yesterday."),
            *tool("order_query", "timed out after 5 s", EventStatus.TIMEOUT),
            *tool("order_query_cached", '{"status": "shipped"}', EventStatus.SUCCESS),
            Event(event_type=EventType.FINAL_ANSWER, content=f"Order {i} has shipped."),
        ],
    )


def queue_latency(
    runs: int = 200, *, gap_seconds: float = 0.0, data_dir: Path | None = None
) -> dict[str, Any]:
    """What queuing a review adds to the end of an agent run (issue 3: at most 5 ms at p99).

    ``runs`` finished runs (a timed-out tool call, a working one, the answer) are stored with
    :meth:`hindsight.Memory.store_episode`, what leaving a ``memory.record(...)`` block calls,
    alternately with and without queuing a review, on one embedded store whose in-process
    worker reviews the queued runs meanwhile (heuristic reviewer). ``gap_seconds`` is the
    agent's own time in each run (a model call), 0 for runs back to back (the worst case:
    reviews wait until the burst ends).

    Returns:
        ``{"with_review": {"p50", "p99"}, "without_review": {"p50", "p99"}, "added_p99",
        "reviewed_during_runs", "reviewed"}``: milliseconds, then counts of reviews done before
        the last run ended and after a flush.
    """
    from hindsight.memory import Memory

    tmp = tempfile.TemporaryDirectory(prefix="hindsight-bench-") if data_dir is None else None
    root = Path(tmp.name) if tmp is not None else Path(data_dir)  # type: ignore[arg-type]
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        with Memory(data_dir=root) as mem:
            for i in range(runs):
                review = i % 4 in (0, 3)  # alternate which mode goes first
                traj = _order_run(i)
                if gap_seconds:
                    time.sleep(gap_seconds)
                times[review].append(_timed(partial(mem.store_episode, traj, review=review)))
            during = mem.stats(tenant_id="bench")["review_jobs"]["succeeded"]
            mem.flush(timeout=600)
            reviewed = mem.stats(tenant_id="bench")["review_jobs"]["succeeded"]
    finally:
        if tmp is not None:
            tmp.cleanup()
    stats = {
        key: {"p50": percentile(times[flag], 50), "p99": percentile(times[flag], 99)}
        for key, flag in (("with_review", True), ("without_review", False))
    }
    return {
        **stats,
        "added_p99": stats["with_review"]["p99"] - stats["without_review"]["p99"],
        "reviewed_during_runs": during,
        "reviewed": reviewed,
    }


def cold_start_ms(data_dir: Path) -> float:
    """Milliseconds for a new process to import hindsight, open ``data_dir`` and recall once."""
    code = (
        "import time; t=time.perf_counter(); from hindsight import Memory; "
        f"m=Memory(data_dir={str(data_dir)!r}); m.recall('order lookup', tenant_id='t'); "
        "print((time.perf_counter()-t)*1000); m.close()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m hindsight.bench [--sizes 10000,100000] [--json]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m hindsight.bench")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    report: dict[str, Any] = {"results": []}
    for size in sizes:
        report["results"].append(
            bench_size(size, queries=args.queries, progress=lambda m: print(m, file=sys.stderr))
        )
    with tempfile.TemporaryDirectory() as d:
        report["cold_start_ms"] = cold_start_ms(Path(d))
    report["queue_with_review_ms"] = {
        "back_to_back": queue_latency(),
        "with_100ms_agent_time": queue_latency(100, gap_seconds=0.1),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for r in report["results"]:
            print(
                f"{r['size']:>8} experiences: recall p50 {r['recall_ms']['p50']:.2f} ms, "
                f"p99 {r['recall_ms']['p99']:.2f} ms; ingest "
                f"{r['ingest_per_s']['excluding_embedding']:.0f}/s (no embedding), "
                f"{r['ingest_per_s']['including_embedding']:.0f}/s (with); queue p99 "
                f"{r['queue_ms']['p99']:.2f} ms"
            )
        print(f"cold start: {report['cold_start_ms']:.0f} ms")
        for name, q in report["queue_with_review_ms"].items():
            print(
                f"end of a run ({name.replace('_', ' ')}): p99 {q['with_review']['p99']:.2f} ms "
                f"with a review queued, {q['without_review']['p99']:.2f} ms without; "
                f"{q['reviewed_during_runs']} reviewed during the runs (goal: adds <= 5 ms)"
            )


if __name__ == "__main__":
    main()
