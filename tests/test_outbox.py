"""The vector outbox with a Qdrant collection several processes write (hindsight.store.outbox).

Two memories on one PostgreSQL store share one collection, as two servers share a Qdrant
server. Both change one lesson over and over at the same time; each applies the outbox after
its own writes. The per-id lock makes the apply that runs last read the newest row, so when
they are done the point carries what the row says (an apply that read an older row and wrote
last would leave an older confidence there). A write whose apply failed (the index down) stays
pending and is applied by the other memory's next write.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient
from store_fixtures import postgres_schema_url

from hindsight import Memory
from hindsight.testing import FakeEmbedder
from hindsight.vectors import QdrantClientVectorIndex

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from postgres_schema_url()


def _payload_confidence(mem: Memory, exp_id: str) -> float:
    vec = mem.aio.store.get_vectors([exp_id])[exp_id]
    [hit] = [h for h in mem.aio.index.search(vec, tenant_id="t", namespaces=["default"], limit=5)
             if h.id == exp_id]  # fmt: skip
    assert hit.payload is not None
    return float(hit.payload["confidence"])


def test_two_writers_of_one_lesson_leave_the_newest_point(tmp_path: Path, pg_url: str) -> None:
    client = QdrantClient(":memory:")
    mems = [
        Memory(
            data_dir=tmp_path / name,
            database_url=pg_url,
            index=QdrantClientVectorIndex("http://qdrant.test:6333", 32, client=client),
            embedder=FakeEmbedder(32),
            background_review=False,
        )
        for name in ("a", "b")
    ]
    try:
        lesson = mems[0].add_experience("retry the export once", tenant_id="t", confidence=0.5)
        errors: list[BaseException] = []

        def work(mem: Memory, delta: float) -> None:
            try:
                for _ in range(25):
                    mem.adjust_confidence(lesson.id, delta, tenant_id="t")
            except BaseException as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=work, args=(mem, d))
            for mem, d in ((mems[0], 0.01), (mems[1], -0.013))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors[:1]
        row = mems[0].get_experience(lesson.id, tenant_id="t").confidence
        assert row == pytest.approx(0.5 + 25 * 0.01 - 25 * 0.013)
        assert _payload_confidence(mems[0], lesson.id) == pytest.approx(row)
        assert mems[0].aio.vectors.status()["pending"] == 0

        # the index down while a writes: the write commits, its outbox row waits ...
        index = mems[0].aio.index
        real = index.upsert

        def down(points: object) -> None:
            raise OSError("connection refused")

        index.upsert = down  # type: ignore[method-assign]
        with pytest.raises(Exception, match="connection refused"):
            mems[0].adjust_confidence(lesson.id, 0.2, tenant_id="t")
        index.upsert = real  # type: ignore[method-assign]
        assert mems[1].aio.vectors.status()["pending"] == 1
        # ... and b's next write applies it with its own
        other = mems[1].add_experience("check the refund window", tenant_id="t")
        assert mems[1].aio.vectors.status()["pending"] == 0
        assert _payload_confidence(mems[1], lesson.id) == pytest.approx(row + 0.2)
        assert _payload_confidence(mems[1], other.id) == pytest.approx(other.confidence)
    finally:
        for mem in mems:
            mem.close()
