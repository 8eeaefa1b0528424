"""Benchmark the vector indexes: tenant-filtered search latency, recall, and how long indexing
stalls the rest of the process.

Not a test (no assertion on time; machines are noisy). Run::

    python tests/benchmarks/bench_vectors.py --sizes 10000,100000

For each size N it inserts N random L2-normalised 384-d vectors spread over ``--tenants``
tenants into a fresh Qdrant Edge shard (the embedded default, background indexing on) while

* a *ticker* thread sleeps 5 ms in a loop and records the longest gap between its wake-ups:
  the longest time no other Python thread could run (``optimize()`` holds the GIL), and
* a *reader* thread searches continuously and records its latencies during the ingest,

then waits for the remaining optimization, and measures tenant-filtered top-10 search latency
(p50/p99 over ``--queries`` random queries, embedding excluded) and recall@10 against exact
brute force. qdrant-client's local mode is measured too for sizes up to ``--client-max``.
``--plain`` adds an Edge shard that is never indexed (payload indexes only) for comparison.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hindsight.ports import VectorPoint
from hindsight.vectors import EdgeVectorIndex, QdrantClientVectorIndex

DIM = 384


def make_data(n: int, tenants: int, seed: int) -> tuple[np.ndarray, list[str], list[str]]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [str(uuid.uuid4()) for _ in range(n)]
    owner = [f"t{i % tenants}" for i in range(n)]
    return vectors, ids, owner


def points(vectors: np.ndarray, ids: list[str], owner: list[str], lo: int, hi: int) -> list[Any]:
    return [
        VectorPoint(
            ids[i],
            vectors[i],
            {
                "tenant_id": owner[i],
                "namespace": "default",
                "task_type": "booking" if i % 3 else "refund",
                "status": "active",
                "kind": "rule",
                "tags": ["bench"],
            },
        )
        for i in range(lo, hi)
    ]


class Ticker(threading.Thread):
    """Sleeps 5 ms in a loop; ``max_gap`` is the longest the GIL kept it from waking."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.max_gap = 0.0

    def run(self) -> None:
        last = time.perf_counter()
        while not self.stop.is_set():
            time.sleep(0.005)
            now = time.perf_counter()
            self.max_gap = max(self.max_gap, now - last - 0.005)
            last = now


class Reader(threading.Thread):
    """Searches one tenant in a loop and keeps the latencies (ms)."""

    def __init__(self, index: Any, queries: np.ndarray) -> None:
        super().__init__(daemon=True)
        self.index, self.queries = index, queries
        self.stop = threading.Event()
        self.latencies: list[float] = []

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            query = self.queries[i % len(self.queries)]
            started = time.perf_counter()
            self.index.search(query, tenant_id="t0", namespaces=["default"], limit=10)
            self.latencies.append((time.perf_counter() - started) * 1000)
            i += 1
            time.sleep(0.002)


def measure(
    index: Any,
    queries: np.ndarray,
    tenants: int,
    data: tuple[np.ndarray, list[str], list[str]],
) -> dict[str, float]:
    """Search latency p50/p99 (ms) and mean recall@10 against exact brute force."""
    vectors, ids, owner = data
    owner_arr = np.asarray(owner)
    for query in queries[:20]:  # warm up caches
        index.search(query, tenant_id="t0", namespaces=["default"], limit=10)
    latencies, recalls = [], []
    for i, query in enumerate(queries):
        tenant = f"t{i % tenants}"
        started = time.perf_counter()
        hits = index.search(query, tenant_id=tenant, namespaces=["default"], limit=10)
        latencies.append((time.perf_counter() - started) * 1000)
        if i < 100:
            rows = np.flatnonzero(owner_arr == tenant)
            best = rows[np.argsort(-(vectors[rows] @ query))[:10]]
            truth = {ids[r] for r in best}
            recalls.append(len(truth & {h.id for h in hits}) / len(truth))
    return {
        "p50": float(np.percentile(latencies, 50)),
        "p99": float(np.percentile(latencies, 99)),
        "recall": float(np.mean(recalls)),
    }


