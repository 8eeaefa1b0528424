"""The SQL store on every backend: SQLite file, in-memory SQLite and PostgreSQL."""

from __future__ import annotations

import re
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from store_fixtures import store_url  # noqa: F401  (fixture)

from hindsight._errors import NotFoundError, StoreError, TenantRequiredError, UsageError
from hindsight.clock import ManualClock
from hindsight.models import Event, Experience, Trajectory
from hindsight.ports import VectorPoint
from hindsight.store import JobState, SqlStore, vector_payload
from hindsight.store.migrate import current_revision, head_revision, shipped_head, stored_revision
from hindsight.store.schema import metadata, vector_outbox

T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def store(store_url: str, clock: ManualClock) -> Iterator[SqlStore]:  # noqa: F811
    with SqlStore(store_url, clock=clock) as s:
        yield s


def traj(tenant: str = "t1", n_events: int = 3, **kw: Any) -> Trajectory:
    events = [Event(event_type="user_message", content="find order 42")]
    for i in range(n_events - 1):
        events.append(
            Event(
                event_type="tool_result" if i % 2 else "tool_call",
                tool_name="order_query",
                tool_args={"id": i, "nested": {"zh": "订单"}},
                status="timeout" if i % 2 else None,
                content=f"step {i}",
                latency_ms=12.5,
                metadata={"i": i},
            )
        )
    return Trajectory(tenant_id=tenant, task="find order", task_type="orders", events=events, **kw)


def exp(tenant: str = "t1", content: str = "retry order_query once", **kw: Any) -> Experience:
    kw.setdefault("kind", "rule")
    return Experience(tenant_id=tenant, content=content, **kw)


def vecs(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


def outbox(store: SqlStore, after: int = 0) -> list[tuple[str, str]]:
    """The vector-outbox rows after ``after`` as ``(experience_id, tenant_id)``, in order."""
    query = (
        sa.select(vector_outbox.c.experience_id, vector_outbox.c.tenant_id)
        .where(vector_outbox.c.seq > after)
        .order_by(vector_outbox.c.seq)
    )
    with store._tx() as conn:
        return [(r[0], r[1]) for r in conn.execute(query)]


def outbox_head(store: SqlStore) -> int:
    with store._tx() as conn:
        return int(conn.execute(sa.select(sa.func.max(vector_outbox.c.seq))).scalar() or 0)


def point_of(store: SqlStore, exp_id: str) -> VectorPoint | None:
    """The point an index kept apart from SQL gets for ``exp_id`` (applying its outbox rows)."""
    got: dict[str, Any] = {}

    def write(points: list[VectorPoint], removed: list[str]) -> None:
        got.update({p.id: p for p in points}, **dict.fromkeys(removed))

    store.apply_vector_changes([exp_id], write)
    return got[exp_id]


# --- opening, schema, URLs ---------------------------------------------------------------------


def test_open_migrates_to_head_and_schema_matches_the_code(store: SqlStore) -> None:
    with store._info.engine.connect() as conn:
        assert current_revision(conn) == head_revision() is not None
        # the head known without Alembic (read from the revision files) is Alembic's head, and
        # the stored revision read with SQLAlchemy is Alembic's (a cold start without Alembic)
        assert stored_revision(conn) == shipped_head() == head_revision()
        if store.backend == "postgresql":
            import pgvector.sqlalchemy  # noqa: F401  (reflection knows pgvector's type then)
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, metadata)
    assert diff == []


def test_reopening_keeps_data_except_in_memory(store_url: str) -> None:  # noqa: F811
    with SqlStore(store_url) as first:
        first.set_meta("embedding_model", "hash-384")
        assert first.add_trajectory(traj())
    with SqlStore(store_url) as second:
        if store_url == "sqlite://":  # every in-memory store is a new, empty database
            assert second.get_meta("embedding_model") is None
            assert second.list_trajectory_ids("t1") == []
        else:
            assert second.get_meta("embedding_model") == "hash-384"
            assert len(second.list_trajectory_ids("t1")) == 1


@pytest.mark.parametrize(
    "url", ["", "not a url", "mysql://u:p@localhost/db", "sqlite+aiosqlite:///x.db"]
)
def test_bad_url_is_a_one_line_usage_error(url: str) -> None:
    with pytest.raises(UsageError) as info:
        SqlStore(url)
    assert "\n" not in str(info.value)


