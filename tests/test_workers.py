"""Review workers outside the agent's process and the job-store methods behind the jobs CLI
(``hindsight jobs``, ``hindsight jobs retry``, ``hindsight worker``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight import Memory, NotFoundError, TenantRequiredError, UsageError
from hindsight.review.workers import run_workers
from hindsight.store import JobState, SqlStore
from hindsight.testing import ManualClock, ScriptedReviewer
from tests.helpers import lesson, trajectory
from tests.store_fixtures import store_url  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(store_url: str, clock: ManualClock) -> Iterator[SqlStore]:  # noqa: F811
    with SqlStore(store_url, clock=clock) as s:
        yield s


def _fail_all(store: SqlStore, n: int, tenant: str = "t1") -> list[Any]:
    for i in range(n):
        store.add_trajectory(trajectory(tenant, f"task {i}"))
    jobs = []
    while (job := store.claim_review_job("w", 30)) is not None:
        store.fail_review_job(
            job.id, f"ReportParseError: bad reply {job.trajectory_id}", retry_after=None
        )
        jobs.append(store.get_review_job(job.id))
    return jobs


# -- store methods ------------------------------------------------------------------------------


def test_retry_review_jobs_puts_failed_jobs_back_runnable_now(
    store: SqlStore, clock: ManualClock
) -> None:
    failed = _fail_all(store, 3)
    store.add_trajectory(trajectory("t2", "other tenant"))
    [other] = [j for j in store.list_review_jobs() if j.tenant_id == "t2"]
    store.fail_review_job(other.id, "boom", retry_after=None)
    clock.advance(seconds=5)

    [one] = store.retry_review_jobs([failed[0].id.upper()])  # any UUID spelling
    assert (one.state, one.attempts, one.lease_owner) == (JobState.PENDING, 0, None)
    assert one.run_after == clock.now() and one.last_error == failed[0].last_error
    claimed = store.claim_review_job("w2", 30)
    assert claimed is not None and claimed.id == one.id and claimed.attempts == 0

    with pytest.raises(UsageError, match="is running, not failed"):
        store.retry_review_jobs([one.id])
    with pytest.raises(NotFoundError):
        store.retry_review_jobs([uuid.uuid4()])
    with pytest.raises(NotFoundError, match="in tenant 't1'"):
        store.retry_review_jobs([other.id], tenant_id="t1")  # another tenant's job
    with pytest.raises(UsageError, match="not both"):
        store.retry_review_jobs()
    with pytest.raises(UsageError, match="not both"):
        store.retry_review_jobs([failed[1].id], all_failed=True)
    with pytest.raises(TenantRequiredError):
        store.retry_review_jobs(all_failed=True, tenant_id=" ")
    assert store.get_review_job(failed[1].id).state is JobState.FAILED  # nothing half-done

    retried = store.retry_review_jobs(all_failed=True, tenant_id="t1")
    assert {j.id for j in retried} == {failed[1].id, failed[2].id}
    assert store.get_review_job(other.id).state is JobState.FAILED  # t2 untouched
    assert [j.id for j in store.retry_review_jobs(all_failed=True)] == [other.id]
    assert store.retry_review_jobs(all_failed=True) == []
    assert store.count_review_jobs(state="failed") == 0


def test_review_job_states_counts_only_the_given_runs(store: SqlStore, clock: ManualClock) -> None:
    trajs = [trajectory("t1", f"task {i}") for i in range(4)]
    for t in trajs:
        store.add_trajectory(t)
        clock.advance(seconds=1)  # the oldest job, claimed below, is one of mine
    store.add_trajectory(trajectory("t1", "not mine"))
    job = store.claim_review_job("w", 30)
    assert job is not None
    store.complete_review_job(job.id)
    mine = [t.id for t in trajs]
    counts = store.review_job_states("t1", mine)
    assert counts == {"pending": 3, "running": 0, "succeeded": 1, "failed": 0}
    assert store.review_job_states("t2", mine) == {
        "pending": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
    }
    assert sum(store.review_job_states("t1", mine * 300).values()) == 4  # chunked IN lists
    with pytest.raises(UsageError):
        store.review_job_states("t1", ["not-a-uuid"])


def test_release_review_jobs_frees_only_that_workers_jobs(store: SqlStore) -> None:
    for i in range(3):
        store.add_trajectory(trajectory("t1", f"task {i}"))
    a = store.claim_review_job("worker-a", 300)
    b = store.claim_review_job("worker-b", 300)
    assert a is not None and b is not None
    assert store.release_review_jobs("worker-a", "interrupted by shutdown") == 1
    released = store.get_review_job(a.id)
    assert (released.state, released.lease_owner, released.last_error) == (
        JobState.PENDING,
        None,
        "interrupted by shutdown",
    )
    assert store.get_review_job(b.id).state is JobState.RUNNING
    assert store.release_review_jobs("worker-a") == 0
    with pytest.raises(UsageError):
        store.release_review_jobs(" ")


# -- run_workers in this process ------------------------------------------------------------


def test_run_workers_once_reviews_everything_ready_then_returns(tmp_path: Path) -> None:
    def lessons(t: Any) -> list[Any]:
        if "bad" in t.task:
            raise ValueError("reviewer exploded")
        return [lesson(f"lesson of {t.task}", kind="improvement")]

    with Memory(
        data_dir=tmp_path,
        reviewer=ScriptedReviewer(lessons),
        background_review=False,
        review_max_attempts=1,
    ) as mem:
        for i in range(6):
            mem.store_episode(trajectory("acme", f"task {i}"))
        mem.store_episode(trajectory("acme", "bad task"))
        assert mem.aio.store.count_review_jobs(state="pending") == 7  # nothing ran in-process
        seen: list[tuple[str, str | None]] = []
        report = asyncio.run(
            run_workers(
                mem.aio,
                concurrency=3,
                once=True,
                on_job=lambda job, err: seen.append((job.trajectory_id, err)),
            )
        )
        assert (report.succeeded, report.failed, report.stopped_by_signal) == (6, 1, False)
        assert len(seen) == 7 and report.errors[0][1] == "ValueError: reviewer exploded"
        stats = mem.stats()["review_jobs"]
        assert stats == {"pending": 0, "running": 0, "succeeded": 6, "failed": 1}
        assert (
            len(
                [
                    e
                    for e in mem.list_experiences(tenant_id="acme", limit=100)
                    if e.kind.value == "improvement"
                ]
            )
            == 6
        )
        with pytest.raises(UsageError, match="concurrency"):
            asyncio.run(run_workers(mem.aio, concurrency=0))


def test_run_workers_stops_on_request_and_releases_the_job(tmp_path: Path) -> None:
    class Slow:
        name = "slow"

        async def review(self, t: Any) -> list[Any]:
            await asyncio.sleep(3600)
            return []

    with Memory(data_dir=tmp_path, reviewer=Slow(), background_review=False) as mem:
        mem.store_episode(trajectory("acme", "task"))

        async def main() -> Any:
            stop = asyncio.Event()
            asyncio.get_running_loop().call_later(0.5, stop.set)
            return await run_workers(mem.aio, once=False, stop=stop, poll_seconds=0.05)

        report = asyncio.run(main())
        assert report.succeeded == 0 and not report.stopped_by_signal
        [job] = mem.review_jobs()
        assert (job.state, job.last_error) == (JobState.PENDING, "interrupted by shutdown")


# -- worker processes -----------------------------------------------------------------------


def _cli(*args: str, env: dict[str, str], timeout: float = 240) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from hindsight.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


def _env(**extra: str) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(PYTHONPATH=str(REPO), PYTHONIOENCODING="utf-8", HINDSIGHT_GUARD="off")
    env.update(extra)
    return env


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_worker_processes_share_a_postgres_queue_without_any_lock(
    tmp_path: Path, database_url: str
) -> None:
    """Two `hindsight worker` processes at once on one PostgreSQL queue: neither takes the
    data-dir lock, and FOR UPDATE SKIP LOCKED gives every job to exactly one of them."""
    n = 24
    settings = {"database_url": database_url}
    with Memory(data_dir=tmp_path / "agent", background_review=False, **settings) as mem:
        for i in range(n):
            mem.store_episode(trajectory("acme", f"order {i} timed out", tool=f"tool_{i}"))
    env = _env(
        DATABASE_URL=database_url,
        HINDSIGHT_DATA_DIR=str(tmp_path / "worker-data"),
    )
    procs = [_cli("worker", "--once", "--concurrency", "2", "--json", env=env) for _ in range(2)]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    assert sum(r["succeeded"] for r in reports) == n  # no job reviewed twice
    assert all(r["failed_attempts"] == 0 for r in reports)
    assert not (tmp_path / "worker-data" / "hindsight.lock").exists()
    with SqlStore(database_url) as store:
        jobs = store.list_review_jobs(limit=1000)
        assert {j.state for j in jobs} == {JobState.SUCCEEDED}
        assert {j.attempts for j in jobs} == {0}  # no review failed
        assert store.count_experiences("acme") >= n


def test_worker_on_an_embedded_store_in_use_is_a_one_line_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Memory(data_dir=data, background_review=False) as mem:
        mem.store_episode(trajectory("acme", "task"))
        proc = _cli("worker", "--once", env=_env(HINDSIGHT_DATA_DIR=str(data)))
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 1
        assert err.startswith("error: ") and "hindsight serve" in err
        assert "Traceback" not in err
    # once the agent is gone, a worker process may own the store and run the job
    proc = _cli("worker", "--once", "--json", env=_env(HINDSIGHT_DATA_DIR=str(data)))
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    assert json.loads(out)["succeeded"] == 1


def test_worker_process_stops_on_sigterm_and_reports(tmp_path: Path) -> None:
    import signal

    data = tmp_path / "data"
    proc = _cli("worker", "--concurrency", "2", "--json", env=_env(HINDSIGHT_DATA_DIR=str(data)))
    assert proc.stderr is not None
    line = proc.stderr.readline()  # printed once the signal handlers are in place
    assert "2 review worker(s) running" in line, line
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc["stopped_by_signal"] is True and doc["succeeded"] == 0


def test_ingest_no_wait_leaves_jobs_pending_for_a_worker_process(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = tmp_path / "runs.jsonl"
    records = [
        {
            "messages": [
                {"role": "user", "content": f"Where is order {i}?"},
                {"role": "assistant", "content": f"Order {i} has shipped."},
            ],
            "reward": 1,
        }
        for i in range(5)
    ]
    log.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    env = _env(HINDSIGHT_DATA_DIR=str(data))

    def run(*args: str, code: int | None = 0) -> Any:
        proc = _cli(*args, env=env)
        out, err = proc.communicate(timeout=240)
        doc = json.loads(out)
        if code is None:  # ingest --no-wait: 3 while reviews are pending, else 0
            code = 3 if doc["reviews_pending"] else 0
        assert proc.returncode == code, err
        return doc

    doc = run("ingest", str(log), "--tenant", "acme", "--no-wait", "--json", code=None)
    assert doc["reviews_queued"] == 5
    assert doc["reviews_succeeded"] + doc["reviews_pending"] == 5 and doc["reviews_failed"] == 0
    listed = run("jobs", "--tenant", "acme", "--json")
    pending = listed["counts"]["pending"]
    assert pending == len([j for j in listed["jobs"] if j["state"] == "pending"])
    assert run("jobs", "--tenant", "other", "--json")["jobs"] == []
    report = run("worker", "--once", "--json")
    assert report["succeeded"] == pending
    assert report["jobs"] == {"pending": 0, "running": 0, "succeeded": 5, "failed": 0}
