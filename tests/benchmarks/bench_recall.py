"""Benchmark recall through the public API next to the raw Qdrant Edge query with the same filter
(docs/benchmarks.md#recall-against-the-raw-edge-query; goal: p50 <= 3x at 10k and 100k in one
tenant).

Not a test (no assertion on time; machines are noisy). Run::

    python tests/benchmarks/bench_recall.py                       # 10k, 100k, 100k as 10 x 10k
    python tests/benchmarks/bench_recall.py --layouts 2k --queries 20 --repeats 2   # a quick look

It prints, per layout, p50/p95 of :meth:`hindsight.Memory.recall` and of the raw query in
wall time and process CPU time (medians over the repeats) and their ratio; the same figures as
``hindsight bench recall`` (:func:`hindsight.bench.recall_vs_edge` measures both). Run it only
on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hindsight.bench import recall_vs_edge, render_recall_lines
from hindsight.cli._bench import _parse_layouts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", default="10k,100k,100kx10")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[2]
    commit = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    results = [
        recall_vs_edge(
            size,
            tenants=tenants,
            queries=args.queries,
            repeats=args.repeats,
            progress=lambda line: print(f"  {line}", file=sys.stderr),
        )
        for size, tenants in _parse_layouts(args.layouts)
    ]
    if args.json:
        print(json.dumps({"commit": commit, "recall_vs_raw_edge": results}, indent=2))
        return
    print(f"commit {commit or 'unknown'}")
    for line in render_recall_lines(results):
        print(line)


if __name__ == "__main__":
    main()
