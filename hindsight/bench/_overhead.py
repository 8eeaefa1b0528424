"""What capture adds to an agent run, background work included (the handler,
the middleware and the nodes; goal: <= 5 ms CPU added per run on the agent's path,
docs/benchmarks.md#capture-overhead).

Framework-free: the framework integrations build the two runs (their own bench functions, found
through the ``hindsight.bench`` entry point group, :mod:`hindsight.bench._goals`) and hand them
to :func:`added_cost`, which times them in pairs:

* **without**: the agent run with no hindsight at all (``quiet`` switches off anything of
  hindsight that hooks every run of the process, e.g. the LangGraph capture router);
* **with**: the same run with capture on, *then* its background work (``background``: the
  background writer stores the trajectory, the review runs), both inside the timed region, so
  the figure is the whole cost the process pays for that run, not only what the caller waits;
* **side** (optional): work the user asked for on the with side, e.g. the recall a recall node
  or the middleware makes, timed where the run made it (:class:`Requested` wraps the memory's
  ``recall``) and subtracted (reported apart). Timed inside the run, not again after it: a
  recall right after a write (the with run's background work) costs more than the next one,
  so a recall timed apart subtracts what the run did not spend.

The order of the two runs flips every pair (drift of machine load hits both alike). Each run is
timed in wall time (``perf_counter``) and in CPU time of the whole process (``process_time``:
every thread, so the background writer and the review count). Per repeat: medians over the
pairs; the figures are medians over the repeats.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["Requested", "added_cost"]

Run = Callable[[], Any]


class Requested:
    """Wall and CPU milliseconds of work the user asked for, timed where a run does it:
    ``memory.recall = probe.wrap(memory.recall)``, then :meth:`take` after each run (CPU of
    the whole process while the call runs: the agent waits for it)."""

    def __init__(self) -> None:
        self.wall_ms = 0.0
        self.cpu_ms = 0.0

    def wrap(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """``call``, timed into this probe."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                self.wall_ms += (time.perf_counter() - wall) * 1000
                self.cpu_ms += (time.process_time() - cpu) * 1000

        return timed

    def take(self) -> tuple[float, float]:
        """``(wall ms, CPU ms)`` timed since the last call; resets them."""
        out = (self.wall_ms, self.cpu_ms)
        self.wall_ms = self.cpu_ms = 0.0
        return out


def _timed(run: Run) -> tuple[float, float]:
    """Milliseconds of ``run()``: (wall, process CPU)."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def added_cost(
    without: Run,
    with_: Run,
    *,
    background: Run,
    runs: int,
    repeats: int = 1,
    warmup: int = 3,
    side: Requested | None = None,
    quiet: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> dict[str, Any]:
    """Added cost per run of ``with_`` (plus ``background``) over ``without`` (module doc).

    Args:
        without: one run of the agent without hindsight (run inside ``quiet()``).
        with_: one run of the same agent with capture on.
        background: waits for the with run's background work (writer, review); timed.
        runs: timed pairs per repeat, >= 1.
        repeats: repeats, >= 1 (the figures are medians over them).
        warmup: untimed pairs before the first repeat.
        side: the probe of the requested work inside ``with_`` to subtract (timed where
            the run did it, :class:`Requested`).
        quiet: context manager factory for the without runs.

    Returns:
        Milliseconds, medians over repeats of the per-repeat medians over pairs:
        ``{"runs", "repeats", "without": {"wall_ms", "cpu_ms"}, "with": {...} (run +
        background), "added": {...} (with - without - side), "on_path_added": {...} (the
        with run alone - without - side: what the agent's caller waits for), "side": {...} or
        None, "ratio": {"wall", "cpu"} ((with - side) / without)}``.

    Raises:
        ValueError: ``runs`` or ``repeats`` < 1.
    """
    if runs < 1 or repeats < 1:
        raise ValueError(f"runs and repeats must be >= 1, got {runs} and {repeats}")

    def base() -> tuple[float, float]:
        with quiet():
            return _timed(without)

    for _ in range(warmup):
        base()
        with_()
        background()
    per_repeat: list[dict[str, tuple[float, float]]] = []
    for _ in range(repeats):
        pairs: dict[str, list[tuple[float, float]]] = {
            k: [] for k in ("without", "with", "on_path", "side")
        }
        for i in range(runs):
            if i % 2:
                b = base()
            if side is not None:
                side.take()  # what was timed before this run is not its own
            w = _timed(with_)
            s = side.take() if side is not None else (0.0, 0.0)
            bg = _timed(background)
            if not i % 2:
                b = base()
            pairs["without"].append(b)
            pairs["with"].append((w[0] + bg[0], w[1] + bg[1]))
            pairs["on_path"].append(w)
            pairs["side"].append(s)
        per_repeat.append(_pair_medians(pairs))

    def med(key: str) -> dict[str, float]:
        return {
            "wall_ms": statistics.median(r[key][0] for r in per_repeat),
            "cpu_ms": statistics.median(r[key][1] for r in per_repeat),
        }

    without_ms = med("without")
    return {
        "runs": runs,
        "repeats": repeats,
        "without": without_ms,
        "with": med("with"),
        "added": med("added"),
        "on_path_added": med("on_path_added"),
        "side": med("side") if side is not None else None,
        "ratio": {
            clock: statistics.median(r["ratio"][k] for r in per_repeat)
            for k, clock in enumerate(("wall", "cpu"))
        },
    }


def _pair_medians(pairs: dict[str, list[tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """Per-pair differences and ratios of one repeat, then their medians (wall, CPU)."""

    def median_of(values: list[tuple[float, float]]) -> tuple[float, float]:
        return statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)

    rows = list(zip(pairs["without"], pairs["with"], pairs["on_path"], pairs["side"], strict=True))
    added = [(w[0] - b[0] - s[0], w[1] - b[1] - s[1]) for b, w, _, s in rows]
    on_path = [(p[0] - b[0] - s[0], p[1] - b[1] - s[1]) for b, _, p, s in rows]
    ratio = [
        (
            (w[0] - s[0]) / b[0] if b[0] > 0 else float("inf"),
            (w[1] - s[1]) / b[1] if b[1] > 0 else float("inf"),
        )
        for b, w, _, s in rows
    ]
    return {
        "without": median_of(pairs["without"]),
        "with": median_of(pairs["with"]),
        "side": median_of(pairs["side"]),
        "added": median_of(added),
        "on_path_added": median_of(on_path),
        "ratio": median_of(ratio),
    }
