"""Decision-time risk checks for a real LlamaIndex FunctionAgent
(docs/checks.md#llamaindex-checked_tools): the advice
reaches the model before the tool runs; ``confirm`` waits for a human (InputRequiredEvent /
HumanResponseEvent) and runs or declines the call; a failing memory leaves the run
untouched."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hindsight_llamaindex import checked_tools
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.llms import MessageRole
from llama_index.core.workflow import HumanResponseEvent, InputRequiredEvent
from llamaindex_support import ChunkedLLM, call, plan, run_agent, say

from hindsight import UsageError
from hindsight.checks import ADVICE_START
from hindsight.testing import test_memory

CANCELLED: list[str] = []


def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    CANCELLED.append(order_id)
    return f"order {order_id} cancelled"


def _run(mem: Any, **options: Any) -> ChunkedLLM:
    CANCELLED.clear()
    llm = ChunkedLLM(
        plan(call("cancel_order", 1, order_id="A1"), call("cancel_order", 2, order_id="A1"),
             say("Cancelled."))
    )  # fmt: skip
    tools = checked_tools([cancel_order], mem, tenant_id="acme", **options)
    agent = FunctionAgent(tools=tools, llm=llm, system_prompt="You cancel orders.")
    run_agent(agent, user_msg="cancel order A1")
    return llm


def test_advise_holds_the_first_call_with_the_advice() -> None:
    with test_memory() as mem:
        mem.add_experience("Before calling cancel_order, confirm which order the user means.",
                           tenant_id="acme", tools=["cancel_order"], confidence=0.8)  # fmt: skip
        llm = _run(mem)
        told = [m for m in llm.seen[1] if m.role == MessageRole.TOOL]
        assert told and ADVICE_START in str(told[0].content)
        assert "NOT executed" in str(told[0].content)
        assert CANCELLED == ["A1"]  # the second call ran, as proposed
        _run(mem, checks="off")
        assert CANCELLED == ["A1", "A1"]


def test_a_failing_memory_leaves_the_run_untouched() -> None:
    mem = test_memory()
    mem.add_experience("Before calling cancel_order, confirm which order the user means.",
                       tenant_id="acme", tools=["cancel_order"], confidence=0.8)  # fmt: skip
    mem.close()
    _run(mem)
    assert CANCELLED == ["A1", "A1"]  # nothing held


RULE = "Before calling cancel_order, confirm which order the user means."


def _confirm_run(mem: Any, answer: Any, *, workflow: bool = False) -> tuple[ChunkedLLM, list[Any]]:
    """One run with ``checks="confirm"``; the human answers every request with ``answer``
    (``None``: the request is not answered before the run is cancelled). Returns the LLM and
    the requests written to the event stream."""
    CANCELLED.clear()
    llm = ChunkedLLM(plan(call("cancel_order", 1, order_id="A1"), say("Done.")))
    tools = checked_tools([cancel_order], mem, tenant_id="acme", checks="confirm")
    agent = FunctionAgent(tools=tools, llm=llm, system_prompt="You cancel orders.")
    runner = AgentWorkflow(agents=[agent]) if workflow else agent
    requests: list[Any] = []

    async def go() -> None:
        handler = runner.run(user_msg="cancel order A1")
        async for event in handler.stream_events():
            if isinstance(event, InputRequiredEvent):
                requests.append(event)
                assert CANCELLED == []  # paused before the tool ran
                handler.ctx.send_event(
                    HumanResponseEvent(response=answer, hindsight_call=event.hindsight_call)
                )
        await handler

    asyncio.run(go())
    return llm, requests


def test_confirm_approved_runs_the_call_unchanged() -> None:
    with test_memory() as mem:
        mem.add_experience(RULE, tenant_id="acme", tools=["cancel_order"], confidence=0.8)
        llm, [request] = _confirm_run(mem, "approve")
        assert request.type == "hindsight_risk_check" and request.tool == "cancel_order"
        assert request.args == {"order_id": "A1"}
        assert ADVICE_START in request.rendered and "Confirm which order" in request.prefix
        assert [c["check"]["tool"] for c in request.checks] == ["cancel_order"]
        assert CANCELLED == ["A1"]  # ran once, with the proposed arguments
        told = [m for m in llm.seen[1] if m.role == MessageRole.TOOL]
        assert str(told[0].content) == "order A1 cancelled"


@pytest.mark.parametrize("answer", ["decline", "no", "", "approve please"])
def test_confirm_refused_does_not_run_and_the_model_is_told(answer: str) -> None:
    with test_memory() as mem:
        mem.add_experience(RULE, tenant_id="acme", tools=["cancel_order"], confidence=0.8)
        llm, [_request] = _confirm_run(mem, answer)
        assert CANCELLED == []
        told = [m for m in llm.seen[1] if m.role == MessageRole.TOOL]
        assert "A human declined this cancel_order call" in str(told[0].content)
        assert "NOT executed" in str(told[0].content) and ADVICE_START in str(told[0].content)


def test_confirm_in_an_agent_workflow() -> None:
    with test_memory() as mem:
        mem.add_experience(RULE, tenant_id="acme", tools=["cancel_order"], confidence=0.8)
        _, requests = _confirm_run(mem, "yes", workflow=True)
        assert len(requests) == 1 and CANCELLED == ["A1"]


def test_confirm_without_matching_checks_or_with_a_failing_memory_runs() -> None:
    with test_memory() as mem:
        mem.add_experience("Before calling refund, check the amount.", tenant_id="acme",
                           tools=["refund"], confidence=0.8)  # fmt: skip
        _, requests = _confirm_run(mem, "decline")
        assert requests == [] and CANCELLED == ["A1"]  # no check on cancel_order: no question
    mem = test_memory()
    mem.add_experience(RULE, tenant_id="acme", tools=["cancel_order"], confidence=0.8)
    mem.close()
    _, requests = _confirm_run(mem, "decline")
    assert requests == [] and CANCELLED == ["A1"]


def test_a_bad_mode_is_refused_in_one_line() -> None:
    with test_memory() as mem, pytest.raises(UsageError, match="mode one of"):
        checked_tools([cancel_order], mem, tenant_id="acme", checks={"high": "ask"})
