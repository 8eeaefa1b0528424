"""hindsight side by side with mem0 (open-source, embedded) and LangGraph's InMemoryStore.

Not a test (timings are reported, never asserted). Run (extra ``bench``)::

    python tests/benchmarks/peers.py --sizes 1000,10000 [--queries 100] [--json] [--plot F.png]

For each size N, one process, one machine, the same data and the same embedder for all:

1. N distinct one-line lessons over 10 tenants (:mod:`tests.benchmarks._peers_data`), their
   vectors and the queries' vectors computed **before** any timing
   (:class:`~tests.benchmarks._peers_data.PrecomputedEmbedder`: hindsight's offline hash
   embedder behind a cache), so no system's timing includes embedding;
2. every system ingests them through its public per-item write call (hindsight
   ``add_experience``, which also screens and dedups each lesson; mem0 ``add(infer=False)``;
   LangGraph ``put``): **ingest** = lessons per second; then ``ready`` = time to finish what
   the system builds after writes (hindsight: its HNSW index; the peers: nothing);
3. every query is run once untimed per system (warm-up, and the relevance sanity check: the
   planted lesson must come first, and ``hit@k`` = share of queries whose target lesson is
   among the k results);
4. ``--repeats`` rounds of all queries, the systems taking turns on each query (so load
   noise hits all alike): tenant-filtered **recall latency** p50 / p95 / p99 in milliseconds
   of the public search call (hindsight ``Memory.recall`` with its full scoring; mem0
   ``Memory.search(filters={"user_id": ...})``; LangGraph ``store.search((tenant, ...))``).

Ratios are ``peer / hindsight`` (latency: > 1 means the peer is slower; ingest: < 1 means
the peer ingests slower). Goal: mem0's recall p50 >= 20x ours at 10k.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks._peers_data import PrecomputedEmbedder, Workload, make_workload
from tests.benchmarks._peers_systems import SYSTEMS

#: Published figures for vectorize's hindsight (a different product of the same name), NOT
#: measured here: no network, and it needs an LLM at recall time.
PUBLISHED_ANCHOR = (
    "vectorize-io/hindsight (published, not measured here): recall 100-600 ms (its docs); "
    "p50 2.7 s on a 5k-fact bank at high budget (its perf suite)"
)
GOAL_MEM0_RATIO = 20.0
GOAL_SIZE = 10_000
"""The goal: recall >= 20x faster than mem0's embedded default at 10k lessons."""
_PACKAGES = ("hindsight-memory", "mem0ai", "langgraph", "qdrant-client", "qdrant-edge-py")


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values``, linear interpolation (numpy's)."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def machine() -> dict[str, Any]:
    """CPU count, load average (1/5/15 min), Python and the measured packages' versions."""
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
    }


def _ingest(system: Any, wl: Workload) -> dict[str, Any]:
    start = time.perf_counter()
    for text, tenant in zip(wl.lessons, wl.tenant_of, strict=True):
        system.add(text, tenant)
    seconds = time.perf_counter() - start
    ready = system.ready()
    return {"ingest_per_s": len(wl.lessons) / seconds, "ready_s": ready, "stored": system.count()}


def _sanity(system: Any, wl: Workload, k: int) -> dict[str, Any]:
    """Warm-up pass: every query once; where the planted lesson ranks; hit@k of the targets."""
    hits, planted_rank, empty = 0, None, 0
    for i, q in enumerate(wl.queries):
        found = system.search(q.text, q.tenant, k)
        empty += not found
        hits += q.target in found
        if i == 0:
            planted_rank = found.index(q.target) + 1 if q.target in found else None
    return {"hit_at_k": hits / len(wl.queries), "planted_rank": planted_rank, "empty": empty}


