"""One live process per embedded data dir: DataDirLock."""

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


@pytest.mark.parametrize(
    "args",
    [
        ["doctor"],
        ["doctor", "--json"],
        ["stats", "--tenant", "t"],
        ["recall", "x", "--tenant", "t"],
    ],
)
def test_cli_commands_on_a_locked_data_dir_say_so_in_one_line(
    tmp_path: Path, holder: subprocess.Popen[str], args: list[str]
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "COLUMNS": "400",
    }
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "hindsight", "--data-dir", str(tmp_path / "data"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"pid {holder.pid}" in lines[0] and "hindsight serve" in lines[0]


@pytest.mark.parametrize(
    ("command", "url"),
    [
        ("/v/bin/python3 /v/bin/hindsight serve --port 18731", "http://127.0.0.1:18731"),
        ("python -m hindsight serve --host 0.0.0.0 --port=9000", "http://127.0.0.1:9000"),
        ("hindsight --data-dir d serve --host 10.0.0.5", "http://10.0.0.5:8710"),
        ("hindsight serve", "http://127.0.0.1:8710"),
    ],
)
def test_a_server_holding_the_lock_is_pointed_at_by_its_own_url(
    tmp_path: Path, command: str, url: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / OWNER_FILE).write_text(
        json.dumps({"pid": 1, "hostname": "elsewhere", "command": command}), encoding="utf-8"
    )
    message = DataDirLock(data)._locked_message()
    assert f"HTTP API at {url}/v1" in message and f"MCP at {url}/mcp" in message
    assert "DATABASE_URL" not in message  # the server is the way to share, here


def test_a_holder_that_is_not_a_server_gets_the_general_advice(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / OWNER_FILE).write_text(
        json.dumps({"pid": 1, "hostname": "h", "command": "python -m hindsight recall serve"}),
        encoding="utf-8",
    )
    message = DataDirLock(data)._locked_message()
    assert "run `hindsight serve` on this data dir" in message
