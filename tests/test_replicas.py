"""Every vector index is a replica of the SQL store's vector log (issue 22 item 1, issue 18 item 8).

In one process, several memories on one SQL store, each with its own index, stand for several
processes (the multi-process version is tests/test_scale_processes.py): a write through one is
recalled through every other once it followed the log; nobody consumes another's changes; an
index that is new, empty, copied without its checkpoint, or behind a restarted log is rebuilt
from SQL at open; a shared Qdrant collection is one replica with one position; an index that
cannot catch up refuses recall with one line.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from hindsight import Memory, StoreError
from hindsight.store import SqlStore
from hindsight.store.vector_sync import ReplicaUnavailableError, VectorSync
from hindsight.testing import FakeEmbedder, InMemoryVectorIndex
from hindsight.vectors import EdgeVectorIndex, QdrantClientVectorIndex
from hindsight.vectors.edge import CHECKPOINT_FILE

LAG_DEADLINE = 30.0
"""Upper bound on waiting for a replica to follow (the follow interval here is 0.05 s)."""
FOLLOW = 0.05


def _sql_url(tmp_path: Path, database_url: str) -> str:
    return (
        f"sqlite:///{tmp_path / 'shared.db'}" if database_url.startswith("sqlite") else database_url
    )


def _open(data_dir: Path, sql: str, vectors: str | None = None, **kw: object) -> Memory:
    kw.setdefault("vector_follow_seconds", FOLLOW)
    return Memory(
        data_dir=data_dir,
        database_url=sql,
        vector_db_url=vectors,
        background_review=False,
        **kw,  # type: ignore[arg-type]
    )


def _recalled(mem: Memory, text: str, tenant: str = "acme") -> bool:
    return any(h.experience.content == text for h in mem.recall(text, tenant_id=tenant).hits)


def _eventually(check: object) -> bool:
    deadline = time.monotonic() + LAG_DEADLINE
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(FOLLOW)
    return False


@pytest.fixture
def memories(tmp_path: Path) -> Iterator[list[Memory]]:
    opened: list[Memory] = []
    yield opened
    for mem in opened:
        mem.close()


@pytest.mark.parametrize("vectors", [None, ":memory:"], ids=["edge", "memory"])
def test_a_write_through_one_replica_is_recalled_through_every_other(
    tmp_path: Path, database_url: str, vectors: str | None, memories: list[Memory]
) -> None:
    sql = _sql_url(tmp_path, database_url)
    for name in ("a", "b", "c"):
        memories.append(_open(tmp_path / name, sql, vectors))
    a, b, _ = memories
    texts = [f"lesson {i}: order_query times out at peak hours, use cache {i}" for i in range(6)]
    for i, text in enumerate(texts):
        writer = memories[i % 3]
        writer.add_experience(text, tenant_id="acme")
        assert _recalled(writer, text)  # read-your-writes: at once in the writing process
    for mem in memories:
        assert _eventually(lambda m=mem: all(_recalled(m, t) for t in texts))
    # one lesson deleted through b disappears everywhere
    gone = a.list_experiences(tenant_id="acme", limit=100)[0]
    b.delete_experience(gone.id, tenant_id="acme")
    for mem in memories:
        assert _eventually(lambda m=mem: gone.id not in m.aio.index.all_ids())
        assert not _recalled(mem, gone.content)
    counts = {mem.aio.index.count("acme") for mem in memories}
    assert counts == {len(texts) - 1}
    for mem in memories:
        status = mem.aio.vectors.status()
        assert status["lag"] == 0 and status["last_error"] is None
    ids = {r.id for r in a.aio.store.list_replicas()}
    assert {m.aio.vectors.identity.id for m in memories} <= ids


def test_reading_the_log_consumes_nothing(tmp_path: Path, memories: list[Memory]) -> None:
    """The old outbox was emptied by whichever process synced first; the log is not."""
    sql = f"sqlite:///{tmp_path / 'shared.db'}"
    memories.append(_open(tmp_path / "a", sql, ":memory:", vector_follow_seconds=3600))
    memories.append(_open(tmp_path / "b", sql, ":memory:", vector_follow_seconds=3600))
    a, b = memories
    a.add_experience("retry the payment gateway once, then fall back", tenant_id="acme")
    assert a.aio.sync_vectors() == 0  # a applied its own write already
    assert b.aio.sync_vectors() == 1  # and b still finds it in the log
    assert b.aio.index.count("acme") == 1


def test_a_restarted_in_memory_index_is_rebuilt_from_sql(tmp_path: Path) -> None:
    sql = f"sqlite:///{tmp_path / 'shared.db'}"
    with _open(tmp_path / "a", sql, ":memory:") as mem:
        mem.add_experience("escalate refunds over 500 EUR to a human", tenant_id="acme")
    with _open(tmp_path / "a", sql, ":memory:") as mem:
        assert _recalled(mem, "escalate refunds over 500 EUR to a human")
        assert mem.aio.vectors.rebuilt is not None and mem.aio.vectors.rebuilt["points"] == 1


def test_an_edge_shard_catches_up_from_its_checkpoint(tmp_path: Path) -> None:
    sql = f"sqlite:///{tmp_path / 'shared.db'}"
    with _open(tmp_path / "a", sql) as mem:
        mem.add_experience("first lesson about the order API", tenant_id="acme")
    with _open(tmp_path / "b", sql, ":memory:") as other:  # written while a is closed
        other.add_experience("second lesson about the order API", tenant_id="acme")
    with _open(tmp_path / "a", sql) as mem:
        assert mem.aio.vectors.rebuilt is None  # caught up from its position, no rebuild
        assert _recalled(mem, "second lesson about the order API")
        status = mem.aio.vectors.status()
        assert status["lag"] == 0 and status["position"] == status["head"] > 0


def test_a_data_dir_copied_without_its_vectors_is_rebuilt_at_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 18 item 8: a copy without ``vectors/`` recalled nothing until a manual repair."""
    original, copy = tmp_path / "original", tmp_path / "copy"
    with Memory(data_dir=original, background_review=False) as mem:
        mem.add_experience("check the refund window before promising a refund", tenant_id="t")
    copy.mkdir()
    shutil.copy2(original / "hindsight.db", copy / "hindsight.db")
    with caplog.at_level(logging.INFO, logger="hindsight"):
        reopened = Memory(data_dir=copy, background_review=False)
    lines = [r.getMessage() for r in caplog.records]
    [line] = [m for m in lines if "rebuilding the vector index" in m]
    assert str(copy / "vectors") in line, line  # one log line naming the index and why
    with reopened as mem:
        assert _recalled(mem, "check the refund window before promising a refund", "t")
        [finding] = [f for f in mem.doctor() if f.name == "vector_replicas"]
        assert finding.ok and "rebuilt from SQL when opened" in finding.message
        assert "1 point(s) written" in finding.message


