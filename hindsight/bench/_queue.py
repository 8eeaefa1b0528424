"""What queuing a review adds to the end of an agent run, with the review worker running
(the goal: at most 5 ms at p99; docs/benchmarks.md#hindsight-bench)."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

from hindsight.bench._data import latency_summary
from hindsight.bench._deploy import open_deployment
from hindsight.bench._size import _timed
from hindsight.models import Event, EventStatus, EventType, Outcome, Trajectory

__all__ = ["queue_latency"]


def _order_run(i: int, tenant: str) -> Trajectory:
    """One finished support run: a timed-out tool call, a working one, the answer."""

    def tool(name: str, output: str, status: EventStatus) -> list[Event]:
        return [
            Event(event_type=EventType.TOOL_CALL, tool_name=name, tool_args={"order_id": str(i)}),
            Event(event_type=EventType.TOOL_RESULT, tool_name=name, content=output, status=status),
        ]

    return Trajectory(
        tenant_id=tenant,
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
    runs: int = 200, *, gap_seconds: float = 0.0, parent: Path | None = None
) -> dict[str, Any]:
    """Time :meth:`hindsight.Memory.store_episode` (what leaving a ``memory.record(...)``
    block calls) for ``runs`` finished runs, alternately with and without queuing a review,
    on one store whose in-process worker reviews the queued runs meanwhile (heuristic
    reviewer). ``gap_seconds`` is the agent's own time in each run (a model call); 0 runs
    them back to back, the worst case (reviews wait until the burst ends).

    Returns:
        ``{"with_review": {"p50", "p99"}, "without_review": {"p50", "p99"}, "added_p99",
        "reviewed_during_runs", "reviewed"}``: milliseconds, then how many reviews were done
        before the last run ended and after a flush.

    Raises:
        ValueError: ``runs`` < 4 or ``gap_seconds`` < 0.
    """
    if runs < 4 or gap_seconds < 0:
        raise ValueError(f"runs must be >= 4 and gap_seconds >= 0, got {runs}, {gap_seconds}")
    times: dict[bool, list[float]] = {True: [], False: []}
    with open_deployment(parent, background_review=True) as dep:
        mem, tenant = dep.memory, dep.tenants[0]
        for i in range(runs):
            review = i % 4 in (0, 3)  # alternate which mode goes first
            if gap_seconds:
                time.sleep(gap_seconds)
            run = _order_run(i, tenant)
            times[review].append(_timed(partial(mem.store_episode, run, review=review)))
        during = mem.stats(tenant_id=tenant)["review_jobs"]["succeeded"]
        mem.flush(timeout=600)
        reviewed = mem.stats(tenant_id=tenant)["review_jobs"]["succeeded"]
    stats = {
        key: latency_summary(times[flag], (50, 99))
        for key, flag in (("with_review", True), ("without_review", False))
    }
    return {
        **stats,
        "added_p99": stats["with_review"]["p99"] - stats["without_review"]["p99"],
        "reviewed_during_runs": during,
        "reviewed": reviewed,
    }
