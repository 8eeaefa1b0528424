"""The vector outbox: how an index kept apart from SQL follows the store.

On PostgreSQL with pgvector the vectors are columns of the experience rows
(:mod:`.pgvector`): nothing to follow. An index kept apart from SQL - the embedded Qdrant Edge
shard of a SQLite store, a Qdrant server, an in-process index - holds its own copy of each
point, and follows the store by the transactional outbox pattern
(https://microservices.io/patterns/data/transactional-outbox.html):

* every write that changes what the index must hold (a new, re-embedded or re-scored lesson, a
  status change, a delete, a forget) inserts one ``vector_outbox`` row per experience in its
  own transaction, just before the commit (:meth:`StoreCore._note_vector_changes`);
* after the commit the writer applies the pending rows (:meth:`VectorSync.sync`): it makes
  each point match its row as it is *then* - written with its current vector and payload, or
  removed when the row is gone, deleted or has no embedding - and deletes the outbox rows it
  read, in one transaction (:meth:`OutboxStore.apply_vector_changes`);
* a crash between the commit and the apply leaves the rows pending: the next sync of any
  process applies them (every write syncs, and every open).

Applying reads the current row, so entries are applied in any order, and twice, with the same
result. What keeps two processes writing one Qdrant collection from writing a point from rows
read at different times is a lock per experience id (PostgreSQL advisory locks, in one sorted
order; SQLite has one writer at a time): the apply that runs last read the newest row.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Integer, bindparam, delete, func, select, text

from hindsight._errors import StoreError
from hindsight.models import ExperienceStatus
from hindsight.ports import VectorPoint, WritableVectorIndex
from hindsight.store._base import StoreCore, chunks, norm_ids
from hindsight.store.codec import PAYLOAD_COLUMNS, payload_of_row
from hindsight.store.schema import experiences as _exp
from hindsight.store.schema import vector_outbox as _box

__all__ = ["INDEX_KEY", "OutboxStore", "VectorIndexBehindError", "VectorSync", "index_kind"]

log = logging.getLogger("hindsight")

INDEX_KEY = "vector_index"
"""``meta`` key: which vector index the store's vectors are kept in (``pgvector``, ``edge``,
``qdrant <url> collection <name>``, ``memory``); an index opened on a store that names another
one is rebuilt from SQL (it missed the writes made meanwhile)."""
BATCH = 500
"""Experience ids per apply transaction."""
_DELETED = ExperienceStatus.DELETED.value
_POINT_COLUMNS = (*(_exp.c[name] for name in PAYLOAD_COLUMNS), _exp.c.embedding)
# Built once: building a statement per call (and its cache key) cost SQLAlchemy about as much
# as running it, and a sync follows every write (docs/benchmarks.md#sql-statements).
_PENDING = (
    select(_box.c.experience_id)
    .group_by(_box.c.experience_id)
    .order_by(func.min(_box.c.seq))
    .limit(bindparam("limit", type_=Integer))
)
"""Experience ids with outbox rows, the oldest row's first."""
_QUEUED = select(_box.c.seq).where(_box.c.experience_id.in_(bindparam("ids", expanding=True)))
_POINTS = select(*_POINT_COLUMNS).where(_exp.c.id.in_(bindparam("ids", expanding=True)))
_CLEARED = delete(_box).where(_box.c.seq.in_(bindparam("seqs", expanding=True)))
# One advisory lock per experience id, taken in one sorted order (no deadlock between two
# appliers); released at the end of the transaction.
_PG_LOCK_IDS = text(
    "SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT DISTINCT hashtextextended(x, 0) AS k "
    "FROM unnest(CAST(:ids AS text[])) AS x ORDER BY k) AS keys"
)

ApplyFn = Callable[[list[VectorPoint], list[str]], None]
"""Writes ``(points to upsert, ids to remove)`` to the index."""


def _point(row: Any) -> VectorPoint | None:
    """The point ``row`` (a row of :data:`_POINT_COLUMNS`) must be, or ``None`` when it must
    not be in the index (deleted, or no embedding)."""
    if row["status"] == _DELETED or row["embedding"] is None:
        return None
    return VectorPoint(row["id"], row["embedding"], payload_of_row(row))


