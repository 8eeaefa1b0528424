"""The integrations' background writer, the durable unsaved area and runs stored in parts
(docs/concepts.md#storage): real SQL (SQLite files, PostgreSQL when configured), real threads."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from hindsight import Event, EventType, Memory, MemoryClosedError, Outcome, Trajectory
from hindsight._contract import MAX_NAME_CHARS
from hindsight.capture.unsaved import PendingWrite, UnsavedArea
from hindsight.capture.writer import wait_briefly
from hindsight.models import utcnow
from tests.helpers import file_memory as open_memory

TENANT = "acme"


@pytest.fixture
def opened() -> Iterator[list[Memory]]:
    mems: list[Memory] = []
    yield mems
    for mem in mems:
        mem.close(drain_timeout=5)


def run(task: str = "Where is order 42?", **meta: object) -> Trajectory:
    tid = Trajectory(tenant_id=TENANT).id
    t0 = utcnow()
    events = [
        Event(trajectory_id=tid, event_type=EventType.USER_MESSAGE, content=task, timestamp=t0),
        Event(
            trajectory_id=tid,
            event_type=EventType.TOOL_CALL,
            tool_name="order_query",
            timestamp=t0 + timedelta(milliseconds=1),
        ),
    ]
    return Trajectory(id=tid, tenant_id=TENANT, task=task, events=events, metadata=dict(meta))


def resumed(paused: Trajectory, *, outcome: Outcome) -> Trajectory:
    """The end of ``paused``: its events again plus the steps after the resume."""
    t1 = paused.events[-1].timestamp + timedelta(seconds=1)
    more = [
        Event(
            trajectory_id=paused.id,
            event_type=EventType.TOOL_RESULT,
            tool_name="order_query",
            content="shipped",
            timestamp=t1,
        ),
        Event(
            trajectory_id=paused.id,
            event_type=EventType.FINAL_ANSWER,
            content="Order 42 has shipped.",
            timestamp=t1 + timedelta(milliseconds=1),
        ),
    ]
    meta = {k: v for k, v in paused.metadata.items() if k != "paused"}
    return paused.model_copy(
        update={"events": [*paused.events, *more], "outcome": outcome, "metadata": meta}
    )


# -- runs stored in parts ---------------------------------------------------------------------
def test_a_paused_part_is_stored_unreviewed_found_by_thread_and_merged(
    database_url: str, tmp_path: Path, opened: list[Memory]
) -> None:
    mem = open_memory(tmp_path, database_url=database_url)
    opened.append(mem)
    paused = run(paused=True, thread_id="t-7")
    receipt = mem.store_episode(paused)
    assert receipt["stored"] and not receipt["review_queued"]
    assert mem.review_jobs(tenant_id=TENANT) == []
    assert mem.paused_trajectory("t-7", tenant_id=TENANT) == paused.id
    assert mem.paused_trajectory("t-8", tenant_id=TENANT) is None
    assert mem.paused_trajectory("t-7", tenant_id="other") is None

    final = resumed(paused, outcome=Outcome.SUCCESS)
    # a part stored again without merge changes nothing (idempotent, as before)
    assert not mem.store_episode(final)["stored"]
    assert mem.store_episode(final, merge=True)["review_queued"]
    got = mem.get_trajectory(paused.id, tenant_id=TENANT)
    assert [e.event_type.value for e in got.events] == [
        "user_message",
        "tool_call",
        "tool_result",
        "final_answer",
    ]
    assert got.outcome is Outcome.SUCCESS
    assert "paused" not in got.metadata and got.metadata["thread_id"] == "t-7"
    assert mem.paused_trajectory("t-7", tenant_id=TENANT) is None
    assert [j.trajectory_id for j in mem.review_jobs(tenant_id=TENANT)] == [paused.id]

    # the old paused part arriving late (e.g. from the unsaved area) does not undo the end
    mem.store_episode(paused, merge=True)
    again = mem.get_trajectory(paused.id, tenant_id=TENANT)
    assert again.outcome is Outcome.SUCCESS and len(again.events) == 4
    assert len(mem.review_jobs(tenant_id=TENANT)) == 1


def test_merge_keeps_events_of_both_parts_in_time_order(
    tmp_path: Path, opened: list[Memory]
) -> None:
    mem = open_memory(tmp_path)
    opened.append(mem)
    first = run(paused=True, thread_id="t")
    mem.store_episode(first)
    # the second process knows only what happened after the resume
    t1 = first.events[-1].timestamp + timedelta(seconds=2)
    second = Trajectory(
        id=first.id,
        tenant_id=TENANT,
        events=[
            Event(
                trajectory_id=first.id,
                event_type=EventType.FINAL_ANSWER,
                content="done",
                timestamp=t1,
            )
        ],
        outcome=Outcome.FAILURE,
        metadata={"thread_id": "t"},
    )
    mem.store_episode(second, merge=True)
    got = mem.get_trajectory(first.id, tenant_id=TENANT)
    assert [e.content for e in got.events] == ["Where is order 42?", "", "done"]
    assert got.task == "Where is order 42?"  # kept from the first part
    assert got.outcome is Outcome.FAILURE


# -- the unsaved area -------------------------------------------------------------------------
def test_a_run_handed_over_after_close_waits_on_disk_and_is_stored_at_the_next_open(
    tmp_path: Path, opened: list[Memory]
) -> None:
    mem = open_memory(tmp_path)
    mem.close()
    traj = run()
    future = mem.writer.submit(PendingWrite(traj))
    assert future.result(5) is None  # not written now, never raised
    area = UnsavedArea(tmp_path / "unsaved")
    [(path, write)] = list(area.pending())
    assert write.trajectory == traj
    with pytest.raises(MemoryClosedError):
        mem.store_episode(traj)

    again = open_memory(tmp_path)
    opened.append(again)
    assert again.writer.wait(30)
    assert again.get_trajectory(traj.id, tenant_id=TENANT).task == traj.task
    assert not path.exists() and len(area) == 0


def test_close_drains_the_runs_handed_over(tmp_path: Path, opened: list[Memory]) -> None:
    mem = open_memory(tmp_path)
    runs = [run(f"task {i}", thread_id=str(i)) for i in range(20)]
    for traj in runs:
        mem.writer.submit(PendingWrite(traj.model_copy(update={"outcome": Outcome.SUCCESS})))
    mem.close()
    again = open_memory(tmp_path)
    opened.append(again)
    for traj in runs:
        assert again.get_trajectory(traj.id, tenant_id=TENANT).outcome is Outcome.SUCCESS
    assert len(UnsavedArea(tmp_path / "unsaved")) == 0


def test_a_locked_store_delays_the_write_not_the_run_and_close_never_hangs(
    tmp_path: Path, opened: list[Memory]
) -> None:
    mem = open_memory(tmp_path)
    mem.stats(tenant_id=TENANT)  # the file exists, in WAL mode
    blocker = sqlite3.connect(tmp_path / "hindsight.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
    traj = run()
    try:
        future = mem.writer.submit(PendingWrite(traj))
        assert not wait_briefly(future, 0.05)  # the run goes on; the write waits
        mem.close(drain_timeout=0.1)  # returns: the blocked write goes to the unsaved area
        assert len(UnsavedArea(tmp_path / "unsaved")) == 1
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    again = open_memory(tmp_path)
    opened.append(again)
    assert again.writer.wait(60)
    assert future.result(60) is None or future.done()
    assert again.get_trajectory(traj.id, tenant_id=TENANT).task == traj.task


def test_a_refused_run_is_kept_aside_and_never_blocks_the_others(
    tmp_path: Path, opened: list[Memory]
) -> None:
    mem = open_memory(tmp_path)
    opened.append(mem)
    theirs = run().model_copy(update={"tenant_id": "other"})
    mem.store_episode(theirs)
    mine = theirs.model_copy(update={"tenant_id": TENANT})  # same id: refused
    ok = run("another task")
    mem.writer.submit(PendingWrite(mine))
    mem.writer.submit(PendingWrite(ok))
    assert mem.writer.wait(30)
    assert mem.get_trajectory(ok.id, tenant_id=TENANT).task == "another task"
    [rejected] = (tmp_path / "unsaved" / "rejected").glob("*.json")
    assert "already in use" in json.loads(rejected.read_text())["rejected"]
    assert mem.writer.kept == []


def test_a_run_with_a_tool_name_check_action_refuses_is_kept_aside_and_logged(
    tmp_path: Path, opened: list[Memory], caplog: pytest.LogCaptureFixture
) -> None:
    """What an integration captured is refused as ``store_episode`` refuses it (the recorder's
    words), never stored with a tool ``check_action`` could not name, never lost: an error
    log and a file in ``unsaved/rejected``."""
    mem = open_memory(tmp_path)
    opened.append(mem)
    long = run().model_copy()
    long.events[1] = long.events[1].model_copy(update={"tool_name": "t" * (MAX_NAME_CHARS + 1)})
    ok = run("another task")
    mem.writer.submit(PendingWrite(long))
    mem.writer.submit(PendingWrite(ok))
    assert mem.writer.wait(30)
    assert mem.get_trajectory(ok.id, tenant_id=TENANT).task == "another task"
    words = f"events[1]: tool_name must be a tool name of 1..{MAX_NAME_CHARS} characters"
    [rejected] = (tmp_path / "unsaved" / "rejected").glob("*.json")
    assert words in json.loads(rejected.read_text())["rejected"]
    assert any(words in r.getMessage() and r.levelname == "ERROR" for r in caplog.records)
    assert [t.id for t in mem.list_trajectories(tenant_id=TENANT)] == [ok.id]


def test_an_unreadable_file_is_moved_aside(tmp_path: Path) -> None:
    area = UnsavedArea(tmp_path / "unsaved")
    area.put(PendingWrite(run()))
    (tmp_path / "unsaved" / "00000000000000000000-broken.json").write_text("{not json")
    assert len(list(area.pending())) == 1
    assert [p.name for p in (tmp_path / "unsaved" / "bad").iterdir()] == [
        "00000000000000000000-broken.json"
    ]


def test_pending_write_round_trips(tmp_path: Path) -> None:
    write = PendingWrite(run(), review=False, merge=True, recalled=("a", "b"), done={"recall"})
    back = PendingWrite.from_json(json.loads(json.dumps(write.to_json())))
    assert (back.trajectory, back.review, back.merge, back.recalled, back.done) == (
        write.trajectory,
        False,
        True,
        ("a", "b"),
        {"recall"},
    )
    with pytest.raises(ValueError, match="format"):
        PendingWrite.from_json({"format": 99})


# -- what the model saw is what is attributed --------------------------------------------------
def test_recall_without_record_attributes_nothing_until_recorded(
    tmp_path: Path, opened: list[Memory]
) -> None:
    mem = open_memory(tmp_path)
    opened.append(mem)
    exp = mem.add_experience("order_query times out: use the cache", tenant_id=TENANT)
    seen, unseen = run(), run()
    for traj in (seen, unseen):
        hits = mem.recall(
            "order_query times out", tenant_id=TENANT, trajectory_id=traj.id, record=False
        ).hits
        assert [h.experience.id for h in hits] == [exp.id]
    assert mem.get_experience(exp.id, tenant_id=TENANT).recall_count == 0
    assert mem.record_outcome(unseen.id, False, tenant_id=TENANT) == []
    assert mem.record_recall(seen.id, [exp.id], tenant_id=TENANT) == 1
    [updated] = mem.record_outcome(seen.id, True, tenant_id=TENANT)
    assert updated.recall_count == 1 and updated.helped_count == 1
    assert updated.confidence > exp.confidence


def test_the_writer_records_the_recall_stores_and_attributes_in_order(
    tmp_path: Path, opened: list[Memory]
) -> None:
    mem = open_memory(tmp_path)
    opened.append(mem)
    exp = mem.add_experience("order_query times out: use the cache", tenant_id=TENANT)
    traj = run().model_copy(update={"outcome": Outcome.FAILURE})
    mem.writer.submit(PendingWrite(traj, recalled=(exp.id,))).result(30)
    after = mem.get_experience(exp.id, tenant_id=TENANT)
    assert (after.recall_count, after.misled_count) == (1, 1)
    assert after.confidence < exp.confidence
    assert mem.get_trajectory(traj.id, tenant_id=TENANT).outcome is Outcome.FAILURE
