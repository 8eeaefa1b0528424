"""Contrast: what a failed run did differently from a reference (hindsight.review.contrast),
and that one comparison alone is never written as a rule by the heuristic reviewer: without a
condition that separates outcomes across runs it would be a truism
(docs/review.md#condition-mining)."""

from __future__ import annotations

import pytest

from hindsight.models import (
    Event,
    EventStatus,
    EventType,
    ExpectedAction,
    ExperienceKind,
    Outcome,
    OutcomeEvidence,
    Trajectory,
)
from hindsight.review.contrast import (
    Action,
    diff_actions,
    kept_as_sent,
    readable_class,
    value_class,
)
from hindsight.review.heuristic import HeuristicReviewer


def _run(
    calls: list[tuple[str, dict[str, object]]],
    outcome: Outcome,
    *,
    task: str = "I want to book a trip",
    expected: list[tuple[str, dict[str, object]]] | None = None,
) -> Trajectory:
    events = [Event(event_type=EventType.USER_MESSAGE, content=task)]
    for i, (tool, args) in enumerate(calls):
        events.append(
            Event(
                event_type=EventType.TOOL_CALL,
                tool_name=tool,
                tool_args=args,
                tool_call_id=f"c{i}",
            )
        )
        events.append(
            Event(
                event_type=EventType.TOOL_RESULT,
                tool_name=tool,
                tool_call_id=f"c{i}",
                content="ok",
                status=EventStatus.SUCCESS,
            )
        )
    evidence = None
    if expected is not None:
        evidence = OutcomeEvidence(
            expected_actions=[ExpectedAction(tool=t, args=a) for t, a in expected]
        )
    return Trajectory(tenant_id="t", task=task, events=events, outcome=outcome, evidence=evidence)


PAY_OK = {"payment_methods": [{"payment_id": "certificate_111", "amount": 250},
                              {"payment_id": "credit_card_222", "amount": 5}]}  # fmt: skip
PAY_BAD = {"payment_methods": [{"payment_id": "certificate_111", "amount": 255}]}


def test_diff_ops_and_classes() -> None:
    ref = [
        Action("get_order", {"id": "A1"}),  # read-only: never compared
        Action("book", {"cabin": "economy", "bags": 1, **PAY_OK, "note": "x " * 30}),
        Action("send_receipt", {"to": "me"}),
    ]
    act = [
        Action("book", {"cabin": "business", "bags": 3, **PAY_BAD, "note": "y " * 30}),
        Action("cancel", {"order_id": "A1"}),
    ]
    diffs = {d.key_id: d for d in diff_actions(ref, act)}
    assert diffs["arg:book:cabin:class"].expected == "economy"
    assert diffs["arg:book:cabin:class"].actual == "business"
    assert set(diffs) == {
        "arg:book:cabin:class",
        "arg:book:bags:higher",
        "arg:book:payment_methods:class",
        "missing:send_receipt",
        "extra:cancel",
    }


@pytest.mark.parametrize(
    "kept", [{"_raw": '{"order_id": #W1'}, {"_raw": "cancel it"}, {"_value": [1, 2]}]
)
def test_arguments_kept_as_sent_name_no_argument(kept: dict[str, object]) -> None:
    """Arguments that were not a JSON object (kept as text, or as another JSON value) are not
    compared: ``_raw`` is never taken for an argument; the call still counts for its tool."""
    assert kept_as_sent(kept) and not kept_as_sent({"_raw": "x", "order_id": "#W1"})
    call = Action("cancel_order", {"order_id": "#W1", "reason": "no_longer_needed"})
    sent = Action("cancel_order", kept)
    assert diff_actions([sent], [call]) == diff_actions([call], [sent]) == []
    [missing] = diff_actions([sent], [])
    assert (missing.key_id, missing.expected) == ("missing:cancel_order", "")
    [extra] = diff_actions([], [sent])
    assert (extra.key_id, extra.actual) == ("extra:cancel_order", "")


def test_value_classes_hide_values() -> None:
    assert value_class("payment_id", "gift_card_8190333") == "gift_card"
    assert value_class("user_id", "mia_li_3668") == "a user id"
    assert value_class("reservation_id", "HXDUBJ") == "a reservation id"
    assert value_class("flights", [{"flight_number": "HAT1", "date": "2024-05-01"}] * 2) == (
        "2 x flight"
    )
    assert value_class("cabin", "basic_economy") == "basic_economy"
    assert value_class("amount", 42) == "a number"


@pytest.mark.parametrize(
    ("key", "word"),
    [
        ("status", "a status"),
        ("order_status", "a order status"),
        ("bonus", "a bonus"),
        ("address", "a address"),
        ("addresses", "a address"),
        ("notes", "a note"),
        ("user_names", "a user name"),
        ("movies", "a movie"),
        ("caches", "a cache"),
        ("menu", "a menu"),
    ],
)
def test_an_identifying_value_reads_as_its_key_in_the_singular(key: str, word: str) -> None:
    # the article is the marker of a value that says nothing of its own ("a ..."), not English
    assert value_class(key, "Xq7 Vr9 free text that identifies nothing in particular") == word


