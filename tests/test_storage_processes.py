"""One process per embedded data dir, at the engine level: the embedded store across processes.

* A process that opened ``Memory(data_dir=...)`` and died (SIGKILL, ``os._exit`` without close,
  or a normal exit without close) leaves a store the next process opens, with its data.
* Two live processes on one embedded data dir: the second gets
  :class:`hindsight.StoreLockedError`, one line naming the first (pid) and how to share the
  store (``hindsight serve`` over HTTP/MCP, or PostgreSQL with pgvector); through the CLI the
  same as one ``error:`` line on stderr. On PostgreSQL with pgvector nothing is embedded: the
  second process shares the store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight import Memory, StoreLockedError
from hindsight.testing import ManualClock
from tests.cli_helpers import assert_one_line_error, cli_env, run_cli

OPENER = r"""
import os, sys, time
from hindsight import Memory

data_dir, mode = sys.argv[1], sys.argv[2]
mem = Memory(data_dir=data_dir)
mem.add_experience("order_query times out at peak hours: use the cache", tenant_id="t",
                   task_type="support")
with mem.record("where is order 1", tenant_id="t") as run:
    run.user_message("where is order 1")
    call = run.tool_call("order_query", {"id": 1})
    run.tool_result("order_query", "timed out", status="timeout", tool_call_id=call.tool_call_id)
print("ready", run.trajectory_id, flush=True)
if mode == "os-exit":
    os._exit(0)  # no close, no atexit
if mode == "exit":
    sys.exit(0)  # no close; interpreter shutdown runs atexit
time.sleep(300)  # "hold" and "sigkill": stay alive until the test ends or kills us
"""


def _start(
    tmp_path: Path, data_dir: Path, mode: str, **env: str
) -> tuple[subprocess.Popen[str], str]:
    script = tmp_path / "opener.py"
    script.write_text(OPENER, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(data_dir), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(None, **env),
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if not line or line[0] != "ready":
        proc.kill()
        raise AssertionError(f"opener failed: {line!r} {proc.communicate()[1]}")
    return proc, line[1]


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def _env_for(database_url: str) -> dict[str, str]:
    return {} if database_url.startswith("sqlite") else {"DATABASE_URL": database_url}


@pytest.mark.parametrize("mode", ["sigkill", "os-exit", "exit"])
def test_store_reopens_after_the_opener_died(
    tmp_path: Path, database_url: str, mode: str, procs: list[subprocess.Popen[str]]
) -> None:
    data = tmp_path / "data"
    env = _env_for(database_url)
    proc, trajectory_id = _start(tmp_path, data, "sigkill" if mode == "sigkill" else mode, **env)
    procs.append(proc)
    if mode == "sigkill":
        proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) in (0, -signal.SIGKILL)

    with Memory(data_dir=data, database_url=env.get("DATABASE_URL")) as mem:
        assert mem.get_trajectory(trajectory_id, tenant_id="t").events[2].status.value == (
            "timeout"
        )
        result = mem.recall("", tenant_id="t", task_type="support")
        assert [h.experience.content for h in result.hits] == [
            "order_query times out at peak hours: use the cache"
        ]
        jobs = mem.stats(tenant_id="t")["review_jobs"]
        assert jobs["failed"] == 0 and sum(jobs.values()) == 1  # the review job is not lost
        lease = mem.config.review_timeout + 30  # the worker's lease (hindsight.review.worker)
    # A job the dead process had claimed stays leased to it until the lease expires: reopen
    # "later" (a clock past the lease) and the review resumes and completes on flush.
    later = ManualClock(datetime.now(UTC) + timedelta(seconds=lease + 1))
    with Memory(data_dir=data, database_url=env.get("DATABASE_URL"), clock=later) as mem:
        assert mem.flush(timeout=60)
        stats = mem.stats(tenant_id="t")
        assert stats["review_jobs"] == {"pending": 0, "running": 0, "succeeded": 1, "failed": 0}
        active = stats["experiences"]["by_status"]["active"]
        assert active > 1 and stats["vectors"] == active
        vector_hits = mem.recall("order_query timed out", tenant_id="t", top_k=10)
        assert any(trajectory_id in h.experience.source_trajectory_ids for h in vector_hits.hits)


def test_exit_without_close_leaves_claimed_review_pending(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    """A review running when the interpreter exits goes back to pending: at exit the
    default executor refuses new work before atexit closes the memory, so the worker must not
    depend on it to put its job back."""
    stuck = 0
    for _ in range(3):  # the race (review running at exit) is not hit every time
        data = tmp_path / f"data{_}"
        proc, _tid = _start(tmp_path, data, "exit")
        procs.append(proc)
        assert proc.wait(timeout=60) == 0
        with Memory(data_dir=data, background_review=False) as mem:
            stuck += mem.stats(tenant_id="t")["review_jobs"]["running"]
    assert stuck == 0


def test_second_live_process_gets_an_actionable_error(
    tmp_path: Path, database_url: str, procs: list[subprocess.Popen[str]]
) -> None:
    data = tmp_path / "data"
    env = _env_for(database_url)
    holder, _ = _start(tmp_path, data, "hold", **env)
    procs.append(holder)
    if database_url.startswith("postgresql"):  # pgvector: nothing embedded, nothing locked
        with Memory(data_dir=data, database_url=database_url) as mem:
            assert mem.stats(tenant_id="t")["trajectories"] == 1  # the holder's run
        return

    with pytest.raises(StoreLockedError) as info:
        Memory(data_dir=data, database_url=env.get("DATABASE_URL"))
    message = str(info.value)
    assert "\n" not in message
    assert f"pid {holder.pid}" in message and str(data) in message
    assert "hindsight serve" in message and "HTTP" in message and "MCP" in message
    assert "DATABASE_URL" in message and "pgvector" in message

    proc = run_cli("stats", data_dir=data, **env)
    line = assert_one_line_error(proc)
    assert proc.returncode == 1
    assert f"pid {holder.pid}" in line and "hindsight serve" in line
    proc = run_cli("recall", "order", "--tenant", "t", "--json", data_dir=data, **env)
    assert_one_line_error(proc)
    assert proc.stdout == ""  # no half JSON document on stdout

    # the holder was not disturbed, and once it is gone the store is ours
    assert holder.poll() is None
    holder.send_signal(signal.SIGTERM)
    holder.wait(timeout=60)
    with Memory(data_dir=data, database_url=env.get("DATABASE_URL")) as mem:
        assert mem.stats(tenant_id="t")["trajectories"] == 1


def test_same_process_second_open_is_refused_until_close(tmp_path: Path) -> None:
    first = Memory(data_dir=tmp_path)
    try:
        with pytest.raises(
            StoreLockedError, match=f"already open in this process \\(pid {os.getpid()}\\)"
        ):
            Memory(data_dir=tmp_path)
    finally:
        first.close()
    with Memory(data_dir=tmp_path) as again:
        assert again.stats()["trajectories"] == 0