class OutboxStore(StoreCore):
    """Vector-outbox methods of :class:`~hindsight.store.SqlStore` (see the module docstring)."""

    @property
    def vectors_in_sql(self) -> bool:
        """Whether the store holds the searchable vectors itself (PostgreSQL with pgvector as
        the vector index): then writes queue no outbox rows."""
        return not self._vector_outbox

    def set_vectors_in_sql(self, value: bool) -> None:
        """Stop (``True``: pgvector is the index) or start queueing outbox rows; the caller
        records the index in ``meta`` (:data:`INDEX_KEY`) so every process agrees."""
        self._vector_outbox = not value

    def pending_vector_changes(self, limit: int = BATCH) -> list[str]:
        """Up to ``limit`` experience ids with pending outbox rows, oldest first."""
        with self._tx() as conn:
            return list(conn.execute(_PENDING, {"limit": max(1, int(limit))}).scalars())

    def vector_outbox_state(self) -> dict[str, Any]:
        """``{"pending": rows, "oldest": datetime of the oldest row or None}``."""
        with self._tx() as conn:
            count, oldest = conn.execute(select(func.count(), func.min(_box.c.created_at))).one()
        return {"pending": int(count), "oldest": oldest}

    def clear_vector_outbox(self) -> int:
        """Delete every outbox row (the vectors moved into SQL: nothing follows them)."""
        with self._tx(write=True) as conn:
            return int(conn.execute(delete(_box)).rowcount or 0)

    def apply_vector_changes(self, ids: Sequence[Any], write: ApplyFn) -> int:
        """Make the points of ``ids`` match their rows, in one transaction: lock the ids (see
        the module docstring), read their pending outbox rows and then their rows, call
        ``write(points, removed)`` - ``points`` for the rows that are live and embedded,
        ``removed`` for the others (gone, deleted, no embedding) - and delete the outbox rows
        read. A ``write`` that raises leaves them pending.

        Returns:
            How many outbox rows were cleared.

        Raises:
            UsageError: an id is not a UUID.
            StoreError: the database failed (or what ``write`` raised).
        """
        wanted = sorted(norm_ids(ids))
        if not wanted:
            return 0
        with self._tx(write=True) as conn:
            if self.backend == "postgresql":
                conn.execute(_PG_LOCK_IDS, {"ids": wanted})
            seqs: list[int] = []
            points: dict[str, VectorPoint] = {}
            for part in chunks(wanted):
                seqs += conn.execute(_QUEUED, {"ids": part}).scalars()
            for part in chunks(wanted):
                for row in conn.execute(_POINTS, {"ids": part}).mappings():
                    point = _point(row)
                    if point is not None:
                        points[point.id] = point
            write(list(points.values()), [i for i in wanted if i not in points])
            for seq_part in chunks(seqs):
                conn.execute(_CLEARED, {"seqs": seq_part})
        return len(seqs)

    def experience_ids_after(self, after: str = "", limit: int = BATCH) -> list[str]:
        """Up to ``limit`` experience ids (every tenant, every status) after ``after`` in id
        order: a rebuild pages through them (maintenance only)."""
        query = select(_exp.c.id).where(_exp.c.id > after).order_by(_exp.c.id).limit(limit)
        with self._tx() as conn:
            return list(conn.execute(query).scalars())

    def count_vector_rows(self) -> int:
        """How many points a complete index holds: experiences of every tenant that are not
        deleted and have an embedding."""
        query = (
            select(func.count())
            .select_from(_exp)
            .where(_exp.c.status != _DELETED, _exp.c.embedding.is_not(None))
        )
        with self._tx() as conn:
            return int(conn.execute(query).scalar_one())


class VectorIndexBehindError(StoreError):
    """The vector index cannot be brought up to date with the SQL store (a Qdrant server
    down, a damaged shard), so recall, which would answer from missing or stale points, is
    refused. The message is one line: which index, why, and what to run."""

    @property
    def client_message(self) -> str:
        """What a client of ``hindsight serve`` is told (no path or host of the server)."""
        return (
            "recall refused: this server's vector index cannot be brought up to date with the "
            "SQL store (the server log and `hindsight doctor` say why); retry later"
        )


def index_kind(index: Any) -> str:
    """How ``index`` is named in ``meta`` (:data:`INDEX_KEY`) and by ``hindsight doctor``:
    its ``kind`` attribute, else ``memory`` (an in-process index of a test)."""
    return str(getattr(index, "kind", None) or "memory")


