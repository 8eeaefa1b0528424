"""Missing-call rules as decision-time checks (issue 16, goal A): a rule "failed runs never
called X" triggers on the state-changing calls the failed runs made in X's place, names X and
the classes of the reference calls, and ranks under the tool's own checks. The real heuristic
reviewer on constructed runs, folded through real SQL (SQLite and PostgreSQL), English and
Chinese."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hindsight import Memory
from hindsight.checks import compile_checks
from hindsight.models import (
    Event,
    EventStatus,
    EventType,
    ExpectedAction,
    Experience,
    ExperienceKind,
    Outcome,
    OutcomeEvidence,
    Trajectory,
)
from hindsight.testing import test_memory
from hindsight.writeback import variants

ASK = {
    "en": "Please ship my order {order} with both items",
    "zh": "请把订单 {order} 的两件商品发货",
}
SHIP = "update_order"


def _run(
    order: str,
    calls: list[tuple[str, dict[str, Any]]],
    *,
    lang: str = "en",
    expected: list[tuple[str, dict[str, Any]]] | None = None,
    outcome: Outcome = Outcome.FAILURE,
) -> Trajectory:
    events = [Event(event_type=EventType.USER_MESSAGE, content=ASK[lang].format(order=order))]
    for i, (tool, args) in enumerate(calls):
        events.append(Event(event_type=EventType.TOOL_CALL, tool_name=tool, tool_args=args,
                            tool_call_id=f"c{i}"))  # fmt: skip
        events.append(Event(event_type=EventType.TOOL_RESULT, tool_name=tool, content="ok",
                            tool_call_id=f"c{i}", status=EventStatus.SUCCESS))  # fmt: skip
    evidence = OutcomeEvidence(
        expected_actions=[ExpectedAction(tool=t, args=a) for t, a in (expected or [])]
    )
    return Trajectory(tenant_id="acme", task=ASK[lang].format(order=order), events=events,
                      outcome=outcome, evidence=evidence)  # fmt: skip


def _ship(order: str, status: str, items: int) -> dict[str, Any]:
    return {"order_id": order, "status": status,
            "items": [f"item_{order}{i}" for i in range(items)]}  # fmt: skip


def _missing_rule(mem: Memory) -> Experience:
    [rule] = [
        e
        for e in mem.list_experiences(tenant_id="acme")
        if e.metadata.get("lesson_key") == f"contrast:missing:{SHIP}"
    ]
    return rule


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_missing_call_triggers_on_what_failed_runs_called_in_its_place(
    lang: str, database_url: str, tmp_path: Path
) -> None:
    with Memory(data_dir=tmp_path / "data", database_url=database_url) as mem:
        # run 1 cancelled the order where the expected action shipped it (two items)
        mem.store_episode(_run("8812", [("cancel_order", {"order_id": "8812"})], lang=lang,
                               expected=[(SHIP, _ship("8812", "shipped", 2))]))  # fmt: skip
        # run 2 stopped after a refund where the expected action shipped one item as pending
        mem.store_episode(_run("9907", [("get_order", {"order_id": "9907"}),
                                        ("refund_order", {"order_id": "9907"})], lang=lang,
                               expected=[(SHIP, _ship("9907", "pending", 1))]))  # fmt: skip
        assert mem.flush(timeout=60)
        rule = _missing_rule(mem)  # one rule: the second run folded into the first
        contrast = rule.metadata["contrast"]
        assert contrast["instead"] == ["cancel_order", "refund_order"]
        # (argument order as the database gives it back: PostgreSQL's JSONB sorts keys)
        assert [sorted(r.split(", ")) for r in contrast["references"]] == [
            ["items=2 x item", "status=shipped"], ["items=item", "status=pending"],
        ]  # fmt: skip
        assert set(rule.tools) == {SHIP, "cancel_order", "refund_order"}
        assert len(rule.source_trajectory_ids) == 2
        for other in ("cancel_order", "refund_order"):
            found = mem.check_action(other, {"order_id": "A1"}, tenant_id="acme", record=False)
            [m] = [m for m in found.checks if m.check.lesson_id == rule.id]
            assert m.match == "instead" and m.check.instead_of == SHIP
            assert m.score == pytest.approx(m.check.confidence * m.check.trust * 0.6, abs=1e-4)
            assert SHIP in m.check.advice and "status=shipped" in m.check.advice
            assert "status=pending" in m.check.advice and "items=item" in m.check.advice
            assert ("Where it worked" in m.check.advice) is (lang == "en")
            assert ("成功时调用" in m.check.advice) is (lang == "zh")
        # the rule is not shown before the call it asks for (the agent is making it already)
        own = mem.check_action(SHIP, _ship("A1", "shipped", 2), tenant_id="acme", record=False)
        assert rule.id not in own.lesson_ids
        # a read-only call is not a place the missing call was replaced by
        read = mem.check_action("get_order", {"order_id": "A1"}, tenant_id="acme", record=False)
        assert rule.id not in read.lesson_ids


def test_a_rule_whose_failed_runs_called_nothing_else_triggers_on_its_own_tool() -> None:
    with test_memory() as mem:
        mem.store_episode(_run("8812", [("get_order", {"order_id": "8812"})],
                               expected=[(SHIP, _ship("8812", "shipped", 2))]))  # fmt: skip
        assert mem.flush(timeout=30)
        rule = _missing_rule(mem)
        assert rule.metadata["contrast"]["instead"] == [] and rule.tools == [SHIP]
        [check] = compile_checks(rule)
        assert check.tool == SHIP and check.instead_of is None
        assert check.advice.endswith("Where it worked, update_order was called with "
                                     "status=shipped, items=2 x item.")  # fmt: skip
        found = mem.check_action(SHIP, {"order_id": "A1"}, tenant_id="acme", record=False)
        assert [m.match for m in found.checks if m.check.lesson_id == rule.id] == ["call"]


def test_the_tools_own_checks_rank_above_one_about_another_tool() -> None:
    with test_memory() as mem:
        mem.store_episode(_run("8812", [("cancel_order", {"order_id": "8812"})],
                               expected=[(SHIP, _ship("8812", "shipped", 2))]))  # fmt: skip
        assert mem.flush(timeout=30)
        rule = _missing_rule(mem)
        own = mem.add_experience(
            "Before calling cancel_order, confirm the user asked to cancel.",
            tenant_id="acme", tools=["cancel_order"], kind=ExperienceKind.RULE,
            confidence=rule.confidence,
        )  # fmt: skip
        found = mem.check_action("cancel_order", {"order_id": "A1"}, tenant_id="acme",
                                 record=False)  # fmt: skip
        order = [m.check.lesson_id for m in found.checks]
        assert order.index(own.id) < order.index(rule.id)


def _exp(contrast: Any) -> Experience:
    return Experience(
        tenant_id="acme", kind=ExperienceKind.RULE, content="x", metadata={"contrast": contrast}
    )


def test_fold_contrast_unites_lists_and_leaves_anything_else_alone() -> None:
    base = {"op": "missing", "tool": SHIP, "references": ["a=1"], "instead": ["cancel_order"]}
    more = {"op": "missing", "tool": SHIP, "references": ["a=1", "a=2"], "instead": ["x", ""]}
    folded = variants.fold_contrast(_exp(base), _exp(more))
    assert folded.metadata["contrast"]["references"] == ["a=1", "a=2"]
    assert folded.metadata["contrast"]["instead"] == ["cancel_order", "x"]
    many = {**more, "instead": [f"t{i}" for i in range(20)]}
    capped = variants.fold_contrast(_exp(base), _exp(many))
    assert len(capped.metadata["contrast"]["instead"]) == variants.MAX_CONTRAST_VALUES
    for other in (
        {**more, "tool": "cancel_order"},  # another difference
        {**more, "op": "extra"},
        "not a dict",
        {"op": "missing", "tool": SHIP, "references": "a=3"},  # not a list
    ):
        assert variants.fold_contrast(_exp(base), _exp(other)).metadata == {"contrast": base}
    assert variants.fold_contrast(_exp(base), _exp(base)).metadata == {"contrast": base}


# -- several missing-call rules on one hand-off: the call's own words pick the first -----------
HANDOFF = "escalate_to_human"
MISSING = {
    "update_order_address": {"order_id": "A1", "address": "12 Main St"},
    "cancel_order": {"order_id": "A1"},
    "refund_order": {"order_id": "A1", "amount": 20},
}


@pytest.fixture(scope="module")
def handoff_memory() -> Any:
    """Three failed runs handed off to a human where each expected action was another call:
    three missing-call rules, each triggered by the hand-off."""
    with test_memory() as mem:
        for i, (tool, args) in enumerate(MISSING.items()):
            handoff = [(HANDOFF, {"summary": "customer needs help"})]
            mem.store_episode(_run(f"70{i}", handoff, expected=[(tool, args)]))
        assert mem.flush(timeout=60)
        yield mem


def _instead_order(mem: Memory, args: dict[str, Any]) -> list[str | None]:
    found = mem.check_action(HANDOFF, args, tenant_id="acme", record=False, top_k=20)
    return [m.check.instead_of for m in found.checks if m.check.instead_of is not None]


@pytest.mark.parametrize(
    ("summary", "first"),
    [
        ("The customer wants the delivery address of order B2 changed", "update_order_address"),
        ("Customer asks for new addresses on two orders", "update_order_address"),
        ("Please REFUND the order, the item arrived broken", "refund_order"),
        ("They want refunds for both items", "refund_order"),
        ("Customer wants to cancel, policy unclear", "cancel_order"),
    ],
)
def test_the_call_text_puts_the_missing_tool_it_names_first(
    handoff_memory: Memory, summary: str, first: str
) -> None:
    plain = _instead_order(handoff_memory, {})
    assert sorted(plain, key=str) == sorted(MISSING)  # three rules, all on the hand-off
    for args in ({"summary": summary}, {"ticket": {"notes": [summary]}}):  # nested text too
        ordered = _instead_order(handoff_memory, args)
        assert ordered[0] == first
        assert sorted(ordered, key=str) == sorted(plain, key=str)  # reordered, nothing lost
        rest = [t for t in plain if t != first]
        assert [t for t in ordered if t != first] == rest  # the others keep the score order


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"summary": ""},
        {"summary": "The order needs a human"},  # "order": a word every one of them shares
        {"summary": "客户想修改订单的收货地址"},  # no English word of a tool name
        {"count": 3, "flag": True},
    ],
)
def test_a_call_naming_none_of_them_keeps_the_score_order(
    handoff_memory: Memory, args: dict[str, Any]
) -> None:
    found = handoff_memory.check_action(HANDOFF, args, tenant_id="acme", record=False, top_k=20)
    scores = [m.score for m in found.checks if m.check.instead_of is not None]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True)
    assert _instead_order(handoff_memory, args) == _instead_order(handoff_memory, {})


def test_scores_do_not_change_with_the_order(handoff_memory: Memory) -> None:
    plain = handoff_memory.check_action(HANDOFF, {}, tenant_id="acme", record=False, top_k=20)
    named = handoff_memory.check_action(
        HANDOFF, {"summary": "refund it"}, tenant_id="acme", record=False, top_k=20
    )
    assert {m.check.id: m.score for m in plain.checks} == {
        m.check.id: m.score for m in named.checks
    }
