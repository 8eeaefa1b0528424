"""Store side of lessons across runs (docs/lifecycle.md#dedup-on-write-hindsightwritebackdedup):
``experience_sources`` (the lessons a run taught, an index lookup) and ``lesson_key_hash`` (the
experience a lesson folds into), on every SQL backend, and migration 0003 filling both from existing
rows."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from alembic import command
from store_fixtures import store_url  # noqa: F401  (fixture)

from hindsight._errors import TenantRequiredError, UsageError
from hindsight.models import Event, Experience, Trajectory
from hindsight.store import SqlStore
from hindsight.store.migrate import alembic_config


@pytest.fixture
def store(store_url: str) -> Iterator[SqlStore]:  # noqa: F811
    with SqlStore(store_url) as s:
        yield s


def _run(store: SqlStore, tenant: str = "t1") -> str:
    traj = Trajectory(
        tenant_id=tenant, task="x", events=[Event(event_type="user_message", content="x")]
    )
    store.add_trajectory(traj, enqueue_review=False)
    return traj.id


def _exp(tenant: str, sources: list[str], **kw: Any) -> Experience:
    kw.setdefault("kind", "rule")
    kw.setdefault("content", f"lesson {uuid.uuid4().hex[:6]}")
    return Experience(tenant_id=tenant, source_trajectory_ids=sources, **kw)


def _vec(n: int) -> np.ndarray:
    return np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)


def test_links_follow_inserts_updates_and_deletes_within_the_tenant(store: SqlStore) -> None:
    r1, r2, r3 = _run(store), _run(store), _run(store)
    other = _run(store, "t2")
    a, b = _exp("t1", [r1, r2]), _exp("t1", [r2])
    x = _exp("t2", [other])
    store.add_experiences([a, b], _vec(2))
    store.add_experiences([x], _vec(1))
    assert store.experiences_of_runs("t1", [r1, r2, r3]) == {
        r1: [a.id],
        r2: sorted([a.id, b.id]),
    }
    assert store.experiences_of_runs("t1", [other]) == {}  # never across tenants
    assert store.experiences_of_runs("t2", [r1, other]) == {other: [x.id]}
    store.update_experience(a.model_copy(update={"source_trajectory_ids": [r2, r3]}))
    assert store.experiences_of_runs("t1", [r1, r2, r3]) == {
        r2: sorted([a.id, b.id]),
        r3: [a.id],
    }
    store.set_status("t1", [b.id], "archived")
    assert store.experiences_of_runs("t1", [r2]) == {r2: [a.id]}
    assert store.experiences_of_runs("t1", [r2], statuses=["archived"]) == {r2: [b.id]}
    store.forget("t1", experience_ids=[a.id])
    assert store.experiences_of_runs("t1", [r2, r3], statuses=["active", "archived"]) == {
        r2: [b.id]
    }
    with pytest.raises(TenantRequiredError):
        store.experiences_of_runs("", [r1])
    with pytest.raises(UsageError):
        store.experiences_of_runs("t1", ["not-a-run"])


@pytest.mark.parametrize("in_place", [True, False], ids=["edited-in-place", "copied"])
def test_an_outcome_that_changes_a_lessons_runs_moves_its_links(
    store: SqlStore, in_place: bool
) -> None:
    """``apply_outcome`` leaves the links alone only when the credited experience's runs did
    not change, however its ``credit`` callable changed them (a callable may edit the list
    it was given in place)."""
    from datetime import UTC, datetime

    r1, r2, run = _run(store), _run(store), _run(store)
    a = _exp("t1", [r1])
    store.add_experiences([a], _vec(1))
    store.record_recall("t1", [a.id], datetime(2026, 1, 1, tzinfo=UTC), trajectory_id=run)

    def credit(exp: Experience, success: bool, now: Any) -> Experience:
        if in_place:
            exp.source_trajectory_ids.append(r2)
            return exp.model_copy(update={"updated_at": now})
        return exp.model_copy(update={"source_trajectory_ids": [r1, r2], "updated_at": now})

    assert store.apply_outcome("t1", run, True, credit=credit)
    assert store.get_experience("t1", a.id).source_trajectory_ids == [r1, r2]
    assert store.experiences_of_runs("t1", [r1, r2]) == {r1: [a.id], r2: [a.id]}


def test_active_by_lesson_key_is_scoped_and_oldest_active(store: SqlStore) -> None:
    run = _run(store)
    key = "tool_error:book:amount does not add up"
    first = _exp("t1", [run], metadata={"lesson_key": key})
    other_ns = _exp("t1", [run], namespace="private", metadata={"lesson_key": key})
    other_key = _exp("t1", [run], metadata={"lesson_key": key + "!"})
    store.add_experiences([first, other_ns, other_key], _vec(3))
    assert store.active_by_lesson_key("t1", "default", key).id == first.id  # type: ignore[union-attr]
    assert store.active_by_lesson_key("t1", "private", key).id == other_ns.id  # type: ignore[union-attr]
    assert store.active_by_lesson_key("t2", "default", key) is None
    assert store.active_by_lesson_key("t1", "default", "") is None
    store.set_status("t1", [first.id], "quarantined")
    assert store.active_by_lesson_key("t1", "default", key) is None
    # The key follows metadata edits.
    store.update_experience(other_key.model_copy(update={"metadata": {"lesson_key": key}}))
    assert store.active_by_lesson_key("t1", "default", key).id == other_key.id  # type: ignore[union-attr]


def test_migration_0003_fills_links_and_keys_from_existing_rows(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0002_lifecycle")
        now = "2026-01-01 00:00:00.000000"
        tid, eid = str(uuid.uuid4()), str(uuid.uuid4())
        conn.execute(
            sa.text(
                "INSERT INTO trajectories (id, tenant_id, namespace, task, tags, outcome, "
                "source, trust, started_at, metadata, event_count, stored_at) VALUES "
                "(:id, 't1', 'default', 'x', '[]', 'success', 'user', 1.0, :now, '{}', 0, :now)"
            ),
            {"id": tid, "now": now},
        )
        conn.execute(
            sa.text(
                "INSERT INTO experiences (id, tenant_id, namespace, kind, content, tools, tags, "
                "confidence, importance, trust, provenance, source_trajectory_ids, status, "
                "version, created_at, updated_at, recall_count, helped_count, misled_count, "
                "support_count, reviewer, metadata) VALUES (:id, 't1', 'default', 'rule', "
                "'check totals', '[]', '[]', 0.6, 0.5, 1.0, 'user', :src, 'active', 1, :now, "
                ":now, 0, 0, 0, 1, 'manual', :meta)"
            ),
            {
                "id": eid,
                "now": now,
                "src": json.dumps([tid]),
                "meta": json.dumps({"lesson_key": "k1"}),
            },
        )
    engine.dispose()
    with SqlStore(url) as store:
        assert store.experiences_of_runs("t1", [tid]) == {tid: [eid]}
        found = store.active_by_lesson_key("t1", "default", "k1")
        assert found is not None and found.id == eid
