"""A customer-support agent (LangGraph) that learns across runs: the example of
docs/integrations/langgraph.md#the-example.

The graph is an ordinary tool-calling agent (``agent`` -> ``tools`` -> ``agent`` ...) with one
house rule: at peak hours a request may use at most :data:`MAX_TOOL_CALLS` tool calls, then it
is escalated to a human (a failure). :func:`~hindsight_langgraph.add_hindsight` adds the recall
node before the agent and the reflect node after it; nothing else knows about hindsight.

* Run 1 (no experience): ``order_query`` times out at peak hours; the agent retries it twice,
  then reads the order from ``order_query_cached``, but the budget is spent before the refund:
  escalated, failure. The reflect node stores the trajectory and the review (heuristic reviewer,
  in the background) writes its lessons, among them that ``order_query`` timed out and that
  ``order_query_cached`` worked instead.
* Run 2 (another customer): the recall node puts those lessons at the tail of the system
  prompt; the agent reads them, retries once, goes to the cache and refunds within budget.

Offline by default (:func:`~hindsight_langgraph.examples.scripted_model.scripted_support_model`);
``--model provider:model`` uses a real model through LangChain's ``init_chat_model`` (the
provider's package, e.g. ``langchain-openai``, and its API key are needed then).

Run: ``python examples/langgraph_agent.py`` or ``hindsight demo``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from hindsight import Memory
from hindsight.models import content_to_text
from hindsight_langgraph import HindsightState, add_hindsight
from hindsight_langgraph.examples.scripted_model import scripted_support_model
from hindsight_langgraph.examples.support_tools import SupportDesk

__all__ = [
    "MAX_TOOL_CALLS",
    "REQUESTS",
    "SYSTEM_PROMPT",
    "TASK_TYPE",
    "TENANT",
    "build_graph",
    "main",
    "run_demo",
]

TENANT = "demo"
TASK_TYPE = "customer_support"
MAX_TOOL_CALLS = 4
"""Peak-hours budget of tool calls per request; beyond it the request goes to a human."""
RECALL_TOP_K = 6
"""Lessons recalled per request (at most half from one earlier run: 3, docs/concepts.md#recall)."""
SYSTEM_PROMPT = (
    "You are the support agent of an online shop. Look an order up with the tools before "
    "acting on it. A refund must be for the order's exact total. Be brief."
)
REQUESTS = (
    "I want a refund for order 8812, the espresso machine arrived broken.",
    "Please refund order 9907, the running shoes are the wrong size.",
)
ESCALATION = (
    "I could not finish this within our peak-hours limit of {n} tool calls, so a colleague "
    "will take over your request."
)

Out = Callable[[str], None]


def _turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages after the last human message (the current request's work)."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return list(messages[last + 1 :])


def refund_issued(state: dict[str, Any]) -> bool:
    """The run's outcome: True when a ``refund`` call of this request succeeded."""
    return any(
        isinstance(m, ToolMessage) and m.name == "refund" and m.status != "error"
        for m in _turn(state["messages"])
    )


def build_graph(
    memory: Memory,
    model: Any,
    desk: SupportDesk,
    *,
    namespace: str = "default",
    checkpointer: Any = None,
    max_tool_calls: int = MAX_TOOL_CALLS,
) -> Any:
    """The support graph, compiled, with hindsight's nodes added by ``add_hindsight``.

    Args:
        memory: where experience is recalled from and runs are stored.
        model: a LangChain chat model with ``bind_tools``.
        desk: the tools' backend.
        namespace: hindsight namespace of the runs.
        checkpointer: a LangGraph checkpointer (e.g. ``InMemorySaver()``) or None.
        max_tool_calls: the peak-hours budget (:data:`MAX_TOOL_CALLS`).
    """
    tools = desk.tools()
    agent_model = model.bind_tools(tools)

    def agent(state: HindsightState) -> dict[str, Any]:
        return {"messages": [agent_model.invoke(state["messages"])]}

    async def aagent(state: HindsightState) -> dict[str, Any]:
        return {"messages": [await agent_model.ainvoke(state["messages"])]}

    def route(state: HindsightState) -> str:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return END
        used = sum(isinstance(m, ToolMessage) for m in _turn(state["messages"]))
        return "tools" if used + len(last.tool_calls) <= max_tool_calls else "escalate"

    def escalate(state: HindsightState) -> dict[str, Any]:
        # The calls asked for are not run: the request goes to a human. The asking message
        # is replaced (same id) by the escalation, so no tool call stays unanswered.
        last = state["messages"][-1]
        return {"messages": [AIMessage(content=ESCALATION.format(n=max_tool_calls), id=last.id)]}

    from langchain_core.runnables import RunnableLambda

    builder = StateGraph(HindsightState)
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent, name="agent"))
    builder.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    builder.add_node("escalate", escalate)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges(
        "agent", route, {"tools": "tools", "escalate": "escalate", END: END}
    )
    builder.add_edge("tools", "agent")
    builder.add_edge("escalate", END)
    add_hindsight(
        builder,
        memory,
        tenant_id=TENANT,
        namespace=namespace,
        task_type=TASK_TYPE,
        tools=tools,
        top_k=RECALL_TOP_K,
        outcome=refund_issued,
    )
    return builder.compile(checkpointer=checkpointer)


