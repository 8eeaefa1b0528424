"""Benchmark the decision-time risk check (issue 16 goal: <= 2 ms p50 embedded at 10k lessons).

Not a test (no assertion on time; machines are noisy: run it when nothing else runs). Run::

    python tests/benchmarks/bench_check_action.py [--lessons 10000] [--tools 100]
        [--calls 2000] [--database-url postgresql+psycopg://...]

Builds an embedded memory (a SQLite file and the embedded vector index in a temporary folder,
or ``--database-url``) holding ``--lessons`` active lessons of one tenant (rules,
anti-patterns, tool-reliability lessons and improvements over ``--tools`` tools; one in ten
written without ``tools``, naming its tool in the text; one in four a contrast rule with an
argument condition) plus as many in a second tenant, written straight to the SQL store (the
write path is not what is measured). Then times ``Memory.check_action(tool, args, record=False)``
for ``--calls`` calls on random tools, two ways:

* **warm**: nothing is written between calls, the usual case at decision time (the lookup is
  answered from the store's cache after one primary-key read of the tenant's stamp);
* **after a write**: an experience of the tenant is updated before each call (its confidence),
  so every call reads the database again: the worst case.

Reports p50 / p95 / mean wall time (``time.perf_counter``) and CPU time of the process
(``time.process_time``: ``Memory`` runs the call on its background loop thread, so the calling
thread's own CPU time would miss it; other threads of the process count too) per call, in
milliseconds, and the checks returned per call.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hindsight import Memory
from hindsight.models import Experience, ExperienceKind

TENANT = "acme"
KINDS = [
    ExperienceKind.RULE,
    ExperienceKind.ANTI_PATTERN,
    ExperienceKind.TOOL_RELIABILITY,
    ExperienceKind.IMPROVEMENT,
]
CLASSES = ["economy", "basic_economy", "business"]


def lessons(tenant: str, n: int, tools: int, rng: random.Random) -> list[Experience]:
    out = []
    for i in range(n):
        tool = f"tool_{rng.randrange(tools)}"
        kind = KINDS[i % len(KINDS)]
        metadata: dict[str, Any] = {"lesson_key": f"bench:{tenant}:{i}"}
        if i % 4 == 0:
            kind = ExperienceKind.RULE
            failed, expected = rng.sample(CLASSES, 2)
            metadata["contrast"] = {"op": "arg", "tool": tool, "key": "cabin", "how": "class",
                                    "actual": failed, "expected": expected}  # fmt: skip
        out.append(
            Experience(
                tenant_id=tenant,
                kind=kind,
                content=f"Before calling {tool}, check the cabin the user asked for ({i}).",
                tools=[] if i % 10 == 1 else [tool],
                confidence=round(rng.uniform(0.3, 0.95), 3),
                metadata=metadata,
            )
        )
    return out


def percentiles(values: list[float]) -> str:
    values = sorted(values)
    p50 = values[len(values) // 2]
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return (
        f"p50 {p50 * 1e3:.3f} ms, p95 {p95 * 1e3:.3f} ms, "
        f"mean {statistics.fmean(values) * 1e3:.3f} ms"
    )


def timed(
    mem: Memory, calls: int, tools: int, rng: random.Random, before: Callable[[], None]
) -> None:
    wall: list[float] = []
    cpu: list[float] = []
    found = 0
    for _ in range(calls):
        tool = f"tool_{rng.randrange(tools)}"
        args = {"cabin": rng.choice(CLASSES), "passengers": 1}
        before()
        w0, c0 = time.perf_counter(), time.process_time()
        result = mem.check_action(tool, args, tenant_id=TENANT, record=False)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        found += len(result.checks)
    print(f"  wall: {percentiles(wall)}")
    print(f"  cpu:  {percentiles(cpu)}")
    print(f"  checks per call: {found / calls:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--tools", type=int, default=100)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="hindsight-bench-checks-"))
    try:
        options: dict[str, Any] = {"data_dir": folder, "embedding_model": "hash"}
        if args.database_url:
            options["database_url"] = args.database_url
        with Memory(**options) as mem:
            store = mem.aio.store
            for tenant in (TENANT, "globex"):
                items = lessons(tenant, args.lessons, args.tools, rng)
                for start in range(0, len(items), 1000):
                    store.add_experiences(items[start : start + 1000], None)
            victim = store.list_experiences(TENANT, limit=1)[0]
            for _ in range(50):  # warm-up (imports, caches, prepared statements)
                mem.check_action("tool_0", {"cabin": "economy"}, tenant_id=TENANT, record=False)
            print(
                f"check_action at {args.lessons} lessons ({args.tools} tools), "
                f"{args.calls} calls, {store.url.split(':')[0]}:"
            )
            print("warm (no write between calls):")
            timed(mem, args.calls, args.tools, rng, lambda: None)
            step = [0.0]

            def write() -> None:
                step[0] = -step[0] or 0.01
                store.adjust_confidence(TENANT, victim.id, step[0], reason="bench", actor="bench")

            print("after a write (every call reads the database):")
            timed(mem, args.calls, args.tools, rng, write)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
