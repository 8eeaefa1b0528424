"""The whole ``hindsight bench`` run: sizes, queue latency, machine, and its text form."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hindsight.bench._deploy import describe
from hindsight.bench._queue import queue_latency
from hindsight.bench._size import Progress, bench_size
from hindsight.config import MemoryConfig

__all__ = ["DEFAULT_SIZES", "GOALS", "MAX_SIZE", "parse_sizes", "render_text", "run_bench"]

DEFAULT_SIZES = (1_000, 10_000, 100_000)
"""Store sizes measured by default (1k, 10k, 100k)."""
MAX_SIZE = 10_000_000
"""Largest size accepted (a typo guard: 10M synthetic experiences take hours here)."""
GOALS = {
    "recall_p50_ms_at_100k": 10.0,
    "queue_added_p99_ms": 5.0,
    "cold_start_ms": 1500.0,
    "ingest_per_s_excluding_embedding": 2000.0,
}
"""The goals for the embedded default on a 2-core machine (reported, not enforced;
docs/benchmarks.md#hindsight-bench)."""
QUEUE_RUNS_BACK_TO_BACK = 200
QUEUE_RUNS_WITH_AGENT_TIME = 50


def parse_sizes(text: str) -> list[int]:
    """``"1000,10000"`` -> ``[1000, 10000]`` (sorted, duplicates dropped; ``_`` and ``k``
    accepted: ``10_000``, ``10k``).

    Raises:
        ValueError: empty, not an integer, below 1 or above :data:`MAX_SIZE` (one line).
    """
    sizes: set[int] = set()
    for part in str(text).split(","):
        raw = part.strip().lower().replace("_", "")
        if not raw:
            continue
        scale = 1000 if raw.endswith("k") else 1
        try:
            value = int(raw[:-1] if scale > 1 else raw) * scale
        except ValueError:
            raise ValueError(f"--sizes: {part.strip()!r} is not a whole number") from None
        if not 1 <= value <= MAX_SIZE:
            raise ValueError(f"--sizes: {value} is outside 1..{MAX_SIZE:,}")
        sizes.add(value)
    if not sizes:
        raise ValueError("--sizes needs at least one size, e.g. --sizes 1000,10000")
    return sorted(sizes)


def _machine() -> dict[str, Any]:
    from hindsight import __version__

    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return {
        "hindsight": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_at_start": load,
    }


def run_bench(
    sizes: Sequence[int],
    *,
    queries: int = 200,
    parent: Path | None = None,
    progress: Progress | None = None,
    size_started: Any = None,
) -> dict[str, Any]:
    """Measure every size (:func:`~hindsight.bench._size.bench_size`), then the end-of-run
    cost with the review worker running (:func:`~hindsight.bench._queue.queue_latency`).

    Args:
        sizes: store sizes, smallest first.
        queries: timed recalls per size.
        parent: folder for the temporary data dirs (default: the system temp dir).
        progress: ``progress(what, fraction)`` for the current size.
        size_started: called with each size (or ``"queue"``) before it starts.

    Returns:
        ``{"machine", "deployment", "goals", "results": [one dict per size],
        "queue_with_worker_ms": {"back_to_back", "with_100ms_agent_time"}}``.
    """
    started = size_started or (lambda _size: None)
    report: dict[str, Any] = {
        "machine": _machine(),
        "deployment": describe(MemoryConfig()),
        "goals": dict(GOALS),
        "results": [],
    }
    for size in sizes:
        started(size)
        report["results"].append(
            bench_size(size, queries=queries, parent=parent, progress=progress)
        )
    started("queue")
    say = progress or (lambda _what, _fraction: None)
    say("end of a run, worker on: back to back", 0.0)
    back = queue_latency(QUEUE_RUNS_BACK_TO_BACK, parent=parent)
    say("end of a run, worker on: 100 ms agent time", 0.5)
    gap = queue_latency(QUEUE_RUNS_WITH_AGENT_TIME, gap_seconds=0.1, parent=parent)
    say("end of a run: done", 1.0)
    report["queue_with_worker_ms"] = {"back_to_back": back, "with_100ms_agent_time": gap}
    return report


def render_text(report: dict[str, Any]) -> list[str]:
    """The report as plain lines (what ``hindsight bench`` prints without ``--json``)."""
    m = report["machine"]
    d = report["deployment"]
    lines = [
        f"hindsight {m['hindsight']}, Python {m['python']}, {m['cpus']} CPUs, "
        f"load {m['load_average_at_start']}; SQL: {d['sql']}; vectors: {d['vectors']}; "
        f"embedder: {d['embedder']}",
    ]
    for r in report["results"]:
        rec, ing, q = r["recall_ms"], r["ingest_per_s"], r["queue_ms"]
        rss = r["peak_rss_mb"]
        lines.append(
            f"{r['size']:>9,} experiences: recall p50 {rec['p50']:.2f} / p95 {rec['p95']:.2f} / "
            f"p99 {rec['p99']:.2f} ms; ingest {ing['excluding_embedding']:,.0f}/s without "
            f"embedding, {ing['including_embedding']:,.0f}/s with; end of run p50 {q['p50']:.2f}"
            f" / p99 {q['p99']:.2f} ms; cold start {r['cold_start_ms']:,.0f} ms; peak RSS "
            + ("n/a" if rss is None else f"{rss:,.0f} MiB")
        )
    for name, q in report.get("queue_with_worker_ms", {}).items():
        lines.append(
            f"end of a run with the worker on ({name.replace('_', ' ')}): p99 "
            f"{q['with_review']['p99']:.2f} ms with a review queued, "
            f"{q['without_review']['p99']:.2f} ms without (adds {q['added_p99']:.2f} ms); "
            f"{q['reviewed_during_runs']} reviewed during the runs"
        )
    return lines
