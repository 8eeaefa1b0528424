"""Scale-out on PostgreSQL without a shared vector server (issue 22, "Done when").

Two ``hindsight serve`` and two ``hindsight worker`` processes share one PostgreSQL database,
each with its own vector index (an embedded Qdrant Edge shard in its own data dir, or
``VECTOR_DB_URL=:memory:``). The servers leave every review to the workers
(``--no-workers-in-process``). Then:

* a lesson written through one server is recalled through it at once and through the other
  within the replication lag, and both workers' indexes hold it (their registry rows: position
  at the log head, as many points as SQL);
* the lessons a worker wrote when it reviewed a run posted to a server are recalled through both
  servers;
* a server and a worker killed with SIGKILL miss a write while they are down, and hold it after
  their restart (an Edge shard catches up from its checkpoint, ``:memory:`` is rebuilt);
* a server and a worker started with an empty index (its folder removed) rebuild it from SQL;
* the checks of docs/deploy.md ("Checking a deployment"): ``/ready`` counts the running
  replicas (none failing or divergent), ``hindsight stats`` lists each live process's index at
  lag 0, ``hindsight doctor``'s ``vector_replicas`` finding is ok.

Before issue 22 each process's sync emptied the shared outbox for the others: a lesson written
through one server was recalled through another 0 of 10 times.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from hindsight.store import SqlStore
from tests.cli_helpers import REPO, cli_env, cli_json, run_cli
from tests.server.conftest import Served, start_server

KEY = "hs_scale-test-key-for-tenant-acme"
LAG = 0.2
"""HINDSIGHT_VECTOR_FOLLOW_SECONDS of every process here."""
DEADLINE = 60.0
"""Upper bound on waiting for a replica to follow (far above the lag: a loaded CI machine)."""

pytestmark = pytest.mark.slow


def _env(database_url: str, vectors: str | None) -> dict[str, str]:
    env = {
        "DATABASE_URL": database_url,
        "HINDSIGHT_API_KEYS": f"acme:{KEY}",
        "HINDSIGHT_VECTOR_FOLLOW_SECONDS": str(LAG),
        "HINDSIGHT_GUARD": "off",
    }
    if vectors is not None:
        env["VECTOR_DB_URL"] = vectors
    return env


@dataclass
class Worker:
    data_dir: Path
    env: dict[str, str]
    proc: subprocess.Popen[str] | None = None

    def start(self) -> Worker:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hindsight", "worker", "--concurrency", "1"],
            cwd=REPO,
            env=cli_env(self.data_dir, **self.env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # printed once the worker runs
            if "review worker(s) running" in line:
                return self
        raise AssertionError(f"worker did not start: {self.proc.wait()}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(60)


def _start_server(data_dir: Path, env: dict[str, str]) -> Served:
    return start_server(
        data_dir, env=env, first_tenant=None, extra_args=("--no-workers-in-process",)
    )


def _http(served: Served) -> httpx.Client:
    return httpx.Client(
        base_url=served.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60.0
    )


def _recalls(served: Served, text: str) -> bool:
    with _http(served) as http:
        r = http.post("/v1/recall", json={"query": text, "top_k": 10})
        assert r.status_code == 200, r.text
        return text in [h["experience"]["content"] for h in r.json()["hits"]]


def _eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(LAG)
    raise AssertionError(f"not within {DEADLINE} s: {what}")


def _worker_caught_up(database_url: str, worker: Worker) -> bool:
    """The worker's registry row: its own pid, at the log head, as many points as SQL."""
    assert worker.proc is not None
    with SqlStore(database_url) as store:
        head = store.vector_log_state().head
        expected = store.count_vector_rows()
        rows = [r for r in store.list_replicas() if r.pid == worker.proc.pid]
    return bool(rows) and all(r.position >= head and r.points == expected for r in rows)


