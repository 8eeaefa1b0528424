"""Every performance goal in one run, one table with anchors and ratios
(docs/benchmarks.md#the-goals-in-one-run). Not a test (no assertion on time: the machine is shared).
Run on a quiet machine::

    python tests/benchmarks/bench_goals.py [--sizes 10k,100k] [--repeats 5] [--tau-bench PATH]
        [--json]
    python tests/benchmarks/bench_goals.py --quick        # seconds: checks that it runs

The same as ``hindsight bench goals`` (:mod:`hindsight.bench._goals`): recall p50 next to the
raw Qdrant Edge query (10k, 100k single tenant; 100k as 10 x 10k for information), public batch
ingest at 1k/10k/100k and its slowdown per 10x, cold start next to the raw shard, review CPU
per tau-bench run, and the capture overhead of the LangChain handler, the LangChain middleware
and the LangGraph nodes including their background work; commit, version, CPUs and the load
average at start and end printed with them. The parts are also benchmarks of their own:
bench_recall.py, bench_write_side.py, bench_capture_overhead.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO), str(REPO / "integrations")]

TAU_BENCH = REPO.parent / "shared/data/tau-bench/gpt-4o-airline.json"


def main(argv: list[str]) -> None:
    from hindsight.cli import app

    if "--tau-bench" not in argv and TAU_BENCH.is_file():
        argv = [*argv, "--tau-bench", str(TAU_BENCH)]
    app(["bench", "goals", *argv], prog_name="bench_goals.py")


if __name__ == "__main__":
    main(sys.argv[1:])