@pytest.mark.parametrize("task", ["I want to book a trip", "我想订一张机票，用代金券付款"])
def test_one_comparison_is_never_written_as_a_rule(task: str) -> None:
    reviewer = HeuristicReviewer()
    ok = _run([("book_trip", PAY_OK)], Outcome.SUCCESS, task=task,
              expected=[("book_trip", PAY_OK)])  # fmt: skip
    plain_failure = _run([("book_trip", PAY_BAD)], Outcome.FAILURE, task=task)
    against_expected = _run([("book_trip", PAY_BAD)], Outcome.FAILURE, task=task,
                            expected=[("book_trip", PAY_OK), ("send_receipt", {})])  # fmt: skip
    handed_off = _run([("transfer_to_human", {"summary": "cancel"})], Outcome.FAILURE, task=task,
                      expected=[("cancel_order", {"order_id": "Q1"})])  # fmt: skip
    for traj in (ok, plain_failure, against_expected, handed_off):
        assert reviewer.review_sync(traj) == []  # the difference is the episode's, not a rule
    assert not hasattr(reviewer, "contrast")  # no contrastive step for the heuristic reviewer


def test_a_failed_runs_last_attempt_is_never_written_as_worked() -> None:
    events = [Event(event_type=EventType.USER_MESSAGE, content="book it")]
    for i, (args, ok) in enumerate(((PAY_BAD, False), (PAY_OK, True))):
        events += [
            Event(event_type=EventType.TOOL_CALL, tool_name="book_trip", tool_args=args,
                  tool_call_id=f"c{i}"),
            Event(event_type=EventType.TOOL_RESULT, tool_name="book_trip", tool_call_id=f"c{i}",
                  content="ok" if ok else "Error: payment amount does not add up, total price "
                  "is 255, but paid 250",
                  status=EventStatus.SUCCESS if ok else EventStatus.FAILURE),
        ]  # fmt: skip
    reviewer = HeuristicReviewer()
    for outcome, word in ((Outcome.UNKNOWN, "went through"), (Outcome.SUCCESS, "worked")):
        traj = Trajectory(tenant_id="t", task="book it", events=events, outcome=outcome)
        fixes = [x for x in reviewer.review_sync(traj) if x.kind is ExperienceKind.IMPROVEMENT]
        assert fixes and all(word in x.content for x in fixes)
        if outcome is Outcome.UNKNOWN:
            assert not any("worked" in x.content for x in fixes)
        assert all("255" not in x.content and "250" not in x.content for x in fixes)
    # a run known to have failed proposes no fix at all (the change may be why it failed)
    traj = Trajectory(tenant_id="t", task="book it", events=events, outcome=Outcome.FAILURE)
    assert not [x for x in reviewer.review_sync(traj) if x.kind is ExperienceKind.IMPROVEMENT]


def test_counted_classes_read_as_counts_in_lesson_text() -> None:
    assert readable_class("3 x flight", "flight") == "3 flights"
    assert readable_class("flight", "3 x flight") == "1 flight"
    assert readable_class("flight", "economy") == "flight"
    assert readable_class("certificate + 2 x gift_card", "certificate") == (
        "certificate + 2 gift_cards"
    )
    assert readable_class("2 x box", "") == "2 boxes"
    assert readable_class("2 x company", "") == "2 companies"
    assert readable_class("2 x flight", "", lang="zh") == "2 个 flight"
    # in a fix lesson: the change of a list's length reads as counts, without the raw class
    seg = {"flight_number": "HAT001", "date": "2024-05-01"}
    events = [Event(event_type=EventType.USER_MESSAGE, content="move me to one flight")]
    for i, (flights, status) in enumerate(
        (([seg, seg, seg], EventStatus.FAILURE), ([seg], EventStatus.SUCCESS))
    ):
        args = {"reservation_id": "AB12CD", "flights": flights}
        events += [
            Event(event_type=EventType.TOOL_CALL, tool_name="update_reservation_flights",
                  tool_args=args, tool_call_id=f"c{i}"),
            Event(event_type=EventType.TOOL_RESULT, tool_name="update_reservation_flights",
                  tool_call_id=f"c{i}", status=status,
                  content="Error: too many flights in one change" if i == 0 else "ok"),
        ]  # fmt: skip
    traj = Trajectory(tenant_id="t", task="move me", events=events, outcome=Outcome.SUCCESS)
    lessons = HeuristicReviewer().review_sync(traj)
    fixes = [x for x in lessons if x.kind is ExperienceKind.IMPROVEMENT]
    assert fixes
    text = " ".join(x.content for x in fixes)
    assert "3 flights -> 1 flight" in text and " x flight" not in text, text
    [failure] = [x for x in lessons if x.kind is ExperienceKind.TOOL_RELIABILITY]
    assert "flights" not in failure.content.split("'")[-1], failure.content  # no one-run count
    # another value of the same class: "other flights" for a plural key, never "another flights"
    from hindsight.review.heuristic._lessons import Context, _changes

    ctx = Context(lang="en", trajectory_id="r", calls=[], outcome=Outcome.SUCCESS)
    other = [{"flight_number": "HAT002", "date": "2024-05-02"}]
    assert _changes(ctx, {"flights": [seg]}, {"flights": other}) == "other flights"
    assert _changes(ctx, {"payment_id": "x1"}, {"payment_id": "x2"}) == "another payment_id"
