"""Shared builders for the LangGraph integration tests (real LangGraph and LangChain objects).

Skips the importing test module when LangGraph is missing, except under CI=true, where a
missing optional package is a failure.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from typing import Any

import pytest

if (
    importlib.util.find_spec("langgraph") is None
    or importlib.util.find_spec("langchain_core") is None
):  # pragma: no cover - depends on the environment
    if os.environ.get("CI"):
        raise ImportError('LangGraph is missing: pip install -e ".[dev,langgraph]"')
    pytest.skip("langgraph not installed", allow_module_level=True)

from hindsight_langchain.testing import ai, call
from hindsight_langgraph import add_hindsight
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_support import (  # the LangChain tests' memory, fixtures and step views
    TENANT,
    closing,
    memory,
    steps,
    tool_steps,
)
from langchain_support import scripted as react_model  # replies in order, the last repeats
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from hindsight import BLOCK_END, BLOCK_START, Memory, Trajectory

__all__ = [
    "BLOCK_END",
    "BLOCK_START",
    "END",
    "START",
    "TENANT",
    "AIMessage",
    "ToolMessage",
    "agent_graph",
    "ai",
    "call",
    "closing",
    "memory",
    "order_tools",
    "react_model",
    "read",
    "steps",
    "system_of",
    "tool_steps",
    "trajectories",
    "wire",
]


@tool
def order_query(order_id: str) -> str:
    """Look an order up in the live order service."""
    if order_id.startswith("slow"):
        raise TimeoutError(f"order_query timed out after 5 s for order {order_id}")
    return f"order {order_id}: shipped"


@tool
def order_query_cached(order_id: str) -> str:
    """Look an order up in the order cache."""
    return f"order {order_id}: shipped (cache)"


def order_tools() -> list[Any]:
    return [order_query, order_query_cached]


def agent_graph(
    model: Any,
    *,
    state: type = MessagesState,
    tools: Sequence[Any] | None = None,
    context_schema: type | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """A ReAct graph: agent -> tools_condition -> tools -> agent (not compiled)."""
    tools = list(tools if tools is not None else order_tools())
    bound = model.bind_tools(tools)

    def agent(s: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [bound.invoke(s["messages"])]}

    builder = StateGraph(state, context_schema=context_schema)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def system_of(messages: Sequence[BaseMessage]) -> list[SystemMessage]:
    return [m for m in messages if isinstance(m, SystemMessage)]


def trajectories(mem: Memory, tenant: str = TENANT) -> list[Trajectory]:
    """Every stored trajectory of ``tenant``, oldest first (after the background writer
    wrote what the graph runs handed it)."""
    assert mem.writer.wait(60)
    ids = mem.aio.store.list_trajectory_ids(tenant)
    found = [mem.get_trajectory(t, tenant_id=tenant) for t in ids]
    return sorted(found, key=lambda t: t.started_at)


def read(mem: Memory, trajectory_id: str, *, tenant_id: str = TENANT) -> Trajectory:
    """A stored trajectory, once the background writer wrote what it was handed."""
    assert mem.writer.wait(60)
    return mem.get_trajectory(trajectory_id, tenant_id=tenant_id)


def wire(builder: StateGraph[Any, Any, Any, Any], mem: Memory, **kwargs: Any) -> Any:
    kwargs.setdefault("tenant_id", TENANT)
    return add_hindsight(builder, mem, **kwargs)
