"""Capture overhead of the LangChain handler and the LangGraph nodes (issue 10, item 3; goal:
median ratio <= 1.10).

Not a test (no assertion on time; the machine is shared and noisy). Run::

    python tests/benchmarks/bench_capture_overhead.py [--runs 60] [--tools 10] [--json]

Two agents on scripted fake chat models (real LangChain / LangGraph objects, no network), each
making ``--tools`` (10) sequential tool calls and then answering:

* **LangChain handler**: a ``create_agent`` agent, run with and without
  ``HindsightCallbackHandler`` (``bench_langchain_overhead.measure``: the trajectory is stored by
  the handler's background writer, its review queued);
* **LangGraph nodes**: a ReAct ``StateGraph`` (agent -> tools -> agent ...), compiled once as
  is and once after ``add_hindsight`` (recall node at the start: a real recall from a memory
  holding 500 lessons of the tenant, block at the tail of the system prompt; automatic capture
  of the whole graph run; reflect node at the end: stores the trajectory, queues its review).

Runs with and without alternate within each pair (the order flips every pair, so drift in
machine load hits both alike); the figure is the median of per-pair ratios
``time(with) / time(without)`` of ``invoke``, on a real embedded memory (SQLite + Qdrant Edge in
a temporary folder), in two modes:

* ``caller``: between pairs, outside the timed region, the background work of the previous run
  finishes (handler writer / review worker): the cost the agent's caller sees;
* ``back-to-back``: no waiting, reviews run too and overlap the next runs on the same CPU (the
  cost in throughput of a saturated process).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from bench_langchain_overhead import measure as measure_handler  # noqa: E402
from hindsight_langchain.testing import ScriptedChatModel, ai, call  # noqa: E402
from hindsight_langgraph import add_hindsight  # noqa: E402
from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402

from hindsight import Memory  # noqa: E402
from hindsight.bench import synthetic_lessons  # noqa: E402

TENANT = "bench"
SEEDED_LESSONS = 500


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def react_graph(n_tools: int) -> StateGraph[Any, Any, Any, Any]:
    """A ReAct graph whose scripted model calls ``lookup`` ``n_tools`` times, then answers."""

    def script(messages: list[BaseMessage]) -> Any:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < n_tools:
            return ai("", call("lookup", {"key": f"k{done}"}, f"c{done}"))
        return ai(f"looked up {done} keys")

    bound = ScriptedChatModel(script=script).bind_tools([lookup])

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


def _timed(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def paired(
    without: Callable[[], Any],
    with_: Callable[[], Any],
    runs: int,
    between: Callable[[], Any] = lambda: None,
) -> dict[str, float]:
    """Median ratio and medians (ms) of ``runs`` alternating pairs after 5 warm-up pairs."""
    for _ in range(5):
        without()
        with_()
    between()
    ratios, base, timed_with = [], [], []
    for i in range(runs):
        if i % 2:
            b, w = _timed(without), _timed(with_)
        else:
            w, b = _timed(with_), _timed(without)
        between()
        base.append(b)
        timed_with.append(w)
        ratios.append(w / b)
    return {
        "median_ratio": statistics.median(ratios),
        "median_ms_without": statistics.median(base) * 1000,
        "median_ms_with": statistics.median(timed_with) * 1000,
    }


def measure_langgraph(runs: int, n_tools: int, *, wait: bool, data_dir: Path) -> dict[str, float]:
    """Median ratio of the graph with ``add_hindsight`` to the same graph without it."""
    plain = react_graph(n_tools).compile()
    with Memory(data_dir=data_dir) as memory:
        for text in synthetic_lessons(SEEDED_LESSONS):
            memory.add_experience(text, tenant_id=TENANT, kind="improvement", confidence=0.8)
        hooked = add_hindsight(react_graph(n_tools), memory, tenant_id=TENANT).compile()
        question = {"messages": [("user", "look up the keys; get_order timed out last time")]}
        result = paired(
            lambda: plain.invoke(question),
            lambda: hooked.invoke(question),
            runs,
            between=(lambda: memory.flush(timeout=300)) if wait else (lambda: None),
        )
        memory.flush(timeout=600)
        stats = memory.stats(tenant_id=TENANT)
        assert stats["trajectories"] >= runs + 5, stats  # every hooked run was captured
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="timed pairs per mode (>= 5)")
    parser.add_argument("--tools", type=int, default=10, help="tool calls per run (>= 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    if args.runs < 5 or args.tools < 1:
        parser.error("--runs must be >= 5 and --tools >= 1")
    report: dict[str, Any] = {"runs": args.runs, "tools": args.tools, "results": {}}
    for name, fn in (
        ("langchain_handler", measure_handler),
        ("langgraph_nodes", measure_langgraph),
    ):
        for mode, wait in (("caller", True), ("back_to_back", False)):
            print(f"measuring {name} ({mode})...", file=sys.stderr)
            with tempfile.TemporaryDirectory(prefix="hindsight-bench-") as tmp:
                r = fn(args.runs, args.tools, wait=wait, data_dir=Path(tmp))
            report["results"][f"{name}/{mode}"] = r
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"agent: {args.tools} tool calls per run, {args.runs} pairs of runs per line")
    for key, r in report["results"].items():
        print(
            f"{key:30} median ratio {r['median_ratio']:.3f} "
            f"(without {r['median_ms_without']:.1f} ms, with {r['median_ms_with']:.1f} ms)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