class VectorSync:
    """Keeps ``index`` (kept apart from SQL) in step with ``store`` through the vector outbox,
    or does nothing when ``index`` is ``None`` (pgvector: the vectors are the rows).

    Thread-safe. :meth:`open` first (the engine does it when it opens), :meth:`sync` after
    every write, :meth:`ensure_ready` before recall.
    """

    def __init__(self, store: Any, index: WritableVectorIndex | None) -> None:
        self.store = store
        self.index = index
        self.kind = "pgvector" if index is None else index_kind(index)
        self.last_error: str | None = None
        self.rebuilt: dict[str, Any] | None = None
        self._lock = threading.RLock()
        # the store's outbox_writes when a read of the outbox last found it empty, or None
        self._clean_at: int | None = None

    def open(self) -> int:
        """Record the index in ``meta`` (:data:`INDEX_KEY`) and tell the store whether to
        queue outbox rows. An index kept apart: apply what is pending, then rebuild it from
        SQL when it is not the one the store's vectors were kept in (a new deployment, a
        switch, an upgrade from the replica model), was just created, or - unless several
        processes write it - holds another number of points than SQL. Returns points
        written.

        Raises:
            StoreError: the store or the index failed (the memory does not open).
        """
        recorded = self.store.get_meta(INDEX_KEY)
        self.store.set_vectors_in_sql(self.index is None)
        if self.index is None:
            if recorded != self.kind:  # what an index kept apart had pending is moot now
                self.store.clear_vector_outbox()
                self.store.set_meta(INDEX_KEY, self.kind)
            return 0
        reason: str | None = None
        if recorded != self.kind:
            reason = f"the store's vectors were kept in {recorded or 'another index'}"
        elif getattr(self.index, "created", False):
            reason = "the collection was just created"
        done = self.sync()
        if reason is None and not getattr(self.index, "shared", False):
            points, expected = self.index.count(None), self.store.count_vector_rows()
            if points != expected:
                reason = f"the index holds {points} point(s) where SQL has {expected}"
        if reason is not None and (self.store.count_vector_rows() or self.index.count(None)):
            done += self.rebuild(reason)
        if recorded != self.kind:
            self.store.set_meta(INDEX_KEY, self.kind)
        return done

    def sync(self) -> int:
        """Apply every pending outbox row (every process's: a crashed writer's too). Called
        after each write of this process (read-your-writes) and at open. Returns the outbox
        rows cleared.

        The outbox is read in pages of :data:`BATCH` ids until a page comes back short: rows
        committed after that read are their writer's to apply (each write syncs after its
        commit). An index that only this process writes (not ``shared``: the embedded Edge
        shard, whose data directory one process holds) can get pending rows only from this
        store object's own writes once it is open, so the read is skipped while the store's
        :attr:`~hindsight.store.SqlStore.outbox_writes` has not moved since a read found
        nothing left (no read before each write's decisions when the last write synced).

        Raises:
            StoreError: the store or the index failed (kept as :attr:`last_error`; the rows
                stay pending).
        """
        if self.index is None:
            return 0
        with self._lock:
            alone = not getattr(self.index, "shared", False)
            written = getattr(self.store, "outbox_writes", None) if alone else None
            if written is not None and written == self._clean_at and self.last_error is None:
                return 0
            self._clean_at = None
            done = 0
            try:
                while True:
                    ids = self.store.pending_vector_changes(BATCH)
                    if ids:
                        done += self.store.apply_vector_changes(ids, self._write)
                    if len(ids) < BATCH:
                        break
            except Exception as exc:
                self.last_error = " ".join(f"{type(exc).__name__}: {exc}".split())[:1000]
                raise
            self.last_error = None
            self._clean_at = written
            return done

    def _write(self, points: list[VectorPoint], removed: list[str]) -> None:
        assert self.index is not None
        if removed:
            self.index.delete(removed)
        if points:
            self.index.upsert(points)

    def rebuild(self, reason: str) -> int:
        """Make the index hold exactly the points SQL says: every experience id, then every
        point id SQL does not know, applied like outbox rows (so writes of other processes
        meanwhile are never undone). Returns the points written.

        Raises:
            StoreError: the store or the index failed.
        """
        if self.index is None:
            return 0
        started = time.monotonic()
        log.info("hindsight: rebuilding the vector index %s from SQL: %s", self.kind, reason)
        written: list[int] = [0]

        def write(points: list[VectorPoint], removed: list[str]) -> None:
            self._write(points, removed)
            written[0] += len(points)

        with self._lock:
            seen: set[str] = set()
            after = ""
            while page := self.store.experience_ids_after(after, BATCH):
                self.store.apply_vector_changes(page, write)
                seen.update(page)
                after = page[-1]
            orphans = sorted(self.index.all_ids() - seen)
            for part in chunks(orphans, BATCH):
                self.store.apply_vector_changes(part, write)
            self.last_error = None
        self.rebuilt = {
            "reason": reason,
            "points": written[0],
            "removed": len(orphans),
            "seconds": round(time.monotonic() - started, 3),
        }
        log.warning(
            "hindsight: rebuilt the vector index %s from SQL (%s): %d point(s) written, %d "
            "removed (%.1f s)",
            self.kind,
            reason,
            written[0],
            len(orphans),
            time.monotonic() - started,
        )
        return written[0]

    def ensure_ready(self) -> None:
        """Before recall: when the last sync failed, sync now, and refuse recall when that
        fails too.

        Raises:
            VectorIndexBehindError: the index cannot be brought up to date (one line).
        """
        if self.last_error is None:
            return
        try:
            self.sync()
        except Exception as exc:
            reason = " ".join(str(exc).split())[:500] or type(exc).__name__
            raise VectorIndexBehindError(
                f"recall refused: the vector index {self.kind} cannot be brought up to date "
                f"with the SQL store ({reason}); see `hindsight doctor`"
            ) from exc

    def status(self) -> dict[str, Any]:
        """``kind`` (``pgvector`` or the index kept apart), ``pending`` (outbox rows not
        applied yet, every process's), ``oldest_pending`` (ISO-8601 or ``None``),
        ``last_error`` and ``rebuilt`` (what the rebuild at open did, or ``None``).

        Raises:
            StoreError: the store failed.
        """
        state: dict[str, Any] = {"pending": 0, "oldest": None}
        if self.index is not None:
            state = self.store.vector_outbox_state()
        oldest = state["oldest"]
        return {
            "kind": self.kind,
            "pending": state["pending"],
            "oldest_pending": None if oldest is None else oldest.isoformat(),
            "last_error": self.last_error,
            "rebuilt": self.rebuilt,
        }