@pytest.fixture
def cleanup() -> Iterator[list[Any]]:
    started: list[Any] = []
    yield started
    for thing in started:
        if isinstance(thing, Worker):
            thing.kill()
        else:
            thing.stop(timeout=10)


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("vectors", [None, ":memory:"], ids=["edge", "memory"])
def test_two_servers_and_two_workers_each_with_its_own_index(
    tmp_path: Path, database_url: str, vectors: str | None, cleanup: list[Any]
) -> None:
    env = _env(database_url, vectors)
    s1 = _start_server(tmp_path / "s1", env)
    cleanup.append(s1)
    s2 = _start_server(tmp_path / "s2", env)
    cleanup.append(s2)
    workers = [Worker(tmp_path / f"w{i}", env).start() for i in (1, 2)]
    cleanup.extend(workers)

    # 1. written through one server: recalled there at once, through the other within the lag
    first = "when order_query times out at peak hours, read the order from the cache"
    with _http(s1) as http:
        assert http.post("/v1/experiences", json={"content": first}).status_code == 201
    assert _recalls(s1, first)  # read-your-writes
    _eventually(lambda: _recalls(s2, first), "s2 recalls a lesson written through s1")
    for worker in workers:
        _eventually(lambda w=worker: _worker_caught_up(database_url, w), "a worker follows")

    # 2. reviewed by a worker: the run's lessons are recalled through both servers
    # a failed run whose tool call failed twice: the heuristic reviewer learns a general lesson
    # (tool reliability), not a restatement of the run
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "refund_order", "arguments": '{"order_id": "A-17"}'},
    }
    run = {
        "messages": [
            {"role": "user", "content": "Refund order A-17, the customer was charged twice."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Error: timed out after 30 s"},
            {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "call_2"}]},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: timed out after 30 s"},
            {"role": "assistant", "content": "The refund_order tool failed: timeout after 30 s."},
        ],
        "reward": 0,
    }
    with _http(s2) as http:
        r = http.post("/v1/episodes", json={"trajectory": run})
        assert r.status_code == 201, r.text
        tid = r.json()["episodes"][0]["trajectory_id"]

        def reviewed() -> bool:
            jobs = http.get("/v1/jobs").json()
            return any(j["trajectory_id"] == tid and j["state"] == "succeeded" for j in jobs)

        _eventually(reviewed, "a worker reviews the run")
        lessons = [
            e["content"]
            for e in http.get("/v1/experiences", params={"limit": 1000}).json()["items"]
            if tid in e["source_trajectory_ids"] and e["kind"] != "episode"
        ]
    assert lessons
    for text in lessons:
        for served in (s1, s2):
            _eventually(lambda s=served, t=text: _recalls(s, t), "a reviewed lesson follows")

    # 3. a server and a worker killed while a lesson is written hold it after their restart
    s2.proc.send_signal(signal.SIGKILL)
    s2.proc.wait(60)
    workers[1].kill()
    second = "escalate refunds over 500 EUR to a human before promising anything"
    with _http(s1) as http:
        assert http.post("/v1/experiences", json={"content": second}).status_code == 201
    s2 = _start_server(s2.data_dir, env)
    cleanup.append(s2)
    for text in (first, second):
        _eventually(lambda t=text: _recalls(s2, t), "the restarted server recalls everything")
    workers[1].start()
    _eventually(lambda: _worker_caught_up(database_url, workers[1]), "the worker caught up")

    # 4. a server and a worker started with an empty index rebuild it from SQL
    s1.stop()
    shutil.rmtree(s1.data_dir / "vectors", ignore_errors=True)
    s1 = _start_server(s1.data_dir, env)
    cleanup.append(s1)
    for text in (first, second, *lessons):
        assert _recalls(s1, text)  # rebuilt at open, before it answered /health
    workers[0].kill()
    shutil.rmtree(workers[0].data_dir / "vectors", ignore_errors=True)
    workers[0].start()
    _eventually(lambda: _worker_caught_up(database_url, workers[0]), "the worker rebuilt")
    # 5. checking the deployment (docs/deploy.md): /ready, `hindsight stats`, `hindsight doctor`
    live = [s1.proc.pid, s2.proc.pid, *(w.proc.pid for w in workers if w.proc is not None)]

    def deployment_clean() -> bool:
        with _http(s1) as http:
            ready = http.get("/ready")
        assert ready.status_code == 200, ready.text
        summary = ready.json()["replicas"]
        assert (summary["failing"], summary["divergent"]) == (0, 0), summary
        stats = cli_json("stats", data_dir=tmp_path / "ops", **env)
        rows = {r["pid"]: r for r in stats["replicas"]}
        return summary["running"] >= len(live) and all(
            pid in rows and rows[pid]["running"] and rows[pid]["lag"] == 0 for pid in live
        )

    _eventually(deployment_clean, "/ready and stats show every process caught up")
    doctor = run_cli("doctor", "--json", data_dir=tmp_path / "ops", **env)
    [finding] = [f for f in json.loads(doctor.stdout)["findings"] if f["name"] == "vector_replicas"]
    assert finding["ok"], finding["message"]
    assert "running replica(s) of the vector log" in finding["message"]
    log = os.linesep.join(s.output() for s in (s1, s2))
    assert "Traceback" not in log, log
