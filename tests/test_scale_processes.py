"""Scale-out on PostgreSQL with pgvector: two servers and two workers on one database.

Two ``hindsight serve`` and two ``hindsight worker`` processes share one PostgreSQL database,
whose experience rows hold the vectors (pgvector; docs/deploy.md#engines). The servers leave
every review to the workers (``--no-workers-in-process``). Then, with no waiting anywhere:

* a lesson written through one server is recalled through the other as soon as the write
  returns (it is one row, vector included, committed before the answer);
* the lessons a worker wrote when it reviewed a run posted to a server are recalled through
  both servers as soon as the job is reported done;
* a server and a worker killed with SIGKILL miss nothing: a lesson written while they are down
  is recalled through the restarted server at once;
* the checks of docs/deploy.md ("Checking a deployment"): ``/ready`` of each server names
  pgvector, ``hindsight doctor`` with the deployment's settings is clean.
"""

from __future__ import annotations

import json
import os
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

from tests.cli_helpers import REPO, cli_env, cli_json, run_cli
from tests.server.conftest import Served, start_server

KEY = "hs_scale-test-key-for-tenant-acme"
DEADLINE = 60.0
"""Upper bound on waiting for a review job to finish (a loaded CI machine)."""

pytestmark = pytest.mark.slow


def _env(database_url: str) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "HINDSIGHT_API_KEYS": f"acme:{KEY}",
        "HINDSIGHT_GUARD": "off",
    }


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
    """The lesson ``text`` is recalled by its own words, or left out only because a lesson
    about the same subject is (docs/concepts.md#recall: one lesson per subject)."""
    with _http(served) as http:
        r = http.post("/v1/recall", json={"query": text, "top_k": 10, "explain": True})
        assert r.status_code == 200, r.text
        body = r.json()
        if text in [h["experience"]["content"] for h in body["hits"]]:
            return True
        listed = http.get("/v1/experiences", params={"limit": 1000}).json()["items"]
        ids = [e["id"] for e in listed if e["content"] == text]
        return any(
            e["experience_id"] in ids and e["reason"].startswith("about the same subject as")
            for e in body.get("excluded", [])
        )


def _eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {DEADLINE} s: {what}")


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
def test_two_servers_and_two_workers_share_one_postgresql_with_pgvector(
    tmp_path: Path, database_url: str, cleanup: list[Any]
) -> None:
    env = _env(database_url)
    s1 = _start_server(tmp_path / "s1", env)
    cleanup.append(s1)
    s2 = _start_server(tmp_path / "s2", env)
    cleanup.append(s2)
    workers = [Worker(tmp_path / f"w{i}", env).start() for i in (1, 2)]
    cleanup.extend(workers)

    # 1. written through one server: recalled through the other as soon as the write returns
    first = "when order_query times out at peak hours, read the order from the cache"
    with _http(s1) as http:
        assert http.post("/v1/experiences", json={"content": first}).status_code == 201
    assert _recalls(s2, first) and _recalls(s1, first)

    # 2. reviewed by a worker: the run's lessons are recalled through both servers at once
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
        assert _recalls(s1, text) and _recalls(s2, text)

    # 3. a server and a worker killed while a lesson is written: nothing to catch up after
    s2.proc.send_signal(signal.SIGKILL)
    s2.proc.wait(60)
    workers[1].kill()
    second = "escalate refunds over 500 EUR to a human before promising anything"
    with _http(s1) as http:
        assert http.post("/v1/experiences", json={"content": second}).status_code == 201
    s2 = _start_server(s2.data_dir, env)
    cleanup.append(s2)
    for text in (first, second, *lessons):
        assert _recalls(s2, text)
    workers[1].start()

    # 4. checking the deployment (docs/deploy.md): /ready and `hindsight doctor` on either
    for served in (s1, s2):
        with _http(served) as http:
            ready = http.get("/ready")
        assert ready.status_code == 200, ready.text
        assert (ready.json()["vector_index"], ready.json()["vectors_pending"]) == ("pgvector", 0)
        doctor = run_cli("doctor", "--json", data_dir=served.data_dir, **env)
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        findings = json.loads(doctor.stdout)["findings"]
        assert all(f["ok"] for f in findings), findings
        [index] = [f for f in findings if f["name"] == "vector_index"]
        assert index["message"].startswith("pgvector 0.8"), index["message"]
    stats = cli_json("stats", data_dir=tmp_path / "ops", **env)
    assert (stats["vector_index"], stats["vectors_pending"]) == ("pgvector", 0)
    log = os.linesep.join(s.output() for s in (s1, s2))
    assert "Traceback" not in log, log
