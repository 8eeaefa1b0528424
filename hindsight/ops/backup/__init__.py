"""Back up and restore a store: ``hindsight backup`` / ``hindsight restore``
(docs/deploy.md#backup-and-restore).

The SQL store is the source of truth: every experience row keeps its embedding, so a backup
is the SQL database alone and a restore rebuilds the vector index from it (without calling
the embedding model). Formats:

* SQLite (the embedded default): a SQLite file made with the sqlite3 online backup API
  (consistent while the store is in use; checked with ``PRAGMA integrity_check``);
* PostgreSQL (``DATABASE_URL``): a ``pg_dump --format=custom`` archive of that database
  (consistent while in use; ``pg_dump`` / ``pg_restore`` from ``PATH``).

A restore needs the store closed: an embedded store's data-dir lock is taken
(docs/concepts.md#storage);
with PostgreSQL and a Qdrant server, stop the API and workers first. It replaces what the
store holds, so a store that holds anything is only overwritten with ``force=True``.
Migrations of an older backup run during the restore (the next open finds it current).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, inspect, select, table

from hindsight._contract import input_file
from hindsight._errors import UsageError
from hindsight.config import MemoryConfig
from hindsight.ops.backup import _postgres, _sqlite
from hindsight.ops.backup._reindex import rebuild_index, reindex

__all__ = ["backup", "backup_kind", "rebuild_index", "reindex", "restore"]


def _target(config: MemoryConfig) -> tuple[str, Any]:
    """``("sqlite", Path)`` or ``("postgresql", URL)`` of the store ``config`` names."""
    from hindsight.store.connect import parse_url

    url = parse_url(config.sql_url())
    if url.get_backend_name() == "postgresql":
        return "postgresql", url
    if url.database in (None, "", ":memory:") or url.query.get("mode") == "memory":
        raise UsageError("an in-memory SQLite store (sqlite://) has nothing to back up or restore")
    return "sqlite", Path(str(url.database)).expanduser()


def backup_kind(path: Path) -> str:
    """``"sqlite"`` or ``"postgresql"``: the kind of backup file ``path`` is (by its header).

    Raises:
        UsageError: ``path`` is missing, not a file, or neither a SQLite file nor a
            ``pg_dump`` custom-format archive.
    """
    input_file(path, "file written by `hindsight backup`")
    with path.open("rb") as fh:
        head = fh.read(len(_sqlite.MAGIC))
    if head.startswith(_sqlite.MAGIC):
        return "sqlite"
    if head.startswith(_postgres.MAGIC):
        return "postgresql"
    raise UsageError(
        f"{path} is not a hindsight backup (expected a SQLite file or a pg_dump custom-format "
        "archive made by `hindsight backup`)"
    )


def _pg_counts(url: Any) -> dict[str, int]:
    from hindsight.store.connect import open_engine

    engine = open_engine(url.render_as_string(hide_password=False)).engine
    try:
        with engine.connect() as conn:
            names = set(inspect(conn).get_table_names())
            return {
                name: int(conn.execute(select(func.count()).select_from(table(name))).scalar_one())
                if name in names
                else 0
                for name in ("experiences", "trajectories")
            }
    finally:
        engine.dispose()


def _counts(kind: str, where: Any) -> dict[str, int]:
    if kind == "postgresql":
        return _pg_counts(where)
    if where.is_file() and _sqlite.is_hindsight_db(where):
        return _sqlite.counts(where)
    return {"experiences": 0, "trajectories": 0}


def backup(config: MemoryConfig, dest: Path | str, *, force: bool = False) -> dict[str, Any]:
    """Write a backup of the store ``config`` names to the file ``dest``.

    Safe while the store is in use (another process may hold it open); takes no lock.

    Args:
        config: the store (``data_dir`` / ``DATABASE_URL``).
        dest: the backup file to create; its folder must exist.
        force: overwrite ``dest`` if it exists (otherwise refused).

    Returns:
        ``{"kind": "sqlite"|"postgresql", "path": str, "bytes": int, "experiences": int,
        "trajectories": int}``: counts are read from the backup itself (SQLite) or from the
        database right after the dump (PostgreSQL).

    Raises:
        UsageError: ``dest`` exists without ``force``, its folder is missing, or the store
            is in-memory or missing.
        StoreError: the copy or ``pg_dump`` failed (nothing is left at ``dest``).
    """
    dest = Path(dest).expanduser()
    if dest.is_dir():
        raise UsageError(f"{dest} is a folder: name the backup file to create")
    if dest.exists() and not force:
        raise UsageError(f"{dest} already exists: choose a new file or pass --force")
    if not dest.parent.is_dir():
        raise UsageError(f"folder {dest.parent} does not exist")
    kind, where = _target(config)
    if kind == "sqlite":
        if where.is_file() and not _sqlite.is_hindsight_db(where):
            raise UsageError(f"{where} is not a hindsight store")
        _sqlite.backup_file(where, dest)
        numbers = _sqlite.counts(dest)
    else:
        _postgres.dump(where, dest)
        numbers = _pg_counts(where)
    return {"kind": kind, "path": str(dest), "bytes": dest.stat().st_size, **numbers}


def restore(config: MemoryConfig, source: Path | str, *, force: bool = False) -> dict[str, Any]:
    """Replace the store ``config`` names with the backup ``source``, then rebuild its vector
    index from the restored SQL (see :func:`reindex`).

    Args:
        config: the store to restore into (``data_dir`` / ``DATABASE_URL`` /
            ``VECTOR_DB_URL``); of the same kind (SQLite or PostgreSQL) as the backup.
        source: a file written by :func:`backup` (or by ``pg_dump --format=custom``).
        force: replace a store that holds experiences or trajectories (otherwise refused,
            naming what it holds).

    Returns:
        ``{"kind", "path", "experiences", "trajectories", "replaced": {"experiences",
        "trajectories"}, "points"}``: what the store holds now, what it held before, and the
        vector points written (``None`` for an in-process index).

    Raises:
        UsageError: not a backup file, a backup of the other kind, a SQLite file that is not
            a hindsight store, or a non-empty store without ``force``.
        StoreLockedError: an embedded store is open in another process.
        StoreError: the copy or ``pg_restore`` failed (the store keeps its content), or the
            index could not be rebuilt (run ``hindsight doctor --repair``).
    """
    from hindsight._lock import DataDirLock

    source = Path(source).expanduser()
    kind = backup_kind(source)
    target_kind, where = _target(config)
    if kind != target_kind:
        raise UsageError(
            f"{source} is a {kind} backup but the store is {target_kind} "
            f"({config.sql_url().split('://', 1)[0]}://...): restore it into a {kind} store"
        )
    if kind == "sqlite" and not _sqlite.is_hindsight_db(source):
        raise UsageError(f"{source} is a SQLite file but not a hindsight store")
    lock = None
    if config.uses_embedded_vectors() or config.database_url is None:
        Path(config.data_dir).mkdir(parents=True, exist_ok=True)
        lock = DataDirLock(Path(config.data_dir))
        lock.acquire()
    try:
        before = _counts(kind, where)
        if any(before.values()) and not force:
            raise UsageError(
                f"the store holds {before['experiences']} experience(s) and "
                f"{before['trajectories']} trajectory(ies); restoring replaces them: pass "
                "--force (back it up first with `hindsight backup`)"
            )
        if kind == "sqlite":
            _sqlite.restore_file(source, where)
        else:
            _postgres.restore(where, source)
        points = reindex(config)
        after = _counts(kind, where)
    finally:
        if lock is not None:
            lock.release()
    return {"kind": kind, "path": str(source), **after, "replaced": before, "points": points}