def run_size(
    n: int,
    *,
    queries: int = 100,
    repeats: int = 3,
    k: int = 5,
    tenants: int = 10,
    systems: tuple[str, ...] = tuple(SYSTEMS),
    progress: Any = _say,
) -> dict[str, Any]:
    """Measure every system at size ``n``; returns ``{"size", "systems": {name: {...}}}``.

    Per system: ``ingest_per_s``, ``ready_s``, ``stored`` (rows it holds after ingest),
    ``hit_at_k``, ``planted_rank`` (1 = first), ``empty`` (queries with no result),
    ``recall_ms`` (``p50``/``p95``/``p99``), ``embed_misses_timed`` (texts embedded inside
    the timed recall rounds; 0 means embedding was excluded). Then ``ratios``: per peer,
    ``recall_p50`` and ``recall_p95`` (peer / hindsight) and ``ingest`` (peer / hindsight).

    Raises:
        ValueError: a bad size, name or count.
    """
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown or "hindsight" not in systems:
        raise ValueError(f"systems must include 'hindsight' and be among {list(SYSTEMS)}")
    if repeats < 1 or k < 1:
        raise ValueError(f"repeats and k must be >= 1, got {repeats}, {k}")
    wl = make_workload(n, tenants=tenants, queries=queries)
    out: dict[str, Any] = {"size": n, "queries": queries, "repeats": repeats, "k": k}
    with tempfile.TemporaryDirectory(prefix="hindsight-peers-") as tmp:
        embedder = PrecomputedEmbedder()
        embedder.prime(wl.lessons + [q.text for q in wl.queries])
        opened: dict[str, Any] = {}
        results: dict[str, dict[str, Any]] = {}
        try:
            for name in systems:
                progress(f"{n}: {name}: ingest")
                opened[name] = SYSTEMS[name](Path(tmp), embedder)
                results[name] = _ingest(opened[name], wl)
                results[name].update(_sanity(opened[name], wl, k))
            times: dict[str, list[float]] = {name: [] for name in systems}
            misses_before = embedder.misses
            progress(f"{n}: recall ({repeats} x {queries} queries per system)")
            for r in range(repeats):
                for i, q in enumerate(wl.queries):
                    turn = (r + i) % len(systems)
                    for name in systems[turn:] + systems[:turn]:
                        start = time.perf_counter()
                        opened[name].search(q.text, q.tenant, k)
                        times[name].append((time.perf_counter() - start) * 1000.0)
            for name in systems:
                results[name]["recall_ms"] = {
                    f"p{p}": percentile(times[name], p) for p in (50, 95, 99)
                }
                results[name]["embed_misses_timed"] = embedder.misses - misses_before
        finally:
            for system in opened.values():
                system.close()
    ours = results["hindsight"]
    out["systems"] = results
    out["ratios"] = {
        name: {
            "recall_p50": res["recall_ms"]["p50"] / ours["recall_ms"]["p50"],
            "recall_p95": res["recall_ms"]["p95"] / ours["recall_ms"]["p95"],
            "ingest": res["ingest_per_s"] / ours["ingest_per_s"],
        }
        for name, res in results.items()
        if name != "hindsight"
    }
    return out


def format_report(report: dict[str, Any]) -> str:
    """The report as plain-text tables (one per size), the goal check and the anchor."""
    lines = []
    for res in report["results"]:
        lines.append(
            f"\n{res['size']} lessons, {res['queries']} queries x {res['repeats']}, top {res['k']}"
        )
        lines.append(
            f"{'system':<10} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'ingest/s':>9} "
            f"{'ready s':>8} {'stored':>7} {'hit@k':>6} {'planted':>7} {'x p50':>7} {'x ingest':>8}"
        )
        for name, s in res["systems"].items():
            ratio = res["ratios"].get(name, {"recall_p50": 1.0, "ingest": 1.0})
            lines.append(
                f"{name:<10} {s['recall_ms']['p50']:8.2f} {s['recall_ms']['p95']:8.2f} "
                f"{s['recall_ms']['p99']:8.2f} {s['ingest_per_s']:9.0f} {s['ready_s']:8.2f} "
                f"{s['stored']:7d} {s['hit_at_k']:6.2f} {s['planted_rank']!s:>7} "
                f"{ratio['recall_p50']:7.1f} {ratio['ingest']:8.2f}"
            )
        mem0 = res["ratios"].get("mem0")
        if mem0 is not None and res["size"] == GOAL_SIZE:
            verdict = "met" if mem0["recall_p50"] >= GOAL_MEM0_RATIO else "NOT met"
            lines.append(
                f"goal at {GOAL_SIZE:,}: recall >= {GOAL_MEM0_RATIO:.0f}x faster than mem0 "
                f"embedded: {mem0['recall_p50']:.1f}x ({verdict})"
            )
    lines.append("\nx p50 / x ingest: peer / hindsight (x p50 > 1: the peer recalls slower)")
    lines.append(PUBLISHED_ANCHOR)
    m = report["machine"]
    lines.append(f"machine: {m['cpus']} CPUs, load {m['loadavg']}, Python {m['python']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring. Returns the exit code."""
    parser = argparse.ArgumentParser(prog="python tests/benchmarks/peers.py")
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated lesson counts")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--plot", type=Path, help="also write a PNG of recall latency here")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes must be integers, got {args.sizes!r}")
    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
    report: dict[str, Any] = {"machine": machine(), "published_anchor": PUBLISHED_ANCHOR}
    try:
        report["results"] = [
            run_size(n, queries=args.queries, repeats=args.repeats, k=args.top_k, systems=systems)
            for n in sizes
        ]
    except ValueError as exc:
        parser.error(str(exc))
    report["machine"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.plot is not None:
        from tests.benchmarks._peers_plot import plot_report

        report["plot"] = str(plot_report(report, args.plot))
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
