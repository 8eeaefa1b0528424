"""PostgreSQL + pgvector next to the embedded default, in one run (``hindsight bench engines``).

For each engine - **embedded** (SQLite + Qdrant Edge in a temporary data dir) and **pgvector**
(the PostgreSQL database given, in a schema of its own per layout, dropped afterwards) - and each
layout (``size`` lessons in one tenant, or spread round-robin over ``tenants`` tenants of one
table), through public calls and with the same lessons, queries and vectors on both sides:

* **fill** (not timed): ``size`` synthetic lessons written through the SQL store in batches,
  vectors precomputed; then ``ANALYZE`` on PostgreSQL (what autovacuum does by itself soon after
  a bulk load) and the Edge shard's optimizer;
* **ingest**: one more batch of ``ingest_batch`` new lessons of the first tenant through
  :meth:`hindsight.Memory.add_experiences` (guard and dedup on, embedding excluded):
  lessons/s, wall and process CPU;
* **recall**: ``queries`` recalls of the first tenant through :meth:`hindsight.Memory.recall`
  (top_k 5, embedding excluded) per repeat: p50/p95 in wall and process CPU time (every
  thread; the database server's CPU is not included), medians over ``repeats``;
* **quality**: overlap@k - the share of the ``k`` lessons the index returns (the search recall
  makes: the tenant's active lessons, nearest first) that an exact scan of the same lessons
  (numpy, float32 cosine) also returns, averaged over the queries.

Not included: embedding (every text is embedded once beforehand), the fill, the PostgreSQL
server's own CPU and the network (a Unix socket or loopback).
"""

from __future__ import annotations

import secrets
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.bench._data import percentile, synthetic_experiences, synthetic_lessons
from hindsight.bench._size import CachingEmbedder
from hindsight.models import ExperienceKind, utcnow

__all__ = ["ENGINES", "ENGINE_LAYOUTS", "engines_side_by_side", "render_engine_lines"]

ENGINE_LAYOUTS = ((10_000, 1), (100_000, 1), (100_000, 100))
"""``(size, tenants)`` measured by default: 10k and 100k in one tenant, 100 tenants of 1k."""
ENGINES = ("embedded", "pgvector")
TOP_K = 5
FILL_BATCH = 2_000
WARMUP = 10
_LESSON_KINDS = [k.value for k in ExperienceKind if k is not ExperienceKind.EPISODE]

Say = Callable[[str], None]


