"""``hindsight backup`` / ``hindsight restore`` for real on SQLite and PostgreSQL: store
lessons and a run, back up, change or wipe the store, restore, and find them again through
recall, with one vector per live experience (rebuilt from SQL for the Edge shard; in the
restored rows with pgvector)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from hindsight import Memory
from hindsight.ops.backup import rebuild_index
from hindsight.ports import VectorPoint
from hindsight.store import SqlStore, vector_payload
from hindsight.testing import InMemoryVectorIndex
from tests.cli_helpers import assert_one_line_error, cli_env, cli_json, run_cli

LESSONS = {
    "acme": [
        "when order_query times out at peak hours, retry once and then fall back",
        "check the refund window before promising a refund",
    ],
    "globex": ["when the payment API returns 429, wait for the Retry-After header"],
}


def _store_env(database_url: str) -> dict[str, str]:
    return {} if database_url.startswith("sqlite") else {"DATABASE_URL": database_url}


def _open(data_dir: Path, database_url: str) -> Memory:
    extra: dict[str, Any] = {}
    if not database_url.startswith("sqlite"):
        extra["database_url"] = database_url
    return Memory(data_dir=data_dir, **extra)


def _fill(data_dir: Path, database_url: str) -> tuple[str, dict[str, int]]:
    """Store the lessons, one soft-deleted lesson and one reviewed run.

    Returns:
        The run's id and ``{"experiences", "live", "trajectories"}`` counts of the store."""
    with _open(data_dir, database_url) as mem:
        for tenant, lessons in LESSONS.items():
            for text in lessons:
                mem.add_experience(text, tenant_id=tenant, task_type="support")
        gone = mem.add_experience("a lesson deleted before the backup", tenant_id="acme")
        mem.delete_experience(gone.id, tenant_id="acme")
        with mem.record("Where is order 8812?", tenant_id="acme", task_type="support") as run:
            run.user_message("Where is order 8812?")
            run.set_outcome("success")
        assert mem.flush(), "the review of the run did not finish"
        return str(run.trajectory_id), _counts(mem)


def _counts(mem: Memory) -> dict[str, int]:
    stats = mem.stats()
    total = stats["experiences"]["total"]
    live = total - stats["experiences"]["by_status"]["deleted"]
    assert live >= 4  # three lessons and at least one from the review of the run
    return {"experiences": total, "live": live, "trajectories": stats["trajectories"]}


def _check_restored(
    data_dir: Path, database_url: str, trajectory_id: str, expected: dict[str, int]
) -> None:
    with _open(data_dir, database_url) as mem:
        for tenant, lessons in LESSONS.items():
            for text in lessons:
                hits = mem.recall(text, tenant_id=tenant, top_k=5).hits
                assert [h.experience.content for h in hits][:1] == [text], (tenant, text)
        run = mem.get_trajectory(trajectory_id, tenant_id="acme")
        assert (run.task, [e.content for e in run.events][:1]) == (
            "Where is order 8812?",
            ["Where is order 8812?"],
        )
        assert _counts(mem) == expected
        stats = mem.stats()
        assert stats["vectors"] == expected["live"]  # SQL count == vector count
        assert stats["vectors_pending"] == 0