# -- running and reporting --------------------------------------------------------------------
def _steps(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """One entry per tool call of the request: tool, arguments, status and result text."""
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    steps = []
    for message in _turn(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                result = results.get(call["id"] or "")
                text = content_to_text(result.content) if result is not None else ""
                status = "no result"
                if result is not None and result.status != "error":
                    status = "ok"
                elif result is not None:
                    lowered = text.lower()
                    status = (
                        "timeout"
                        if "timed out" in lowered
                        else "skipped"
                        if lowered.startswith("not run")
                        else "error"
                    )
                steps.append(
                    {
                        "tool": call["name"],
                        "args": call["args"],
                        "status": status,
                        "result": text.strip().splitlines()[0] if text.strip() else "",
                    }
                )
    return steps


def _run(graph: Any, request: str, namespace: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": f"support-{uuid.uuid4().hex[:8]}"}}
    state = graph.invoke(
        {"messages": [SystemMessage(content=SYSTEM_PROMPT), HumanMessage(content=request)]}, config
    )
    messages = state["messages"]
    system = next(content_to_text(m.content) for m in messages if isinstance(m, SystemMessage))
    steps = _steps(messages)
    return {
        "request": request,
        "trajectory_id": state["trajectory_id"],
        "recalled": state.get("recalled_experiences", []),
        "system_prompt": system,
        "steps": steps,
        "answer": content_to_text(messages[-1].content),
        "success": refund_issued(state),
        "timeouts": sum(s["status"] == "timeout" for s in steps),
    }


def _args(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in args.items())


def _print_run(out: Out, title: str, run: dict[str, Any]) -> None:
    out(f"{title}: {run['request']}")
    for i, step in enumerate(run["steps"], start=1):
        detail = f": {step['result']}" if step["status"] != "ok" else ""
        out(f"  {i}. {step['tool']}({_args(step['args'])}) -> {step['status']}{detail}")
    out(f"  answer: {run['answer']}")
    verdict = "SUCCESS" if run["success"] else "FAILURE"
    calls, timeouts = len(run["steps"]), run["timeouts"]
    out(
        f"  outcome: {verdict} ({calls} tool call{'s' * (calls != 1)}, {timeouts} "
        f"timeout{'s' * (timeouts != 1)}; "
        f"trajectory {run['trajectory_id']})"
    )


def _print_hits(out: Out, hits: list[dict[str, Any]]) -> None:
    out(
        "  recalled into the tail of the system prompt, and why "
        "(score = (0.6 similarity + 0.3 confidence + 0.1 recency) x trust + boost + kind bonus):"
    )
    for hit in hits:
        b = hit["breakdown"]
        w = b["weights"]
        out(
            f"    score {hit['score']:.3f} = ({w['similarity']:g} x {b['similarity']:.3f} + "
            f"{w['confidence']:g} x {b['confidence']:.2f} + {w['recency']:g} x "
            f"{b['recency']:.3f}) x {b['trust']:.2f} + {b['boost']:.2f} + {b['kind_bonus']:.2f}  "
            f"[{hit['kind']}] "
            f"{hit['content']}"
        )


def _open_model(spec: str | None) -> Any:
    if spec is None:
        return scripted_support_model()
    from langchain.chat_models import init_chat_model

    return init_chat_model(spec, temperature=0)


def run_demo(
    data_dir: str | Path | None = None,
    *,
    model: str | Any | None = None,
    memory: Memory | None = None,
    out: Out = print,
    hour: int = 12,
    reviewer: str | None = None,
) -> dict[str, Any]:
    """Run the two runs and print what happens; returns the report as a dict.

    Args:
        data_dir: the embedded store's folder (default: a new temporary folder, removed after).
        model: ``None`` (the offline scripted model), ``"provider:model"`` for
            ``init_chat_model``, or a chat model object.
        memory: use this memory instead of opening one in ``data_dir``.
        out: where lines are printed.
        hour: the hour of day both runs happen at (12: peak hours).
        reviewer: ``heuristic`` / ``llm`` / ``both`` for the memory opened here (default: the
            ``REVIEWER`` setting, else the offline heuristic reviewer).

    Returns:
        ``{"namespace", "run1", "lessons", "run2", "confidence_after"}``; each run has
        ``request, trajectory_id, recalled, system_prompt, steps, answer, success, timeouts``.
    """
    tmp = None
    own = memory is None
    if memory is None:
        if data_dir is None:
            tmp = tempfile.TemporaryDirectory(prefix="hindsight-demo-")
            data_dir = tmp.name
        options: dict[str, Any] = {"reviewer": reviewer} if reviewer else {}
        memory = Memory(data_dir=data_dir, **options)
    try:
        return _demo(
            memory, _open_model(model) if isinstance(model, str | None) else model, out, hour
        )
    finally:
        if own:
            memory.close()
        if tmp is not None:
            tmp.cleanup()


def _demo(memory: Memory, model: Any, out: Out, hour: int) -> dict[str, Any]:
    # A namespace of its own: a data dir used before does not change this demo's first run.
    namespace = f"demo-{uuid.uuid4().hex[:8]}"
    desk = SupportDesk(hour=hour)
    graph = build_graph(memory, model, desk, namespace=namespace, checkpointer=InMemorySaver())
    out(
        f"hindsight demo: a support agent at {hour}:00 (peak hours: order_query times out), "
        f"tenant {TENANT!r}, namespace {namespace!r}\n"
    )

    run1 = _run(graph, REQUESTS[0], namespace)
    _print_run(out, "Run 1 (no experience yet)", run1)
    if not run1["success"] and len(run1["steps"]) >= MAX_TOOL_CALLS:
        out(f"  -> the budget of {MAX_TOOL_CALLS} tool calls ran out before the refund")

    memory.flush(timeout=60)
    lessons = [
        e
        for e in memory.list_experiences(tenant_id=TENANT, namespace=namespace)
        if run1["trajectory_id"] in e.source_trajectory_ids
    ]
    out("\nReview of run 1 (after the run, in the background) -> experiences stored:")
    for e in lessons:
        out(f"  [{e.kind.value}, confidence {e.confidence:.2f}] {e.content}")

    run2 = _run(graph, REQUESTS[1], namespace)
    out("")
    _print_run(out, "Run 2 (another customer, same memory)", run2)
    _print_hits(out, run2["recalled"])
    out("  tail of the system prompt the model read:")
    tail = run2["system_prompt"][len(SYSTEM_PROMPT) :].strip("\n")
    for line in tail.splitlines():
        out(f"    | {line}")

    memory.flush(timeout=60)
    after = {}
    for hit in run2["recalled"]:
        exp = memory.get_experience(hit["id"], tenant_id=TENANT)
        after[hit["id"]] = exp.confidence
    if run2["success"] and after:
        out(
            "\nRun 2 succeeded with them, so their confidence rose: "
            + ", ".join(f"{h['confidence']:.2f} -> {after[h['id']]:.2f}" for h in run2["recalled"])
        )
    return {
        "namespace": namespace,
        "run1": run1,
        "lessons": [
            {"id": e.id, "kind": e.kind.value, "content": e.content, "confidence": e.confidence}
            for e in lessons
        ],
        "run2": run2,
        "confidence_after": after,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``[--model provider:model] [--data-dir DIR] [--json]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a real model for init_chat_model, e.g. openai:gpt-4o-mini")
    parser.add_argument("--data-dir", help="embedded store folder (default: a temporary one)")
    parser.add_argument("--reviewer", help="heuristic (default, offline) | llm | both")
    parser.add_argument("--json", action="store_true", help="print one JSON report")
    args = parser.parse_args(argv)
    quiet: Out = lambda line: None  # noqa: E731
    report = run_demo(
        args.data_dir, model=args.model, reviewer=args.reviewer, out=quiet if args.json else print
    )
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
