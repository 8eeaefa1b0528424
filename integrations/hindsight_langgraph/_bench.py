"""Capture overhead of the LangGraph nodes for ``hindsight bench goals``
(docs/benchmarks.md#capture-overhead): registered in the ``hindsight.bench`` entry point group
(pyproject.toml), so the framework-free core finds it only when this package imports.

A ReAct ``StateGraph`` (agent -> tools -> agent ...) on a scripted fake chat model that makes
``tools`` sequential tool calls, then answers; compiled once as is and once after
:func:`~hindsight_langgraph.add_hindsight` (recall node at the start, automatic capture of the
graph run, reflect node at the end storing the trajectory and queueing its review), on a real
embedded memory seeded with ``seeded`` lessons. :func:`hindsight.bench._overhead.added_cost`
times them: added CPU and wall ms per run **including the background work** (writer, review),
the recall node's recall (work the user asked for) timed where the node makes it and
subtracted. The without runs see no hindsight (its capture router and the LangChain watcher of
:mod:`hindsight_langchain._seen` are switched off for them), the with runs its capture router
only (the watcher is the middleware's: switched off here even when the goals run made a
middleware before).

The framework's part of the agent's path is timed too, ``"floor"``: the same graph with two
nodes of empty bodies where ``add_hindsight`` puts its recall and reflect nodes (wired by the
same code), run with a callback handler whose methods (those the capture router implements,
``run_inline`` like it) do nothing: LangGraph's cost of two more steps and LangChain's cost of
reporting every run to a handler, so a reader can tell them from hindsight's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hindsight_langchain._bench import (
    QUESTION,
    TENANT,
    lookup,
    no_hindsight_hooks,
    scripted_model,
    seeded_memory,
    with_hooks,
)
from langchain_core.messages import SystemMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from hindsight.bench._overhead import Requested, added_cost
from hindsight_langgraph._wiring import _rewire_entry, _rewire_exit, add_hindsight

__all__ = ["nodes_floor", "nodes_overhead", "react_graph"]


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


def nodes_floor(*, runs: int, repeats: int, tools: int) -> dict[str, float]:
    """Added ``{"wall_ms", "cpu_ms"}`` per run of two empty nodes where ``add_hindsight`` puts
    its recall and reflect nodes and a callback handler with empty methods (module docstring):
    the frameworks' own cost of what the nodes and the capture router hook into."""
    from langchain_core.callbacks import BaseCallbackHandler

    from hindsight_langgraph._capture import _END, _START

    class EmptyHandler(BaseCallbackHandler):
        run_inline = True

        def _nothing(self, *args: Any, **kwargs: Any) -> None:
            return None

    for method in (*_START, *_END, "on_custom_event"):
        setattr(EmptyHandler, method, EmptyHandler._nothing)

    def empty(state: MessagesState) -> dict[str, Any]:
        return {}

    builder = react_graph(tools)
    _rewire_entry(builder, "empty_start", None)
    _rewire_exit(builder, "empty_end", [])
    builder.add_node("empty_start", empty)
    builder.add_node("empty_end", empty)
    builder.add_edge(START, "empty_start")
    builder.add_edge("empty_end", END)
    plain, stepped = react_graph(tools).compile(), builder.compile()
    question = {"messages": [("user", QUESTION)]}
    with no_hindsight_hooks():
        result = added_cost(
            lambda: plain.invoke(question),
            lambda: stepped.invoke(question, {"callbacks": [EmptyHandler()]}),
            background=lambda: None,
            runs=runs,
            repeats=repeats,
        )
    floor: dict[str, float] = result["on_path_added"]
    return floor


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
        recall = Requested()
        memory.recall = recall.wrap(memory.recall)  # type: ignore[method-assign]
        hooked = add_hindsight(react_graph(tools), memory, tenant_id=TENANT).compile()
        result = added_cost(
            lambda: plain.invoke(question),
            with_hooks(lambda: hooked.invoke(question), router=True, watcher=False),
            background=lambda: memory.flush(timeout=300),
            runs=runs,
            repeats=repeats,
            side=recall,
            quiet=no_hindsight_hooks,
        )
        memory.flush(timeout=300)
        stored = memory.stats(tenant_id=TENANT)["trajectories"]
        if stored < runs * repeats:
            raise RuntimeError(f"the nodes stored {stored} of at least {runs * repeats} runs")
    return {
        "what": f"ReAct StateGraph, {tools} tool calls, add_hindsight (recall subtracted)",
        **result,
        "floor": nodes_floor(runs=runs, repeats=repeats, tools=tools),
        "floor_what": (
            "two nodes with empty bodies where add_hindsight puts its nodes, and a callback "
            "handler with empty methods"
        ),
    }