def bench_edge(
    n: int, tenants: int, queries: np.ndarray, root: Path, *, plain: bool = False
) -> dict[str, Any]:
    data = vectors, ids, owner = make_data(n, tenants, seed=n)
    path = root / f"edge-{n}-{'plain' if plain else 'indexed'}"
    shutil.rmtree(path, ignore_errors=True)
    # plain: a segment unit larger than the data, so nothing is ever HNSW-indexed
    segment_kb = n * DIM * 4 // 1024 + 1024 if plain else 15_000
    index = EdgeVectorIndex(path, DIM, segment_kb=segment_kb, background=not plain)
    ticker, reader = Ticker(), Reader(index, queries)
    ticker.start()
    reader.start()
    started = time.perf_counter()
    for lo in range(0, n, 1000):
        index.upsert(points(vectors, ids, owner, lo, min(n, lo + 1000)))
    ingest = time.perf_counter() - started
    started = time.perf_counter()
    if not plain:
        index.optimize(wait=True)
    final_optimize = time.perf_counter() - started
    reader.stop.set()
    reader.join()
    ticker.stop.set()
    ticker.join()
    info = index.info()
    result = measure(index, queries, tenants, data)
    index.close()
    during = reader.latencies or [0.0]
    result.update(
        ingest_s=ingest,
        final_optimize_s=final_optimize,
        max_stall_s=ticker.max_gap,
        reads_during_ingest=len(reader.latencies),
        read_p50_during=float(np.percentile(during, 50)),
        read_max_during=float(np.max(during)),
        segments=info["segments"],
        indexed=info["indexed_vectors"],
    )
    shutil.rmtree(path, ignore_errors=True)
    return result


def bench_client(n: int, tenants: int, queries: np.ndarray) -> dict[str, Any]:
    data = vectors, ids, owner = make_data(n, tenants, seed=n)
    index = QdrantClientVectorIndex(":memory:", DIM)
    started = time.perf_counter()
    for lo in range(0, n, 1000):
        index.upsert(points(vectors, ids, owner, lo, min(n, lo + 1000)))
    ingest = time.perf_counter() - started
    result = measure(index, queries, tenants, data)
    result["ingest_s"] = ingest
    index.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated point counts")
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--client-max", type=int, default=10_000, help="largest size for qdrant-client"
    )
    parser.add_argument("--plain", action="store_true", help="also measure a never-indexed shard")
    parser.add_argument("--dir", type=Path, default=None, help="where shards go (default: tmp)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rng = np.random.default_rng(12345)
    queries = rng.standard_normal((args.queries, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    root = args.dir or Path(tempfile.mkdtemp(prefix="hindsight-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    print(
        f"{DIM}-d vectors, {args.tenants} tenants, tenant-filtered top-10, {args.queries} queries"
    )
    for n in sizes:
        variants = [("edge", False)] + ([("edge-plain", True)] if args.plain else [])
        for name, plain in variants:
            r = bench_edge(n, args.tenants, queries, root, plain=plain)
            print(
                f"{name:<11} n={n:>7}: search p50 {r['p50']:6.2f} ms  p99 {r['p99']:6.2f} ms  "
                f"recall@10 {r['recall']:.3f} | ingest {r['ingest_s']:5.1f} s, final optimize "
                f"{r['final_optimize_s']:4.1f} s, segments {r['segments']}, indexed "
                f"{r['indexed']}/{n} | longest stall of other threads {r['max_stall_s']:.2f} s, "
                f"reads during ingest {r['reads_during_ingest']} (p50 "
                f"{r['read_p50_during']:.1f} ms, max {r['read_max_during']:.0f} ms)",
                flush=True,
            )
        if n <= args.client_max:
            r = bench_client(n, args.tenants, queries)
            print(
                f"{'client-local':<11} n={n:>7}: search p50 {r['p50']:6.2f} ms  p99 "
                f"{r['p99']:6.2f} ms  recall@10 {r['recall']:.3f} | ingest {r['ingest_s']:5.1f} s",
                flush=True,
            )
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
