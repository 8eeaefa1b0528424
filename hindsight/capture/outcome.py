"""How a captured run ended, when the application does not say
(docs/architecture.md#a-framework-integration).

Confidence only moves on runs with a known outcome (docs/concepts.md#experiences-and-confidence), so
every framework integration judges the runs it captures with :func:`detect_outcome` unless it is
given its own ``outcome=`` callable (which then decides alone: ``None`` from it means unknown). The
rules, in order, on the trajectory's events:

1. the run raised (the integration marked it failed: the exception left the agent) ->
   ``failure``;
2. a tool call failed or timed out (a failed ``tool_result``, or an ``error`` event that
   names its tool) and no tool call made after that succeeded (the agent
   never found a way around it: a retry or another tool) -> ``failure``; calls made side by
   side with it do not count, whichever finished first;
3. a step raised inside the run and the exception was caught there (an ``error`` event: a
   node, a chain; or a failed model call), and nothing succeeded after it -> ``failure``
   when nothing came after it, ``unknown`` when only an answer did (a retry that worked and
   an apology for the error read the same); a successful model call or tool call after it
   (the run went on: a retry, a fallback) leaves the rules below to decide;
4. a non-blank final answer -> ``success``;
5. otherwise (no answer: a run cut off, a chain with no text output) -> ``unknown``.

A model call stored without a result (``metadata.incomplete``: the run ended first) is no
evidence either way. A run paused at an interrupt, or stored as incomplete, keeps what its
integration set.
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
    began: dict[str, int] = {}  # where each tool call was made, by event id and call id
    failed_tools: list[int] = []  # positions of failed tool results not got past yet
    raised: list[int] = []  # errors and failed model calls not got past yet
    answered = -1  # position of the last non-blank answer
    for i, event in enumerate(trajectory.events):
        kind, status = event.event_type, event.status
        if kind is EventType.TOOL_CALL:
            began[event.event_id] = i
            if event.tool_call_id:  # the latest call of an id: a retry may reuse it
                began[event.tool_call_id] = i
        elif kind is EventType.ERROR and event.tool_name:  # a tool's error, told as an error
            failed_tools.append(i)
        elif kind is EventType.TOOL_RESULT:
            if status in _FAILED:
                failed_tools.append(i)
            elif status in _SUCCEEDED:
                start = began.get(event.parent_id or "", began.get(event.tool_call_id or "", i))
                failed_tools = [f for f in failed_tools if f > start]
                raised = [r for r in raised if r > start]
        elif kind is EventType.MODEL_CALL:
            if (event.metadata or {}).get("incomplete"):
                continue  # no result: the run ended before the model answered
            if status in _FAILED:
                raised.append(i)
            elif status in _SUCCEEDED:
                raised = []
        elif kind is EventType.ERROR:
            raised.append(i)
        elif kind is EventType.FINAL_ANSWER and event.content.strip():
            answered = i
    if failed_tools:
        return Outcome.FAILURE
    if raised:  # only an answer after it: unknown; nothing after it: failure
        return Outcome.UNKNOWN if raised[-1] < answered else Outcome.FAILURE
    return Outcome.SUCCESS if answered >= 0 else Outcome.UNKNOWN


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
