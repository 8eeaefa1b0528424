"""Benchmarks of the write side through public calls (docs/benchmarks.md#the-write-side: ingest,
cold start, review). Each is a small function; ``hindsight bench ingest|cold-start|review`` print
them and tests/benchmarks/ runs them. None asserts a time: they measure, the reader judges.

* :func:`batch_ingest`: lessons/s of :meth:`hindsight.Memory.add_experiences` (guard and dedup
  on) with embedding excluded, timed on a batch written when the store holds each size, in
  wall and process CPU time; ``slope_per_10x`` is how many times slower a batch gets per 10x
  of store size (goal: >= 2,000 lessons/s at 10k, slope <= 1.3).
* :func:`cold_start_vs_edge`: a new process that imports hindsight, opens a store and recalls
  once, next to a new process that imports ``qdrant_edge``, loads the same shard and runs one
  filtered query (goal: <= 1.5x), whole processes (interpreter start included), wall and CPU;
  both start from compiled bytecode, as an installed package does (one untimed run first).
* :func:`review_cpu`: process CPU ms per tau-bench run of :meth:`hindsight.Memory.review_now`
  with the heuristic reviewer (the review and its write-back; goal: <= 10 ms).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hindsight.bench._data import synthetic_lessons
from hindsight.bench._size import CachingEmbedder, use_embedder

__all__ = ["batch_ingest", "cold_start_vs_edge", "review_cpu"]

INGEST_SIZES = (1_000, 10_000, 100_000)
"""Store sizes :func:`batch_ingest` measures at by default."""
PROBE_BATCH = 1_000
"""Lessons in each timed batch (and in each untimed batch that fills the store)."""
TENANT = "bench"

Say = Callable[[str], None]


def _quiet(_line: str) -> None:
    return None


def _items(texts: Sequence[str], start: int) -> list[dict[str, Any]]:
    return [
        {"content": t, "task_type": f"type-{(start + i) % 5}", "confidence": 0.5 + (i % 5) / 10}
        for i, t in enumerate(texts)
    ]


def batch_ingest(
    sizes: Sequence[int] = INGEST_SIZES,
    *,
    batch: int = PROBE_BATCH,
    parent: Path | None = None,
    progress: Say | None = None,
) -> dict[str, Any]:
    """Public batch ingest rate at each store size (module docstring).

    A fresh embedded store (SQLite + Qdrant Edge, the configured embedder, one tenant) is
    filled with :func:`~hindsight.bench._data.synthetic_lessons` through
    ``Memory.add_experiences`` in batches of ``batch``; when it holds ``size`` lessons, one more
    batch of ``batch`` new lessons is timed. Every text is embedded beforehand (cached), so
    embedding is excluded. Returns ``{"batch", "embedder", "sizes": [{"size",
    "lessons_per_s_wall", "lessons_per_s_cpu", "created", "merged", "quarantined"}],
    "slope_per_10x": [{"from", "to", "wall", "cpu"}]}`` (slope: rate at the smaller size over
    the rate at the larger, per 10x of size).

    Raises:
        ValueError: a size < 1 or ``batch`` < 1.
    """
    from hindsight import Memory

    wanted = sorted(set(sizes))
    if not wanted or wanted[0] < 1 or batch < 1:
        raise ValueError(f"sizes and batch must be >= 1, got {list(sizes)} and {batch}")
    say = progress or _quiet
    folder = Path(tempfile.mkdtemp(prefix="hindsight-bench-ingest-", dir=parent))
    rows: list[dict[str, Any]] = []
    try:
        mem = Memory(data_dir=folder / "data", background_review=False)
        try:
            amem = mem.aio
            texts = synthetic_lessons(wanted[-1] + batch)
            embedder = CachingEmbedder(amem.embedder)
            say(f"embedding {len(texts):,} lessons (not timed)")
            for start in range(0, len(texts), 2_000):
                embedder.embed(texts[start : start + 2_000])
            use_embedder(amem, embedder)
            filled = 0
            for size in wanted:
                while filled < size:
                    end = min(size, filled + batch)
                    mem.add_experiences(_items(texts[filled:end], filled), tenant_id=TENANT)
                    filled = end
                say(f"{size:,}: timing a batch of {batch:,}")
                probe = _items(texts[filled : filled + batch], filled)
                wall0, cpu0 = time.perf_counter(), time.process_time()
                results = mem.add_experiences(probe, tenant_id=TENANT)
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
                filled += batch
                counts = {k: sum(r.result == k for r in results) for k in _RESULTS}
                rows.append(
                    {
                        "size": size,
                        "lessons_per_s_wall": batch / wall,
                        "lessons_per_s_cpu": batch / cpu if cpu > 0 else math.inf,
                        **counts,
                    }
                )
            name = amem.embedder.name
        finally:
            mem.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"batch": batch, "embedder": name, "sizes": rows, "slope_per_10x": _slopes(rows)}


_RESULTS = ("created", "merged", "quarantined")


def _slopes(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for small, big in itertools.pairwise(rows):
        decades = math.log10(big["size"] / small["size"])
        if decades <= 0:
            continue
        out.append(
            {
                "from": small["size"],
                "to": big["size"],
                **{
                    key: (small[f"lessons_per_s_{key}"] / big[f"lessons_per_s_{key}"])
                    ** (1 / decades)
                    for key in ("wall", "cpu")
                },
            }
        )
    return out


def _bytecode_env(folder: Path) -> dict[str, str]:
    """The environment of the measured processes: this one's, with compiled modules cached in
    ``folder`` (``PYTHONPYCACHEPREFIX``) even where ``PYTHONDONTWRITEBYTECODE`` is set. An
    installed package starts from the bytecode pip compiled at install; an editable checkout
    under ``PYTHONDONTWRITEBYTECODE`` would compile every module of hindsight in every process
    (about 100 ms here) and time the compiler, not the package."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(folder)
    return env


