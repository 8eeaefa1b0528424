"""Decision-time risk checks in a LangGraph StateGraph wired by add_hindsight
(docs/checks.md#langgraph-add_hindsight-checks): a
real ToolNode, a scripted model; advise holds the first call with the advice, confirm
interrupts and resumes, a failing memory leaves the run untouched."""

from __future__ import annotations

import asyncio
from typing import Any

from hindsight_langchain.testing import ai, call
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from hindsight.checks import ADVICE_START
from tests.integrations.langchain_support import counting_checks, scripted
from tests.integrations.langgraph_support import TENANT, agent_graph, closing, memory, wire  # noqa: F401

ADVICE = "Before calling cancel_order, confirm with the user which order they mean."
CANCELLED: list[str] = []


@tool
def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    CANCELLED.append(order_id)
    return f"cancelled {order_id}"


def _graph(mem: Any, checks: Any, checkpointer: Any = None) -> tuple[Any, Any]:
    CANCELLED.clear()
    model = scripted(
        ai("", call("cancel_order", {"order_id": "A1"}, "c1")),
        ai("", call("cancel_order", {"order_id": "A1"}, "c2")),
        ai("Cancelled."),
    )
    builder = agent_graph(model, tools=[cancel_order])
    graph = wire(builder, mem, checks=checks).compile(checkpointer=checkpointer)
    return graph, model


def _taught() -> Any:
    mem = memory()
    mem.add_experience(ADVICE, tenant_id=TENANT, tools=["cancel_order"], confidence=0.8)
    return mem


def test_advise_in_a_state_graph() -> None:
    graph, model = _graph(_taught(), "advise")
    out = graph.invoke({"messages": [("user", "cancel my order")]})
    assert out["messages"][-1].content == "Cancelled."
    held = [m for m in model.prompts[1] if isinstance(m, ToolMessage)]
    assert ADVICE_START in str(held[0].content) and "NOT executed" in str(held[0].content)
    assert "Confirm with the user which order" in str(held[0].content)
    assert CANCELLED == ["A1"]  # the second proposal ran, unchanged


def test_advise_async_and_failing_memory() -> None:
    graph, _ = _graph(_taught(), "advise")
    asyncio.run(graph.ainvoke({"messages": [("user", "cancel my order")]}))
    assert CANCELLED == ["A1"]
    mem = _taught()
    graph, _ = _graph(mem, "advise")
    mem.close()  # the memory fails from now on: the graph must not notice
    out = graph.invoke({"messages": [("user", "cancel my order")]})
    assert CANCELLED == ["A1", "A1"] and out["messages"][-1].content == "Cancelled."


def test_confirm_interrupts_and_resumes_in_a_state_graph() -> None:
    graph, _ = _graph(_taught(), "confirm", InMemorySaver())
    config = {"configurable": {"thread_id": "g1"}}
    paused = graph.invoke({"messages": [("user", "cancel my order")]}, config)
    [pending] = paused["__interrupt__"]
    assert pending.value["tool"] == "cancel_order" and CANCELLED == []
    graph.invoke(Command(resume="approve"), config)
    assert CANCELLED[:1] == ["A1"]


def test_confirm_declined_in_a_state_graph_does_not_run_and_the_model_is_told() -> None:
    graph, model = _graph(_taught(), "confirm", InMemorySaver())
    config = {"configurable": {"thread_id": "g2"}}
    graph.invoke({"messages": [("user", "cancel my order")]}, config)
    again = graph.invoke(Command(resume="decline"), config)
    assert CANCELLED == []  # declined: never ran
    told = [m for m in model.prompts[1] if isinstance(m, ToolMessage)]
    assert "A human declined this cancel_order call" in str(told[0].content)
    [pending] = again["__interrupt__"]  # the model's next proposal asks the human again
    assert pending.value["args"] == {"order_id": "A1"}
    graph.invoke(Command(resume={"approve": True}), config)
    assert CANCELLED == ["A1"]


def test_a_tool_without_risk_checks_is_checked_once_per_run_in_a_state_graph() -> None:
    """Nothing gives cancel_order a check: the first proposal of a run is checked, the second
    is not; a lesson taught before the next user turn is checked in that run."""
    mem = memory()
    asked = counting_checks(mem)
    graph, _ = _graph(mem, "advise")
    graph.invoke({"messages": [("user", "cancel my order")]})
    assert asked == ["cancel_order"] and CANCELLED == ["A1", "A1"]
    mem.add_experience(ADVICE, tenant_id=TENANT, tools=["cancel_order"], confidence=0.8)
    asked.clear()
    graph, model = _graph(mem, "advise")
    graph.invoke({"messages": [("user", "cancel my order, please")]})
    held = [m for m in model.prompts[1] if isinstance(m, ToolMessage)]
    assert ADVICE_START in str(held[0].content) and CANCELLED == ["A1"]
    assert asked == ["cancel_order", "cancel_order"]
