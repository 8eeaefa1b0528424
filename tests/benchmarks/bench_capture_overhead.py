"""Capture overhead of the LangChain handler and the LangGraph nodes
(docs/benchmarks.md#capture-overhead; goal: median ratio <= 1.10).

Not a test (no assertion on time; the machine is shared and noisy). Run::

    python tests/benchmarks/bench_capture_overhead.py [--runs 60] [--tools 10] [--json]

Two agents on scripted fake chat models (real LangChain / LangGraph objects, no network), each
making ``--tools`` (10) sequential tool calls and then answering:

* **LangChain handler**: a ``create_agent`` agent, run with and without
  ``HindsightCallbackHandler`` (``bench_langchain_overhead.measure``: the trajectory is built
  and stored by the handler's background writer, its review queued);
* **LangGraph nodes**: a ReAct ``StateGraph`` (agent -> tools -> agent ...), compiled once as
  is and once after ``add_hindsight`` (recall node at the start: a real recall from a memory
  holding 500 lessons of the tenant, block at the tail of the system prompt; automatic capture
  of the whole graph run; reflect node at the end: stores the trajectory, queues its review).
  The recall the node makes is real work the user asked for, not capture: it is timed where the
  node makes it (``recall_ms``) and ``capture_ratio`` is the median of
  ``(time(with) - recall) / time(without)``.

The "without" runs see no hindsight at all (the LangGraph capture router and the LangChain
watcher, callback handlers of every run once registered, are switched off for them). Pairs,
ratios and the three modes (``caller``, ``back_to_back``, ``back_to_back_review``) are
described in ``_overhead.py``;
each line reports the wall-time ratio and the process CPU-time ratio. The added CPU ms per run
with the background work inside the timed region, for the handler, the middleware and the
nodes, is ``bench_goals.py`` (``hindsight bench goals``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parents[1] / "integrations"))
sys.path.insert(0, str(HERE))

from _overhead import MODES, drain_reviews, paired  # noqa: E402
from bench_langchain_overhead import measure as measure_handler  # noqa: E402
from hindsight_langgraph import add_hindsight  # noqa: E402
from hindsight_langgraph._bench import react_graph  # noqa: E402

from hindsight import Memory  # noqa: E402
from hindsight.bench import synthetic_lessons  # noqa: E402
from hindsight.bench._overhead import Requested  # noqa: E402

TENANT = "bench"
SEEDED_LESSONS = 500


QUESTION = "look up the keys; get_order timed out last time"


def measure_langgraph(runs: int, n_tools: int, *, mode: str, data_dir: Path) -> dict[str, float]:
    """Median ratio of the graph with ``add_hindsight`` to the same graph without it."""
    plain = react_graph(n_tools).compile()
    with Memory(data_dir=data_dir, background_review=mode != "back_to_back") as memory:
        for text in synthetic_lessons(SEEDED_LESSONS):
            memory.add_experience(text, tenant_id=TENANT, kind="improvement", confidence=0.8)
        recall = Requested()
        memory.recall = recall.wrap(memory.recall)  # type: ignore[method-assign]
        hooked = add_hindsight(react_graph(n_tools), memory, tenant_id=TENANT).compile()
        question = {"messages": [("user", QUESTION)]}
        result = paired(
            lambda: plain.invoke(question),
            lambda: hooked.invoke(question),
            runs,
            between=(lambda: memory.flush(timeout=300)) if mode == "caller" else (lambda: None),
            side=recall,
        )
        result["recall_ms"] = result.pop("side_ms")
        result["capture_ratio"] = result.pop("ratio_without_side")
        if mode == "back_to_back":
            result["review_ms_per_run"] = drain_reviews(memory, runs + 5)
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
        for mode in MODES:
            print(f"measuring {name} ({mode})...", file=sys.stderr)
            with tempfile.TemporaryDirectory(prefix="hindsight-bench-") as tmp:
                r = fn(args.runs, args.tools, mode=mode, data_dir=Path(tmp))
            report["results"][f"{name}/{mode}"] = r
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"agent: {args.tools} tool calls per run, {args.runs} pairs of runs per line")
    for key, r in report["results"].items():
        extra = ""
        if "recall_ms" in r:
            extra += f", recall {r['recall_ms']:.1f} ms, capture ratio {r['capture_ratio']:.3f}"
        if "review_ms_per_run" in r:
            extra += f", review {r['review_ms_per_run']:.1f} ms/run after"
        print(
            f"{key:36} median ratio {r['median_ratio']:.3f} cpu {r['median_cpu_ratio']:.3f} "
            f"(without {r['median_ms_without']:.1f} ms, with {r['median_ms_with']:.1f} ms{extra})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
