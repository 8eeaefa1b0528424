"""Benchmark the decision-time risk check (goal: <= 2 ms p50 embedded at 10k lessons;
docs/benchmarks.md#decision-time-checks).

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

Each way runs ``--repeats`` times (default 5) over fresh random calls; reports, per call in
milliseconds, the **median over the repeats** of each repeat's p50 and p95 (and their range),
for wall time (``time.perf_counter``) and CPU time of the process (``time.process_time``:
the sync ``Memory.check_action`` runs on the calling thread, but other threads of the process,
such as the recall-bookkeeping flush, count too), and the checks returned per call. Also prints
the lookup's cache hits and misses, so a run where the cache did not work is visible.

    python tests/benchmarks/bench_check_action.py --repeats 5
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


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank, ``q`` in [0, 1])."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def summary(runs: list[list[float]]) -> str:
    """Median over the repeats of each repeat's p50 and p95, with their range, in ms."""
    parts = []
    for name, q in (("p50", 0.5), ("p95", 0.95)):
        per_run = [percentile(r, q) * 1e3 for r in runs]
        parts.append(
            f"{name} {statistics.median(per_run):.3f} ms "
            f"(repeats {min(per_run):.3f}..{max(per_run):.3f})"
        )
    return ", ".join(parts)


def timed(
    mem: Memory,
    calls: int,
    tools: int,
    rng: random.Random,
    before: Callable[[], None],
    repeats: int,
) -> None:
    walls: list[list[float]] = []
    cpus: list[list[float]] = []
    found = 0
    for _ in range(repeats):
        wall: list[float] = []
        cpu: list[float] = []
        for _ in range(calls):
            tool = f"tool_{rng.randrange(tools)}"
            args = {"cabin": rng.choice(CLASSES), "passengers": 1}
            before()
            w0, c0 = time.perf_counter(), time.process_time()
            result = mem.check_action(tool, args, tenant_id=TENANT, record=False)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
            found += len(result.checks)
        walls.append(wall)
        cpus.append(cpu)
    print(f"  wall: {summary(walls)}")
    print(f"  cpu:  {summary(cpus)}")
    print(f"  checks per call: {found / (calls * repeats):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--tools", type=int, default=100)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=5)
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
            for t in range(args.tools):  # warm-up: imports, every tool's lookup cached
                mem.check_action(f"tool_{t}", {"cabin": "economy"}, tenant_id=TENANT,
                                 record=False)  # fmt: skip
            print(
                f"check_action at {args.lessons} lessons ({args.tools} tools), "
                f"{args.calls} calls x {args.repeats} repeats, {store.url.split(':')[0]}:"
            )
            print("warm (no write between calls):")
            timed(mem, args.calls, args.tools, rng, lambda: None, args.repeats)
            step = [0.0]

            def write() -> None:
                step[0] = -step[0] or 0.01
                store.adjust_confidence(TENANT, victim.id, step[0], reason="bench", actor="bench")

            print("after a write (every call reads the database):")
            timed(mem, args.calls, args.tools, rng, write, args.repeats)
            cache = store._about_tool_cache
            if cache is not None:
                print(f"lookup cache: {cache.hits} hits, {cache.misses} misses")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