def test_a_checkpoint_of_another_log_or_ahead_of_it_means_a_rebuild(tmp_path: Path) -> None:
    data = tmp_path / "d"
    with Memory(data_dir=data, background_review=False) as mem:
        mem.add_experience("lesson one", tenant_id="t")
        mem.add_experience("lesson two", tenant_id="t")
    checkpoint = data / "vectors" / CHECKPOINT_FILE
    text = checkpoint.read_text()
    checkpoint.write_text(text.replace('"position": 2', '"position": 99'))
    with Memory(data_dir=data, background_review=False) as mem:
        rebuilt = mem.aio.vectors.rebuilt
        assert rebuilt is not None and "ahead of the log" in rebuilt["reason"]
        assert mem.aio.index.count("t") == 2
    with SqlStore(f"sqlite:///{data / 'hindsight.db'}") as store:
        store.restart_vector_log()  # what a restore or a re-embed does
    with Memory(data_dir=data, background_review=False) as mem:
        rebuilt = mem.aio.vectors.rebuilt
        assert rebuilt is not None and "started over" in rebuilt["reason"]


def test_a_stale_index_with_a_fitting_checkpoint_is_rebuilt_at_open(tmp_path: Path) -> None:
    """Points lost (or written) outside the log: the checkpoint fits, the count does not."""
    data = tmp_path / "d"
    with Memory(data_dir=data, background_review=False) as mem:
        kept = mem.add_experience("lesson one", tenant_id="t")
        mem.add_experience("lesson two", tenant_id="t")
        mem.aio.index.delete([kept.id])  # behind the log's back
    with Memory(data_dir=data, background_review=False) as mem:
        rebuilt = mem.aio.vectors.rebuilt
        assert rebuilt is not None and "holds 1 point(s) where SQL has 2" in rebuilt["reason"]
        assert kept.id in mem.aio.index.all_ids()


def test_a_running_replica_rebuilds_when_the_log_starts_over(
    tmp_path: Path, memories: list[Memory]
) -> None:
    sql = f"sqlite:///{tmp_path / 'shared.db'}"
    memories.append(_open(tmp_path / "a", sql, ":memory:", vector_follow_seconds=3600))
    (a,) = memories
    a.add_experience("a lesson", tenant_id="t")
    with SqlStore(sql) as store:
        store.restart_vector_log()
    a.aio.index.delete_tenant("t")  # the index lost its points meanwhile
    a.aio.sync_vectors()
    assert a.aio.index.count("t") == 1
    assert "started over" in (a.aio.vectors.rebuilt or {}).get("reason", "")


