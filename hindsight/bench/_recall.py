"""Recall through the public API next to the raw Qdrant Edge query under it
(docs/benchmarks.md#recall-against-the-raw-edge-query; the goal: recall p50 <= 3x the raw query
with the same filter).

One layout per call of :func:`recall_vs_edge`: ``size`` experiences in one tenant, or spread
over ``tenants`` tenants (100k as 10 x 10k: each query then scans one tenant's 10k). The store
is a fresh embedded one (SQLite and Qdrant Edge in a temporary data dir), filled through the
SQL store and the vector log (the fill is not what is measured). Then, for the same query
vectors (embedding excluded: the embedder caches them beforehand),

* **hindsight**: :meth:`hindsight.Memory.recall` as users call it (``top_k`` 5, scoring,
  selection, the recall bookkeeping), and
* **raw Edge**: the query :meth:`hindsight.vectors.EdgeVectorIndex.search` sends to the
  ``qdrant_edge`` shard for that recall's candidates (the same tenant / namespace / status /
  kind filter and limit, built once; the request built per query),

alternating per query, each timed in wall time (``perf_counter``) and in process CPU time
(``process_time``, every thread of the process: a background flush counts). Each repeat gives
p50/p95 of both; the figures are medians over ``repeats`` repeats, and the ratio is
hindsight / raw of the medians.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hindsight.bench._data import percentile, synthetic_experiences, synthetic_lessons
from hindsight.bench._size import CachingEmbedder, use_embedder
from hindsight.models import utcnow

__all__ = ["RECALL_LAYOUTS", "recall_vs_edge", "render_recall_lines"]

RECALL_LAYOUTS = ((10_000, 1), (100_000, 1), (100_000, 10))
"""``(size, tenants)`` measured by default: 10k and 100k in one tenant, 100k as 10 x 10k."""
TOP_K = 5
FILL_BATCH = 2_000
WARMUP = 10


def recall_vs_edge(
    size: int,
    *,
    tenants: int = 1,
    queries: int = 200,
    repeats: int = 5,
    parent: Path | None = None,
    embedding_model: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Measure one layout (module docstring).

    Args:
        size: experiences in the store (all tenants together), >= 1.
        tenants: tenants they are spread over round-robin (queries go to the first), >= 1.
        queries: timed queries per repeat, >= 1.
        repeats: repeats (medians are taken over them), >= 1.
        parent: folder for the temporary data dir (default: the system temp dir).
        embedding_model: the embedder (default: the configured ``EMBEDDING_MODEL``).
        progress: called with a short line as the phases start.

    Returns:
        ``{"size", "tenants", "per_tenant", "queries", "repeats", "top_k", "embedder",
        "hindsight_ms": {"wall": {"p50", "p95"}, "cpu": {...}}, "raw_edge_ms": {same},
        "ratio": {"wall_p50", "wall_p95", "cpu_p50", "cpu_p95"}}``; milliseconds.

    Raises:
        ValueError: a count below 1, or the vector index is not Qdrant Edge.
    """
    if min(size, tenants, queries, repeats) < 1:
        raise ValueError("size, tenants, queries and repeats must be >= 1")
    from hindsight import Memory

    say = progress or (lambda _line: None)
    folder = Path(tempfile.mkdtemp(prefix="hindsight-bench-recall-", dir=parent))
    overrides: dict[str, Any] = {"data_dir": folder, "background_review": False}
    if embedding_model:
        overrides["embedding_model"] = embedding_model
    mem = Memory(**overrides)
    try:
        owners = [f"bench-{k}" for k in range(tenants)]
        texts = synthetic_lessons(size)
        say(f"{size:,} in {tenants} tenant(s): filling")
        vectors = _fill(mem, texts, owners)
        qs = _queries(texts, owners[0], tenants, queries)
        embedder = CachingEmbedder(mem.aio.embedder)
        embedder.embed(qs)
        use_embedder(mem.aio, embedder)
        raw = _raw_query(mem, owners[0])
        for q in qs[:WARMUP]:
            mem.recall(q, tenant_id=owners[0], top_k=TOP_K)
            raw(embedder.embed([q])[0])
        runs: list[dict[str, list[float]]] = []
        for r in range(repeats):
            say(f"{size:,} in {tenants} tenant(s): repeat {r + 1}/{repeats}")
            runs.append(_one_repeat(mem, raw, embedder, qs, owners[0]))
        del vectors
        return _summary(size, tenants, queries, repeats, mem.aio.embedder.name, runs)
    finally:
        mem.close()
        shutil.rmtree(folder, ignore_errors=True)


def _fill(mem: Any, texts: Sequence[str], owners: Sequence[str]) -> Any:
    amem = mem.aio
    exps = synthetic_experiences(
        texts, embedding_model=amem.embedder.name, now=utcnow(), tenants=owners
    )
    vectors = amem.embedder.embed(list(texts))
    for start in range(0, len(exps), FILL_BATCH):
        amem.store.add_experiences(
            exps[start : start + FILL_BATCH], vectors[start : start + FILL_BATCH]
        )
        amem.sync_vectors()
    optimize = getattr(amem.index, "optimize", None)
    if optimize is not None:
        optimize(wait=True)
    return vectors


