"""Crash consistency (docs/concepts.md#storage): SIGKILL an ingesting process at random
points, then ingest the same file again.

A child process opens the embedded store with defaults (hash embedder, heuristic reviewer,
Qdrant Edge; SQLite in the data dir, or PostgreSQL via DATABASE_URL), stores the trajectories of
a round's file (a slice of the real tau-bench runs) one by one with ``store_episode`` (reviews
run in its background worker) and prints ``ack <id>`` after each ``store_episode`` returns. The
parent SIGKILLs it at seeded random points: during start-up/open, or after a random number of
acknowledged trajectories plus a random few milliseconds. After every kill:

* the real ``hindsight ingest`` of the same file runs again: it exits 0 with every review of
  the file's runs done (``reviews_pending`` 0, none failed): the reviews the killed process left
  pending, or running under its dead worker, are finished by the re-run, not left for some
  later process;
* SQL and vectors agree: the non-deleted experience ids in SQL are exactly the vector points
  (with pgvector they are the same rows: the counts agree);
* every acknowledged trajectory is stored, with all its events, and was reviewed.

Each round ingests into its own tenant, so every kill lands in fresh work.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hindsight import ExperienceStatus, Memory
from hindsight.ports import WritableVectorIndex
from tests.cli_helpers import cli_env, run_cli

ROUNDS = 10
PER_ROUND = 20
"""Trajectories a child ingests per round (a slice of the 200, different each round)."""
SEED = 20_250_602
LIVE = tuple(s.value for s in ExperienceStatus if s is not ExperienceStatus.DELETED)
"""Every status but deleted has a vector point (deleted rows are kept for audit only)."""

CHILD = (
    f"PER_ROUND = {PER_ROUND}\n"
    + r"""
import sys
from hindsight import Memory
from hindsight.capture.ingest import iter_trajectories

data_dir, path, tenant = sys.argv[1:4]
mem = Memory(data_dir=data_dir)
print("ready", flush=True)
for traj in iter_trajectories(path, format="tau-bench", tenant_id=tenant):
    mem.store_episode(traj)
    print("ack", traj.id, len(traj.events), flush=True)
mem.flush(timeout=120)
print("done", flush=True)
mem.close()
"""
)


class Child:
    """The ingesting subprocess; a reader thread collects its acknowledged trajectories."""

    def __init__(
        self, script: Path, data_dir: Path, runs: Path, tenant: str, env: dict[str, str]
    ) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(data_dir), str(runs), tenant],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(None, **env),
            stdin=subprocess.DEVNULL,
        )
        self.acked: dict[str, int] = {}
        self.ready = threading.Event()
        self.done = False
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.endswith("\n"):
                break  # a line cut by the kill was never acknowledged
            parts = line.split()
            with self._cond:
                if parts == ["ready"]:
                    self.ready.set()
                elif len(parts) == 3 and parts[0] == "ack":
                    self.acked[parts[1]] = int(parts[2])
                elif parts == ["done"]:
                    self.done = True
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_acks(self, n: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.acked) < n and not self.done and self.proc.poll() is None:
                left = deadline - time.monotonic()
                assert left > 0, "child made no progress"
                self._cond.wait(min(left, 0.5))

    def kill(self) -> str:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)
        self._reader.join(timeout=30)
        assert self.proc.stderr is not None
        return self.proc.stderr.read()


def _ingest_again(data: Path, env: dict[str, str], runs: Path, tenant: str) -> dict[str, int]:
    """The real ``hindsight ingest`` of the round's file, after the kill: it must finish."""
    proc = run_cli(
        "ingest",
        str(runs),
        "--format",
        "tau-bench",
        "--tenant",
        tenant,
        "--json",
        data_dir=data,
        timeout=600,
        **env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    doc: dict[str, int] = json.loads(proc.stdout)
    assert doc["trajectories_added"] + doc["trajectories_skipped"] == PER_ROUND, doc
    assert (doc["reviews_pending"], doc["reviews_failed"]) == (0, 0), doc
    assert doc["reviews_succeeded"] == PER_ROUND, doc  # every run of the file is reviewed
    return doc


def _check_store(
    data: Path, env: dict[str, str], tenants: list[str], acked: dict[str, tuple[str, int]]
) -> None:
    url = env.get("DATABASE_URL")
    # background_review=False: nothing writes while the counts are compared
    with Memory(data_dir=data, database_url=url, background_review=False) as mem:
        store, index = mem.aio.store, mem.aio.index
        sql_ids = {
            e.id
            for tenant in tenants
            for e in store.list_experiences(tenant, statuses=LIVE, limit=10_000)
        }
        assert store.count_experiences(None, LIVE, all_tenants=True) == len(sql_ids)
        assert index.count(None) == len(sql_ids)
        if isinstance(index, WritableVectorIndex):  # pgvector: the points are the rows
            assert index.all_ids() == sql_ids
        for tid, (tenant, n_events) in acked.items():
            assert len(mem.get_trajectory(tid, tenant_id=tenant).events) == n_events
        jobs = mem.stats()["review_jobs"]
        assert jobs["pending"] == 0 and jobs["running"] == 0 and jobs["failed"] == 0, jobs
        # every acknowledged run has its review job, finished (whatever lessons it gave)
        by_tenant: dict[str, list[str]] = {}
        for tid, (tenant, _n) in acked.items():
            by_tenant.setdefault(tenant, []).append(tid)
        for tenant, tids in by_tenant.items():
            states = store.review_job_states(tenant, tids)
            assert states["succeeded"] == len(tids), (tenant, states)


@pytest.mark.slow
@pytest.mark.timeout(900)  # 10 kills + 10 CLI ingests: 100-190 s on a loaded 2-core machine
def test_sigkill_during_ingest_then_ingest_again_finishes_every_review(
    tmp_path: Path, tau_bench_path: Path, database_url: str
) -> None:
    env = {} if database_url.startswith("sqlite") else {"DATABASE_URL": database_url}
    data = tmp_path / "data"
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    records = json.loads(tau_bench_path.read_text(encoding="utf-8"))
    rng = random.Random(SEED)
    acked: dict[str, tuple[str, int]] = {}
    mid_ingest = 0
    for round_ in range(ROUNDS):
        tenant = f"crash{round_}"
        start = (round_ * PER_ROUND) % len(records)
        runs = tmp_path / f"round{round_}.json"
        runs.write_text(json.dumps(records[start : start + PER_ROUND]), encoding="utf-8")
        child = Child(script, data, runs, tenant, env)
        if round_ % 5 == 4:  # kill during start-up, migrations or open
            time.sleep(rng.uniform(0.05, 0.8))
            where = "start-up"
        else:
            target = rng.randint(1, PER_ROUND // 2)
            child.wait_acks(target)
            time.sleep(rng.uniform(0.0, 0.02))
            where = f"after {target} acks"
        stderr = child.kill()
        assert "Traceback" not in stderr, stderr
        mid_ingest += int(not child.done)  # killed before its reviews were all done
        acked.update({tid: (tenant, n) for tid, n in child.acked.items()})
        t0 = time.perf_counter()
        doc = _ingest_again(data, env, runs, tenant)
        _check_store(data, env, [f"crash{r}" for r in range(round_ + 1)], acked)
        print(
            f"round {round_}: killed {where}; {len(child.acked)} acknowledged; re-run found "
            f"{doc['reviews_found_pending']} review(s) pending; check "
            f"{time.perf_counter() - t0:.1f} s"
        )
    assert mid_ingest == ROUNDS, "every kill must land before the ingest finished"
    assert len(acked) > 2 * PER_ROUND
