"""Benchmark the LangChain callback handler's overhead (goal: median ratio <= 1.10;
docs/benchmarks.md#capture-overhead).

Not a test (no assertion on time; machines are noisy). Run::

    python tests/benchmarks/bench_langchain_overhead.py --runs 60

A ``create_agent`` agent on a scripted fake chat model makes ``--tools`` (10) sequential tool
calls, then answers. Runs with and without ``HindsightCallbackHandler`` alternate (see
``_overhead.paired``: median of per-pair ratios ``time(with handler) / time(without)`` of the
``invoke`` call), the handler on a real embedded memory (SQLite file + Qdrant Edge in a
temporary folder), in the modes of ``_overhead.MODES``: ``caller`` (between pairs the handler's
writer stores the run and its review runs, untimed), ``back_to_back`` (no waiting; reviews
queued, run after the timed runs, reported apart) and ``back_to_back_review`` (reviews run in
this process during the timed runs too).

The callback hot path does no I/O: events are plain dicts appended under a lock; a root run's
end hands them to the background writer, which builds the trajectory and stores it (one SQL
transaction with the review job).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parents[1] / "integrations"))
sys.path.insert(0, str(HERE))

from _overhead import MODES, drain_reviews, paired  # noqa: E402
from hindsight_langchain import HindsightCallbackHandler  # noqa: E402
from hindsight_langchain._bench import lookup, scripted_model  # noqa: E402
from langchain.agents import create_agent  # noqa: E402

from hindsight import Memory  # noqa: E402


def make_agent(n_tools: int) -> Any:
    return create_agent(scripted_model(n_tools), [lookup], system_prompt="Look keys up.")


def measure(runs: int, n_tools: int, *, mode: str, data_dir: Path) -> dict[str, float]:
    """Median ratios of the agent with the handler to the agent without (see module doc)."""
    agent = make_agent(n_tools)
    question = {"messages": [("user", "look up the keys")]}
    with Memory(data_dir=data_dir, background_review=mode != "back_to_back") as memory:
        handler = HindsightCallbackHandler(memory, tenant_id="bench")

        def between() -> None:
            handler.wait()
            memory.flush(timeout=300)

        result = paired(
            lambda: agent.invoke(question),
            lambda: agent.invoke(question, {"callbacks": [handler]}),
            runs,
            between=between if mode == "caller" else (lambda: None),
        )
        handler.wait()
        assert handler.errors == 0, handler.last_error
        assert handler.stored == runs + 5, handler.stored
        if mode == "back_to_back":
            result["review_ms_per_run"] = drain_reviews(memory, runs + 5)
        memory.flush(timeout=600)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--tools", type=int, default=10)
    args = parser.parse_args(argv)
    print(f"agent: {args.tools} tool calls per run, {args.runs} pairs of runs")
    for mode in MODES:
        with tempfile.TemporaryDirectory() as tmp:
            r = measure(args.runs, args.tools, mode=mode, data_dir=Path(tmp))
        print(
            f"{mode:22} median ratio {r['median_ratio']:.3f} cpu {r['median_cpu_ratio']:.3f} "
            f"(without {r['median_ms_without']:.1f} ms, with {r['median_ms_with']:.1f} ms)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
