"""How a captured run ended, when the application does not say
(docs/architecture.md#a-framework-integration).

Confidence only moves on runs with a known outcome (docs/concepts.md#experiences-and-confidence), so
every framework integration judges the runs it captures with :func:`detect_outcome` unless it is
given its own ``outcome=`` callable (which then decides alone: ``None`` from it means unknown). The
rules, in order, on the trajectory's events:

1. the run raised (the integration marked it failed: the exception left the agent) ->
   ``failure``;
2. an ``error`` event (a step raised inside the run: a node, a chain, a model) and nothing
   succeeded after it (no successful tool result or model call, no non-blank final answer)
   -> ``failure``; a step that raised and was retried, or replaced by a fallback, and the run
   went on is not a failure of the run: the exception did not leave it;
3. a tool call failed or timed out and no tool call succeeded after it (the agent never found
   a way around it) -> ``failure``;
4. a non-blank final answer -> ``success``;
5. otherwise (no answer: a run cut off, a chain with no text output) -> ``unknown``.

A run paused at an interrupt, or stored as incomplete, keeps what its integration set.
"""

from __future__ import annotations

from typing import Any

from hindsight._errors import UsageError
from hindsight.models import EventStatus, EventType, Outcome, Trajectory

__all__ = ["detect_outcome", "judge"]

_FAILED = (EventStatus.FAILURE, EventStatus.TIMEOUT)
_SUCCEEDED = (EventStatus.SUCCESS, None)
_NAMES = {o.value: o for o in Outcome}


def detect_outcome(trajectory: Trajectory) -> Outcome:
    """The default outcome of a finished run (rules in the module docstring)."""
    if trajectory.outcome is Outcome.FAILURE:
        return Outcome.FAILURE
    error = tool = answered = False  # an error / a failed tool call not got past yet
    for event in trajectory.events:
        kind, status = event.event_type, event.status
        if kind is EventType.ERROR:
            error = True
        elif kind is EventType.TOOL_RESULT:
            if status in _FAILED:
                tool = True
            elif status in _SUCCEEDED:
                error = tool = False
        elif kind is EventType.MODEL_CALL:
            if status in _SUCCEEDED:
                error = False
        elif kind is EventType.FINAL_ANSWER and event.content.strip():
            error, answered = False, True
    if error or tool:
        return Outcome.FAILURE
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