def test_unreachable_postgres_is_a_one_line_store_error_without_password() -> None:
    with pytest.raises(StoreError) as info:
        SqlStore("postgresql://someone:s3cret@127.0.0.1:1/nothing")
    message = str(info.value)
    assert "\n" not in message and "s3cret" not in message and "127.0.0.1" in message


def test_sqlite_file_that_cannot_be_created_is_a_store_error(tmp_path: Any) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises((StoreError, OSError)):
        SqlStore(f"sqlite:///{blocker}/sub/db.sqlite")


def test_closed_store_refuses_calls(store_url: str) -> None:  # noqa: F811
    s = SqlStore(store_url)
    s.close()
    s.close()  # idempotent
    assert s.closed
    with pytest.raises(StoreError, match="closed"):
        s.count_experiences("t1")


def test_meta_round_trip(store: SqlStore) -> None:
    assert store.get_meta("embedding_dimension") is None
    store.set_meta("embedding_dimension", "384")
    store.set_meta("embedding_dimension", "768")
    assert store.get_meta("embedding_dimension") == "768"
    with pytest.raises(UsageError):
        store.set_meta("", "x")
    with pytest.raises(UsageError):
        store.set_meta("k", 3)  # type: ignore[arg-type]


# --- trajectories ------------------------------------------------------------------------------


def test_add_trajectory_round_trip_and_idempotent(store: SqlStore) -> None:
    t = traj(n_events=6, tags=["prod"], outcome="failure", reward=0.0, metadata={"k": "v"})
    assert store.add_trajectory(t) is True
    assert store.add_trajectory(t) is False
    assert store.add_trajectory(t.model_copy(update={"task": "changed"})) is False
    got = store.get_trajectory("t1", t.id)
    expected_events = [e.model_copy(update={"trajectory_id": t.id}) for e in t.events]
    assert got == t.model_copy(update={"events": expected_events})
    assert [e.event_id for e in got.events] == [e.event_id for e in t.events]
    assert got.events[1].tool_args == {"id": 0, "nested": {"zh": "订单"}}
    assert store.count_review_jobs() == 1  # the second add queued nothing
    assert store.stats("t1")["events"] == 6


def test_trajectory_reads_are_tenant_scoped_and_accept_any_id_spelling(store: SqlStore) -> None:
    t = traj()
    store.add_trajectory(t)
    for spelling in (uuid.UUID(t.id), t.id.upper(), "{" + t.id + "}"):
        assert store.has_trajectory("t1", spelling)
        assert store.get_trajectory("t1", spelling).id == t.id
    assert not store.has_trajectory("t2", t.id)
    with pytest.raises(NotFoundError):
        store.get_trajectory("t2", t.id)
    with pytest.raises(NotFoundError):
        store.get_trajectory("t1", uuid.uuid4())
    with pytest.raises(UsageError):
        store.get_trajectory("t1", "not-a-uuid")
    assert store.list_trajectory_ids("t1") == [t.id]
    assert store.list_trajectory_ids("t2") == []
    for bad in ("", None, "   ", ["t1"]):
        with pytest.raises(TenantRequiredError):
            store.list_trajectory_ids(bad)  # type: ignore[arg-type]


def test_trajectory_tasks_reads_task_and_key_of_the_tenants_runs_only(store: SqlStore) -> None:
    keyed = traj().model_copy(update={"task": "refund order 1234", "task_key": "refunds"})
    plain = traj().model_copy(update={"task": ""})
    other = traj("t2").model_copy(update={"task": "elsewhere"})
    for t in (keyed, plain, other):
        store.add_trajectory(t)
    missing = str(uuid.uuid4())
    found = store.trajectory_tasks("t1", [keyed.id.upper(), plain.id, other.id, missing])
    assert found == {keyed.id: ("refund order 1234", "refunds"), plain.id: ("", None)}
    assert store.trajectory_tasks("t1", []) == {}
    with pytest.raises(UsageError):
        store.trajectory_tasks("t1", ["not-a-uuid"])
    with pytest.raises(TenantRequiredError):
        store.trajectory_tasks(" ", [keyed.id])


def test_add_trajectory_without_review_and_with_no_events(store: SqlStore) -> None:
    empty = Trajectory(tenant_id="t1")
    assert store.add_trajectory(empty, enqueue_review=False)
    assert store.get_trajectory("t1", empty.id).events == []
    assert store.count_review_jobs() == 0
    with pytest.raises(UsageError):
        store.add_trajectory({"tenant_id": "t1"})  # type: ignore[arg-type]