def test_backup_wipe_restore_recall(database_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    tid, want = _fill(data, database_url)
    env = _store_env(database_url)
    made = cli_json("backup", str(tmp_path / "hindsight.backup"), data_dir=data, **env)
    kind = "sqlite" if database_url.startswith("sqlite") else "postgresql"
    assert made["kind"] == kind
    assert (made["experiences"], made["trajectories"]) == (want["experiences"], 1)
    assert made["bytes"] == (tmp_path / "hindsight.backup").stat().st_size > 0

    # Lose everything: forget both tenants and throw the vector shard away.
    for tenant in LESSONS:
        done = run_cli("forget", "--all", "--tenant", tenant, "--json", data_dir=data, **env)
        assert done.returncode == 0, done.stderr
    shutil.rmtree(data / "vectors", ignore_errors=True)
    with _open(data, database_url) as mem:
        assert mem.stats()["experiences"]["total"] == 0
        assert not mem.recall(LESSONS["acme"][0], tenant_id="acme").hits

    report = cli_json("restore", str(tmp_path / "hindsight.backup"), data_dir=data, **env)
    assert report["experiences"] == want["experiences"]
    assert (report["trajectories"], report["points"]) == (1, want["live"])
    _check_restored(data, database_url, tid, want)


def test_restore_refuses_a_store_with_data_unless_forced(database_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    tid, want = _fill(data, database_url)
    env = _store_env(database_url)
    backup = tmp_path / "b.backup"
    cli_json("backup", str(backup), data_dir=data, **env)
    with _open(data, database_url) as mem:  # written after the backup: replaced by a restore
        later = mem.add_experience("a lesson written after the backup", tenant_id="acme")

    proc = run_cli("restore", str(backup), data_dir=data, **env)
    line = assert_one_line_error(proc, 2)
    n = want["experiences"] + 1
    assert f"holds {n} experience(s) and 1 trajectory(ies)" in line and "--force" in line
    with _open(data, database_url) as mem:  # refused: nothing changed
        assert mem.get_experience(later.id, tenant_id="acme").content.endswith("backup")

    report = cli_json("restore", str(backup), "--force", data_dir=data, **env)
    assert report["replaced"] == {"experiences": n, "trajectories": 1}
    _check_restored(data, database_url, tid, want)
    with _open(data, database_url) as mem:
        assert all("after the backup" not in h.experience.content for h in mem.recall(
            "a lesson written after the backup", tenant_id="acme").hits)  # fmt: skip


def test_sqlite_backup_while_the_store_is_open(tmp_path: Path) -> None:
    """The online backup API needs no lock: another process may hold the store open."""
    data = tmp_path / "data"
    _, want = _fill(data, "sqlite")
    with _open(data, "sqlite") as mem:
        mem.add_experience("written while the store is open", tenant_id="acme")
        made = cli_json("backup", str(tmp_path / "live.db"), data_dir=data)
        assert made["experiences"] == want["experiences"] + 1
        proc = run_cli("restore", str(tmp_path / "live.db"), "--force", data_dir=data)
        assert "in use by another live process" in assert_one_line_error(proc)  # one process a dir
    with sqlite3.connect(tmp_path / "live.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one file


def test_restore_into_a_new_data_dir(tmp_path: Path) -> None:
    """Moving to another machine: the backup file alone rebuilds SQL and vectors."""
    tid, want = _fill(tmp_path / "old", "sqlite")
    cli_json("backup", str(tmp_path / "move.db"), data_dir=tmp_path / "old")
    report = cli_json("restore", str(tmp_path / "move.db"), data_dir=tmp_path / "new")
    assert report["replaced"] == {"experiences": 0, "trajectories": 0}
    _check_restored(tmp_path / "new", "sqlite", tid, want)


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _, want = _fill(data, "sqlite")
    cli_json("backup", str(tmp_path / "b.db"), data_dir=data)
    (tmp_path / "notes.txt").write_text("not a backup")
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE t (x)").connection.close()
    cases = [
        (("backup", str(tmp_path / "b.db")), "already exists"),
        (("backup", str(tmp_path / "missing" / "b.db")), "does not exist"),
        (("backup", str(tmp_path)), "folder"),
        (("restore", str(tmp_path / "nope.db")), "no such file"),
        (("restore", str(tmp_path / "notes.txt")), "not a hindsight backup"),
        (("restore", str(tmp_path / "other.db"), "--force"), "not a hindsight store"),
    ]
    for args, words in cases:
        line = assert_one_line_error(run_cli(*args, data_dir=data), 2)
        assert words in line, (args, line)
    forced = cli_json("backup", str(tmp_path / "b.db"), "--force", data_dir=data)
    assert forced["experiences"] == want["experiences"]


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_kind_mismatch_and_missing_pg_dump(database_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    _fill(data, database_url)
    env = _store_env(database_url)
    cli_json("backup", str(tmp_path / "pg.dump"), data_dir=data, **env)
    _fill(tmp_path / "lite", "sqlite")
    cli_json("backup", str(tmp_path / "lite.db"), data_dir=tmp_path / "lite")

    line = assert_one_line_error(
        run_cli("restore", str(tmp_path / "lite.db"), data_dir=data, **env)
    )
    assert "sqlite backup but the store is postgresql" in line
    line = assert_one_line_error(
        run_cli("restore", str(tmp_path / "pg.dump"), data_dir=tmp_path / "x")
    )
    assert "postgresql backup but the store is sqlite" in line

    # No pg_dump on PATH: a one-line error naming it, and no file left behind.
    no_pg = subprocess.run(
        [sys.executable, "-m", "hindsight", "backup", str(tmp_path / "none.dump")],
        env=cli_env(data, DATABASE_URL=database_url, PATH=str(tmp_path / "empty-bin")),
        capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert "pg_dump not found on PATH" in assert_one_line_error(no_pg)
    assert not list(tmp_path.glob("*none.dump*"))


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_an_owner_who_is_not_a_superuser_backs_up_and_restores(
    database_url: str, tmp_path: Path
) -> None:
    """As in most deployments, hindsight's role owns its database but not the pgvector
    extension (a superuser created it): the restore leaves the extension alone (only its owner
    may drop it) and recreates everything else."""
    admin = sa.engine.make_url(database_url)
    role, name = f"hs_owner_{uuid.uuid4().hex[:8]}", f"hs_owned_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f'CREATE ROLE "{role}" LOGIN'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}" OWNER "{role}"'))
    ops = sa.create_engine(admin.set(database=name), isolation_level="AUTOCOMMIT")
    with ops.connect() as conn:  # the DBA's part
        conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
    ops.dispose()
    owned = admin.set(database=name, username=role).render_as_string(hide_password=False)
    try:
        data = tmp_path / "data"
        tid, want = _fill(data, owned)
        env = _store_env(owned)
        cli_json("backup", str(tmp_path / "owned.dump"), data_dir=data, **env)
        done = run_cli("forget", "--all", "--tenant", "acme", "--json", data_dir=data, **env)
        assert done.returncode == 0, done.stderr
        report = cli_json("restore", str(tmp_path / "owned.dump"), "--force", data_dir=data, **env)
        assert (report["experiences"], report["points"]) == (want["experiences"], want["live"])
        _check_restored(data, owned, tid, want)
    finally:
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(sa.text(f'DROP ROLE IF EXISTS "{role}"'))
        engine.dispose()


def test_rebuild_index_removes_orphans_and_skips_deleted(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _fill(data, "sqlite")
    index = InMemoryVectorIndex(384)
    with SqlStore(f"sqlite:///{data / 'hindsight.db'}") as store:
        rows = store.all_experiences()
        live = {e.id for e in rows if e.status.value != "deleted"}
        deleted = next(e for e in rows if e.status.value == "deleted")
        stale = [  # a point of no experience, and one of the deleted experience
            VectorPoint(pid, [1.0] + [0.0] * 383, vector_payload(rows[0]))
            for pid in ("00000000-0000-4000-8000-000000000001", deleted.id)
        ]
        index.upsert(stale)
        assert rebuild_index(store, index) == len(live)
    assert index.all_ids() == live
