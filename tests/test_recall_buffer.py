"""Recall bookkeeping is buffered (hindsight.store.recall_buffer): written in batches, before any
other transaction of the store, at close() and at exit; a crash loses at most the unflushed
bookkeeping, never an experience. On SQLite and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

from hindsight.store import SqlStore
from tests.helpers import make_memory

RULES = [
    "order_query times out at peak hours: retry once, then use the cache",
    "refunds over 100 dollars need a manager approval before issuing",
    "verify the customer's email before changing the shipping address",
]


def _url(tmp_path: Path, database_url: str) -> str:
    return database_url or f"sqlite:///{tmp_path / 'hindsight.db'}"


def _seed(mem, tenant: str) -> list[str]:
    return [mem.add_experience(text, tenant_id=tenant).id for text in RULES]


def test_recall_counters_and_log_are_right_after_close(tmp_path: Path, database_url: str) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    run = str(uuid.uuid4())
    mem = make_memory(tmp_path, database_url)
    ids = _seed(mem, tenant)
    mem.aio.store._recall_buffer.seconds = 3600.0  # only close() flushes in this test
    for _ in range(3):
        hits = mem.recall("order query timeout", tenant_id=tenant, top_k=1, trajectory_id=run)
        assert [h.experience.id for h in hits.hits] == [ids[0]]
    # recall sees its own pending counters (the same results as when they were written at once)
    assert mem.recall("order query timeout", tenant_id=tenant, top_k=1, record=False).hits[
        0
    ].experience.recall_count == 3
    other = SqlStore(_url(tmp_path, database_url))  # another process's view: not flushed yet
    try:
        assert other.get_experience(tenant, ids[0]).recall_count == 0
        mem.close()
        got = other.get_experience(tenant, ids[0])
        assert got.recall_count == 3 and got.last_recalled_at is not None
        assert other.recalled_ids(tenant, run) == [ids[0]]
        assert other.get_experience(tenant, ids[1]).recall_count == 0
    finally:
        other.close()


def test_readers_in_the_process_see_pending_bookkeeping(tmp_path: Path, database_url: str) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    with make_memory(tmp_path, database_url) as mem:
        ids = _seed(mem, tenant)
        store = mem.aio.store
        store._recall_buffer.seconds = 3600.0
        run = str(uuid.uuid4())
        assert mem.record_recall(run, [ids[1], ids[2], str(uuid.uuid4())], tenant_id=tenant) == 2
        assert store._recall_buffer.pending
        # a reader outside recall flushes first (get_experience, the run's recall log, stats)
        assert mem.get_experience(ids[1], tenant_id=tenant).recall_count == 1
        assert not store._recall_buffer.pending
        assert store.recalled_ids(tenant, run) == [ids[1], ids[2]]


def test_outcome_attribution_sees_a_recall_not_yet_flushed(
    tmp_path: Path, database_url: str
) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    with make_memory(tmp_path, database_url) as mem:
        ids = _seed(mem, tenant)
        mem.aio.store._recall_buffer.seconds = 3600.0
        with mem.record("refund of 250 dollars", tenant_id=tenant) as run:
            result = mem.recall(
                "refund 100 dollars manager approval",
                tenant_id=tenant,
                top_k=1,
                trajectory_id=run.trajectory_id,
            )
            assert [h.experience.id for h in result.hits] == [ids[1]]
            run.user_message("refund of 250 dollars")
            run.final_answer("done")
            run.set_outcome("success")
        updated = mem.record_outcome(run.trajectory_id, True, tenant_id=tenant)
        assert [e.id for e in updated] == [ids[1]]
        assert updated[0].helped_count == 1 and updated[0].recall_count == 1


def test_size_threshold_flushes_in_the_background(tmp_path: Path, database_url: str) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    with make_memory(tmp_path, database_url) as mem:
        ids = _seed(mem, tenant)
        buffer = mem.aio.store._recall_buffer
        buffer.seconds, buffer.rows = 3600.0, 4
        other = SqlStore(_url(tmp_path, database_url))
        try:
            for _ in range(2):  # 2 x 2 hits = 4 rows: the flusher thread writes them
                mem.recall("order query timeout refunds", tenant_id=tenant, top_k=2)
            deadline = time.monotonic() + 60
            while buffer.pending and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not buffer.pending
            counts = [other.get_experience(tenant, i).recall_count for i in ids]
            assert sum(counts) == 4
        finally:
            other.close()


CRASH = textwrap.dedent(
    """
    import os, sys, uuid
    from hindsight import Memory
    from hindsight.testing import FakeEmbedder, ManualClock, ScriptedReviewer
    url = sys.argv[2] or None
    kw = {"database_url": url} if url else {}
    mem = Memory(data_dir=sys.argv[1], embedder=FakeEmbedder(64), clock=ManualClock(),
                 reviewer=ScriptedReviewer([]), **kw)
    mem.aio.store._recall_buffer.seconds = 3600.0
    exp = mem.add_experience("always confirm the order id before cancelling",
                             tenant_id=sys.argv[3])
    mem.recall("confirm order id cancel", tenant_id=sys.argv[3], trajectory_id=sys.argv[4])
    print(exp.id, flush=True)
    os._exit(0)  # a crash: no close(), no atexit
    """
)


def test_a_crash_loses_only_bookkeeping(tmp_path: Path, database_url: str) -> None:
    tenant, run = f"t-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", CRASH, str(tmp_path), database_url, tenant, run],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    exp_id = out.stdout.split()[-1]
    store = SqlStore(_url(tmp_path, database_url))
    try:
        exp = store.get_experience(tenant, exp_id)  # the experience survived
        assert exp.content == "always confirm the order id before cancelling"
        assert exp.recall_count == 0 and exp.last_recalled_at is None  # bookkeeping lost
        assert store.recalled_ids(tenant, run) == []
    finally:
        store.close()


def test_a_reader_waits_for_a_batch_another_thread_is_writing(
    tmp_path: Path, database_url: str
) -> None:
    """Found in CI: the background flusher had taken a batch (so nothing was "pending") but
    not committed it, and an outcome reported meanwhile read the run's recall log without it:
    the recalled lesson was never credited. A batch in flight still counts as pending, so the
    outcome's transaction waits for it."""
    import threading

    tenant = f"t-{uuid.uuid4().hex[:8]}"
    with make_memory(tmp_path, database_url) as mem:
        ids = _seed(mem, tenant)
        buffer = mem.aio.store._recall_buffer
        started, release = threading.Event(), threading.Event()
        write = buffer._write

        def held_write(batch: list) -> None:  # the flusher's write, held until released
            started.set()
            assert release.wait(30)
            write(batch)

        buffer._write, buffer.seconds, buffer.rows = held_write, 3600.0, 1
        run = str(uuid.uuid4())
        hits = mem.recall("order query timeout", tenant_id=tenant, top_k=1, trajectory_id=run)
        assert [h.experience.id for h in hits.hits] == [ids[0]]
        assert started.wait(30), "the flusher never took the batch"
        assert buffer.pending  # taken, not written: still pending
        reported: list[object] = []
        outcome = threading.Thread(
            target=lambda: reported.append(mem.record_outcome(run, True, tenant_id=tenant))
        )
        outcome.start()
        outcome.join(0.5)
        assert outcome.is_alive()  # waits for the batch in flight
        release.set()
        outcome.join(30)
        assert not outcome.is_alive() and not buffer.pending
        assert mem.get_experience(ids[0], tenant_id=tenant).helped_count == 1
