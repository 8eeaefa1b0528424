"""Benchmarks of a deployment: recall latency, ingest throughput, the end of a run, peak RSS
and cold start, at several store sizes (issue 10, item 1).

Run with ``hindsight bench`` (docs/cli.md, docs/benchmarks.md) or ``python -m hindsight.bench``.
Numbers are wall-clock on the machine it runs on; tests check their shape, never their values.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hindsight.bench._data import latency_summary, peak_rss_mb, percentile, synthetic_lessons
from hindsight.bench._queue import queue_latency
from hindsight.bench._run import DEFAULT_SIZES, GOALS, parse_sizes, render_text, run_bench
from hindsight.bench._size import INGEST_BATCH, CachingEmbedder, bench_size, cold_start_ms

__all__ = [
    "DEFAULT_SIZES",
    "GOALS",
    "INGEST_BATCH",
    "CachingEmbedder",
    "bench_size",
    "cold_start_ms",
    "latency_summary",
    "main",
    "parse_sizes",
    "peak_rss_mb",
    "percentile",
    "queue_latency",
    "render_text",
    "run_bench",
    "synthetic_lessons",
]


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m hindsight.bench [options]``: the same as ``hindsight bench [options]``."""
    from hindsight.cli._app import main as cli_main

    sys.argv = ["hindsight", "bench", *(sys.argv[1:] if argv is None else argv)]
    cli_main()