def test_bulk_ingest_counts_every_event_and_repeats_nothing(store: SqlStore) -> None:
    batch = [traj(n_events=30) for _ in range(200)]
    added = sum(store.add_trajectory(t) for t in batch)
    assert added == 200
    assert store.stats("t1")["events"] == 6000
    assert sum(store.add_trajectory(t) for t in batch) == 0


# --- experiences -------------------------------------------------------------------------------


def test_add_and_get_experiences_with_vectors(store: SqlStore) -> None:
    items = [exp(content=f"lesson {i}", tools=["order_query"], tags=["a"]) for i in range(5)]
    v = vecs(5)
    store.add_experiences(items, v)
    got = store.get_experiences("t1", [e.id for e in items] + [str(uuid.uuid4())])
    assert got == {e.id: e for e in items}
    assert store.get_experience("t1", items[0].id.upper()) == items[0]
    stored = store.get_vectors([e.id for e in items])
    for i, e in enumerate(items):
        assert stored[e.id].dtype == np.float32
        np.testing.assert_array_equal(stored[e.id], v[i])
    assert outbox(store) == [(e.id, "t1") for e in items]
    point = point_of(store, items[0].id)
    assert point is not None and point.payload == vector_payload(items[0])
    np.testing.assert_array_equal(point.vector, v[0])


def test_add_experiences_rejects_bad_input(store: SqlStore) -> None:
    a, b = exp(), exp()
    with pytest.raises(UsageError, match="shape"):
        store.add_experiences([a, b], vecs(3))
    with pytest.raises(UsageError, match="shape"):
        store.add_experiences([a], np.zeros(8))
    with pytest.raises(UsageError, match="NaN"):
        store.add_experiences([a], np.full((1, 4), np.nan))
    with pytest.raises(UsageError):
        store.add_experiences(a, None)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="distinct"):
        store.add_experiences([a, a], None)
    store.add_experiences([a], None)
    with pytest.raises(UsageError, match="already exists"):
        store.add_experiences([b, a], None)
    assert store.count_experiences("t1") == 1  # the failed batch left nothing behind
    assert store.get_vectors([a.id]) == {}
    store.add_experiences([], None)


def test_experience_reads_are_tenant_scoped(store: SqlStore) -> None:
    mine, theirs = exp("t1"), exp("t2", content="Project Zephyr deploys with Terraform")
    store.add_experiences([mine, theirs], vecs(2))
    assert store.get_experiences("t1", [mine.id, theirs.id]) == {mine.id: mine}
    with pytest.raises(NotFoundError):
        store.get_experience("t1", theirs.id)
    assert [e.id for e in store.list_experiences("t1")] == [mine.id]
    assert store.count_experiences("t1") == 1
    for bad in (None, "", " "):
        with pytest.raises(TenantRequiredError):
            store.get_experiences(bad, [mine.id])  # type: ignore[arg-type]
        with pytest.raises(TenantRequiredError):
            store.list_experiences(bad)  # type: ignore[arg-type]


def test_list_experiences_filters_and_order(store: SqlStore, clock: ManualClock) -> None:
    low = exp(content="low", confidence=0.2, task_type="orders", tags=["x", "y"])
    high = exp(content="high", confidence=0.9, task_type="orders", tags=["x"])
    older = exp(content="older", confidence=0.5, namespace="shared", updated_at=T0)
    newer = exp(content="newer", confidence=0.5, updated_at=T0 + timedelta(hours=1))
    gone = exp(content="archived", confidence=1.0, status="archived", task_type="orders")
    store.add_experiences([low, high, older, newer, gone], None)

    def ids(**kw: Any) -> list[str]:
        return [e.content for e in store.list_experiences("t1", **kw)]

    assert ids() == ["high", "newer", "older", "low"]
    assert ids(task_type="orders") == ["high", "low"]
    assert ids(task_type="orders", statuses=["active", "archived"]) == ["archived", "high", "low"]
    assert ids(namespaces=["shared"]) == ["older"]
    assert ids(namespaces=["default", "shared"], limit=2) == ["high", "newer"]
    assert ids(limit=2, offset=2) == ["older", "low"]
    assert ids(tags=["x"]) == ["high", "low"]
    assert ids(tags=["x", "y"]) == ["low"]
    assert ids(tags=["nope"]) == []
    assert ids(task_type="other") == []
    for bad in (
        {"namespaces": []},
        {"statuses": []},
        {"statuses": ["bogus"]},
        {"limit": 0},
        {"offset": -1},
    ):
        with pytest.raises(UsageError):
            store.list_experiences("t1", **bad)


