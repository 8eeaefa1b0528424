"""Contrastive review: what a failed run did differently from a reference (issue 15, item 3)."""

from __future__ import annotations

import re

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
from hindsight.review.contrast import Action, diff_actions, readable_class, value_class
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


def test_value_classes_hide_values() -> None:
    assert value_class("payment_id", "gift_card_8190333") == "gift_card"
    assert value_class("user_id", "mia_li_3668") == "a user id"
    assert value_class("reservation_id", "HXDUBJ") == "a reservation id"
    assert value_class("flights", [{"flight_number": "HAT1", "date": "2024-05-01"}] * 2) == (
        "2 x flight"
    )
    assert value_class("cabin", "basic_economy") == "basic_economy"
    assert value_class("amount", 42) == "a number"


def test_same_mistake_in_two_tasks_is_one_lesson_key() -> None:
    reviewer = HeuristicReviewer()
    keys = []
    for cert, card, paid in (
        ("certificate_1234", "credit_card_9876", 250),
        ("certificate_555", "credit_card_777", 80),
    ):
        ok = {"payment_methods": [{"payment_id": cert, "amount": paid},
                                  {"payment_id": card, "amount": 9}]}  # fmt: skip
        bad = {"payment_methods": [{"payment_id": cert, "amount": paid + 9}]}
        failed = _run([("book_trip", bad)], Outcome.FAILURE, expected=[("book_trip", ok)])
        [lesson] = reviewer.review_sync(failed)
        assert lesson.kind is ExperienceKind.RULE
        keys.append(lesson.metadata["lesson_key"])
        assert cert not in lesson.content and str(paid) not in lesson.content
        assert "payment_methods" in lesson.content and "book_trip" in lesson.content
    assert keys[0] == keys[1]


def test_contrast_with_a_successful_run_names_both_sources() -> None:
    reviewer = HeuristicReviewer()
    success = _run([("cancel_order", {"order_id": "Q1", "reason": "change_of_plan"})],
                   Outcome.SUCCESS)  # fmt: skip
    failed = _run([("transfer_to_human", {"summary": "user wants to cancel"})], Outcome.FAILURE)
    lessons = reviewer.contrast_sync(failed, success)
    texts = " ".join(lesson.content for lesson in lessons)
    assert "cancel_order" in texts and "transfer_to_human" in texts
    for lesson in lessons:
        assert lesson.sources == [success.id]
        roles = {s["role"] for s in lesson.metadata["support"]}
        assert roles == {"failed_with_difference", "reference_success"}
        assert "Q1" not in lesson.content


def test_successful_runs_and_runs_without_evidence_teach_no_rule() -> None:
    reviewer = HeuristicReviewer()
    ok = _run([("book_trip", PAY_OK)], Outcome.SUCCESS, expected=[("book_trip", PAY_OK)])
    plain_failure = _run([("book_trip", PAY_BAD)], Outcome.FAILURE)
    assert reviewer.review_sync(ok) == []
    assert reviewer.review_sync(plain_failure) == []  # no reference: the episode says it


def test_chinese_run_gives_chinese_rules() -> None:
    reviewer = HeuristicReviewer()
    failed = _run(
        [("book_trip", PAY_BAD)],
        Outcome.FAILURE,
        task="我想订一张机票，用代金券付款",
        expected=[("book_trip", PAY_OK)],
    )
    [lesson] = reviewer.review_sync(failed)
    assert re.search(r"[\u4e00-\u9fff]", lesson.content)
    assert "book_trip" in lesson.content


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
    for outcome, word in ((Outcome.FAILURE, "went through"), (Outcome.SUCCESS, "worked")):
        traj = Trajectory(tenant_id="t", task="book it", events=events, outcome=outcome)
        fixes = [x for x in reviewer.review_sync(traj) if x.kind is ExperienceKind.IMPROVEMENT]
        assert fixes and all(word in x.content for x in fixes)
        if outcome is Outcome.FAILURE:
            assert not any("worked" in x.content for x in fixes)
        assert all("255" not in x.content and "250" not in x.content for x in fixes)


def _missing_rule(failed: Trajectory) -> object:
    [rule] = [
        lesson
        for lesson in HeuristicReviewer().review_sync(failed)
        if lesson.metadata.get("contrast", {}).get("op") == "missing"
    ]
    return rule


def test_a_missing_call_says_what_the_failed_run_did_instead() -> None:
    expected = [("cancel_order", {"order_id": "Q1"})]
    handed_off = _missing_rule(
        _run([("transfer_to_human", {"summary": "x"})], Outcome.FAILURE, expected=expected)
    )
    stopped = _missing_rule(
        _run([("get_order", {"order_id": "Q1"})], Outcome.FAILURE, expected=expected)
    )
    silent = _missing_rule(_run([], Outcome.FAILURE, expected=expected))
    assert "it called transfer_to_human instead" in handed_off.content  # type: ignore[attr-defined]
    assert "its last call was get_order" in stopped.content  # type: ignore[attr-defined]
    assert "it only replied in text" in silent.content  # type: ignore[attr-defined]
    rules = (handed_off, stopped, silent)
    assert len({r.metadata["lesson_key"] for r in rules}) == 1  # type: ignore[attr-defined]
    assert len({r.metadata["variants"]["template"] for r in rules}) == 1  # type: ignore[attr-defined]


