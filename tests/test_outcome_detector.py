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


MODEL_TIMED_OUT = (EventType.MODEL_CALL, EventStatus.TIMEOUT, "TimeoutError: model timed out")


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ((ASK, OK, ANSWER), Outcome.SUCCESS),
        ((ASK, TIMEOUT, OK, ANSWER), Outcome.SUCCESS),  # the agent found a way around it
        ((ASK, OK, TIMEOUT, ANSWER), Outcome.FAILURE),  # it answered anyway: unresolved
        ((ASK, OK), Outcome.UNKNOWN),  # no answer: cut off, or a chain without text
        ((ASK, OK, (EventType.FINAL_ANSWER, None, "  ")), Outcome.UNKNOWN),
    ],
)
def test_rules(steps: tuple, expected: Outcome) -> None:
    assert detect_outcome(run(*steps)) is expected


@pytest.mark.parametrize("raised", [ERROR, TIMED_OUT, MODEL_FAILED, MODEL_TIMED_OUT])
@pytest.mark.parametrize(
    ("after", "expected"),
    [
        ((), Outcome.FAILURE),  # nothing after it
        ((MODEL_FAILED,), Outcome.FAILURE),  # the next step failed too
        ((ANSWER,), Outcome.UNKNOWN),  # a retry that worked or an apology: cannot tell
        (((EventType.FINAL_ANSWER, None, "  "),), Outcome.FAILURE),  # a blank answer
        ((MODEL_OK,), Outcome.UNKNOWN),  # went on, but no answer
        ((MODEL_OK, ANSWER), Outcome.SUCCESS),  # went on and answered
        ((OK, ANSWER), Outcome.SUCCESS),
        ((TIMEOUT, ANSWER), Outcome.FAILURE),  # a failed tool call is not got past
        ((MODEL_OK, ANSWER, ERROR), Outcome.FAILURE),  # raised after the answer
    ],
)
def test_a_step_that_raised_inside_the_run(raised: tuple, after: tuple, expected: Outcome) -> None:
    """A step (a node, a chain, a model) raised and the exception was caught inside the run
    (a retry, a fallback, the application): what came after it decides."""
    assert detect_outcome(run(ASK, raised, *after)) is expected


@pytest.mark.parametrize("called_again", [False, True])
def test_a_tools_error_told_as_an_error_event_is_a_failed_tool_call(called_again: bool) -> None:
    """The same failure, whichever way a log tells it: as a failed ``tool_result`` or as an
    ``error`` event naming the tool; a call made again that worked gets past either."""
    tool_error = Event(
        event_type=EventType.ERROR,
        status=EventStatus.FAILURE,
        tool_name="order_query",
        content="ConnectionError: warehouse unreachable",
    )
    again = Event(
        event_type=EventType.TOOL_RESULT, tool_name="order_query", status=EventStatus.SUCCESS
    )
    traj = run(ASK, MODEL_OK, ANSWER)
    traj.events[1:1] = [tool_error, *([again] if called_again else [])]
    expected = Outcome.SUCCESS if called_again else Outcome.FAILURE
    assert detect_outcome(traj) is expected
    told_as_result = run(ASK, TIMEOUT, *([OK] if called_again else []), MODEL_OK, ANSWER)
    assert detect_outcome(told_as_result) is expected


@pytest.mark.parametrize("linked_by", ["tool_call_id", "parent_id"])
def test_a_retry_under_the_same_call_id_gets_past_the_failure(linked_by: str) -> None:
    """Some frameworks retry a tool call under its first id; a result names its call by the
    id (or by the call event's id): the latest call of that id is the one it answers."""
    events = [Event(event_type=EventType.USER_MESSAGE, content="Where is order 42?")]
    for status in (EventStatus.TIMEOUT, EventStatus.SUCCESS):
        call = Event(event_type=EventType.TOOL_CALL, tool_name="order_query", tool_call_id="c1")
        result = Event(
            event_type=EventType.TOOL_RESULT,
            tool_name="order_query",
            status=status,
            content="ok" if status is EventStatus.SUCCESS else "timed out",
            **({"tool_call_id": "c1"} if linked_by == "tool_call_id" else {}),
            **({"parent_id": call.event_id} if linked_by == "parent_id" else {}),
        )
        events += [call, result]
    events.append(Event(event_type=EventType.FINAL_ANSWER, content="It shipped."))
    assert detect_outcome(Trajectory(tenant_id="t", events=events)) is Outcome.SUCCESS


def test_a_model_call_without_a_result_is_no_evidence() -> None:
    cut = Event(
        event_type=EventType.MODEL_CALL, status=EventStatus.FAILURE, metadata={"incomplete": True}
    )
    traj = run(ASK, MODEL_OK, ANSWER)
    traj.events.append(cut)  # closed at the run's end (a retried attempt never answered)
    assert detect_outcome(traj) is Outcome.SUCCESS


def _parallel(first: str, *, retried: bool = False) -> Trajectory:
    """A model asks for two lookups side by side; the west one fails, the east one works,
    their results arrive in the order ``first``; with ``retried``, west is called again."""

    def call(cid: str, region: str) -> Event:
        return Event(
            event_type=EventType.TOOL_CALL,
            tool_name=f"{region}_stock",
            tool_call_id=cid,
            tool_args={"sku": "B-7"},
        )

    def result(cid: str, region: str, status: EventStatus) -> Event:
        return Event(
            event_type=EventType.TOOL_RESULT,
            tool_name=f"{region}_stock",
            tool_call_id=cid,
            status=status,
            content="12 in stock" if status is EventStatus.SUCCESS else "timed out",
        )

    west = result("c1", "west", EventStatus.TIMEOUT)
    east = result("c2", "east", EventStatus.SUCCESS)
    events = [
        Event(event_type=EventType.USER_MESSAGE, content="How many B-7 are in stock?"),
        call("c1", "west"),
        call("c2", "east"),
        *((west, east) if first == "west" else (east, west)),
    ]
    if retried:
        events += [call("c3", "west"), result("c3", "west", EventStatus.SUCCESS)]
    events.append(Event(event_type=EventType.FINAL_ANSWER, content="12 in the east."))
    return Trajectory(tenant_id="t", events=events)


@pytest.mark.parametrize("first", ["west", "east"])
def test_calls_side_by_side_do_not_get_past_each_other(first: str) -> None:
    """The same run judged the same whichever result arrived first: a call made before the
    failure was known is no way around it; a call made after it is."""
    assert detect_outcome(_parallel(first)) is Outcome.FAILURE
    assert detect_outcome(_parallel(first, retried=True)) is Outcome.SUCCESS


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