def _child_run(code: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU ms of a new Python process running ``code`` (interpreter start included),
    in ``env`` (default: this process's environment).

    Raises:
        RuntimeError: the process failed (its last stderr line in the message).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the cold-start process failed: {last}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def cold_start_vs_edge(
    size: int = 1_000,
    *,
    repeats: int = 5,
    parent: Path | None = None,
    progress: Say | None = None,
) -> dict[str, Any]:
    """Cold start of hindsight next to opening the raw Qdrant Edge shard (module docstring).

    A store of ``size`` lessons (one tenant, the configured embedder) is written through
    ``add_experiences`` and closed. Then, ``repeats`` times each, alternating: a new process
    runs ``from hindsight import Memory; Memory(data_dir=...).recall(...)``, and a new process
    runs ``import qdrant_edge; EdgeShard.load(<the store's shard>).query(<5 nearest of the
    tenant's active points>)``. Both run once untimed first, with their compiled modules
    cached in a temporary ``PYTHONPYCACHEPREFIX`` (:func:`_bytecode_env`): an installed
    package starts from bytecode. Returns medians ``{"size", "repeats", "hindsight":
    {"wall_ms", "cpu_ms"}, "edge": {...}, "ratio": {"wall", "cpu"}}``.

    Raises:
        ValueError: ``size`` or ``repeats`` < 1.
        RuntimeError: a measured process failed.
    """
    from hindsight import Memory

    if size < 1 or repeats < 1:
        raise ValueError(f"size and repeats must be >= 1, got {size} and {repeats}")
    say = progress or _quiet
    folder = Path(tempfile.mkdtemp(prefix="hindsight-bench-cold-", dir=parent))
    try:
        data = folder / "data"
        say(f"writing {size:,} lessons")
        with Memory(data_dir=data, background_review=False) as mem:
            texts = synthetic_lessons(size)
            for start in range(0, size, PROBE_BATCH):
                chunk = texts[start : start + PROBE_BATCH]
                mem.add_experiences(_items(chunk, start), tenant_id=TENANT)
            shard = Path(getattr(mem.aio.index, "path", ""))
            dimension = int(mem.aio.embedder.dimension)
        if not shard.name:
            raise RuntimeError("cold_start_vs_edge needs the embedded Qdrant Edge index")
        ours = (
            "from hindsight import Memory\n"
            f"m = Memory(data_dir={str(data)!r}, background_review=False)\n"
            f"assert m.recall('order lookup timed out', tenant_id={TENANT!r}).hits\n"
            "m.close()\n"
        )
        raw = (
            "import qdrant_edge as qe\n"
            f"shard = qe.EdgeShard.load({str(shard)!r})\n"
            "match = lambda f, v: qe.FieldCondition(f, match=qe.MatchValue(v))\n"
            "request = qe.QueryRequest(limit=5, "
            f"query=qe.Query.Nearest([{1 / math.sqrt(dimension)!r}] * {dimension}), "
            f"filter=qe.Filter(must=[match('tenant_id', {TENANT!r}), "
            "match('namespace', 'default'), match('status', 'active')]), "
            "with_payload=False, with_vector=False)\n"
            "assert shard.query(request)\n"
            "shard.close()\n"
        )
        times: dict[str, list[tuple[float, float]]] = {"hindsight": [], "edge": []}
        env = _bytecode_env(folder / "pycache")
        say("compiling the modules of both sides (not timed)")
        for code in (ours, raw):
            _child_run(code, env)
        for i in range(repeats):
            say(f"cold start {i + 1}/{repeats}")
            order = (("hindsight", ours), ("edge", raw))
            for name, code in order if i % 2 == 0 else order[::-1]:
                times[name].append(_child_run(code, env))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    med = {
        name: {
            "wall_ms": statistics.median(w for w, _ in runs),
            "cpu_ms": statistics.median(c for _, c in runs),
        }
        for name, runs in times.items()
    }
    return {
        "size": size,
        "repeats": repeats,
        **med,
        "ratio": {
            "wall": med["hindsight"]["wall_ms"] / med["edge"]["wall_ms"],
            "cpu": med["hindsight"]["cpu_ms"] / max(med["edge"]["cpu_ms"], 1e-9),
        },
    }


def review_cpu(
    tau_bench_file: Path,
    *,
    runs: int | None = None,
    parent: Path | None = None,
    progress: Say | None = None,
) -> dict[str, Any]:
    """Process CPU ms per tau-bench run of ``Memory.review_now`` with the heuristic reviewer
    (module docstring): the first ``runs`` records (all by default) are stored without a
    review, then each is reviewed now (review + write-back, no model); ``review_now`` is timed
    per run. Returns ``{"runs", "lessons", "cpu_ms": {"median", "mean", "p95"}, "wall_ms":
    {...}}``.

    Raises:
        ValueError: ``runs`` < 1, or the file holds no record.
        OSError: the file cannot be read.
    """
    from hindsight import Memory
    from hindsight.bench._data import percentile
    from hindsight.capture.ingest.records import trajectory_from_record
    from hindsight.review import HeuristicReviewer

    records = json.loads(Path(tau_bench_file).read_text(encoding="utf-8"))
    if runs is not None:
        if runs < 1:
            raise ValueError(f"runs must be >= 1, got {runs}")
        records = records[:runs]
    if not records:
        raise ValueError(f"{tau_bench_file} holds no tau-bench record")
    say = progress or _quiet
    folder = Path(tempfile.mkdtemp(prefix="hindsight-bench-review-", dir=parent))
    cpu: list[float] = []
    wall: list[float] = []
    lessons = 0
    try:
        with Memory(
            data_dir=folder / "data", reviewer=HeuristicReviewer(), background_review=False
        ) as mem:
            ids = [
                mem.store_episode(
                    trajectory_from_record(record, tenant_id=TENANT, format="tau-bench"),
                    review=False,
                ).trajectory_id
                for record in records
            ]
            for i, tid in enumerate(ids):
                if i % 20 == 0:
                    say(f"reviewing {i + 1}/{len(ids)}")
                wall0, cpu0 = time.perf_counter(), time.process_time()
                lessons += len(mem.review_now(tid, tenant_id=TENANT))
                cpu.append((time.process_time() - cpu0) * 1000)
                wall.append((time.perf_counter() - wall0) * 1000)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "median": statistics.median(values),
            "mean": statistics.fmean(values),
            "p95": percentile(values, 95),
        }

    return {"runs": len(cpu), "lessons": lessons, "cpu_ms": summary(cpu), "wall_ms": summary(wall)}
