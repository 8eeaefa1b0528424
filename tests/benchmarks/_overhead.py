"""Paired with/without timing shared by the capture overhead benchmarks
(docs/benchmarks.md#capture-overhead).

Not a test. ``paired`` alternates runs with and without capture (the order flips every pair,
so drift in machine load hits both alike) and reports medians of per-pair ratios, in wall
time (what the agent's caller waits) and in CPU time of the whole process (``process_time``,
all threads: less sensitive to other processes on a shared machine, but it also counts
background threads of ours that run during the timed call).

Modes (``MODES``):

* ``caller``: between pairs, outside the timed region, the background work of the previous
  run finishes (the handler's writer, then the review of the run): the cost the agent's caller
  sees when the process has a spare moment between runs;
* ``back_to_back``: no waiting; the handler's writer overlaps the next runs; review jobs are
  queued in SQL during the timed runs but run after them (as a ``hindsight worker`` process
  would run them), and their time is reported apart (``review_ms_per_run``): capture cost in
  throughput of a saturated process;
* ``back_to_back_review``: no waiting, reviews run in this process too (the in-process worker
  starts a review 50 ms after the last run ended): capture plus review competing for the
  same interpreter.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from hindsight.bench._overhead import Requested

__all__ = ["MODES", "drain_reviews", "no_capture_hook", "paired"]

MODES = ("caller", "back_to_back", "back_to_back_review")


@contextlib.contextmanager
def no_capture_hook() -> Iterator[None]:
    """Runs inside see no hindsight: its process-wide LangChain handlers (the LangGraph capture
    router, the watcher of ``hindsight_langchain._seen``) are off, so the "without" side is a
    process without hindsight (``hindsight_langchain._bench.no_hindsight_hooks``)."""
    try:
        from hindsight_langchain._bench import no_hindsight_hooks
    except ImportError:  # pragma: no cover - langchain extra missing
        yield
        return
    with no_hindsight_hooks():
        yield


def _timed(run: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def paired(
    without: Callable[[], Any],
    with_: Callable[[], Any],
    runs: int,
    *,
    between: Callable[[], Any] = lambda: None,
    side: Requested | None = None,
    warmup: int = 5,
) -> dict[str, float]:
    """Medians of ``runs`` alternating pairs after ``warmup`` pairs.

    Args:
        without, with_: one run each (``without`` is run with the capture hook off).
        between: called after each pair, untimed (``caller`` mode: wait for background work).
        side: the probe of work inside ``with_`` the user asked for (the recall a recall
            node makes: ``memory.recall = probe.wrap(memory.recall)``), timed where the run
            made it; its median is ``side_ms``, subtracted per pair in
            ``ratio_without_side`` (timed apart after the pair, a recall right after the run's
            write costs more than the run's own and subtracted too much).

    Returns:
        ``median_ratio`` (wall), ``median_cpu_ratio``, ``median_ms_without``,
        ``median_ms_with`` and, with ``side``, ``side_ms`` and ``ratio_without_side``.
    """

    def base() -> Any:
        with no_capture_hook():
            return without()

    for _ in range(warmup):
        base()
        with_()
    between()
    ratios, cpu_ratios, b_ms, w_ms, side_ms, rest = [], [], [], [], [], []
    for i in range(runs):
        if side is not None:
            side.take()
        if i % 2:
            b = _timed(base)
        w = _timed(with_)
        s = side.take()[0] / 1000 if side is not None else 0.0
        if not i % 2:
            b = _timed(base)
        between()
        ratios.append(w[0] / b[0])
        cpu_ratios.append(w[1] / b[1] if b[1] > 0 else float("nan"))
        b_ms.append(b[0] * 1000)
        w_ms.append(w[0] * 1000)
        side_ms.append(s * 1000)
        rest.append((w[0] - s) / b[0])
    out = {
        "median_ratio": statistics.median(ratios),
        "median_cpu_ratio": statistics.median(cpu_ratios),
        "median_ms_without": statistics.median(b_ms),
        "median_ms_with": statistics.median(w_ms),
    }
    if side is not None:
        out["side_ms"] = statistics.median(side_ms)
        out["ratio_without_side"] = statistics.median(rest)
    return out


def drain_reviews(memory: Any, runs: int) -> float:
    """Run the queued reviews now (``memory.flush``); returns milliseconds per run."""
    start = time.perf_counter()
    memory.flush(timeout=600)
    return (time.perf_counter() - start) * 1000 / max(runs, 1)
