"""One process per embedded data dir: an OS file lock plus an owner file
(docs/deploy.md#scaling).

The lock is an OS-level lock (``flock`` via :mod:`filelock`), so the kernel drops it when the
holding process dies, even on SIGKILL; the owner file next to it (JSON: pid, hostname, command
line, start time) only serves to name the holder in the error message. A stale owner file of
a dead process never blocks: whoever gets the OS lock rewrites it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import filelock

from hindsight._errors import StoreError, StoreLockedError

__all__ = [
    "LOCK_FILE",
    "OWNER_FILE",
    "DataDirLock",
    "private_dir",
    "private_file",
    "privatize_tree",
]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def _ours(path: Path) -> bool:
    try:
        return path.stat().st_uid == os.getuid()
    except (OSError, AttributeError):  # no such file, or no uids (Windows)
        return False


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) with mode 0700, or narrow an existing folder of
    ours that others could read or enter to 0700 (the data dir holds every tenant's
    data). A folder of another user is left as it is.

    Raises:
        OSError: the folder cannot be created.
    """
    path = Path(path)
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    if _ours(path) and path.stat().st_mode & 0o077:
        with contextlib.suppress(OSError):
            path.chmod(PRIVATE_DIR)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 when missing, or narrow an existing file of ours to
    0600 (a database file: SQLite gives its -wal and -shm files the same mode).

    Raises:
        OSError: the file cannot be created.
    """
    path = Path(path)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    except FileExistsError:
        if _ours(path) and path.stat().st_mode & 0o077:
            with contextlib.suppress(OSError):
                path.chmod(PRIVATE_FILE)
    return path


def privatize_tree(root: Path) -> None:
    """Narrow every file of ours under ``root`` to 0600 and every folder to 0700 (files that
    a library created with the process's umask, such as a Qdrant Edge shard's). Best effort:
    errors (a file removed meanwhile) are ignored."""
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            with contextlib.suppress(OSError):
                target = Path(folder, name)
                if target.stat().st_mode & 0o077:
                    target.chmod(PRIVATE_DIR)
        for name in files:
            with contextlib.suppress(OSError):
                target = Path(folder, name)
                if target.stat().st_mode & 0o077:
                    target.chmod(PRIVATE_FILE)


LOCK_FILE = "hindsight.lock"
OWNER_FILE = "hindsight.lock.owner.json"

_SHARE_HINT = (
    "one embedded store serves one process; to share it, run `hindsight serve` on this data dir "
    "(HTTP API at http://127.0.0.1:8710/v1, MCP at http://127.0.0.1:8710/mcp; docs/http.md) and "
    "point the other processes at it (hindsight.client.HindsightClient or an MCP client), or "
    "move to PostgreSQL with pgvector (set DATABASE_URL; docs/deploy.md)"
)


def _server_hint(command: str) -> str | None:
    """When the holder is ``hindsight serve``, where to reach it (from its --host/--port)."""
    words = command.split()
    starts = [i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "hindsight"]
    if not starts:
        return None
    rest = words[starts[0] + 1 :]
    while rest and rest[0].startswith("-"):  # global options before the command
        rest = rest[1:] if "=" in rest[0] else rest[2:]
    if not rest or rest[0] != "serve":
        return None
    port = re.search(r"--port[ =](\d+)", command)
    host = re.search(r"--host[ =](\S+)", command)
    where = host.group(1) if host else "127.0.0.1"
    if where in ("0.0.0.0", "::", "[::]"):
        where = "127.0.0.1"
    base = f"http://{where}:{port.group(1) if port else 8710}"
    return (
        f"that process is a hindsight server: use it instead (HTTP API at {base}/v1, MCP at "
        f"{base}/mcp; hindsight.client.HindsightClient or an MCP client; docs/http.md)"
    )


def _command_line() -> str:
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    text = " ".join(str(part) for part in argv)
    return text if len(text) <= 300 else text[:297] + "..."


class DataDirLock:
    """Exclusive lock of an embedded data dir for the current process.

    Usage::

        with DataDirLock(data_dir):
            ...  # open the SQLite file and the vector shard

    Args:
        data_dir: the data dir (created if missing); the lock file ``hindsight.lock`` and the
            owner file ``hindsight.lock.owner.json`` live in it.
    """

    def __init__(self, data_dir: Path | str) -> None:
        self.data_dir = Path(data_dir).expanduser()
        self.lock_path = self.data_dir / LOCK_FILE
        self.owner_path = self.data_dir / OWNER_FILE
        self._lock: filelock.BaseFileLock | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._lock is not None

    def acquire(self) -> None:
        """Take the lock now, without waiting.

        Raises:
            StoreLockedError: another live process (or another open store in this process)
                holds it; the one-line message names it (pid, host, command) and says how to
                share a store between processes.
            StoreError: the data dir cannot be created or written.
        """
        if self._lock is not None:
            return
        try:
            private_dir(self.data_dir)
        except OSError as exc:
            raise StoreError(f"cannot create data dir {self.data_dir}: {exc}") from exc
        lock = filelock.FileLock(
            str(self.lock_path), timeout=0, thread_local=False, mode=PRIVATE_FILE
        )
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            raise StoreLockedError(self._locked_message()) from None
        except OSError as exc:
            raise StoreError(f"cannot lock data dir {self.data_dir}: {exc}") from exc
        self._lock = lock
        try:
            self._write_owner()
        except OSError as exc:
            self.release()
            raise StoreError(f"cannot write {self.owner_path}: {exc}") from exc

    def release(self) -> None:
        """Give the lock up (and remove our owner file). Idempotent."""
        lock, self._lock = self._lock, None
        if lock is None:
            return
        owner = self.owner()
        if owner is not None and owner.get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                self.owner_path.unlink()
        lock.release(force=True)

    def owner(self) -> dict[str, Any] | None:
        """The owner file's content (``pid``, ``hostname``, ``command``, ``started_at``), or
        ``None`` when it is missing or unreadable. It may describe a dead process: only the OS
        lock says whether the dir is in use."""
        try:
            data = json.loads(self.owner_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _write_owner(self) -> None:
        info = {
            "pid": os.getpid(),
            "hostname": socket.gethostname(),
            "command": _command_line(),
            "started_at": datetime.now(UTC).isoformat(),
        }
        tmp = self.owner_path.with_name(f".{OWNER_FILE}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(info))
        os.replace(tmp, self.owner_path)

    def _locked_message(self) -> str:
        owner = self.owner() or {}
        pid = owner.get("pid")
        if pid == os.getpid() and owner.get("hostname") == socket.gethostname():
            return (
                f"data dir {self.data_dir} is already open in this process (pid {pid}); "
                f"close the other store first ({_SHARE_HINT})"
            )
        if pid is None:
            who = "another process (not identified yet)"
        else:
            who = (
                f"another live process: pid {pid} on {owner.get('hostname', '?')}, "
                f"command {owner.get('command', '?')!r}"
            )
        hint = _server_hint(str(owner.get("command", ""))) or _SHARE_HINT
        return f"data dir {self.data_dir} is in use by {who}; {hint}"

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
