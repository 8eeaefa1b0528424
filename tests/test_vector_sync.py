"""How the vector index follows the SQL store's outbox (hindsight.store.outbox.VectorSync).

An index only this process writes (the embedded Edge shard: one process holds its data
directory) gets pending outbox rows only from this store's own writes, so a sync reads the
outbox only when a write committed rows since it last found nothing pending; a shared index
(a Qdrant server several processes write) is read on every sync. Whatever is skipped, no write
is left unapplied: after each public write the index holds exactly what SQL says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from hindsight import Memory
from hindsight.store import outbox
from hindsight.testing import FakeEmbedder
from hindsight.vectors import QdrantClientVectorIndex

DIM = 32


class Reads:
    """Counts the store's reads of the outbox (``pending_vector_changes``)."""

    def __init__(self, mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        store = mem.aio.store
        real = store.pending_vector_changes

        def counted(*args: Any, **kwargs: Any) -> list[str]:
            self.n += 1
            return list(real(*args, **kwargs))

        monkeypatch.setattr(store, "pending_vector_changes", counted)

    def take(self) -> int:
        n, self.n = self.n, 0
        return n


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(
        data_dir=tmp_path / "data", embedder=FakeEmbedder(DIM), background_review=False
    ) as opened:
        assert not getattr(opened.aio.index, "shared", False)  # the embedded Edge shard
        yield opened


def _in_step(mem: Memory) -> None:
    """The index holds exactly the points SQL says, and nothing is pending."""
    assert mem.aio.vectors.status()["pending"] == 0
    assert mem.aio.index.count(None) == mem.aio.store.count_vector_rows()


def _confidence_in_index(mem: Memory, exp_id: str) -> float:
    vec = mem.aio.store.get_vectors([exp_id])[exp_id]
    hits = mem.aio.index.search(vec, tenant_id="t", namespaces=["default"], limit=50)
    [hit] = [h for h in hits if h.id == exp_id]
    assert hit.payload is not None
    return float(hit.payload["confidence"])


def test_a_sync_with_nothing_written_since_the_last_one_reads_nothing(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.add_experience("retry the export once when it times out", tenant_id="t")
    reads = Reads(mem, monkeypatch)
    assert mem.aio.sync_vectors() == 0
    assert mem.aio.sync_vectors() == 0
    assert reads.take() == 0
    _in_step(mem)


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda m, e: m.adjust_confidence(e.id, 0.2, tenant_id="t"), id="confidence"),
        pytest.param(lambda m, e: m.delete_experience(e.id, tenant_id="t"), id="delete"),
        pytest.param(
            lambda m, e: m.add_experience("check the cart before paying", tenant_id="t"),
            id="add",
        ),
        pytest.param(
            lambda m, e: m.add_experiences(
                [{"content": f"lesson {i}: keep the receipt of order {i}"} for i in range(3)],
                tenant_id="t",
            ),
            id="batch",
        ),
    ],
)
def test_every_write_is_applied_with_one_read_of_the_outbox(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, write: Any
) -> None:
    first = mem.add_experience("retry the export once when it times out", tenant_id="t")
    reads = Reads(mem, monkeypatch)
    write(mem, first)
    assert reads.take() == 1  # after the commit; none before the write's decisions
    _in_step(mem)
    assert reads.take() == 0  # (status reads the outbox through another query)


def test_the_index_follows_each_confidence_change(mem: Memory) -> None:
    lesson = mem.add_experience("retry the export once", tenant_id="t", confidence=0.5)
    for step in (0.1, -0.3, 0.05):
        mem.adjust_confidence(lesson.id, step, tenant_id="t")
        row = mem.get_experience(lesson.id, tenant_id="t").confidence
        assert _confidence_in_index(mem, lesson.id) == pytest.approx(row)
    _in_step(mem)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_pages_of_the_outbox_are_read_until_one_comes_back_short(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    monkeypatch.setattr(outbox, "BATCH", 2)
    reads = Reads(mem, monkeypatch)
    mem.add_experiences(
        [{"content": f"lesson {i}: keep the receipt of order {i}"} for i in range(size)],
        tenant_id="t",
    )
    assert reads.take() == size // 2 + 1  # full pages, then the short (or empty) one
    _in_step(mem)


@pytest.mark.parametrize("then", ["sync", "write"])
def test_a_failed_apply_is_retried_by_the_next_sync(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    index = mem.aio.index
    with monkeypatch.context() as down:

        def refuse(points: Any) -> None:
            raise RuntimeError("index down")

        down.setattr(index, "upsert", refuse)
        with pytest.raises(Exception, match="index down"):
            mem.add_experience("retry the export once when it times out", tenant_id="t")
    status = mem.aio.vectors.status()
    assert status["pending"] == 1 and "index down" in status["last_error"]
    reads = Reads(mem, monkeypatch)
    if then == "sync":
        assert mem.aio.sync_vectors() == 1  # not skipped: the last sync failed
    else:
        mem.add_experience("check the cart before paying", tenant_id="t")
    assert reads.take() >= 1
    _in_step(mem)
    assert mem.aio.index.count(None) == (1 if then == "sync" else 2)
    assert mem.aio.vectors.status()["last_error"] is None


def test_a_shared_index_is_read_on_every_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process may queue rows for a shared index at any time: never skipped."""
    index = QdrantClientVectorIndex("http://qdrant.test:6333", DIM, client=QdrantClient(":memory:"))
    assert index.shared
    with Memory(
        data_dir=tmp_path / "data",
        index=index,
        embedder=FakeEmbedder(DIM),
        background_review=False,
    ) as shared:
        shared.add_experience("retry the export once when it times out", tenant_id="t")
        reads = Reads(shared, monkeypatch)
        shared.aio.sync_vectors()
        shared.aio.sync_vectors()
        assert reads.take() == 2
        _in_step(shared)


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_write_committed_while_a_sync_reads_is_applied_by_the_next_one(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Another thread commits a write (its outbox row queued, its own sync not run yet) just
    before or just after a sync reads the outbox: that sync or the next one applies it; a
    sync never takes the outbox for clean when a commit it may not have seen came in."""
    from hindsight.models import Experience, ExperienceKind

    mem.add_experience("retry the export once when it times out", tenant_id="t")
    store = mem.aio.store
    real = store.pending_vector_changes
    late = Experience(tenant_id="t", kind=ExperienceKind.RULE, content="check the cart first")
    done: list[bool] = []

    def racing(*args: Any, **kwargs: Any) -> list[str]:
        if not done:
            done.append(True)
            vector = mem.aio.embedder.embed([late.content])
            if when == "before":
                store.add_experiences([late], vector)
                return list(real(*args, **kwargs))
            found = list(real(*args, **kwargs))
            store.add_experiences([late], vector)  # committed after the read
            return found
        return list(real(*args, **kwargs))

    monkeypatch.setattr(store, "pending_vector_changes", racing)
    mem.add_experience("keep the receipt", tenant_id="t")  # its sync reads: the race
    assert done
    mem.aio.vectors.sync()
    _in_step(mem)
    assert mem.aio.index.count(None) == 3
