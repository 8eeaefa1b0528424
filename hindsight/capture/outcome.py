"""How a captured run ended, when the application does not say
(docs/architecture.md#a-framework-integration).

Confidence only moves on runs with a known outcome (docs/concepts.md#experiences-and-confidence), so
every framework integration judges the runs it captures with :func:`detect_outcome` unless it is
given its own ``outcome=`` callable (which then decides alone: ``None`` from it means unknown). The
rules, in order, on the trajectory's events:

1. the framework raised (an ``error`` event, or the integration marked the run failed) ->
   ``failure``;
2. a tool call failed or timed out and no tool call succeeded after it (the agent never found
   a way around it) -> ``failure``;
3. a non-blank final answer -> ``success``;
4. otherwise (no answer: a run cut off, a chain with no text output) -> ``unknown``.

A run paused at an interrupt, or stored as incomplete, keeps what its integration set.
"""

from __future__ import annotations

from typing import Any

from hindsight._errors import UsageError
from hindsight.models import EventStatus, EventType, Outcome, Trajectory

__all__ = ["detect_outcome", "judge"]

_FAILED = (EventStatus.FAILURE, EventStatus.TIMEOUT)
_NAMES = {o.value: o for o in Outcome}


def detect_outcome(trajectory: Trajectory) -> Outcome:
    """The default outcome of a finished run (rules in the module docstring)."""
    if trajectory.outcome is Outcome.FAILURE:
        return Outcome.FAILURE
    events = trajectory.events
    if any(e.event_type is EventType.ERROR for e in events):
        return Outcome.FAILURE
    unresolved = False
    for event in events:
        if event.event_type is not EventType.TOOL_RESULT:
            continue
        if event.status in _FAILED:
            unresolved = True
        elif event.status in (EventStatus.SUCCESS, None):
            unresolved = False
    if unresolved:
        return Outcome.FAILURE
    answered = any(e.event_type is EventType.FINAL_ANSWER and e.content.strip() for e in events)
    return Outcome.SUCCESS if answered else Outcome.UNKNOWN


def judge(verdict: Any) -> Outcome:
    """An outcome from what an ``outcome=`` callable returned: ``True`` / ``False`` /
    ``None`` (unknown) / an :class:`~hindsight.Outcome` or its name.

    Raises:
        UsageError: anything else (the message shows the value).
    """
    if verdict is None:
        return Outcome.UNKNOWN
    if isinstance(verdict, bool):
        return Outcome.SUCCESS if verdict else Outcome.FAILURE
    if isinstance(verdict, Outcome):
        return verdict
    if isinstance(verdict, str) and verdict.strip().lower() in _NAMES:
        return _NAMES[verdict.strip().lower()]
    raise UsageError(
        "an outcome must be True, False, None or one of success, failure, partial, unknown; "
        f"got {verdict!r:.80}"
    )