def engines_side_by_side(
    database_url: str,
    *,
    layouts: Sequence[tuple[int, int]] = ENGINE_LAYOUTS,
    embedding_model: str = "hash",
    queries: int = 200,
    repeats: int = 3,
    ingest_batch: int = 1_000,
    overlap_k: int = TOP_K,
    parent: Path | None = None,
    progress: Say | None = None,
) -> dict[str, Any]:
    """Measure every layout on both engines (module docstring).

    Args:
        database_url: a PostgreSQL database with pgvector (or the rights to create it).
        layouts: ``(size, tenants)`` pairs, each >= 1.
        embedding_model: an ``EMBEDDING_MODEL`` spec (``hash``, ``local`` for MiniLM, ...).
        queries, repeats, ingest_batch, overlap_k: counts, each >= 1.
        parent: folder for the temporary data dirs (default: the system temp dir).
        progress: called with a short line as the phases start.

    Returns:
        ``{"embedder", "top_k", "overlap_k", "queries", "repeats", "ingest_batch", "results":
        [{"engine", "size", "tenants", "per_tenant", "recall_ms": {"wall": {"p50", "p95"},
        "cpu": {...}}, "ingest_per_s": {"wall", "cpu"}, "overlap": float}]}`` (milliseconds,
        lessons per second, overlap in [0, 1]).

    Raises:
        ValueError: a count below 1, or ``database_url`` is not PostgreSQL.
    """
    from hindsight.config import MemoryConfig
    from hindsight.embedders import make_embedder

    if min(queries, repeats, ingest_batch, overlap_k, *(n for lay in layouts for n in lay)) < 1:
        raise ValueError("layouts, queries, repeats, ingest_batch and overlap_k must be >= 1")
    if MemoryConfig(database_url=database_url).sql_url().startswith("sqlite"):
        raise ValueError("the pgvector side needs a PostgreSQL database_url")
    say = progress or (lambda _line: None)
    embedder = CachingEmbedder(make_embedder(embedding_model))
    results: list[dict[str, Any]] = []
    for size, tenants in layouts:
        texts = synthetic_lessons(size + ingest_batch)
        qs = [t.replace("When", "If", 1) for t in texts[: size : max(1, size // queries)]]
        qs = (qs * (queries // max(1, len(qs)) + 1))[:queries]
        say(f"{size:,} in {tenants} tenant(s): embedding {len(texts) + len(qs):,} texts")
        for start in range(0, len(texts), FILL_BATCH):
            embedder.embed(texts[start : start + FILL_BATCH])
        embedder.embed(qs)
        for engine in ENGINES:
            url = database_url if engine == "pgvector" else None
            results.append(
                _layout(engine, url, embedder, texts, qs, size, tenants, repeats,
                        ingest_batch, overlap_k, parent, say)
            )  # fmt: skip
    return {
        "embedder": embedder.name,
        "top_k": TOP_K,
        "overlap_k": overlap_k,
        "queries": queries,
        "repeats": repeats,
        "ingest_batch": ingest_batch,
        "results": results,
    }


def _layout(
    engine: str,
    url: str | None,
    embedder: CachingEmbedder,
    texts: Sequence[str],
    qs: Sequence[str],
    size: int,
    tenants: int,
    repeats: int,
    ingest_batch: int,
    overlap_k: int,
    parent: Path | None,
    say: Say,
) -> dict[str, Any]:
    from hindsight import Memory

    label = f"{engine}, {size:,} in {tenants} tenant(s)"
    folder = Path(tempfile.mkdtemp(prefix="hindsight-bench-engines-", dir=parent))
    owners = [f"bench-{k}" for k in range(tenants)]
    schema = f"hindsight_bench_{secrets.token_hex(4)}"
    if url is not None:
        url = _in_schema(url, schema, create=True)
    try:
        mem = Memory(data_dir=folder, database_url=url, embedder=embedder, background_review=False)
    except BaseException:
        _drop_schema(url, schema)
        raise
    try:
        say(f"{label}: filling")
        fill = synthetic_experiences(
            texts[:size], embedding_model=embedder.name, now=utcnow(), tenants=owners
        )
        vectors = embedder.embed(list(texts[:size]))
        _fill(mem, fill, vectors)
        say(f"{label}: ingest, recall, overlap")
        ingest = _ingest(mem, texts[size : size + ingest_batch], owners[0])
        for q in qs[:WARMUP]:
            mem.recall(q, tenant_id=owners[0], top_k=TOP_K)
        runs = [_recalls(mem, qs, owners[0]) for _ in range(repeats)]
        mine = np.array([e.tenant_id == owners[0] for e in fill])
        overlap = _overlap(mem, embedder, qs, owners[0], vectors[mine], fill, mine, overlap_k)
    finally:
        mem.close()
        _drop_schema(url, schema)
        shutil.rmtree(folder, ignore_errors=True)

    def med(key: str, q: int) -> float:
        return statistics.median(percentile(r[key], q) * 1000.0 for r in runs)

    return {
        "engine": engine,
        "size": size,
        "tenants": tenants,
        "per_tenant": -(-size // tenants),
        "recall_ms": {
            "wall": {"p50": med("wall", 50), "p95": med("wall", 95)},
            "cpu": {"p50": med("cpu", 50), "p95": med("cpu", 95)},
        },
        "ingest_per_s": ingest,
        "overlap": overlap,
    }


def _in_schema(url: str, schema: str, *, create: bool = False) -> str:
    """``url`` whose sessions work in ``schema`` (then ``public``, where the ``vector``
    extension lives as a rule), created when ``create``."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from hindsight.config import MemoryConfig

    base = make_url(MemoryConfig(database_url=url).sql_url())
    if create:
        engine = create_engine(base, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        finally:
            engine.dispose()
    options = f"{base.query.get('options', '')} -csearch_path={schema},public".strip()
    return base.update_query_dict({"options": options}).render_as_string(hide_password=False)


def _drop_schema(url: str | None, schema: str) -> None:
    if url is None:
        return
    from sqlalchemy import create_engine, text

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    finally:
        engine.dispose()


def _fill(mem: Any, exps: Sequence[Any], vectors: Any) -> None:
    amem = mem.aio
    for start in range(0, len(exps), FILL_BATCH):
        amem.store.add_experiences(
            exps[start : start + FILL_BATCH], vectors[start : start + FILL_BATCH]
        )
        amem.sync_vectors()
    if amem.store.backend == "postgresql":
        from sqlalchemy import text

        with amem.store._tx(write=True) as conn:
            conn.execute(text("ANALYZE experiences"))
    optimize = getattr(amem.index, "optimize", None)
    if optimize is not None:
        optimize(wait=True)


def _ingest(mem: Any, texts: Sequence[str], tenant: str) -> dict[str, float]:
    items = [{"content": t, "task_type": "type-0", "confidence": 0.6} for t in texts]
    wall, cpu = time.perf_counter(), time.process_time()
    mem.add_experiences(items, tenant_id=tenant)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall": len(items) / wall, "cpu": len(items) / cpu if cpu > 0 else float("inf")}


def _recalls(mem: Any, qs: Sequence[str], tenant: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"wall": [], "cpu": []}
    for q in qs:
        wall, cpu = time.perf_counter(), time.process_time()
        mem.recall(q, tenant_id=tenant, top_k=TOP_K)
        out["wall"].append(time.perf_counter() - wall)
        out["cpu"].append(time.process_time() - cpu)
    return out


def _overlap(
    mem: Any,
    embedder: CachingEmbedder,
    qs: Sequence[str],
    tenant: str,
    mine: Any,
    fill: Sequence[Any],
    picked: Any,
    k: int,
) -> float:
    """Mean share of the index's ``k`` nearest lessons that the exact ``k`` nearest hold (the
    fill's lessons of ``tenant``; the ingested batch is left out of both: searched with the
    ids of the fill only)."""
    ids = np.array([e.id for e, keep in zip(fill, picked, strict=True) if keep])
    unit = mine / np.maximum(np.linalg.norm(mine, axis=1, keepdims=True), 1e-12)
    namespaces = ["default", mem.config.shared_namespace]
    known = set(ids.tolist())
    shares = []
    for q in qs:
        vec = embedder.embed([q])[0]
        exact = set(ids[np.argsort(-(unit @ vec), kind="stable")[:k]].tolist())
        # the ingested batch belongs to the tenant too: ask for enough to find k of the fill
        hits = mem.aio.index.search(
            vec, tenant_id=tenant, namespaces=namespaces, limit=k * 4, kinds=_LESSON_KINDS
        )
        found = [h.id for h in hits if h.id in known][:k]
        shares.append(len(exact.intersection(found)) / min(k, len(ids)))
    return float(statistics.fmean(shares)) if shares else 1.0


def render_engine_lines(report: dict[str, Any]) -> list[str]:
    """One line per layout: both engines' recall p50/p95 (wall, CPU), the pgvector / embedded
    ratio of the p50s, ingest rates and overlap@k."""
    by = {(r["engine"], r["size"], r["tenants"]): r for r in report["results"]}
    lines = []
    seen: list[tuple[int, int]] = []
    for r in report["results"]:
        if (r["size"], r["tenants"]) in seen:
            continue
        seen.append((r["size"], r["tenants"]))
        e, p = by[("embedded", r["size"], r["tenants"])], by[("pgvector", r["size"], r["tenants"])]
        layout = (
            f"{r['size']:,} in 1 tenant"
            if r["tenants"] == 1
            else f"{r['size']:,} as {r['tenants']} x {r['per_tenant']:,}"
        )

        def ms(x: dict[str, Any], clock: str) -> str:
            return f"{x['recall_ms'][clock]['p50']:.2f}/{x['recall_ms'][clock]['p95']:.2f}"

        ratio = p["recall_ms"]["wall"]["p50"] / max(e["recall_ms"]["wall"]["p50"], 1e-9)
        lines.append(
            f"{layout} ({report['embedder']}): recall p50/p95 ms wall pgvector {ms(p, 'wall')}"
            f" vs embedded {ms(e, 'wall')} ({ratio:.1f}x), CPU {ms(p, 'cpu')} vs "
            f"{ms(e, 'cpu')}; ingest lessons/s wall {p['ingest_per_s']['wall']:,.0f} vs "
            f"{e['ingest_per_s']['wall']:,.0f}; overlap@{report['overlap_k']} "
            f"{p['overlap']:.3f} vs {e['overlap']:.3f}"
        )
    return lines
