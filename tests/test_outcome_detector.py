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


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ((ASK, OK, ANSWER), Outcome.SUCCESS),
        ((ASK, TIMEOUT, OK, ANSWER), Outcome.SUCCESS),  # the agent found a way around it
        ((ASK, OK, TIMEOUT, ANSWER), Outcome.FAILURE),  # it answered anyway: unresolved
        ((ASK, (EventType.ERROR, EventStatus.FAILURE, "RecursionError")), Outcome.FAILURE),
        ((ASK, OK), Outcome.UNKNOWN),  # no answer: cut off, or a chain without text
        ((ASK, OK, (EventType.FINAL_ANSWER, None, "  ")), Outcome.UNKNOWN),
    ],
)
def test_rules(steps: tuple, expected: Outcome) -> None:
    assert detect_outcome(run(*steps)) is expected


def test_a_run_marked_failed_stays_failed() -> None:
    assert detect_outcome(run(ASK, OK, ANSWER, outcome=Outcome.FAILURE)) is Outcome.FAILURE


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
