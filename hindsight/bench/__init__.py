"""Benchmarks of a deployment: recall latency, ingest throughput, the end of a run, peak RSS
and cold start, at several store sizes (docs/benchmarks.md#hindsight-bench).

Run with ``hindsight bench`` (docs/cli.md, docs/benchmarks.md) or ``python -m hindsight.bench``.
The performance goals with their anchors and ratios in one run: ``hindsight bench goals``
(:mod:`._goals`, docs/benchmarks.md#the-goals-in-one-run; the capture rows come from the
integrations' ``hindsight.bench`` entry points).
Numbers are wall-clock on the machine it runs on; tests check their shape, never their values.

May import: the engine (it measures a deployment through :class:`hindsight.Memory`) and
everything below it. Never the CLI or the service: ``hindsight bench`` (the CLI) calls this
package, and ``python -m hindsight.bench`` hands over to the CLI by module name (:mod:`.__main__`).
"""

from __future__ import annotations

from hindsight.bench._data import latency_summary, peak_rss_mb, percentile, synthetic_lessons
from hindsight.bench._queue import queue_latency
from hindsight.bench._recall import RECALL_LAYOUTS, recall_vs_edge, render_recall_lines
from hindsight.bench._run import DEFAULT_SIZES, GOALS, parse_sizes, render_text, run_bench
from hindsight.bench._size import INGEST_BATCH, CachingEmbedder, bench_size, cold_start_ms

__all__ = [
    "DEFAULT_SIZES",
    "GOALS",
    "INGEST_BATCH",
    "RECALL_LAYOUTS",
    "CachingEmbedder",
    "bench_size",
    "cold_start_ms",
    "latency_summary",
    "parse_sizes",
    "peak_rss_mb",
    "percentile",
    "queue_latency",
    "recall_vs_edge",
    "render_recall_lines",
    "render_text",
    "run_bench",
    "synthetic_lessons",
]
