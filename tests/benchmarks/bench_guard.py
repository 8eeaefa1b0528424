"""Benchmark the memory guard: time per before-write check, and the cost the guard adds to the
write and recall paths of the engine.

Not a test (no assertion on time; machines are noisy). Run::

    python tests/benchmarks/bench_guard.py [--writes 300]

Prints the mean time of ``Guard.check`` over the held-out set (``tests/guard_heldout.jsonl``),
and the mean time of ``add_experience`` and ``recall`` on an in-memory store with the guard on
and off (``HINDSIGHT_GUARD``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hindsight.guard import Guard
from hindsight.testing import test_memory

HELDOUT = Path(__file__).resolve().parents[1] / "guard_heldout.jsonl"


def check_time() -> None:
    texts = [json.loads(line)["content"] for line in HELDOUT.read_text("utf-8").splitlines()]
    guard = Guard()
    for text in texts[:20]:
        guard.check(text)
    start = time.perf_counter()
    for text in texts:
        guard.check(text)
    mean = (time.perf_counter() - start) / len(texts)
    chars = sum(map(len, texts)) / len(texts)
    print(
        f"Guard.check: {mean * 1e3:.3f} ms per lesson ({len(texts)} lessons, "
        f"{chars:.0f} characters on average)"
    )


def engine_time(writes: int) -> None:
    for guard in (True, False):
        with test_memory(guard=guard) as mem:
            start = time.perf_counter()
            for i in range(writes):
                mem.add_experience(
                    f"lesson {i} about tool_{i % 13} and task {i % 7}", tenant_id="t"
                )
            add = (time.perf_counter() - start) / writes
            start = time.perf_counter()
            for i in range(writes):
                mem.recall(f"tool_{i % 13} lesson", tenant_id="t")
            recall = (time.perf_counter() - start) / writes
        print(
            f"guard {'on ' if guard else 'off'}: add_experience {add * 1e3:.2f} ms, "
            f"recall {recall * 1e3:.2f} ms (mean of {writes})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=300)
    args = parser.parse_args()
    check_time()
    engine_time(args.writes)


if __name__ == "__main__":
    main()
