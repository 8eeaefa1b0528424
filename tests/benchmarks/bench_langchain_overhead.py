"""Benchmark the LangChain callback handler's overhead (issue 6; goal: median ratio <= 1.10).

Not a test (no assertion on time; machines are noisy). Run::

    python tests/benchmarks/bench_langchain_overhead.py --runs 60

A ``create_agent`` agent on a scripted fake chat model makes ``--tools`` (10) sequential tool
calls, then answers. Runs with and without ``HindsightCallbackHandler`` alternate (so drift in
machine load hits both alike); the report is the median of the per-pair ratios
``time(with handler) / time(without)`` of the ``invoke`` call, the handler on a real embedded
memory (SQLite file + Qdrant Edge in a temporary folder), for

* ``caller``: after each pair, outside the timed region, ``handler.wait()`` lets the handler's
  background writer store the trajectory (review queued, not run): what the agent's caller
  waits for when the machine has a spare moment between runs;
* ``back-to-back``: no waiting at all, the review runs too; the writer's and the reviewer's
  work (building, SQL, the review) overlaps the next runs on the same CPU: the cost in
  throughput of a saturated process.

The callback hot path does no I/O: events are plain dicts appended under a lock; a root run's
end hands them to the background writer.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hindsight_langchain import HindsightCallbackHandler
from hindsight_langchain.testing import ScriptedChatModel, ai, call
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import tool

from hindsight import Memory


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def make_agent(n_tools: int) -> Any:
    def script(messages: list[BaseMessage]) -> Any:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < n_tools:
            return ai("", call("lookup", {"key": f"k{done}"}, f"c{done}"))
        return ai(f"looked up {done} keys")

    return create_agent(ScriptedChatModel(script=script), [lookup], system_prompt="Look keys up.")


def timed(agent: Any, config: dict[str, Any]) -> float:
    start = time.perf_counter()
    agent.invoke({"messages": [("user", "look up the keys")]}, config)
    return time.perf_counter() - start


def measure(runs: int, n_tools: int, *, wait: bool, data_dir: Path) -> dict[str, float]:
    agent = make_agent(n_tools)
    with Memory(data_dir=data_dir) as memory:
        handler = HindsightCallbackHandler(memory, tenant_id="bench", review=not wait)
        for _ in range(5):  # warm-up: imports, caches, SQL statement cache
            timed(agent, {})
            timed(agent, {"callbacks": [handler]})
        handler.wait()
        ratios, base, with_handler = [], [], []
        for i in range(runs):
            if i % 2:  # alternate the order inside each pair
                b = timed(agent, {})
                h = timed(agent, {"callbacks": [handler]})
            else:
                h = timed(agent, {"callbacks": [handler]})
                b = timed(agent, {})
            if wait:
                handler.wait()
            base.append(b)
            with_handler.append(h)
            ratios.append(h / b)
        handler.wait()
        assert handler.errors == 0, handler.last_error
        assert handler.stored == runs + 5
        memory.flush(timeout=300)
    return {
        "median_ratio": statistics.median(ratios),
        "median_ms_without": statistics.median(base) * 1000,
        "median_ms_with": statistics.median(with_handler) * 1000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--tools", type=int, default=10)
    args = parser.parse_args(argv)
    print(f"agent: {args.tools} tool calls per run, {args.runs} pairs of runs")
    for label, wait in (("caller", True), ("back-to-back", False)):
        with tempfile.TemporaryDirectory() as tmp:
            r = measure(args.runs, args.tools, wait=wait, data_dir=Path(tmp))
        print(
            f"{label:22} median ratio {r['median_ratio']:.3f} "
            f"(without {r['median_ms_without']:.1f} ms, with {r['median_ms_with']:.1f} ms)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
