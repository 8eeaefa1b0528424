"""``EdgeVectorIndex.search_many`` (docs/benchmarks.md#the-write-path): one planned batch of queries
with one filter gives, for every row, the hits one ``search`` gives; the write path's guard
screening uses it and finds the same neighbours."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np

from hindsight.ports import VectorPoint
from hindsight.vectors import EdgeVectorIndex
from tests.helpers import make_memory


def _index(path: Path, n: int = 3000, dim: int = 32) -> tuple[EdgeVectorIndex, np.ndarray]:
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = EdgeVectorIndex(path / "shard", dim, background=False, segment_kb=64)
    index.upsert(
        [
            VectorPoint(
                str(uuid.UUID(int=i + 1)),
                vecs[i],
                {
                    "tenant_id": ["a", "b"][i % 2],
                    "namespace": ["default", "shared", "other"][i % 3],
                    "status": "archived" if i % 7 == 0 else "active",
                    "task_type": f"type-{i % 4}",
                    "kind": "rule",
                },
            )
            for i in range(n)
        ]
    )
    queries = rng.standard_normal((40, dim)).astype(np.float32)
    return index, queries


def test_search_many_equals_one_search_per_row(tmp_path: Path) -> None:
    index, queries = _index(tmp_path)
    try:
        for kwargs in (
            {"tenant_id": "a", "namespaces": ["default", "shared"], "limit": 7},
            {"tenant_id": "b", "namespaces": ["default"], "limit": 20, "task_type": "type-1"},
            {"tenant_id": "a", "namespaces": ["other"], "limit": 5, "statuses": ["archived"]},
            {"tenant_id": "a", "namespaces": [], "limit": 5},
        ):
            many = index.search_many(queries, **kwargs)  # type: ignore[arg-type]
            single = [index.search(q, **kwargs) for q in queries]  # type: ignore[arg-type]
            assert [[(h.id, h.similarity) for h in hits] for hits in many] == [
                [(h.id, h.similarity) for h in hits] for hits in single
            ]
            assert [[h.payload for h in hits] for hits in many] == [
                [h.payload for h in hits] for hits in single
            ]
            if kwargs["namespaces"]:
                assert all(len(hits) == kwargs["limit"] for hits in many)
            # Without payloads (what dedup and the guard ask for): the same ids and
            # similarities, no payload read out of the shard.
            bare = index.search_many(queries, **kwargs, payload=False)  # type: ignore[arg-type]
            assert [[(h.id, h.similarity) for h in hits] for hits in bare] == [
                [(h.id, h.similarity) for h in hits] for hits in many
            ]
            assert all(h.payload is None for hits in bare for h in hits)
        assert index.search_many(queries[:0], tenant_id="a", namespaces=["x"], limit=3) == []
    finally:
        index.close()


def test_guard_neighbours_of_a_batch_equal_one_lookup_each(tmp_path: Path) -> None:
    mem = make_memory(tmp_path / "m", f"sqlite:///{tmp_path / 'h.db'}")
    try:
        texts = [
            f"When tool_{i % 9} fails with error {i % 5}, retry after {i % 3} s." for i in range(60)
        ]
        mem.add_experiences([{"content": t} for t in texts[:40]], tenant_id="t")
        mem.add_experiences(
            [{"content": t, "namespace": "shared"} for t in texts[40:50]], tenant_id="t"
        )
        screen = mem.aio.writeback.screen
        assert screen is not None and hasattr(screen.index, "search_many")
        from hindsight.writeback.lessons import manual_experiences

        exps = manual_experiences(
            [{"content": t, "namespace": ns} for t in texts[45:60] for ns in ("default", "x")],
            tenant_id="t",
            embedding_model=mem.aio.embedder.name,
            now=mem.aio.clock.now(),
        )
        vectors = mem.aio.embedder.embed([e.content for e in exps])
        batched = screen._neighbour_ids_many(exps, np.asarray(vectors, dtype=np.float32))
        single = [screen._neighbour_ids(e, v) for e, v in zip(exps, vectors, strict=True)]
        assert batched == single
        assert all(batched) and len({tuple(b or ()) for b in batched}) > 5
    finally:
        mem.close()


def test_dedup_candidates_of_a_batch_equal_one_search_each(tmp_path: Path) -> None:
    """The deduper searches a batch with one planned query per scope (tenant, namespace,
    task_type); every lesson gets the hits its own search gives, and a lesson that is not
    active gets none."""
    mem = make_memory(tmp_path / "m", f"sqlite:///{tmp_path / 'h.db'}")
    try:
        texts = [
            f"When tool_{i % 9} fails with error {i % 5}, retry after {i % 3} s." for i in range(60)
        ]
        mem.add_experiences(
            [{"content": t, "task_type": ["a", "b", None][i % 3]} for i, t in enumerate(texts)],
            tenant_id="t",
        )
        deduper = mem.aio.deduper
        assert deduper is not None and hasattr(deduper.index, "search_many")
        from hindsight.models import ExperienceStatus
        from hindsight.writeback.lessons import manual_experiences

        exps = manual_experiences(
            [
                {"content": t, "namespace": ns, "task_type": tt}
                for t in texts[30:45]
                for ns in ("default", "x")
                for tt in ("a", None)
            ],
            tenant_id="t",
            embedding_model=mem.aio.embedder.name,
            now=mem.aio.clock.now(),
        )
        exps[0] = exps[0].model_copy(update={"status": ExperienceStatus.QUARANTINED})
        vectors = np.asarray(mem.aio.embedder.embed([e.content for e in exps]), np.float32)
        batched = deduper.search_all(exps, vectors)
        single = [
            deduper.search(e, v) if e.status is ExperienceStatus.ACTIVE else []
            for e, v in zip(exps, vectors, strict=True)
        ]
        key = [[(h.id, round(h.similarity, 6)) for h in hits] for hits in batched]
        assert key == [[(h.id, round(h.similarity, 6)) for h in hits] for hits in single]
        assert batched[0] == [] and sum(bool(h) for h in batched) > 20
    finally:
        mem.close()
