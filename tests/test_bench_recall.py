"""``hindsight bench recall`` (docs/benchmarks.md#recall-against-the-raw-edge-query): the real
command at tiny sizes, its JSON shape and the sanity of its numbers (never their values: timings
belong to benchmarks, tests/benchmarks/bench_recall.py), the layouts flag, and that its temporary
stores are removed."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from hindsight.cli._bench import _parse_layouts
from tests.cli_helpers import run_cli


def _positive(value: Any, what: str) -> None:
    assert isinstance(value, int | float) and math.isfinite(value) and value > 0, (what, value)


def test_bench_recall_json(tmp_path: Path) -> None:
    parent = tmp_path / "stores"
    parent.mkdir()
    proc = run_cli(
        "bench",
        "recall",
        "--layouts",
        "200,240x3",
        "--queries",
        "12",
        "--repeats",
        "2",
        "--json",
        "--data-dir",
        str(parent),
        data_dir=tmp_path / "unused",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["recall_vs_raw_edge"]
    assert [(r["size"], r["tenants"], r["per_tenant"]) for r in results] == [
        (200, 1, 200),
        (240, 3, 80),
    ]
    for r in results:
        assert (r["queries"], r["repeats"], r["top_k"]) == (12, 2, 5)
        assert r["embedder"].startswith("hash")
        for side in ("hindsight_ms", "raw_edge_ms"):
            for clock in ("wall", "cpu"):
                p50, p95 = r[side][clock]["p50"], r[side][clock]["p95"]
                _positive(p95, f"{side} {clock} p95")
                assert 0 <= p50 <= p95
        assert r["ratio"]["wall_p50"] == pytest.approx(
            r["hindsight_ms"]["wall"]["p50"] / r["raw_edge_ms"]["wall"]["p50"]
        )
    assert list(parent.iterdir()) == []  # the temporary stores were removed
    assert not (tmp_path / "unused").exists()


def test_bench_recall_text(tmp_path: Path) -> None:
    proc = run_cli(
        "bench",
        "recall",
        "--layouts",
        "150",
        "--queries",
        "5",
        "--repeats",
        "1",
        data_dir=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert line.startswith("recall vs raw Edge, 150 in 1 tenant (top_k 5, medians of 1 x 5)")
    assert "wall p50 " in line and "CPU p50 " in line and "x)" in line


def test_parse_layouts() -> None:
    assert _parse_layouts("10k, 100k,100kx10") == [(10_000, 1), (100_000, 1), (100_000, 10)]
    for bad, message in [
        ("10kxten", "is not SIZE or SIZExTENANTS"),
        (" , ", "at least one"),
        ("10x0", "tenants must be in 1..1000"),
        ("0", "outside"),
    ]:
        with pytest.raises(ValueError, match=message):
            _parse_layouts(bad)


def test_use_embedder_takes_embedding_out_of_every_timed_part(tmp_path: Path) -> None:
    """The benches time recall and writes "embedding excluded": after ``use_embedder`` with
    a filled :class:`CachingEmbedder`, neither the recall pipeline nor the write path asks
    the embedder the memory was opened with for a vector of a text already cached (a text
    not cached still goes to it, through the cache); every part of the write side holds the
    cache, and swapping once the write side is wired is refused."""
    from hindsight import Memory
    from hindsight.bench._size import CachingEmbedder, use_embedder

    class Counting:
        def __init__(self, inner: Any) -> None:
            self.inner, self.texts = inner, []
            self.name, self.dimension = inner.name, inner.dimension
            self.similarity_floor = inner.similarity_floor

        def embed(self, texts: list[str]) -> Any:
            self.texts += list(texts)
            return self.inner.embed(texts)

    from hindsight.config import MemoryConfig
    from hindsight.embedders import make_embedder

    inner = Counting(make_embedder(MemoryConfig().embedding_model))
    with Memory(data_dir=tmp_path / "m", background_review=False, embedder=inner) as mem:
        cached = CachingEmbedder(inner)
        query, lesson = "order lookup timed out", "Retry the order lookup once after a timeout"
        cached.embed([query, lesson])
        use_embedder(mem.aio, cached)
        seen = len(inner.texts)
        mem.add_experiences([{"content": lesson}], tenant_id="t")
        hits = mem.recall(query, tenant_id="t").hits
        assert [h.experience.content for h in hits] == [lesson]
        assert inner.texts[seen:] == []
        mem.recall("a query never cached", tenant_id="t")
        assert inner.texts[seen:] == ["a query never cached"]
        wired = mem.aio
        for part in (wired.writeback, wired.writeback.screen, wired.deduper,
                     wired.reviews.groups):  # fmt: skip
            assert part.embedder is cached, part
        with pytest.raises(RuntimeError, match="before the memory's first write"):
            use_embedder(mem.aio, CachingEmbedder(inner))