def test_count_experiences_needs_a_tenant_or_explicit_all(store: SqlStore) -> None:
    store.add_experiences([exp("t1"), exp("t1", status="deleted"), exp("t2")], None)
    assert store.count_experiences("t1") == 2
    assert store.count_experiences("t1", ["active"]) == 1
    assert store.count_experiences(None, all_tenants=True) == 3
    assert store.count_experiences(None, ["deleted"], all_tenants=True) == 1
    with pytest.raises(TenantRequiredError):
        store.count_experiences(None)
    with pytest.raises(TenantRequiredError):
        store.count_experiences("")
    with pytest.raises(UsageError):
        store.count_experiences("t1", all_tenants=True)


def test_update_experience_replaces_fields_and_queues_upsert(
    store: SqlStore, clock: ManualClock
) -> None:
    e = exp(confidence=0.5)
    store.add_experiences([e], vecs(1))
    mark = outbox_head(store)
    changed = e.model_copy(
        update={"confidence": 0.8, "content": "retry twice", "tags": ["t"], "version": 2}
    )
    changed = changed.model_copy(update={"updated_at": clock.advance(seconds=5)})
    store.update_experience(changed, vector=np.ones(8))
    assert store.get_experience("t1", e.id) == changed
    np.testing.assert_array_equal(store.get_vectors([e.id])[e.id], np.ones(8, np.float32))
    assert outbox(store, mark) == [(e.id, "t1")]
    point = point_of(store, e.id)
    assert point is not None and point.payload == vector_payload(changed)
    store.update_experience(changed.model_copy(update={"status": "deleted"}))
    assert outbox(store) == [(e.id, "t1")]  # the rows applied above are gone
    assert point_of(store, e.id) is None  # deleted: no point
    assert outbox(store) == []
    with pytest.raises(NotFoundError):
        store.update_experience(changed.model_copy(update={"tenant_id": "t2"}))
    with pytest.raises(NotFoundError):
        store.update_experience(exp())


def test_set_status_and_soft_delete(store: SqlStore, clock: ManualClock) -> None:
    a, b, other = exp(), exp(), exp("t2")
    store.add_experiences([a, b, other], vecs(3))
    mark = outbox_head(store)
    later = clock.advance(seconds=60)
    assert store.set_status("t1", [a.id, b.id, other.id], "quarantined") == 2
    assert store.set_status("t1", [a.id], "quarantined") == 0  # already so
    assert store.get_experience("t1", a.id).updated_at == later
    assert store.get_experience("t2", other.id).status.value == "active"
    assert store.delete_experiences("t1", [uuid.UUID(a.id), other.id, str(uuid.uuid4())]) == 1
    assert store.delete_experiences("t1", [a.id]) == 0
    deleted = store.get_experience("t1", a.id)  # soft: the row stays for audit
    assert deleted.status.value == "deleted"
    assert store.list_experiences("t1", statuses=["deleted"]) == [deleted]
    assert store.set_status("t1", [a.id], "active") == 1  # back from deleted: vector rebuilt
    assert outbox(store, mark) == [(a.id, "t1"), (b.id, "t1"), (a.id, "t1"), (a.id, "t1")]
    point = point_of(store, b.id)
    assert point is not None and point.payload["status"] == "quarantined"
    with pytest.raises(UsageError):
        store.set_status("t1", [a.id], "gone")
    with pytest.raises(UsageError):
        store.delete_experiences("t1", a.id)  # a bare string is not a list of ids
    with pytest.raises(TenantRequiredError):
        store.delete_experiences("", [a.id])


def test_record_recall_counts_and_attributes(store: SqlStore) -> None:
    a, b, other = exp(), exp(), exp("t2")
    store.add_experiences([a, b, other], None)
    run = uuid.uuid4()
    at = datetime(2026, 3, 2, 8, 0, tzinfo=timezone(timedelta(hours=8)))
    assert store.record_recall("t1", [a.id, b.id, other.id, a.id], at, trajectory_id=run) == 2
    store.record_recall("t1", [a.id], at + timedelta(hours=1))
    got = store.get_experience("t1", a.id)
    assert got.recall_count == 2 and got.last_recalled_at == at + timedelta(hours=1)
    assert got.last_recalled_at is not None and got.last_recalled_at.tzinfo is not None
    assert store.get_experience("t2", other.id).recall_count == 0
    assert store.recalled_ids("t1", run) == [a.id, b.id]
    assert store.recalled_ids("t2", run) == []
    assert store.stats("t1")["recalls"] == 3


