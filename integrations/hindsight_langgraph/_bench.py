"""Capture overhead of the LangGraph nodes for ``hindsight bench goals`` (issue 20): registered
in the ``hindsight.bench`` entry point group (pyproject.toml), so the framework-free core finds
it only when this package imports.

A ReAct ``StateGraph`` (agent -> tools -> agent ...) on a scripted fake chat model that makes
``tools`` sequential tool calls, then answers; compiled once as is and once after
:func:`~hindsight_langgraph.add_hindsight` (recall node at the start, automatic capture of the
graph run, reflect node at the end storing the trajectory and queueing its review), on a real
embedded memory seeded with ``seeded`` lessons. :func:`hindsight.bench._overhead.added_cost`
times them: added CPU and wall ms per run **including the background work** (writer, review),
the recall node's recall (work the user asked for) timed alone and subtracted. The without
runs see no hindsight (the capture router is switched off for them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hindsight_langchain._bench import (
    QUESTION,
    TENANT,
    lookup,
    no_langgraph_router,
    scripted_model,
    seeded_memory,
)
from langchain_core.messages import SystemMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from hindsight.bench._overhead import added_cost
from hindsight_langgraph._wiring import add_hindsight

__all__ = ["nodes_overhead", "react_graph"]


def react_graph(n_tools: int) -> StateGraph[Any, Any, Any, Any]:
    """A ReAct graph whose scripted model calls ``lookup`` ``n_tools`` times, then answers."""
    bound = scripted_model(n_tools).bind_tools([lookup])

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        messages = state["messages"]
        if not any(isinstance(m, SystemMessage) for m in messages):
            messages = [SystemMessage("Look keys up."), *messages]
        return {"messages": [bound.invoke(messages)]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def nodes_overhead(
    *, runs: int, repeats: int, tools: int, seeded: int, data_dir: Path
) -> dict[str, Any]:
    """The recall and reflect nodes plus automatic capture (module docstring).

    Returns :func:`~hindsight.bench._overhead.added_cost`'s dict plus ``"what"``.

    Raises:
        RuntimeError: fewer trajectories stored than runs timed.
    """
    plain = react_graph(tools).compile()
    question = {"messages": [("user", QUESTION)]}
    with seeded_memory(data_dir, seeded) as memory:
        hooked = add_hindsight(react_graph(tools), memory, tenant_id=TENANT).compile()
        result = added_cost(
            lambda: plain.invoke(question),
            lambda: hooked.invoke(question),
            background=lambda: memory.flush(timeout=300),
            runs=runs,
            repeats=repeats,
            side=lambda: memory.recall(QUESTION, tenant_id=TENANT),
            quiet=no_langgraph_router,
        )
        memory.flush(timeout=300)
        stored = memory.stats(tenant_id=TENANT)["trajectories"]
        if stored < runs * repeats:
            raise RuntimeError(f"the nodes stored {stored} of at least {runs * repeats} runs")
    return {
        "what": f"ReAct StateGraph, {tools} tool calls, add_hindsight (recall subtracted)",
        **result,
    }
