"""Turn a database URL into a configured SQLAlchemy engine (SQLite or PostgreSQL).

SQLite: ``check_same_thread=False`` (one store is shared by threads), WAL journal for files,
a 30 s busy timeout, foreign keys on, and transactions begun by us (``BEGIN`` or
``BEGIN IMMEDIATE`` for writes) instead of by the driver. The in-memory URL ``sqlite://`` uses
a single shared connection (``StaticPool``), so every caller sees the same database.
PostgreSQL: psycopg 3 (``postgresql://`` and ``postgres://`` are mapped to it), pre-ping.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from hindsight._errors import StoreError, UsageError

__all__ = ["BEGIN_OPTION", "EngineInfo", "open_engine", "parse_url", "safe_url"]

#: Execution option read by the SQLite ``begin`` hook: ``"IMMEDIATE"`` takes the write lock at
#: ``BEGIN`` so that two writers never deadlock on a lock upgrade.
BEGIN_OPTION = "hindsight_sqlite_begin"

_EXAMPLES = "e.g. sqlite:///path/to/hindsight.db, sqlite:// (in memory) or postgresql+psycopg://user:pw@host:5432/db"
_BUSY_TIMEOUT_MS = 30_000
_json_dumps = partial(json.dumps, ensure_ascii=False, separators=(",", ":"))


def _json_loads(text: str) -> Any:
    # Empty lists/dicts are the common case of tags, tools and metadata: skip the parser
    # (a new object every time, callers may mutate it).
    if text == "[]":
        return []
    if text == "{}":
        return {}
    return json.loads(text)


@dataclass(frozen=True, slots=True)
class EngineInfo:
    """An engine and what kind of database it talks to."""

    engine: Engine
    backend: str  # "sqlite" or "postgresql"
    in_memory: bool
    display_url: str  # the URL with the password masked, for messages


def safe_url(url: URL) -> str:
    """``url`` as text with its password masked (for error messages and logs)."""
    return url.render_as_string(hide_password=True)


def parse_url(url: str) -> URL:
    """Parse and normalise a database URL.

    Returns:
        The URL, with ``postgres://`` and ``postgresql://`` mapped to ``postgresql+psycopg://``.

    Raises:
        UsageError: the URL is not a string, cannot be parsed, or names an unsupported database.
    """
    if not isinstance(url, str) or not url.strip():
        raise UsageError(f"database URL must be a non-empty string ({_EXAMPLES}), got {url!r:.80}")
    try:
        parsed = make_url(url.strip())
    except ArgumentError:
        raise UsageError(f"invalid database URL {url!r:.200} ({_EXAMPLES})") from None
    name = parsed.drivername
    if name in ("postgres", "postgresql", "postgres+psycopg"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    elif name not in ("sqlite", "sqlite+pysqlite", "postgresql+psycopg"):
        raise UsageError(
            f"unsupported database URL scheme {name!r}: use sqlite:/// or postgresql+psycopg:// "
            f"({_EXAMPLES})"
        )
    return parsed


def _sqlite_in_memory(url: URL) -> bool:
    return url.database in (None, "", ":memory:") or url.query.get("mode") == "memory"


def open_engine(url: str) -> EngineInfo:
    """Create the engine for ``url`` (no connection is made yet).

    Raises:
        UsageError: bad URL, or the PostgreSQL driver (psycopg 3) is not installed.
    """
    parsed = parse_url(url)
    display = safe_url(parsed)
    if parsed.get_backend_name() == "sqlite":
        memory = _sqlite_in_memory(parsed)
        kwargs: dict[str, Any] = {
            "connect_args": {"check_same_thread": False, "timeout": _BUSY_TIMEOUT_MS / 1000},
            "json_serializer": _json_dumps,
            "json_deserializer": _json_loads,
        }
        if memory:
            kwargs["poolclass"] = StaticPool
        else:
            _private_database_file(Path(str(parsed.database)).expanduser())
            kwargs["pool_size"] = 10
            kwargs["max_overflow"] = 20
        engine = create_engine(parsed, **kwargs)
        _install_sqlite_hooks(engine, wal=not memory)
        return EngineInfo(engine, "sqlite", memory, display)
    try:
        engine = create_engine(
            parsed,
            pool_pre_ping=True,
            pool_size=10,
            max_overflow=20,
            connect_args={"connect_timeout": 10},
            json_serializer=_json_dumps,
        )
    except (ImportError, NoSuchModuleError):
        raise UsageError(
            "PostgreSQL needs psycopg 3: pip install 'hindsight-memory[postgres]'"
        ) from None
    return EngineInfo(engine, "postgresql", False, display)


def _private_database_file(path: Path) -> None:
    """Create the SQLite file's folder (0700 when we create it) and the file itself with mode
    0600 before SQLite does (it would use the umask, typically 0644); an existing file of ours
    is narrowed to 0600. SQLite gives its ``-wal`` and ``-shm`` files the database file's mode.

    Raises:
        StoreError: the folder or the file cannot be created.
    """
    from hindsight._lock import private_file

    try:
        if not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        private_file(path)
    except OSError as exc:
        raise StoreError(f"cannot create the SQLite database {path}: {exc}") from None


def _install_sqlite_hooks(engine: Engine, *, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # We emit BEGIN ourselves (below); the driver must not start transactions on its own.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys = ON")
            if wal:
                cursor.execute("PRAGMA journal_mode = WAL")
                # WAL + NORMAL: durable across process crashes; a power cut may lose the last
                # commits but never corrupts the file.
                cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(BEGIN_OPTION, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")