def test_timestamps_round_trip_as_utc_aware(store: SqlStore) -> None:
    shanghai = timezone(timedelta(hours=8))
    local = datetime(2026, 5, 1, 20, 30, 15, 654321, tzinfo=shanghai)
    naive = datetime(2026, 5, 1, 1, 2, 3)
    t = traj(started_at=local, ended_at=naive)
    store.add_trajectory(t)
    got = store.get_trajectory("t1", t.id)
    assert got.started_at == local and got.started_at.tzinfo == UTC
    assert got.ended_at == naive.replace(tzinfo=UTC) and got.ended_at.tzinfo == UTC
    assert all(e.timestamp.tzinfo == UTC for e in got.events)
    e = exp(created_at=local, updated_at=local)
    store.add_experiences([e], None)
    back = store.get_experience("t1", e.id)
    assert back.created_at == local and back.created_at.tzinfo == UTC
    [job] = store.list_review_jobs()
    assert job.created_at == T0 and job.run_after.tzinfo == UTC


# --- tenant isolation and forget --------------------------------------------------------------


def test_deleting_one_tenant_never_touches_the_others(store: SqlStore) -> None:
    tenants = ["A", "B", "C"]
    made = {t: [exp(t, content=f"{t} lesson {i}") for i in range(5)] for t in tenants}
    for t in tenants:
        store.add_trajectory(traj(t))
        store.add_experiences(made[t], vecs(5))
    before = {t: store.get_experiences(t, [e.id for e in made[t]]) for t in ("B", "C")}

    all_ids = [e.id for es in made.values() for e in es]
    assert store.delete_experiences("A", all_ids) == 5  # B's and C's ids are ignored
    assert store.forget("A", everything=True) == 5
    for bad_tenant in ("", None, "  "):
        with pytest.raises(TenantRequiredError):
            store.forget(bad_tenant, everything=True)  # type: ignore[arg-type]
        with pytest.raises(TenantRequiredError):
            store.delete_experiences(bad_tenant, all_ids)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        store.forget("B")  # no filter
    with pytest.raises(UsageError):
        store.forget("B", experience_ids=[])
    with pytest.raises(UsageError):
        store.forget("B", everything=True, experience_ids=[all_ids[5]])

    assert store.count_experiences("A") == 0
    assert store.list_trajectory_ids("A") == []
    for t in ("B", "C"):
        assert store.get_experiences(t, all_ids) == before[t]
        assert store.count_experiences(t, ["active"]) == 5
        assert len(store.list_trajectory_ids(t)) == 1
        assert store.count_review_jobs(tenant_id=t) == 1
    assert store.count_experiences(None, all_tenants=True) == 10
    # forgetting A queued its ids (and deleting them before): the points of A go, no other
    mark = len([t for _, t in outbox(store) if t != "A"])
    assert {i for i, t in outbox(store) if t == "A"} == {e.id for e in made["A"]}
    assert all(point_of(store, e.id) is None for e in made["A"])
    assert len(outbox(store)) == mark == 10  # B's and C's writes, still pending


def test_forget_by_experience_ids_is_hard_and_scoped(store: SqlStore) -> None:
    a, b, other = exp(), exp(), exp("t2")
    store.add_experiences([a, b, other], vecs(3))
    store.record_recall("t1", [a.id], T0)
    mark = outbox_head(store)
    assert store.forget("t1", experience_ids=["{" + a.id.upper() + "}", other.id]) == 1
    assert store.get_experiences("t1", [a.id, b.id]).keys() == {b.id}
    assert store.count_experiences("t1", None) == 1  # hard: no deleted row kept
    assert store.get_experience("t2", other.id) == other
    assert store.get_vectors([a.id]) == {}
    assert outbox(store, mark) == [(a.id, "t1")]
    assert store.stats("t1")["recalls"] == 0


