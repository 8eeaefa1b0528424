"""The default outcome detector of the integrations (hindsight.capture.outcome)."""

from __future__ import annotations

import pytest

from hindsight import Event, EventStatus, EventType, Outcome, Trajectory, UsageError
from hindsight.capture.outcome import detect_outcome, judge


def run(
    *steps: tuple[EventType, EventStatus | None, str], outcome: Outcome = Outcome.UNKNOWN
) -> Trajectory:
    tid = Trajectory(tenant_id="t").id
    events = [
        Event(
            trajectory_id=tid,
            event_type=kind,
            status=status,
            content=text,
            tool_name="order_query"
            if kind in (EventType.TOOL_CALL, EventType.TOOL_RESULT)
            else None,
        )
        for kind, status, text in steps
    ]
    return Trajectory(id=tid, tenant_id="t", events=events, outcome=outcome)


ASK = (EventType.USER_MESSAGE, None, "Where is order 42?")
ANSWER = (EventType.FINAL_ANSWER, None, "It shipped.")
TIMEOUT = (EventType.TOOL_RESULT, EventStatus.TIMEOUT, "timed out")
OK = (EventType.TOOL_RESULT, EventStatus.SUCCESS, "shipped")
ERROR = (EventType.ERROR, EventStatus.FAILURE, "RecursionError: maximum recursion depth")
TIMED_OUT = (EventType.ERROR, EventStatus.TIMEOUT, "TimeoutError: warehouse timed out")
MODEL_OK = (EventType.MODEL_CALL, EventStatus.SUCCESS, "Let me look it up.")
MODEL_FAILED = (EventType.MODEL_CALL, EventStatus.FAILURE, "RateLimitError")


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ((ASK, OK, ANSWER), Outcome.SUCCESS),
        ((ASK, TIMEOUT, OK, ANSWER), Outcome.SUCCESS),  # the agent found a way around it
        ((ASK, OK, TIMEOUT, ANSWER), Outcome.FAILURE),  # it answered anyway: unresolved
        ((ASK, ERROR), Outcome.FAILURE),  # a step raised and nothing happened after it
        # a step raised inside the run and the run went on (a retry, a fallback): the
        # exception did not leave the run, what came after it decides
        ((ASK, ERROR, ANSWER), Outcome.SUCCESS),
        ((ASK, TIMED_OUT, OK, ANSWER), Outcome.SUCCESS),
        ((ASK, ERROR, MODEL_OK), Outcome.UNKNOWN),  # went on, but no answer
        ((ASK, ERROR, MODEL_FAILED), Outcome.FAILURE),  # the next step failed too
        ((ASK, ERROR, TIMEOUT, ANSWER), Outcome.FAILURE),  # a failed tool call is not got past
        ((ASK, ERROR, (EventType.FINAL_ANSWER, None, "  ")), Outcome.FAILURE),  # blank answer
        ((ASK, ANSWER, ERROR), Outcome.FAILURE),  # raised after the answer
        ((ASK, TIMEOUT, ERROR, OK, ANSWER), Outcome.SUCCESS),
        ((ASK, ERROR, ANSWER, ERROR), Outcome.FAILURE),
        ((ASK, OK), Outcome.UNKNOWN),  # no answer: cut off, or a chain without text
        ((ASK, OK, (EventType.FINAL_ANSWER, None, "  ")), Outcome.UNKNOWN),
    ],
)
def test_rules(steps: tuple, expected: Outcome) -> None:
    assert detect_outcome(run(*steps)) is expected


@pytest.mark.parametrize(
    "steps", [(ASK, OK, ANSWER), (ASK, ERROR, ANSWER), (ASK, TIMED_OUT, MODEL_OK, ANSWER)]
)
def test_a_run_marked_failed_stays_failed(steps: tuple) -> None:
    """The integration marks a run whose exception left it: nothing after an error in the
    events makes it a success."""
    assert detect_outcome(run(*steps, outcome=Outcome.FAILURE)) is Outcome.FAILURE


def test_judge() -> None:
    assert [judge(v) for v in (True, False, None, "Success", Outcome.PARTIAL)] == [
        Outcome.SUCCESS,
        Outcome.FAILURE,
        Outcome.UNKNOWN,
        Outcome.SUCCESS,
        Outcome.PARTIAL,
    ]
    with pytest.raises(UsageError, match="outcome must be"):
        judge("great")
