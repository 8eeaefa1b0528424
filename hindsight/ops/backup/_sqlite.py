"""SQLite side of ``hindsight backup`` / ``restore``: the sqlite3 online backup API.

The backup API copies a consistent snapshot page by page while other connections keep
reading and writing (WAL), so a backup needs no lock and no downtime.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from hindsight._errors import StoreError, UsageError

__all__ = ["MAGIC", "backup_file", "counts", "is_hindsight_db", "restore_file"]

MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""

_REQUIRED = ("alembic_version", "meta", "experiences", "trajectories")
"""Tables every hindsight store has (migration 0001)."""


@contextlib.contextmanager
def _connect(path: Path, *, read_only: bool) -> Iterator[sqlite3.Connection]:
    uri = f"{path.resolve().as_uri()}?mode={'ro' if read_only else 'rwc'}"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=30)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open SQLite file {path}: {exc}") from exc
    try:
        yield conn
    finally:
        conn.close()


def is_hindsight_db(path: Path) -> bool:
    """True when ``path`` is a SQLite file holding hindsight's tables."""
    try:
        with _connect(path, read_only=True) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except (StoreError, sqlite3.Error):
        return False
    names = {str(r[0]) for r in rows}
    return all(t in names for t in _REQUIRED)


def counts(path: Path) -> dict[str, int]:
    """``{"experiences": n, "trajectories": m}`` of the hindsight store in ``path``.

    Raises:
        StoreError: the file cannot be read or is not a hindsight store.
    """
    try:
        with _connect(path, read_only=True) as conn:
            return {
                table: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
                for table in ("experiences", "trajectories")
            }
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc


def _copy(source: Path, dest: Path, *, source_read_only: bool) -> None:
    with (
        _connect(source, read_only=source_read_only) as src,
        _connect(dest, read_only=False) as dst,
    ):
        try:
            src.backup(dst)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot copy {source} to {dest}: {exc}") from exc


def backup_file(source: Path, dest: Path) -> None:
    """Copy the live database ``source`` into the new file ``dest`` (atomically: a partial
    copy is never left under ``dest``), then check the copy with ``PRAGMA integrity_check``.

    Raises:
        UsageError: ``source`` does not exist.
        StoreError: the copy failed or is corrupt (``dest`` is not created).
    """
    if not source.is_file():
        raise UsageError(f"no SQLite store at {source}: nothing to back up")
    part = dest.with_name(f".{dest.name}.part")
    part.unlink(missing_ok=True)
    try:
        _copy(source, part, source_read_only=True)
        with _connect(part, read_only=False) as conn:
            # A backup of a WAL database is in WAL mode: make it one self-contained file.
            conn.execute("PRAGMA journal_mode = DELETE")
            verdict = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if verdict != "ok":
            raise StoreError(f"the backup of {source} failed its integrity check: {verdict}")
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)


def restore_file(backup: Path, target: Path) -> None:
    """Replace the content of the database ``target`` with the backup file ``backup``.

    Writes through SQLite (the backup API into ``target``), so the target's WAL and shared
    memory files stay consistent; all or nothing.

    Raises:
        StoreError: the copy failed (``target`` keeps its content).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    _copy(backup, target, source_read_only=True)