def _queries(texts: Sequence[str], owner: str, tenants: int, n: int) -> list[str]:
    """Queries near the first tenant's lessons (every ``tenants``-th text), reworded."""
    mine = list(texts[::tenants]) or list(texts)
    rng = random.Random(11)
    return [rng.choice(mine).replace("When", "If", 1) for _ in range(n)]


def _raw_query(mem: Any, tenant: str) -> Callable[[Any], Any]:
    """The recall's candidate query straight on the ``qdrant_edge`` shard: same filter and
    limit as :meth:`EdgeVectorIndex.search` builds for it (built once), request per query."""
    import qdrant_edge as qe

    from hindsight._vector_contract import check_search
    from hindsight.recall.candidates import _LESSON_KINDS
    from hindsight.recall.pipeline import CANDIDATE_FACTOR
    from hindsight.vectors import EdgeVectorIndex
    from hindsight.vectors.edge import _SEARCH_PARAMS

    index = mem.aio.index
    if not isinstance(index, EdgeVectorIndex):
        raise ValueError(f"the raw query needs the Qdrant Edge index, this store has {index!r}")
    namespaces = ["default", mem.config.shared_namespace]
    limit = max(CANDIDATE_FACTOR * TOP_K, 20)
    probe = [0.0] * index.dimension
    probe[0] = 1.0
    scope = check_search(
        index.dimension, probe, tenant, namespaces, limit, None, ("active",), _LESSON_KINDS
    )
    where = index._scope_filter(scope)
    shard = index._live()

    def query(vector: Any) -> Any:
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(vector.tolist()),
            filter=where,
            params=_SEARCH_PARAMS,
            with_payload=False,
            with_vector=False,
        )
        return shard.query(request)

    return query


def _one_repeat(
    mem: Any, raw: Callable[[Any], Any], embedder: Any, qs: Sequence[str], tenant: str
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"hw": [], "hc": [], "rw": [], "rc": []}
    for q in qs:
        vec = embedder.embed([q])[0]
        w, c = time.perf_counter(), time.process_time()
        mem.recall(q, tenant_id=tenant, top_k=TOP_K)
        out["hw"].append(time.perf_counter() - w)
        out["hc"].append(time.process_time() - c)
        w, c = time.perf_counter(), time.process_time()
        raw(vec)
        out["rw"].append(time.perf_counter() - w)
        out["rc"].append(time.process_time() - c)
    return out


def _summary(
    size: int, tenants: int, queries: int, repeats: int, embedder: str, runs: list[Any]
) -> dict[str, Any]:
    def med(key: str, q: int) -> float:
        return statistics.median(percentile(r[key], q) * 1000.0 for r in runs)

    ours = {
        "wall": {"p50": med("hw", 50), "p95": med("hw", 95)},
        "cpu": {"p50": med("hc", 50), "p95": med("hc", 95)},
    }
    raw = {
        "wall": {"p50": med("rw", 50), "p95": med("rw", 95)},
        "cpu": {"p50": med("rc", 50), "p95": med("rc", 95)},
    }
    ratio = {
        f"{clock}_{p}": ours[clock][p] / raw[clock][p] if raw[clock][p] > 0 else float("inf")
        for clock in ("wall", "cpu")
        for p in ("p50", "p95")
    }
    return {
        "size": size,
        "tenants": tenants,
        "per_tenant": -(-size // tenants),
        "queries": queries,
        "repeats": repeats,
        "top_k": TOP_K,
        "embedder": embedder,
        "hindsight_ms": ours,
        "raw_edge_ms": raw,
        "ratio": ratio,
    }


def render_recall_lines(results: Sequence[dict[str, Any]]) -> list[str]:
    """One line per layout: p50/p95 of both, wall and CPU, and the ratios."""
    lines = []
    for r in results:
        h, e, x = r["hindsight_ms"], r["raw_edge_ms"], r["ratio"]
        layout = (
            f"{r['size']:,} in 1 tenant"
            if r["tenants"] == 1
            else f"{r['size']:,} as {r['tenants']} x {r['per_tenant']:,}"
        )
        lines.append(
            f"recall vs raw Edge, {layout} (top_k {r['top_k']}, medians of {r['repeats']} x "
            f"{r['queries']}): wall p50 {h['wall']['p50']:.3f} vs {e['wall']['p50']:.3f} ms "
            f"({x['wall_p50']:.1f}x), p95 {h['wall']['p95']:.3f} vs {e['wall']['p95']:.3f} ms "
            f"({x['wall_p95']:.1f}x); CPU p50 {h['cpu']['p50']:.3f} vs {e['cpu']['p50']:.3f} ms"
            f" ({x['cpu_p50']:.1f}x), p95 {h['cpu']['p95']:.3f} vs {e['cpu']['p95']:.3f} ms "
            f"({x['cpu_p95']:.1f}x)"
        )
    return lines
