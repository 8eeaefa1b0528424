"""One live process per embedded data dir (case C09): DataDirLock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight._errors import StoreLockedError
from hindsight._lock import OWNER_FILE, DataDirLock

REPO = Path(__file__).resolve().parents[1]

HOLDER = """
import sys, time
from hindsight._lock import DataDirLock
lock = DataDirLock(sys.argv[1])
lock.acquire()
print("locked", flush=True)
time.sleep(120)
"""


def _start_holder(data_dir: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir), "--marker-arg"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "locked":
        proc.kill()
        raise AssertionError(f"holder did not take the lock: {line!r} {proc.stderr.read()!r}")
    return proc


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    proc = _start_holder(tmp_path / "data")
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_second_live_process_gets_an_actionable_error(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    lock = DataDirLock(tmp_path / "data")
    with pytest.raises(StoreLockedError) as info:
        lock.acquire()
    message = str(info.value)
    assert "\n" not in message
    assert f"pid {holder.pid}" in message
    assert "--marker-arg" in message  # the other process's command line
    assert "hindsight serve" in message and "DATABASE_URL" in message
    assert not lock.held
    assert json.loads((tmp_path / "data" / OWNER_FILE).read_text())["pid"] == holder.pid


def test_lock_of_a_sigkilled_process_can_be_taken(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    owner_file = tmp_path / "data" / OWNER_FILE
    assert json.loads(owner_file.read_text())["pid"] == holder.pid  # stale file left behind
    with DataDirLock(tmp_path / "data") as lock:
        assert lock.held
        owner = lock.owner()
        assert owner is not None and owner["pid"] == os.getpid()
        assert {"hostname", "command", "started_at"} <= owner.keys()
    assert not owner_file.exists()  # a clean release removes our owner file


def test_acquire_does_not_wait(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    start = time.monotonic()
    with pytest.raises(StoreLockedError):
        DataDirLock(tmp_path / "data").acquire()
    assert time.monotonic() - start < 2


def test_same_process_second_lock_is_refused_then_free_after_release(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path / "d")
    first.acquire()
    first.acquire()  # re-acquiring one's own lock is a no-op
    with pytest.raises(StoreLockedError, match="already open in this process"):
        DataDirLock(tmp_path / "d").acquire()
    first.release()
    first.release()  # idempotent
    second = DataDirLock(tmp_path / "d")
    second.acquire()
    assert second.held
    second.release()


def test_garbage_owner_file_does_not_block(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / OWNER_FILE).write_text("{not json")
    with DataDirLock(data) as lock:
        owner = lock.owner()
        assert owner is not None and owner["pid"] == os.getpid()