def test_forget_by_trajectory(store: SqlStore) -> None:
    run, keep = traj(), traj()
    store.add_trajectory(run)
    store.add_trajectory(keep)
    theirs = traj("t2")
    store.add_trajectory(theirs)
    sourced = exp(source_trajectory_ids=[keep.id, run.id])
    unrelated = exp(source_trajectory_ids=[keep.id])
    foreign = exp("t2", source_trajectory_ids=[theirs.id])  # another tenant: never touched
    store.add_experiences([sourced, unrelated, foreign], None)
    # an experience cannot cite another tenant's run (nor a run that is not stored)
    with pytest.raises(NotFoundError, match="not stored in tenant 't2'"):
        store.add_experiences([exp("t2", source_trajectory_ids=[run.id])], None)
    store.record_recall("t1", [unrelated.id], T0, trajectory_id=run.id)
    assert store.forget("t1", trajectory_id=uuid.UUID(run.id)) == 1
    assert not store.has_trajectory("t1", run.id)
    assert store.has_trajectory("t1", keep.id)
    assert store.get_experiences("t1", [sourced.id, unrelated.id]).keys() == {unrelated.id}
    assert store.get_experience("t2", foreign.id) == foreign
    assert store.recalled_ids("t1", run.id) == []
    assert sorted(j.trajectory_id for j in store.list_review_jobs()) == sorted([keep.id, theirs.id])
    assert store.stats("t1")["events"] == len(keep.events)
    assert store.forget("t2", trajectory_id=keep.id) == 0
    assert store.has_trajectory("t1", keep.id)


# --- vector log --------------------------------------------------------------------------------


def test_outbox_applies_each_experience_as_its_row_is_now(store: SqlStore) -> None:
    """Applying reads the current rows: the outbox is applied in any order, and again, with the
    same result; rows that are gone, deleted or without an embedding are removed; only the
    outbox rows read are cleared, and a write that fails leaves them pending."""
    live = [exp() for _ in range(4)]
    gone, bare = exp(), exp()
    store.add_experiences([*live, gone], vecs(5))
    store.add_experiences([bare], None)  # no embedding: no point
    store.delete_experiences("t1", [gone.id])
    assert store.pending_vector_changes(3) == [e.id for e in live[:3]]  # oldest first
    assert store.vector_outbox_state()["pending"] == 7
    with pytest.raises(RuntimeError):
        store.apply_vector_changes([e.id for e in live], _fail)
    assert store.vector_outbox_state()["pending"] == 7
    seen: dict[str, Any] = {}

    def write(points: list[VectorPoint], removed: list[str]) -> None:
        seen.update({p.id: p.payload["status"] for p in points}, **dict.fromkeys(removed))

    ids = [bare.id, gone.id, *(e.id for e in reversed(live)), str(uuid.uuid4())]
    assert store.apply_vector_changes(ids, write) == 7
    assert seen == {**{e.id: "active" for e in live}, gone.id: None, bare.id: None, ids[-1]: None}
    assert store.pending_vector_changes() == [] and store.count_vector_rows() == 4
    assert store.apply_vector_changes(ids, write) == 0  # again: the same points
    assert store.experience_ids_after("", 100) == sorted(e.id for e in [*live, gone, bare])


def _fail(points: list[VectorPoint], removed: list[str]) -> None:
    raise RuntimeError("index down")


def test_with_vectors_in_sql_no_outbox_rows_are_written(store: SqlStore) -> None:
    store.set_vectors_in_sql(True)
    store.add_experiences([exp()], vecs(1))
    assert outbox(store) == [] and store.vectors_in_sql
    store.set_vectors_in_sql(False)
    store.add_experiences([exp()], vecs(1))
    assert len(outbox(store)) == 1


# --- review jobs -------------------------------------------------------------------------------


