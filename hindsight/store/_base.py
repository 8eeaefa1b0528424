"""What every part of :class:`~hindsight.store.SqlStore` shares: transactions, clock, helpers."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Table, and_, bindparam, func, insert, or_, select, type_coerce
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DataError, SQLAlchemyError

from hindsight._errors import StoreError, UsageError
from hindsight._ids import normalize_id
from hindsight.models import ExperienceStatus
from hindsight.ports import Clock
from hindsight.store.connect import BEGIN_OPTION, EngineInfo
from hindsight.store.schema import experience_stamps, vector_outbox

__all__ = ["StoreCore", "chunks", "keyset_after", "norm_ids", "norm_statuses"]

T = TypeVar("T")

_CANONICAL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

#: Most ids bound in one ``IN (...)`` list (PostgreSQL allows 65535 parameters per statement).
CHUNK = 500

_OUTBOX_KEY = "hindsight_vector_outbox"  # outbox rows this transaction inserts before it commits
LOCKED_TENANTS = "hindsight_locked_tenants"  # tenants whose stamp rows this transaction holds

#: Set while a recall reads (:meth:`StoreCore.recall_reads`): its transactions leave the
#: pending recall bookkeeping buffered (:mod:`hindsight.store.recall_buffer`).
_RECALL_READS: ContextVar[bool] = ContextVar("hindsight_recall_reads", default=False)
_OUTBOX_COUNT = threading.Lock()  # guards StoreCore._outbox_writes (raised by any thread)
_INSERT_OUTBOX = insert(vector_outbox)
_LOCK_STAMPS = (
    select(experience_stamps.c.tenant_id)
    .where(experience_stamps.c.tenant_id.in_(bindparam("tenants", expanding=True)))
    .order_by(experience_stamps.c.tenant_id)
    .with_for_update()
)
"""PostgreSQL: the change-stamp rows of some tenants, locked in tenant order."""
_INSERT_IGNORE: dict[tuple[str, Any, tuple[Any, ...]], Any] = {}
"""``INSERT ... ON CONFLICT DO NOTHING`` statements by backend, table and ``RETURNING``
columns: built once (:meth:`StoreCore._insert_ignore`)."""
_DEPTH = threading.local()  # transactions open on this thread (a nested one never flushes)


def _depth() -> int:
    return int(getattr(_DEPTH, "n", 0))


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def keyset_after(
    order: Sequence[tuple[Any, bool]], key: Sequence[Any] | None
) -> ColumnElement[bool] | None:
    """The rows after ``key`` in the total order ``order`` (``(column, descending)`` pairs,
    the last one unique), as one SQL condition; ``None`` when ``key`` is ``None``.

    Keyset paging: ``(a, b, id) after (x, y, z)`` is ``a > x OR (a = x AND (b > y OR (b = y AND
    id > z)))`` with ``<`` for descending columns, so rows written or deleted elsewhere in the
    order never shift the next page (docs/concepts.md#paging-with-cursors).
    """
    if key is None:
        return None
    if len(key) != len(order):
        raise UsageError("a paging key must have one value per sort column")
    cond: ColumnElement[bool] | None = None
    for (column, descending), value in reversed(list(zip(order, key, strict=True))):
        beyond = column < value if descending else column > value
        cond = beyond if cond is None else or_(beyond, and_(column == value, cond))
    return cond


def norm_ids(ids: Iterable[Any], what: str = "experience id") -> list[str]:
    """Canonical, de-duplicated ids (order kept); accepts UUID objects and any UUID spelling.

    Raises:
        UsageError: ``ids`` is a bare string / not iterable, or one id is not a UUID.
    """
    if isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
        raise UsageError(f"{what}s must be a list of ids, got {type(ids).__name__}")
    return list(
        dict.fromkeys(
            value
            if isinstance(value, str) and _CANONICAL.fullmatch(value)
            else normalize_id(value, what)
            for value in ids
        )
    )


_STATUSES = {s.value for s in ExperienceStatus}


def norm_status(status: Any) -> str:
    """``status`` as a plain string, checked against :class:`ExperienceStatus`.

    Raises:
        UsageError: not one of active / quarantined / archived / deleted.
    """
    value = status.value if isinstance(status, ExperienceStatus) else status
    if value not in _STATUSES:
        raise UsageError(f"status must be one of {sorted(_STATUSES)}, got {status!r:.80}")
    return str(value)


def norm_statuses(statuses: Iterable[Any]) -> list[str]:
    """A non-empty list of valid statuses (see :func:`norm_status`)."""
    if isinstance(statuses, str | ExperienceStatus):
        statuses = [statuses]
    values = list(dict.fromkeys(norm_status(s) for s in statuses))
    if not values:
        raise UsageError("statuses must name at least one status (or be None where allowed)")
    return values


def _one_line(exc: SQLAlchemyError) -> str:
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class StoreCore:
    """State and helpers shared by the store's parts (not public)."""

    _info: EngineInfo
    _clock: Clock
    _lock: threading.RLock
    _closed: bool
    _recall_buffer: Any = None
    _writes: int = 0
    """Write transactions this store object ended (committed or not): a reader caching rows
    of the database (:meth:`ExperienceStore.experiences_about_tool`) sees this process's own
    writes through it without asking the database."""
    _outbox_writes: int = 0
    """Transactions of this store object that committed vector-outbox rows (counted after the
    commit): :class:`hindsight.store.outbox.VectorSync` skips its read of the outbox while
    this has not moved since it last found nothing pending (:attr:`outbox_writes`)."""
    _vector_outbox: bool = True
    """Whether writes queue vector-outbox rows (:mod:`.outbox`): an index kept apart from SQL
    follows the store; ``False`` when the vectors are in the store itself (pgvector)."""

    @property
    def outbox_writes(self) -> int:
        """How many transactions of this store object have committed vector-outbox rows so
        far (a counter, raised after each such commit)."""
        return self._outbox_writes

    @contextmanager
    def recall_reads(self) -> Iterator[None]:
        """The transactions of this context (a recall's reads) leave pending recall
        bookkeeping buffered; every other transaction writes it first, so readers outside
        recall see it (:mod:`hindsight.store.recall_buffer`)."""
        token = _RECALL_READS.set(True)
        try:
            yield
        finally:
            _RECALL_READS.reset(token)

    def flush_recalls(self) -> int:
        """Write the pending recall bookkeeping now (one transaction); returns how many
        recalls it held. ``close()`` does this too."""
        buffer = self._recall_buffer
        return 0 if buffer is None else int(buffer.flush())

    def _stable(self) -> AbstractContextManager[Any]:
        """Hold off recall-bookkeeping flushes (a read and its overlay see each pending
        recall once)."""
        buffer = self._recall_buffer
        if buffer is None or _depth() > 0:
            return nullcontext()  # inside a transaction: never wait for a flush (it may wait on us)
        stable: AbstractContextManager[Any] = buffer.stable()
        return stable

    def _flush_before(self) -> None:
        buffer = self._recall_buffer
        if (
            buffer is not None
            and buffer.pending
            and not _RECALL_READS.get()
            and _depth() == 0
            and not buffer.writing_here()
        ):
            buffer.flush()

    @property
    def backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._info.backend

    @property
    def url(self) -> str:
        """The database URL, password masked."""
        return self._info.display_url

    def _now(self) -> datetime:
        return self._clock.now()

    def now(self) -> datetime:
        """Now on the store's clock (timezone-aware UTC): the time its rows are written with."""
        return self._clock.now()

    @contextmanager
    def _tx(self, *, write: bool = False) -> Iterator[Connection]:
        """A connection inside one transaction, committed on success, rolled back on error.

        SQLite allows one writer at a time: writers of this process queue on a lock (no busy
        waiting) and ``BEGIN IMMEDIATE`` guards against other processes. The in-memory
        database is one shared connection, so every transaction takes the lock there.

        Vector-outbox rows queued by :meth:`_note_vector_changes` are inserted last, right
        before the commit (one statement per transaction).

        Raises:
            StoreError: the store is closed or the database failed.
            UsageError: the database refused a value of the input (PostgreSQL ``DataError``,
                e.g. a NUL character in text).
        """
        if self._closed:
            raise StoreError("the SQL store is closed")
        local = self.__dict__.get("_batch_local")
        outer = getattr(local, "conn", None) if local is not None else None
        if outer is not None:  # inside batch(): the same connection and transaction
            yield outer
            return
        self._flush_before()
        sqlite_db = self._info.backend == "sqlite"
        guard: AbstractContextManager[Any] = (
            self._lock if sqlite_db and (write or self._info.in_memory) else nullcontext()
        )
        _DEPTH.n = _depth() + 1
        try:
            with guard, self._info.engine.connect() as conn:
                if write and sqlite_db:
                    conn.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})
                changes: list[dict[str, Any]] = []
                conn.info[_OUTBOX_KEY] = changes
                conn.info[LOCKED_TENANTS] = set()
                queued = False
                try:
                    with conn.begin():
                        yield conn
                        queued = bool(changes) and self._vector_outbox
                        if queued:
                            conn.execute(_INSERT_OUTBOX, changes)
                    if queued:
                        with _OUTBOX_COUNT:
                            self._outbox_writes += 1
                finally:
                    conn.info.pop(_OUTBOX_KEY, None)
                    conn.info.pop(LOCKED_TENANTS, None)
        except DataError as exc:
            raise UsageError(
                f"the database refused a value of this request: {_one_line(exc)}"
            ) from exc
        except SQLAlchemyError as exc:
            raise StoreError(f"database error on {self.url}: {_one_line(exc)}") from exc
        finally:
            _DEPTH.n -= 1
            if write:
                self._writes += 1

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One write transaction for everything this thread does with the store inside the
        ``with`` block (the public batch write, ``add_experiences``): every write and read of
        the block runs on the same connection, committed together at the end or rolled back
        together on any error; vector-outbox rows are inserted once, just before the commit.
        An index kept apart from SQL is brought up to date by the caller after the block
        (:meth:`hindsight.store.outbox.VectorSync.sync`). Nested ``batch()`` blocks join the
        outer one.

        Raises:
            StoreError, UsageError: as :meth:`_tx`.
        """
        local = self.__dict__.setdefault("_batch_local", threading.local())
        if getattr(local, "conn", None) is not None:
            yield
            return
        with self._tx(write=True) as conn:
            local.conn = conn
            try:
                yield
            finally:
                local.conn = None

    def _lock_tenants(self, conn: Connection, tenants: Iterable[str]) -> None:
        """PostgreSQL: lock the change-stamp rows (``experience_stamps``) of ``tenants`` in
        sorted order, the first lock of every transaction that writes experiences.

        Every write of a tenant's experiences updates its stamp row (a trigger), so the stamp
        row is the tenant's write lock anyway; taking it before any experience row keeps one
        lock order (stamps by tenant, then rows) in every transaction. Without it, one
        transaction holding an experience row and waiting for the stamp, and another holding
        the stamp and waiting for that row, deadlocked (PostgreSQL aborts one of them).
        A tenant with no stamp row yet has no experiences to lock. A tenant already locked in
        this transaction is not locked again. SQLite: nothing to do (one writer at a time)."""
        if self._info.backend != "postgresql":
            return
        held: set[str] = conn.info.setdefault(LOCKED_TENANTS, set())
        wanted = sorted(set(tenants) - held)
        held.update(wanted)
        for part in chunks(wanted):
            conn.execute(_LOCK_STAMPS, {"tenants": part}).all()

    def _upsert_insert(self, table: Table) -> Any:
        """This backend's ``INSERT`` construct, which has ``on_conflict_do_nothing/update``."""
        if self._info.backend == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            return pg_insert(table)
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)

    def _insert_ignore(self, table: Table, *returning: Any) -> Any:
        """``INSERT ... ON CONFLICT DO NOTHING`` for this backend, ``RETURNING`` the columns
        ``returning`` if any (built once per backend, table and columns)."""
        key = (self._info.backend, table, returning)
        statement = _INSERT_IGNORE.get(key)
        if statement is None:
            statement = self._upsert_insert(table).on_conflict_do_nothing()
            if returning:
                statement = statement.returning(*returning)
            _INSERT_IGNORE[key] = statement
        return statement

    def _json_array_has(self, column: Any, value: str) -> ColumnElement[bool]:
        """SQL condition: the JSON array in ``column`` contains the string ``value``."""
        if self._info.backend == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return type_coerce(column, JSONB).contains([value])
        items = func.json_each(column).table_valued("value")
        return select(items.c.value).where(items.c.value == value).exists()

    @staticmethod
    def _note_vector_changes(
        conn: Connection, now: datetime, tenant: str, ids: Iterable[str]
    ) -> None:
        """Queue vector-outbox rows for the experiences ``ids`` of ``tenant``, changed in this
        transaction (written, re-embedded, status or scored fields changed, deleted);
        :meth:`_tx` inserts them just before it commits, unless the vectors are in the store
        itself."""
        conn.info[_OUTBOX_KEY].extend(
            {"experience_id": exp_id, "tenant_id": tenant, "created_at": now} for exp_id in ids
        )