def test_missing_call_rules_of_several_runs_fold_into_one_naming_each_instead() -> None:
    from hindsight.testing import test_memory

    mem = test_memory()
    try:
        expected = [("cancel_order", {"order_id": "Q1"})]
        for i, calls in enumerate(
            (
                [("transfer_to_human", {"summary": "x"})],
                [("get_order", {"order_id": "Q1"})],
                [("transfer_to_human", {"summary": "y"})],
            )
        ):
            failed = _run(calls, Outcome.FAILURE, task=f"cancel order Q{i}", expected=expected)
            mem.store_episode(failed.model_copy(update={"tenant_id": "acme"}))
        assert mem.flush(timeout=60)
        [rule] = [
            e
            for e in mem.list_experiences(tenant_id="acme")
            if e.metadata.get("contrast", {}).get("op") == "missing"
        ]
        assert sorted(rule.metadata["variants"]["values"]) == [
            "it called transfer_to_human instead",
            "its last call was get_order",
        ]
        assert "transfer_to_human instead; or its last call was get_order" in rule.content or (
            "get_order; or it called transfer_to_human" in rule.content
        )
        assert len(rule.source_trajectory_ids) == 3
    finally:
        mem.close()


def test_what_a_run_did_instead_never_flips_a_rules_polarity() -> None:
    """Missing-call rules of two tools differ in the tool and in what the failed run did
    instead; the guard's conflict check must never read them as opposed advice."""
    from hindsight.guard.conflict import compare, polarity
    from hindsight.review.heuristic._templates import render

    for lang in ("en", "zh"):
        ref = render("ref_success", lang)
        insteads = [
            render("instead_called", lang, other="transfer_to_human_agents"),
            render("instead_stopped", lang, last="get_reservation_details"),
            render("instead_nothing", lang),
        ]
        texts = [render("missing", lang, tool="cancel_order", instead=i, ref=ref) for i in insteads]
        texts.append(render("missing_fewer", lang, tool="cancel_order", ref=ref))
        assert len({polarity(t) for t in texts}) == 1, (lang, texts)
        assert not any(compare(a, b).contradicts() for a in texts for b in texts), lang


def test_a_run_that_called_the_tool_too_few_times_is_not_told_it_never_called_it() -> None:
    """The reference changed two things with one call each; the failed run made one of the two
    calls: the rule says it made fewer calls (its own key), never "ended without calling it"."""
    seg = [{"flight_number": "HAT001", "date": "2024-05-01"}]
    tool = "update_reservation_flights"
    two = [(tool, {"reservation_id": "AB12CD", "flights": seg}),
           (tool, {"reservation_id": "XY34ZW", "flights": seg})]  # fmt: skip
    for lang, task in (("en", "change both of my trips"), ("zh", "请修改我的两个行程")):
        failed = _run(two[:1], Outcome.FAILURE, task=task, expected=two)
        [diff] = diff_actions([Action(t, a) for t, a in two], [Action(t, a) for t, a in two[:1]])
        assert (diff.op, diff.how, diff.key_id) == (
            "missing",
            "fewer",
            "missing:update_reservation_flights:fewer",
        )
        rule = _missing_rule(failed)
        text = rule.content  # type: ignore[attr-defined]
        assert rule.metadata["lesson_key"].endswith("missing:update_reservation_flights:fewer")  # type: ignore[attr-defined]
        assert "variants" not in rule.metadata  # type: ignore[attr-defined]
        assert "without calling" not in text and "last call was" not in text, text
        assert ("for each" in text) if lang == "en" else ("每一项" in text), text
    # a run that never called it keeps the "instead" rule
    never = _missing_rule(_run([], Outcome.FAILURE, expected=two))
    assert "ended without calling it" in never.content  # type: ignore[attr-defined]


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
    assert "when called with 3 flights:" in failure.content, failure.content
    # another value of the same class: "other flights" for a plural key, never "another flights"
    from hindsight.review.heuristic._lessons import Context, _changes

    ctx = Context(lang="en", trajectory_id="r", calls=[], outcome=Outcome.SUCCESS)
    other = [{"flight_number": "HAT002", "date": "2024-05-02"}]
    assert _changes(ctx, {"flights": [seg]}, {"flights": other}) == "other flights"
    assert _changes(ctx, {"payment_id": "x1"}, {"payment_id": "x2"}) == "another payment_id"