def test_review_job_lifecycle(store: SqlStore, clock: ManualClock) -> None:
    a, b = traj(), traj("t2")
    store.add_trajectory(a)
    store.add_trajectory(b, enqueue_review=False)
    clock.advance(seconds=1)
    assert store.enqueue_review("t1", a.id) is False  # one job per trajectory
    assert store.enqueue_review("t2", b.id.upper()) is True
    with pytest.raises(NotFoundError):
        store.enqueue_review("t1", b.id)  # other tenant's trajectory
    with pytest.raises(NotFoundError):
        store.enqueue_review("t1", uuid.uuid4())

    job = store.claim_review_job("w1", lease_seconds=30)
    assert job is not None and job.trajectory_id == a.id and job.tenant_id == "t1"
    # a claim is not an attempt: attempts count failed reviews only
    assert (job.state, job.attempts, job.lease_owner) == (JobState.RUNNING, 0, "w1")
    assert job.lease_expires_at == T0 + timedelta(seconds=31)
    second = store.claim_review_job("w1", 30)
    assert second is not None and second.trajectory_id == b.id
    assert store.claim_review_job("w1", 30) is None

    store.fail_review_job(job.id, "model timed out", retry_after=60)
    retried = store.get_review_job(job.id)
    assert (retried.state, retried.last_error, retried.lease_owner) == (
        JobState.PENDING,
        "model timed out",
        None,
    )
    assert store.claim_review_job("w2", 30) is None  # not before run_after
    clock.advance(seconds=61)
    again = store.claim_review_job("w2", 30)
    assert again is not None and again.id == job.id
    assert (again.attempts, again.lost_leases) == (1, 0)  # the failed review above
    store.complete_review_job(again.id)
    done = store.get_review_job(job.id)
    assert done.state is JobState.SUCCEEDED and done.last_error is None

    store.fail_review_job(second.id, "bad JSON from reviewer", retry_after=None)
    failed = store.get_review_job(second.id)
    assert failed.state is JobState.FAILED and failed.last_error == "bad JSON from reviewer"
    clock.advance(days=1)
    assert store.claim_review_job("w3", 30) is None  # failed jobs stay failed

    assert store.count_review_jobs() == 2
    assert store.count_review_jobs("failed") == 1
    assert store.count_review_jobs(tenant_id="t2") == 1
    assert store.count_review_jobs("succeeded", tenant_id="t2") == 0
    assert [j.id for j in store.list_review_jobs(state="failed")] == [second.id]
    assert len(store.list_review_jobs(limit=1)) == 1
    with pytest.raises(UsageError):
        store.count_review_jobs("bogus")
    with pytest.raises(TenantRequiredError):
        store.count_review_jobs(tenant_id="")
    with pytest.raises(NotFoundError):
        store.complete_review_job(uuid.uuid4())
    with pytest.raises(UsageError):
        store.fail_review_job(job.id, "x", retry_after=-1)
    with pytest.raises(UsageError):
        store.claim_review_job("", 30)


def test_expired_lease_is_reclaimed(store: SqlStore, clock: ManualClock) -> None:
    store.add_trajectory(traj())
    first = store.claim_review_job("dead-worker", lease_seconds=10)
    assert first is not None
    clock.advance(seconds=9)
    assert store.claim_review_job("w2", 10) is None
    clock.advance(seconds=2)
    taken = store.claim_review_job("w2", 10)
    assert taken is not None and taken.id == first.id
    # a lease lost to a dead worker is not an attempt, it is counted apart
    assert (taken.attempts, taken.lost_leases, taken.lease_owner) == (0, 1, "w2")


def test_concurrent_claims_never_double_claim(store: SqlStore) -> None:
    jobs = 60
    for _ in range(jobs):
        store.add_trajectory(traj(n_events=1))
    claimed: list[str] = []
    errors: list[BaseException] = []
    guard = threading.Lock()

    def worker(name: str) -> None:
        try:
            while (job := store.claim_review_job(name, lease_seconds=600)) is not None:
                with guard:
                    claimed.append(job.id)
                store.complete_review_job(job.id)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(claimed) == jobs and len(set(claimed)) == jobs
    assert store.count_review_jobs("succeeded") == jobs


# --- concurrency -------------------------------------------------------------------------------


CONCURRENT_THREADS, CONCURRENT_BATCHES, CONCURRENT_PER_BATCH, CONCURRENT_DELETES = 8, 20, 10, 3
CONCURRENT_TENANTS = ["A", "B", "C"]


def _concurrent_round(store: SqlStore, round_no: int) -> list[BaseException]:
    """One round of concurrent writes: every thread adds 20 batches of 10, soft-deletes 3 of
    each batch and reads the batch back, all at the same time. Returns the errors the threads
    hit."""
    errors: list[BaseException] = []
    start = threading.Barrier(CONCURRENT_THREADS)

    def writer(n: int) -> None:
        tenant = CONCURRENT_TENANTS[n % len(CONCURRENT_TENANTS)]
        try:
            start.wait()
            for b in range(CONCURRENT_BATCHES):
                items = [
                    exp(tenant, content=f"r{round_no} w{n} b{b} #{i}", task_type=f"r{round_no}")
                    for i in range(CONCURRENT_PER_BATCH)
                ]
                store.add_experiences(items, vecs(CONCURRENT_PER_BATCH, seed=b))
                doomed = [e.id for e in items[:CONCURRENT_DELETES]]
                assert store.delete_experiences(tenant, doomed) == CONCURRENT_DELETES
                assert (
                    len(store.get_experiences(tenant, [e.id for e in items]))
                    == CONCURRENT_PER_BATCH
                )
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=writer, args=(n,)) for n in range(CONCURRENT_THREADS)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return errors


