"""The write side (docs/benchmarks.md#the-write-side): public batch ingest, cold start next to the
raw Qdrant Edge shard, review CPU per tau-bench run. Not a test (no assertion on time: the machine
is shared). Run on a quiet machine::

    python tests/benchmarks/bench_write_side.py [--sizes 1000,10000,100000] [--batch 1000]
        [--cold-size 1000] [--repeats 5] [--runs N] [--json]

Each part is a function of :mod:`hindsight.bench._perf` (also ``hindsight bench ingest``,
``hindsight bench cold-start``, ``hindsight bench review FILE``); the figures are printed with
the commit they were measured at. Goals: ingest >= 2,000 lessons/s at 10k and
<= 1.3x slower per 10x of size; cold start <= 1.5x the raw shard; review <= 10 ms CPU per run.
The capture overhead of the handler, middleware and nodes, and every goal in one table, is
bench_goals.py.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from hindsight.bench._perf import batch_ingest, cold_start_vs_edge, review_cpu  # noqa: E402

TAU_BENCH = REPO.parent / "shared/data/tau-bench/gpt-4o-airline.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--cold-size", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--tau-bench", type=Path, default=TAU_BENCH)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    report = {
        "commit": commit,
        "ingest": batch_ingest(
            [int(s) for s in args.sizes.split(",")], batch=args.batch, progress=say
        ),
        "cold_start": cold_start_vs_edge(args.cold_size, repeats=args.repeats, progress=say),
        "review": review_cpu(args.tau_bench, runs=args.runs, progress=say),
    }
    print(json.dumps(report, indent=2 if not args.json else None))


if __name__ == "__main__":
    main()