def test_a_shared_collection_is_one_replica_with_one_position(
    tmp_path: Path, database_url: str, memories: list[Memory]
) -> None:
    """Two processes on one Qdrant collection (here: one qdrant-client shared by two memories,
    as a server would be): one row in the registry, one position, applied under a lease."""
    sql = _sql_url(tmp_path, database_url)
    client = QdrantClient(location=":memory:")
    embedder = FakeEmbedder(32)
    for name in ("a", "b"):
        index = QdrantClientVectorIndex("http://qdrant.test:6333", 32, client=client)
        memories.append(
            Memory(
                data_dir=tmp_path / name,
                database_url=sql,
                index=index,
                embedder=embedder,
                background_review=False,
                vector_follow_seconds=3600,
            )
        )
    a, b = memories
    assert a.aio.vectors.identity.id == b.aio.vectors.identity.id
    assert a.aio.vectors.identity.shared
    a.add_experience("use the cache when order_query times out", tenant_id="t")
    assert _recalled(b, "use the cache when order_query times out", "t")  # same collection
    assert b.aio.sync_vectors() == 0  # a applied it for the collection
    [row] = [r for r in a.aio.store.list_replicas() if r.id == a.aio.vectors.identity.id]
    assert row.position == a.aio.store.vector_log_state().head
    client.close()


def test_an_empty_shared_collection_is_rebuilt_at_open(tmp_path: Path) -> None:
    sql = f"sqlite:///{tmp_path / 'shared.db'}"
    embedder = FakeEmbedder(32)
    with Memory(
        data_dir=tmp_path / "a",
        database_url=sql,
        vector_db_url=":memory:",
        embedder=embedder,
        background_review=False,
    ) as mem:
        mem.add_experience("lesson kept in SQL", tenant_id="t")
    client = QdrantClient(location=":memory:")  # a new, empty server
    index = QdrantClientVectorIndex("http://qdrant.test:6333", 32, client=client)
    assert index.created
    with Memory(
        data_dir=tmp_path / "b",
        database_url=sql,
        index=index,
        embedder=embedder,
        background_review=False,
    ) as mem:
        assert _recalled(mem, "lesson kept in SQL", "t")
        assert "just created" in (mem.aio.vectors.rebuilt or {}).get("reason", "")
    client.close()


def test_recall_is_refused_in_one_line_when_the_index_cannot_catch_up(
    tmp_path: Path, memories: list[Memory]
) -> None:
    sql = f"sqlite:///{tmp_path / 'shared.db'}"
    memories.append(_open(tmp_path / "a", sql, ":memory:", vector_follow_seconds=3600))
    memories.append(_open(tmp_path / "b", sql, ":memory:", vector_follow_seconds=3600))
    a, b = memories
    b.aio.index.close()  # b's index is gone (a server that went away)
    a.add_experience("a lesson b cannot apply", tenant_id="t")
    with pytest.raises(StoreError):
        b.aio.sync_vectors()
    with pytest.raises(ReplicaUnavailableError) as info:
        b.recall("a lesson", tenant_id="t")
    message = str(info.value)
    assert "\n" not in message and message.startswith("recall refused: the vector index")
    assert "cannot catch up" in message and "hindsight doctor" in message
    [finding] = [f for f in a.doctor() if f.name == "vector_replicas"]
    assert not finding.ok and "cannot catch up" in finding.message


def test_concurrent_writers_never_leave_a_follower_behind(
    tmp_path: Path, database_url: str
) -> None:
    """seq order is commit order (PostgreSQL: the log lock at commit): a follower reading while
    eight threads write ends with exactly the points SQL holds."""
    sql = _sql_url(tmp_path, database_url)
    embedder = FakeEmbedder(16)
    with Memory(
        data_dir=tmp_path / "w",
        database_url=sql,
        vector_db_url="memory://",
        embedder=embedder,
        background_review=False,
        vector_follow_seconds=3600,
    ) as writer:
        store = writer.aio.store
        follower = VectorSync(store, InMemoryVectorIndex(16))
        follower.open()
        stop = threading.Event()

        def follow() -> None:
            while not stop.is_set():
                follower.sync()

        def write(n: int) -> None:
            for i in range(12):
                exp = writer.add_experience(f"writer {n} lesson {i}", tenant_id=f"t{n % 3}")
                if i % 4 == 3:
                    writer.delete_experience(exp.id, tenant_id=f"t{n % 3}")

        reader = threading.Thread(target=follow)
        reader.start()
        threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        reader.join()
        follower.sync()
        expected = {row[0] for row in store.vector_rows("", 10_000)}
        assert len(expected) == 8 * 9
        assert follower.index.all_ids() == expected
        follower.close()


def test_edge_files_of_a_replica_checkpoint_are_private(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path / "v", 8, background=False)
    index.write_checkpoint({"log_id": "x", "position": 1})
    assert (tmp_path / "v" / CHECKPOINT_FILE).stat().st_mode & 0o777 == 0o600
    assert index.read_checkpoint() == {"log_id": "x", "position": 1}
    index.close()
