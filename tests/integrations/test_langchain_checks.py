"""Decision-time risk checks in HindsightMiddleware (docs/checks.md): real ``create_agent`` agents
with scripted models; the advice reaches the model before the call runs, ``confirm``
interrupts and resumes, a failing memory leaves the run untouched."""

from __future__ import annotations

import asyncio
from typing import Any

from hindsight_langchain import HindsightMiddleware
from hindsight_langchain.testing import ScriptedChatModel, ai, call
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from hindsight.checks import ADVICE_START
from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)
from tests.integrations.langchain_support import (  # noqa: F401
    TENANT,
    closing,
    counting_checks,
    memory,
)

ADVICE = "Before calling book_flight, check cabin against the user's request."
BOOKED: list[dict[str, Any]] = []


@tool
def book_flight(cabin: str, flight: str) -> str:
    """Book a flight in a cabin."""
    BOOKED.append({"cabin": cabin, "flight": flight})
    return f"booked {flight} in {cabin}"


def _agent(mem: Any, **options: Any) -> tuple[Any, ScriptedChatModel]:
    BOOKED.clear()
    args = {"cabin": "basic_economy", "flight": "HAT001"}
    model = ScriptedChatModel(
        replies=[
            ai("", call("book_flight", args, "c1")),
            ai("", call("book_flight", args, "c2")),
            ai("Booked."),
        ]
    )
    middleware = HindsightMiddleware(mem, tenant_id=TENANT, **options)
    return create_agent(model, [book_flight], system_prompt="You book flights.",
                        middleware=[middleware], **({"checkpointer": InMemorySaver()}
                        if options.get("checks") == "confirm" else {})), model  # fmt: skip


CONTRAST = {  # a contrast rule as the review writes it (docs/review.md)
    "lesson_key": "contrast:arg:book_flight:cabin:class",
    "contrast": {"op": "arg", "tool": "book_flight", "key": "cabin", "how": "class",
                 "expected": "economy", "actual": "basic_economy"},
}  # fmt: skip


def _teach(mem: Any) -> None:
    # the recall block shows this lesson too; the call is held because its cabin has the
    # class a failed run passed
    mem.add_experience(
        ADVICE, tenant_id=TENANT, tools=["book_flight"], confidence=0.8, metadata=CONTRAST
    )


def test_a_lesson_the_block_showed_does_not_hold_a_call_without_the_risky_class() -> None:
    mem = memory()
    mem.add_experience(ADVICE, tenant_id=TENANT, tools=["book_flight"], confidence=0.8)
    agent, model = _agent(mem)
    agent.invoke({"messages": [("user", "Book HAT001 for me")]})
    assert ADVICE in str(model.prompts[0][0].content)  # in the recall block
    assert len(BOOKED) == 2  # no call held: the model had the lesson already


def _advice_seen_before_booking(model: ScriptedChatModel) -> None:
    # the model call after the first proposal got the advice, and nothing was booked yet then
    second = model.prompts[1]
    held = [m for m in second if isinstance(m, ToolMessage) and m.tool_call_id == "c1"]
    assert held and ADVICE_START in str(held[0].content)
    assert "Check cabin against" in str(held[0].content) and "NOT executed" in str(held[0].content)


def test_advise_holds_the_first_call_and_the_model_reads_the_advice() -> None:
    mem = memory()
    _teach(mem)
    agent, model = _agent(mem)
    done = agent.invoke({"messages": [("user", "Book HAT001 for me")]})
    assert done["messages"][-1].content == "Booked."
    _advice_seen_before_booking(model)
    assert BOOKED == [{"cabin": "basic_economy", "flight": "HAT001"}]  # once, unchanged args


def test_advise_async() -> None:
    mem = memory()
    _teach(mem)
    agent, model = _agent(mem)
    done = asyncio.run(agent.ainvoke({"messages": [("user", "Book HAT001 for me")]}))
    assert done["messages"][-1].content == "Booked."
    _advice_seen_before_booking(model)
    assert len(BOOKED) == 1


def test_no_checks_or_off_leave_the_run_as_it_was() -> None:
    for teach, options in ((False, {}), (True, {"checks": "off"})):
        mem = memory()
        if teach:
            _teach(mem)
        agent, model = _agent(mem, **options)
        agent.invoke({"messages": [("user", "Book HAT001 for me")]})
        assert len(BOOKED) == 2  # both proposals ran: nothing held
        assert not any(ADVICE_START in str(m.content) for m in model.prompts[1])


def test_a_failing_memory_leaves_the_run_untouched() -> None:
    mem = memory()
    _teach(mem)
    agent, _ = _agent(mem)
    mem.close()  # every memory call now fails: the run must not notice
    done = agent.invoke({"messages": [("user", "Book HAT001 for me")]})
    assert len(BOOKED) == 2 and done["messages"][-1].content == "Booked."