def test_threads_write_and_delete_concurrently(store: SqlStore) -> None:
    per_tenant = Counter(
        CONCURRENT_TENANTS[n % len(CONCURRENT_TENANTS)] for n in range(CONCURRENT_THREADS)
    )
    kept = CONCURRENT_BATCHES * (CONCURRENT_PER_BATCH - CONCURRENT_DELETES)
    for round_no in range(5):
        errors = _concurrent_round(store, round_no)
        assert errors == [], errors[:3]
        rounds = round_no + 1
        total = CONCURRENT_THREADS * CONCURRENT_BATCHES * CONCURRENT_PER_BATCH * rounds
        removed = CONCURRENT_THREADS * CONCURRENT_BATCHES * CONCURRENT_DELETES * rounds
        assert store.count_experiences(None, all_tenants=True) == total
        assert store.count_experiences(None, ["deleted"], all_tenants=True) == removed
        assert store.count_experiences(None, ["active"], all_tenants=True) == total - removed
        for tenant in CONCURRENT_TENANTS:
            assert store.count_experiences(tenant, ["active"]) == per_tenant[tenant] * kept * rounds
            listed = store.list_experiences(tenant, task_type=f"r{round_no}", limit=10_000)
            assert len(listed) == per_tenant[tenant] * kept
        # one outbox row per write of each experience: its insert, and its soft delete
        assert len(outbox(store)) == total + removed


# --- stats -------------------------------------------------------------------------------------


def test_stats_whole_store_and_per_tenant(store: SqlStore) -> None:
    store.add_trajectory(traj("t1", n_events=4))
    store.add_trajectory(traj("t2", n_events=2))
    store.add_experiences([exp("t1"), exp("t1", kind="improvement"), exp("t2")], None)
    store.delete_experiences("t2", [store.list_experiences("t2")[0].id])
    whole = store.stats()
    assert whole["tenants"] == 2 and whole["trajectories"] == 2 and whole["events"] == 6
    assert whole["experiences"]["total"] == 3
    assert whole["experiences"]["by_status"] == {
        "active": 2,
        "quarantined": 0,
        "archived": 0,
        "superseded": 0,
        "deleted": 1,
    }
    assert whole["review_jobs"]["pending"] == 2
    one = store.stats("t1")
    assert one["tenant_id"] == "t1" and "tenants" not in one
    assert one["experiences"]["by_kind"]["improvement"] == 1
    assert one["experiences"]["by_kind"]["rule"] == 1
    assert (one["events"], one["review_jobs"]["pending"]) == (4, 1)
    with pytest.raises(TenantRequiredError):
        store.stats("")


def test_get_experiences_is_one_primary_key_lookup(store: SqlStore) -> None:
    """The recall hot path: one statement per 500 ids, no embedding column, a key search.

    Speed itself is measured by ``hindsight bench`` (docs/benchmarks.md), not asserted here.
    """
    from sqlalchemy import event

    items = [exp(content=f"lesson {i}", tags=["a", "b"], tools=["x"]) for i in range(200)]
    store.add_experiences(items, vecs(200))
    ids = [e.id for e in items[::10]]
    statements: list[str] = []

    def capture(conn: Any, cursor: Any, sql: str, params: Any, context: Any, many: bool) -> None:
        statements.append(sql)

    engine = store._info.engine
    event.listen(engine, "before_cursor_execute", capture)
    try:
        found = store.get_experiences("t1", ids)
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert sorted(found) == sorted(ids)
    selects = [q for q in statements if q.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1, selects
    assert not re.search(r"experiences\.embedding\b", selects[0]), selects[0]
    if store.backend == "sqlite":
        with engine.connect() as conn:
            plan = conn.exec_driver_sql(
                f"EXPLAIN QUERY PLAN {selects[0]}", ("x",) * selects[0].count("?")
            ).fetchall()
        details = " ".join(str(row[-1]) for row in plan).upper()
        assert "SCAN" not in details.replace("USING INDEX", ""), details


def test_a_trajectory_id_of_another_tenant_is_refused_not_dropped(store: SqlStore) -> None:
    mine = traj("t1")
    assert store.add_trajectory(mine) is True
    assert store.add_trajectory(mine) is False  # same tenant, same run: idempotent
    theirs = mine.model_copy(update={"tenant_id": "t2", "task": "their own run"})
    with pytest.raises(UsageError, match="already in use") as err:
        store.add_trajectory(theirs)
    assert "t1" not in str(err.value)  # never says whose it is
    assert not store.has_trajectory("t2", mine.id)
    assert store.get_trajectory("t1", mine.id).task == mine.task
    assert [j.trajectory_id for j in store.list_review_jobs()] == [mine.id]