def test_confirm_interrupts_and_resumes() -> None:
    for answer, booked in (("approve", 1), ({"approve": False}, 0)):
        mem = memory()
        _teach(mem)
        agent, model = _agent(mem, checks="confirm")
        config = {"configurable": {"thread_id": f"t-{booked}"}}
        paused = agent.invoke({"messages": [("user", "Book HAT001 for me")]}, config)
        [pending] = paused["__interrupt__"]
        assert pending.value["type"] == "hindsight_risk_check"
        assert pending.value["tool"] == "book_flight" and "Check cabin" in pending.value["rendered"]
        assert BOOKED == []  # not run before the human answered
        agent.invoke(Command(resume=answer), config)
        assert len(BOOKED) >= booked
        if not booked:
            told = [m for m in model.prompts[1] if isinstance(m, ToolMessage)]
            assert "declined" in str(told[0].content) and BOOKED == []


@tool
def get_fare(flight: str) -> str:
    """Look up a flight's fare."""
    return '{"fare": {"class": "%s"}}' % ("nonrefundable" if flight == "HAT001" else "flex")


@tool
def refund_ticket(flight: str) -> str:
    """Refund a ticket."""
    BOOKED.append({"refund": flight})
    return f"refunded {flight}"


CONDITION = (
    "refund_ticket: when fare.class (from get_fare) is nonrefundable, do not call it: the runs "
    "that called it failed (4 of 4 tasks), against 0 of 9 otherwise."
)


def _refund_agent(mem: Any, flight: str) -> Any:
    BOOKED.clear()
    model = ScriptedChatModel(
        replies=[
            ai("", call("get_fare", {"flight": flight}, "c0")),
            ai("", call("refund_ticket", {"flight": flight}, "c1")),
            ai("", call("refund_ticket", {"flight": flight}, "c2")),
            ai("Done."),
        ]
    )
    middleware = HindsightMiddleware(mem, tenant_id=TENANT, recall=False)
    return create_agent(model, [get_fare, refund_ticket], system_prompt="You refund tickets.",
                        middleware=[middleware]), model  # fmt: skip


def test_a_mined_rule_holds_a_call_only_when_the_runs_state_meets_its_condition() -> None:
    """The middleware passes the run's tool results as the checks' state: a rule whose
    condition holds holds the call once; the same rule is left out for another fare."""
    mem = memory()
    mem.add_experience(
        CONDITION, tenant_id=TENANT, kind="rule", tools=["refund_ticket"], confidence=0.8,
        metadata={"condition": {"tool": "refund_ticket", "form": "avoid", "predicates": [
            {"feature": "get_fare.fare.class", "op": "=", "value": "nonrefundable"}]}},
    )  # fmt: skip
    agent, model = _refund_agent(mem, "HAT001")
    agent.invoke({"messages": [("user", "Refund HAT001")]})
    held = [m for m in model.prompts[2] if isinstance(m, ToolMessage) and m.tool_call_id == "c1"]
    assert held and "nonrefundable" in str(held[0].content)
    assert "NOT executed" in str(held[0].content)
    assert BOOKED == [{"refund": "HAT001"}]  # the second proposal ran
    agent, model = _refund_agent(mem, "HAT002")  # a flexible fare: the rule does not apply
    agent.invoke({"messages": [("user", "Refund HAT002")]})
    first = [m for m in model.prompts[2] if isinstance(m, ToolMessage) and m.tool_call_id == "c1"]
    assert str(first[0].content) == "refunded HAT002"  # not held: the call ran
    assert BOOKED == [{"refund": "HAT002"}] * 2


def test_a_tool_without_risk_checks_is_checked_once_per_invoke_and_again_next_run() -> None:
    """No lesson gives book_flight a check: its first proposal is checked, the second is not
    (nothing could match); a lesson taught between runs is checked from the next run on."""
    for other_lessons in (False, True):
        mem = memory()
        if other_lessons:  # lessons about other tools, one of them with a check
            mem.add_experience("Before calling cancel_order, read the order back.",
                               tenant_id=TENANT, tools=["cancel_order"])  # fmt: skip
            mem.add_experience("Reply in the customer's language.", tenant_id=TENANT)
        asked = counting_checks(mem)
        agent, model = _agent(mem)
        agent.invoke({"messages": [("user", "Book HAT001 for me")]})
        assert asked == ["book_flight"] and len(BOOKED) == 2
        _teach(mem)
        asked.clear()
        agent, model = _agent(mem)
        agent.invoke({"messages": [("user", "Book HAT001 for me")]})
        _advice_seen_before_booking(model)  # the new lesson held the first call
        assert asked == ["book_flight", "book_flight"] and len(BOOKED) == 1


def test_a_tool_with_checks_is_checked_on_every_call_even_when_none_matches() -> None:
    mem = memory()
    # a check about cabin for another class: tested on each call, matching none
    mem.add_experience(ADVICE, tenant_id=TENANT, tools=["book_flight"], confidence=0.8,
                       metadata={**CONTRAST, "contrast": {**CONTRAST["contrast"],
                                 "actual": "first"}})  # fmt: skip
    found = mem.check_action(
        "book_flight", {"cabin": "basic_economy", "flight": "HAT001"}, tenant_id=TENANT
    )
    assert found.tested and found.tested >= 1
    asked = counting_checks(mem)
    agent, _ = _agent(mem)
    agent.invoke({"messages": [("user", "Book HAT001 for me")]})
    assert asked == ["book_flight", "book_flight"]
