"""Experiences (semantic memory): rows with their embeddings, scoped reads, status changes."""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import (
    ColumnElement,
    and_,
    bindparam,
    delete,
    func,
    insert,
    literal,
    select,
    type_coerce,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.types import NullType

from hindsight._errors import NotFoundError, TenantRequiredError, UsageError
from hindsight._ids import normalize_id, validate_tenant
from hindsight.models import Experience, ExperienceStatus
from hindsight.store._base import (
    LOCKED_TENANTS,
    StoreCore,
    chunks,
    keyset_after,
    norm_ids,
    norm_status,
    norm_statuses,
)
from hindsight.store.codec import (
    EXPERIENCE_FIELDS,
    checked,
    experience_from_row,
    experience_from_stored,
    experience_row,
    lesson_key_hash,
)
from hindsight.store.recall_buffer import PendingRecall
from hindsight.store.schema import experience_sources as _links
from hindsight.store.schema import experience_stamps as _stamps
from hindsight.store.schema import experiences as _table
from hindsight.store.schema import recalls, trajectories
from hindsight.store.trajectories import taught_by_task_group

__all__ = [
    "CREATED_KEY",
    "CREATED_ORDER",
    "EXPERIENCE_KEY",
    "EXPERIENCE_ORDER",
    "ExperienceStore",
    "created_key",
    "experience_key",
]

_COLUMNS = [_table.c[name] for name in EXPERIENCE_FIELDS]  # everything but the embedding
_ID_COLUMN = EXPERIENCE_FIELDS.index("id")
_DELETED = ExperienceStatus.DELETED.value
MAX_LIST_LIMIT = 10_000
EXPERIENCE_ORDER = (("confidence", True), ("updated_at", True), ("id", False))
"""The order of an experience listing: ``(column, descending)``, most confident first; the
id makes it a total order (keyset paging, :func:`hindsight.store._base.keyset_after`)."""
EXPERIENCE_KEY = (float, datetime, str)
"""The types of an experience's sort key (:func:`experience_key`)."""


def experience_key(exp: Experience) -> tuple[float, datetime, str]:
    """``exp``'s place in :data:`EXPERIENCE_ORDER`: ``(confidence, updated_at, id)``."""
    return (exp.confidence, exp.updated_at, exp.id)


CREATED_ORDER = (("created_at", False), ("id", False))
"""The creation-order listing (``order="created"``): oldest first, then by id. Neither column
changes after an experience is written (edits, confidence changes and status changes keep
both), so a cursor in this order never repeats or skips a row that stays listed."""
CREATED_KEY = (datetime, str)
"""The types of an experience's key in :data:`CREATED_ORDER` (:func:`created_key`)."""


def created_key(exp: Experience) -> tuple[datetime, str]:
    """``exp``'s place in :data:`CREATED_ORDER`: ``(created_at, id)``."""
    return (exp.created_at, exp.id)


_ORDERS = {"confidence": EXPERIENCE_ORDER, "created": CREATED_ORDER}


def ids_in_tenant(ids: Sequence[str], tenant: str) -> ColumnElement[bool]:
    """``id IN ids AND tenant_id = tenant``, written so that the primary key serves it.

    Without ANALYZE statistics SQLite guesses that ``tenant_id = ?`` matches ~10 rows and an
    IN list of 20 primary keys 20 rows, so it scans the tenant's rows through a
    ``(tenant_id, ...)`` index instead: 40-50 ms per recall lookup at 100k experiences rather
    than 0.1 ms (measured with ``python -m hindsight.bench``). ``tenant_id || ''`` still
    filters every row by tenant, but no index matches that expression.
    """
    return and_(_table.c.id.in_(ids), _table.c.tenant_id.concat("") == tenant)


_BY_IDS = select(*_COLUMNS).where(
    ids_in_tenant(bindparam("ids", expanding=True), bindparam("tenant"))  # type: ignore[arg-type]
)
"""The rows of some ids in one tenant: built once (building it per call cost as much as
running it on the recall path)."""


_TAKEN = select(_table.c.id).where(_table.c.id.in_(bindparam("ids", expanding=True))).limit(1)
"""One of some ids that is already an experience (any tenant: ids are global)."""
_INSERT = insert(_table)
_INSERT_LINKS = insert(_links)
_LINKED_RUNS = select(_links.c.trajectory_id).where(_links.c.experience_id == bindparam("id"))
"""The runs an experience's ``experience_sources`` rows name."""
_ALIVE_RUNS = (
    select(trajectories.c.id)
    .where(
        trajectories.c.tenant_id == bindparam("tenant"),
        trajectories.c.id.in_(bindparam("ids", expanding=True)),
    )
    .with_for_update(read=True)
)
"""The tenant's stored runs among some ids, read ``FOR SHARE`` on PostgreSQL."""
_IDS_IN_TENANT = select(_table.c.id).where(
    ids_in_tenant(bindparam("ids", expanding=True), bindparam("tenant"))  # type: ignore[arg-type]
)
"""Which of some ids are experiences of one tenant (through the primary key)."""
_COUNT_RECALLS = (
    update(_table)
    .where(_table.c.id == bindparam("b_id"), _table.c.tenant_id == bindparam("b_tenant"))
    .values(
        recall_count=_table.c.recall_count + bindparam("b_n"),
        last_recalled_at=bindparam("b_at"),
    )
)
_INSERT_RECALLS = insert(recalls)
_BY_LESSON_KEY = (
    select(*_COLUMNS)
    .where(
        _table.c.tenant_id == bindparam("tenant"),
        _table.c.lesson_key_hash == bindparam("digest"),
        _table.c.namespace == bindparam("namespace"),
        _table.c.status == ExperienceStatus.ACTIVE.value,
    )
    .order_by(_table.c.created_at, _table.c.id)
)
"""The tenant's active experiences of a namespace with one lesson-key hash, oldest first."""
_TAUGHT_BY_RUNS = (
    select(_links.c.trajectory_id, _links.c.experience_id)
    .join(_table, _table.c.id == _links.c.experience_id)
    .where(
        _links.c.tenant_id == bindparam("tenant"),
        _links.c.trajectory_id.in_(bindparam("ids", expanding=True)),
        _table.c.tenant_id == bindparam("tenant"),
        _table.c.status.in_(bindparam("statuses", expanding=True)),
    )
    .order_by(_links.c.trajectory_id, _links.c.experience_id)
)
"""The tenant's experiences in some statuses that some runs taught, by run."""
_VECTORS = select(_table.c.id, _table.c.embedding).where(
    _table.c.id.in_(bindparam("ids", expanding=True)), _table.c.embedding.is_not(None)
)
"""The stored embeddings of some ids."""
# The statements above and _BY_IDS are built once: building a statement per call (and its
# cache key) cost SQLAlchemy about as much as running it (docs/benchmarks.md#sql-statements).


def _read_experiences(conn: Connection, tenant: str, wanted: list[str]) -> dict[str, Experience]:
    """The tenant's rows among the canonical ids ``wanted``, by id (no overlay)."""
    found: dict[str, Experience] = {}
    for part in chunks(wanted):
        for row in conn.execute(_BY_IDS, {"ids": part, "tenant": tenant}):
            found[row[0]] = experience_from_stored(row)
    return found


def _check_vectors(vectors: Any, count: int) -> npt.NDArray[np.float32] | None:
    if vectors is None:
        return None
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != count:
        raise UsageError(
            f"vectors must be an array of shape ({count}, dimension), got shape {array.shape}"
        )
    if not np.isfinite(array).all():
        raise UsageError("vectors contain NaN or infinite values")
    return array


def _check_experiences(items: Any) -> list[Experience]:
    if isinstance(items, Experience) or not isinstance(items, Sequence):
        raise UsageError("experiences must be a sequence of Experience objects")
    result = list(items)
    for item in result:
        if not isinstance(item, Experience):
            raise UsageError(f"expected Experience objects, got {type(item).__name__}")
    return result


#: Lookups of :meth:`ExperienceStore.experiences_about_tool` kept per store (least recently
#: used dropped first).
ABOUT_TOOL_CACHE_SIZE = 4096

#: Seconds a tenant's stamp, once read, is trusted without reading it again while this store
#: object has written nothing: how late a write by another process (or another store object)
#: may reach :meth:`ExperienceStore.experiences_about_tool`. 0 reads the stamp on every call.
ABOUT_TOOL_MAX_AGE = 1.0


@functools.lru_cache(maxsize=8)
def _update_of(names: frozenset[str]) -> Any:
    """The ``UPDATE`` of one experience row setting the columns ``names``, built once per set
    of columns with bound parameters (``v_<column>``, ``w_id``, ``w_tenant``): a statement
    built with its values inline costs SQLAlchemy more to build and to key for its compiled
    cache than the database takes to run it."""
    return (
        update(_table)
        .where(_table.c.id == bindparam("w_id"), _table.c.tenant_id == bindparam("w_tenant"))
        .values({_table.c[n]: bindparam(f"v_{n}", type_=_table.c[n].type) for n in sorted(names)})
    )


#: The tenant's change counter (migration 0007), one primary-key read; built once.
_STAMP_OF_TENANT = select(_stamps.c.stamp).where(_stamps.c.tenant_id == bindparam("tenant"))
_STAMP_LOCKED = _STAMP_OF_TENANT.with_for_update()


class _AboutToolCache:
    """``(tenant, tool, namespaces, kinds, limit) -> (tenant stamp, experiences)``, LRU,
    thread-safe.

    A lookup read again after the stamp moved keeps the experience objects of the rows that
    did not change (:meth:`decode`): any write of the tenant moves the stamp, most writes touch
    none of a tool's lessons, and an unchanged object keeps its compiled risk checks
    (:mod:`hindsight.checks.lookup`), so the read after a write costs the query, not the
    decoding and compiling of every lesson again."""

    def __init__(self, size: int = ABOUT_TOOL_CACHE_SIZE) -> None:
        self.size = size
        # key -> (stamp, experiences, {id: (row values, experience)})
        self.items: OrderedDict[
            tuple[Any, ...],
            tuple[int, list[Experience], dict[str, tuple[tuple[Any, ...], Experience]]],
        ] = OrderedDict()
        self.lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.stamp_reads = 0
        # tenant -> (stamp, the store's write count before it was read, monotonic read time)
        self.stamps: dict[str, tuple[int, int, float]] = {}

    def trusted_stamp(self, tenant: str, writes: int, max_age: float) -> int | None:
        """The tenant's stamp read less than ``max_age`` seconds ago, when the store has
        written nothing since; else ``None`` (read it again)."""
        found = self.stamps.get(tenant)
        if found is None or found[1] != writes or time.monotonic() - found[2] >= max_age:
            return None
        return found[0]

    def read_stamp(self, tenant: str, stamp: int, writes: int, at: float) -> None:
        with self.lock:
            self.stamp_reads += 1
            if len(self.stamps) >= self.size:
                self.stamps.clear()
            self.stamps[tenant] = (stamp, writes, at)

    def get(self, key: tuple[Any, ...], stamp: int) -> list[Experience] | None:
        with self.lock:
            found = self.items.get(key)
            if found is None or found[0] != stamp:
                self.misses += 1
                return None
            self.items.move_to_end(key)
            self.hits += 1
            return found[1]

    def changed(self, key: tuple[Any, ...], raw: Sequence[Sequence[Any]]) -> list[str]:
        """The ids of ``raw`` (rows as the database driver returns them, before the column
        types' conversions) that have no experience cached for ``key`` under an older stamp
        from a row equal to theirs column by column: the rows to read and decode again."""
        with self.lock:
            found = self.items.get(key)
        before = found[2] if found is not None else {}
        out = []
        for row in raw:
            kept = before.get(row[_ID_COLUMN])
            if kept is None or kept[0] != tuple(row):
                out.append(row[_ID_COLUMN])
        return out

    def assemble(
        self,
        key: tuple[Any, ...],
        raw: Sequence[Sequence[Any]],
        fresh: dict[str, Experience],
    ) -> list[tuple[tuple[Any, ...], Experience]]:
        """``(raw row, experience)`` of each of ``raw``, in order: the experience read again
        (``fresh``, from :meth:`changed`'s ids) or the one kept for an equal row. A changed row
        missing from the fresh read (it stopped matching between the two reads) is left out."""
        with self.lock:
            found = self.items.get(key)
        before = found[2] if found is not None else {}
        out = []
        for row in raw:
            values = tuple(row)
            exp = fresh.get(values[_ID_COLUMN])
            if exp is not None:
                out.append((values, exp))
                continue
            kept = before.get(values[_ID_COLUMN])
            if kept is not None and kept[0] == values:
                out.append(kept)
        return out

    def put(
        self, key: tuple[Any, ...], stamp: int, decoded: list[tuple[tuple[Any, ...], Experience]]
    ) -> list[Experience]:
        """Cache ``decoded`` (from :meth:`decode`) for ``key`` at ``stamp``; returns its
        experiences."""
        rows = [exp for _, exp in decoded]
        with self.lock:
            self.items[key] = (stamp, rows, {exp.id: (v, exp) for v, exp in decoded})
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return rows


class ExperienceStore(StoreCore):
    """Experience methods of :class:`~hindsight.store.SqlStore`."""

    _about_tool_cache: _AboutToolCache | None = None
    _about_tool_statement: Any = None
    _by_ids: Any = None
    about_tool_max_age: float = ABOUT_TOOL_MAX_AGE
    """Seconds a tenant's stamp is trusted without reading it again
    (:meth:`experiences_about_tool`); 0: read on every call."""

    def add_experiences(
        self, experiences: Sequence[Experience], vectors: npt.ArrayLike | None
    ) -> None:
        """Insert new experiences with their embeddings (one transaction).

        Args:
            experiences: the experiences; their ids must be new (and unique in the batch).
            vectors: ``None`` (no embeddings) or a float array of shape ``(n, dimension)``,
                row ``i`` the embedding of ``experiences[i]``; stored as float32.

        Raises:
            UsageError: wrong types, a shape mismatch, NaN values, or an id that already exists
                (use :meth:`update_experience` to change one).
            StoreError: the database failed.
        """
        items = [checked(e) for e in _check_experiences(experiences)]
        array = _check_vectors(vectors, len(items))
        if not items:
            return
        ids = [e.id for e in items]
        if len(set(ids)) != len(ids):
            raise UsageError("experiences in one add_experiences call must have distinct ids")
        rows = []
        for i, exp in enumerate(items):
            row = experience_row(exp)
            row["embedding"] = None if array is None else array[i]
            rows.append(row)
        now = self._now()
        with self._tx(write=True) as conn:
            self._insert_experience_rows(conn, items, rows, now)

    def _insert_experience_rows(
        self, conn: Connection, items: list[Experience], rows: list[dict[str, Any]], now: datetime
    ) -> None:
        """Inside a write transaction: insert checked rows (and their vector-outbox rows).

        Raises:
            NotFoundError: an experience learned from runs that are all gone (forgotten while
                their review was in flight): a forgotten run must not teach again.
        """
        self._lock_tenants(conn, (e.tenant_id for e in items))
        self._check_sources_alive(conn, items)
        for part in chunks([e.id for e in items]):
            taken = conn.execute(_TAKEN, {"ids": part}).first()
            if taken is not None:
                raise UsageError(f"experience {taken[0]} already exists; use update_experience")
        conn.execute(_INSERT, rows)
        links = [
            {"experience_id": e.id, "trajectory_id": t, "tenant_id": e.tenant_id}
            for e in items
            for t in dict.fromkeys(e.source_trajectory_ids)
        ]
        if links:
            conn.execute(_INSERT_LINKS, links)
        for tenant in dict.fromkeys(e.tenant_id for e in items):
            ids = [e.id for e in items if e.tenant_id == tenant]
            self._note_vector_changes(conn, now, tenant, ids)

    def _sync_source_links(self, conn: Connection, exp: Experience) -> None:
        """Inside a write transaction: make ``exp``'s rows of ``experience_sources`` equal
        its ``source_trajectory_ids`` (one indexed read; writes only what differs)."""
        stored = set(conn.execute(_LINKED_RUNS, {"id": exp.id}).scalars())
        wanted = list(dict.fromkeys(exp.source_trajectory_ids))
        gone = stored.difference(wanted)
        if gone:
            conn.execute(
                delete(_links).where(
                    _links.c.experience_id == exp.id, _links.c.trajectory_id.in_(sorted(gone))
                )
            )
        new = [t for t in wanted if t not in stored]
        if new:
            conn.execute(
                _INSERT_LINKS,
                [
                    {"experience_id": exp.id, "trajectory_id": t, "tenant_id": exp.tenant_id}
                    for t in new
                ],
            )

    def _check_sources_alive(self, conn: Connection, items: Sequence[Experience]) -> None:
        """Refuse experiences whose source trajectories are all gone from their tenant.

        The trajectory rows are read ``FOR SHARE`` on PostgreSQL, so a concurrent ``forget``
        waits for this transaction (and then deletes what it wrote); SQLite serializes writes.
        """
        wanted = {(e.tenant_id, s) for e in items for s in e.source_trajectory_ids}
        if not wanted:
            return
        alive: set[tuple[str, str]] = set()
        for tenant in {t for t, _ in wanted}:
            ids = sorted(s for t, s in wanted if t == tenant)
            for part in chunks(ids):
                found = conn.execute(_ALIVE_RUNS, {"tenant": tenant, "ids": part}).scalars()
                alive.update((tenant, tid) for tid in found)
        for exp in items:
            sources = [(exp.tenant_id, s) for s in exp.source_trajectory_ids]
            if sources and not alive.intersection(sources):
                raise NotFoundError(
                    f"trajectory {exp.source_trajectory_ids[0]} is not stored in tenant "
                    f"{exp.tenant_id!r} (forgotten?): its lessons are not written"
                )

    def get_experience(self, tenant_id: str, experience_id: Any) -> Experience:
        """One experience of the tenant, whatever its status.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: the id is not a UUID.
            NotFoundError: no such experience in this tenant.
        """
        tenant = validate_tenant(tenant_id)
        eid = normalize_id(experience_id, "experience id")
        found = self.get_experiences(tenant, [eid])
        if eid not in found:
            raise NotFoundError(f"experience {eid} not found in tenant {tenant!r}")
        return found[eid]

    def get_experiences(
        self, tenant_id: str, ids: Sequence[Any], *, pending_recalls: bool = True
    ) -> dict[str, Experience]:
        """The tenant's experiences among ``ids``, by canonical id; absent ids are left out.

        Primary-key lookups without the embedding column (the recall hot path).
        ``pending_recalls=False``: the rows as stored, without the recall counters still
        buffered in this process (a cache of rows adds them on each use:
        :meth:`with_pending_recalls`).

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: an id is not a UUID.
        """
        tenant = validate_tenant(tenant_id)
        wanted = norm_ids(ids)
        if not wanted:
            return {}
        with self._stable(), self._tx() as conn:
            found = _read_experiences(conn, tenant, wanted)
            return self._overlaid(tenant, found) if pending_recalls else found

    def with_pending_recalls(
        self, tenant_id: str, found: dict[str, Experience]
    ) -> dict[str, Experience]:
        """A copy of ``found`` (the tenant's experiences by id, as stored) with the recall
        counters still buffered in this process added, as :meth:`get_experiences` returns
        them; the experiences of ``found`` are not changed."""
        return self._overlaid(validate_tenant(tenant_id), dict(found))

    def experience_stamp(self, tenant_id: str, *, lock: bool = False) -> int | None:
        """The tenant's change stamp (``experience_stamps``: bumped by database triggers on
        every insert, update and delete of its experiences, by any process), ``None`` when the
        tenant has no stamp row yet (no experience was ever written).

        ``lock=True`` inside :meth:`batch`: no other transaction can write the tenant's
        experiences until the batch commits (PostgreSQL: the stamp row is locked ``FOR
        UPDATE``; SQLite: the batch's write transaction already excludes other writers), so a
        stamp read at the end of the batch differs from this one only by the batch's own
        writes.

        Raises:
            TenantRequiredError: empty or missing tenant.
        """
        tenant = validate_tenant(tenant_id)
        query = _STAMP_LOCKED if lock and self.backend == "postgresql" else _STAMP_OF_TENANT
        with self._tx() as conn:
            value = conn.execute(query, {"tenant": tenant}).scalar()
            if lock and self.backend == "postgresql":  # held now: not locked again
                conn.info.setdefault(LOCKED_TENANTS, set()).add(tenant)
        return None if value is None else int(value)

    def list_experiences(
        self,
        tenant_id: str,
        *,
        namespaces: Sequence[str] | None = None,
        task_type: str | None = None,
        statuses: Sequence[str] = ("active",),
        tags: Sequence[str] = (),
        task_key: str | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 100,
        offset: int = 0,
        after: Sequence[Any] | None = None,
        order: str = "confidence",
    ) -> list[Experience]:
        """The tenant's experiences matching every filter, best first.

        Order: ``confidence`` descending, then ``updated_at`` descending, then id
        (:data:`EXPERIENCE_ORDER`); ``order="created"``: oldest created first, then id
        (:data:`CREATED_ORDER`). Used by the exact task_type recall mode, which needs no
        vectors (docs/concepts.md#exact-task_type-mode).

        Args:
            tenant_id: the tenant (required).
            namespaces: ``None`` = any namespace, else a non-empty list.
            task_type: exact task type, or ``None`` for any.
            statuses: non-empty list of statuses to include (default only ``active``).
            tags: the experience must carry every one of these tags.
            task_key: only experiences learned from a run of this task group: one of their
                source runs (``experience_sources``) has this ``task_key``, explicit or by
                intent (so a key assigned later applies at once).
            kinds: ``None`` = any kind, else the kinds to include (``ExperienceKind`` values).
            limit: 1..10000 rows; offset: rows to skip (>= 0).
            after: keyset paging: only rows after this ``(confidence, updated_at, id)`` key
                (:func:`experience_key` of the last row of the previous page; with
                ``order="created"`` a ``(created_at, id)`` key, :func:`created_key`).
            order: ``"confidence"`` (default) or ``"created"``.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: an empty namespace/status list, an unknown status, a bad limit/offset,
                a blank or too long task key.
        """
        tenant = validate_tenant(tenant_id)
        if not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT:
            raise UsageError(f"limit must be an integer in 1..{MAX_LIST_LIMIT}, got {limit!r}")
        if not isinstance(offset, int) or offset < 0:
            raise UsageError(f"offset must be a non-negative integer, got {offset!r}")
        query = select(*_COLUMNS).where(
            _table.c.tenant_id == tenant,
            _table.c.status.in_(norm_statuses(statuses)),
        )
        if namespaces is not None:
            if isinstance(namespaces, str):
                namespaces = [namespaces]
            if not namespaces:
                raise UsageError("namespaces must be None (any) or a non-empty list")
            query = query.where(_table.c.namespace.in_(list(namespaces)))
        if task_type is not None:
            query = query.where(_table.c.task_type == task_type)
        for tag in [tags] if isinstance(tags, str) else tags:
            query = query.where(self._json_array_has(_table.c.tags, str(tag)))
        if task_key is not None:
            query = query.where(taught_by_task_group(_table.c.id, tenant, task_key))
        if kinds is not None:
            query = query.where(_table.c.kind.in_([str(kind) for kind in kinds]))
        if order not in _ORDERS:
            raise UsageError(f"order must be one of {', '.join(_ORDERS)}, got {order!r}")
        columns = [(getattr(_table.c, name), desc) for name, desc in _ORDERS[order]]
        beyond = keyset_after(columns, after)
        if beyond is not None:
            query = query.where(beyond)
        query = (
            query.order_by(*(column.desc() if desc else column for column, desc in columns))
            .limit(limit)
            .offset(offset)
        )
        with self._stable(), self._tx() as conn:
            rows = [experience_from_row(row) for row in conn.execute(query).mappings()]
            return self._overlaid_list(tenant, rows)

    def count_experiences(
        self,
        tenant_id: str | None,
        statuses: Sequence[str] | None = None,
        *,
        all_tenants: bool = False,
    ) -> int:
        """Number of experiences of one tenant (or, for maintenance, of every tenant).

        Args:
            tenant_id: the tenant; ``None`` only together with ``all_tenants=True``.
            statuses: statuses to count; ``None`` = every status (deleted rows included).
            all_tenants: must be ``True`` to count across tenants (with ``tenant_id=None``).

        Raises:
            TenantRequiredError: ``tenant_id`` is ``None``/empty without ``all_tenants=True``.
            UsageError: both a tenant and ``all_tenants=True``; an unknown status.
        """
        query = select(func.count()).select_from(_table)
        if all_tenants:
            if tenant_id is not None:
                raise UsageError("pass either tenant_id or all_tenants=True, not both")
        elif tenant_id is None:
            raise TenantRequiredError(
                "tenant_id is required (pass all_tenants=True to count every tenant)"
            )
        else:
            query = query.where(_table.c.tenant_id == validate_tenant(tenant_id))
        if statuses is not None:
            query = query.where(_table.c.status.in_(norm_statuses(statuses)))
        with self._tx() as conn:
            return int(conn.execute(query).scalar_one())

    def get_vectors(self, ids: Sequence[Any]) -> dict[str, npt.NDArray[np.float32]]:
        """Stored embeddings by experience id (internal: the guard's consensus, index repair).

        Not tenant-scoped: ids come from the store itself. Ids without an embedding or row
        are left out.

        Raises:
            UsageError: an id is not a UUID.
        """
        wanted = norm_ids(ids)
        found: dict[str, npt.NDArray[np.float32]] = {}
        with self._tx() as conn:
            for part in chunks(wanted):
                for exp_id, vector in conn.execute(_VECTORS, {"ids": part}):
                    found[exp_id] = vector
        return found

    def update_experience(self, exp: Experience, *, vector: npt.ArrayLike | None = None) -> None:
        """Replace the stored fields of ``exp`` (matched by id within ``exp.tenant_id``).

        Every field is written as given (the caller sets ``updated_at``, ``version`` ...), in
        one transaction with the embedding (and the vector-outbox row of an index kept apart
        from SQL, so its point follows).

        Args:
            exp: the new state of an existing experience.
            vector: optional new embedding (1-D); ``None`` keeps the stored one.

        Raises:
            UsageError: ``exp`` is not an Experience, or a bad vector.
            NotFoundError: no experience with this id in this tenant.
        """
        if not isinstance(exp, Experience):
            raise UsageError(f"update_experience expects an Experience, got {type(exp).__name__}")
        exp = checked(exp)
        now = self._now()
        with self._tx(write=True) as conn:
            self._update_experience_row(conn, exp, vector, now)

    def _update_experience_row(
        self,
        conn: Connection,
        exp: Experience,
        vector: npt.ArrayLike | None,
        now: datetime,
        *,
        links: bool = True,
    ) -> None:
        """Inside a write transaction: replace the row of a checked ``exp`` (``links=False``:
        the caller knows its source runs did not change, so its ``experience_sources`` rows
        are not read again).

        Raises:
            NotFoundError: no experience with this id in this tenant.
        """
        self._lock_tenants(conn, [exp.tenant_id])
        row = experience_row(exp)
        del row["id"], row["tenant_id"]
        if vector is not None:
            array = _check_vectors(np.asarray(vector, dtype=np.float32).reshape(1, -1), 1)
            assert array is not None
            row["embedding"] = array[0]
        params = {f"v_{name}": value for name, value in row.items()}
        params["w_id"], params["w_tenant"] = exp.id, exp.tenant_id
        result = conn.execute(_update_of(frozenset(row)), params)
        if result.rowcount != 1:
            raise NotFoundError(f"experience {exp.id} not found in tenant {exp.tenant_id!r}")
        if links:
            self._sync_source_links(conn, exp)
        self._note_vector_changes(conn, now, exp.tenant_id, [exp.id])

    def set_status(self, tenant_id: str, ids: Sequence[Any], status: str) -> int:
        """Set the status of the tenant's experiences among ``ids``; bumps ``updated_at``.

        Recall filters on the status in the same transaction (pgvector); an index kept apart
        from SQL follows through the vector outbox (a ``deleted`` experience's point is
        removed, and written again from the stored embedding when it comes back).

        Returns:
            How many experiences changed (ids of other tenants, unknown ids and experiences
            already in that status are not counted).

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: an id is not a UUID, or an unknown status.
        """
        tenant = validate_tenant(tenant_id)
        new = norm_status(status)
        wanted = norm_ids(ids)
        if not wanted:
            return 0
        now = self._now()
        with self._tx(write=True) as conn:
            return len(self._set_status_rows(conn, tenant, wanted, new, now))

    def _set_status_rows(
        self, conn: Connection, tenant: str, wanted: list[str], new: str, now: datetime
    ) -> list[Any]:
        """Inside a write transaction: :meth:`set_status` for canonical ids; returns the rows
        (as they were before) of the experiences that changed."""
        self._lock_tenants(conn, [tenant])
        position = {exp_id: i for i, exp_id in enumerate(wanted)}
        changed: list[Any] = []
        for part in chunks(wanted):
            rows = list(
                conn.execute(
                    select(*_COLUMNS)
                    .where(
                        _table.c.tenant_id == tenant,
                        _table.c.id.in_(part),
                        _table.c.status != new,
                    )
                    .with_for_update()
                ).mappings()
            )
            if not rows:
                continue
            conn.execute(
                update(_table)
                .where(
                    _table.c.tenant_id == tenant,
                    _table.c.id.in_([r["id"] for r in rows]),
                )
                .values(status=new, updated_at=now)
            )
            rows.sort(key=lambda r: position[r["id"]])  # in the caller's order
            self._note_vector_changes(conn, now, tenant, [r["id"] for r in rows])
            changed += rows
        return changed

    def delete_experiences(self, tenant_id: str, ids: Sequence[Any]) -> int:
        """Soft delete: status ``deleted`` (the row stays for audit), vector removed.

        Returns:
            How many experiences were deleted now (unknown ids, ids of other tenants and
            already deleted ones are not counted and not touched).

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: an id is not a UUID.
        """
        return self.set_status(tenant_id, ids, _DELETED)

    def record_recall(
        self,
        tenant_id: str,
        ids: Sequence[Any],
        at: datetime,
        trajectory_id: Any | None = None,
    ) -> int:
        """Count a recall of ``ids``: ``recall_count + 1``, ``last_recalled_at = at``, and one
        row in ``recalls`` each (with the recalling run's ``trajectory_id``, if known, for
        outcome attribution). Buffered (:mod:`hindsight.store.recall_buffer`): written with
        the next batch, before any other transaction of this store, at the latest
        ``FLUSH_SECONDS`` later; readers of this store see it at once.

        Returns:
            How many of the tenant's experiences were counted (others are ignored).

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: a bad id or ``at`` not a datetime (naive = UTC).
        """
        tenant = validate_tenant(tenant_id)
        wanted = norm_ids(ids)
        if not isinstance(at, datetime):
            raise UsageError(f"at must be a datetime, got {type(at).__name__}")
        at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
        traj = None if trajectory_id is None else normalize_id(trajectory_id, "trajectory id")
        found: set[str] = set()
        with self.recall_reads(), self._tx() as conn:
            for part in chunks(wanted):
                query = select(_table.c.id).where(ids_in_tenant(part, tenant))
                found.update(conn.execute(query).scalars())
        known = [eid for eid in wanted if eid in found]
        self.buffer_recall(tenant, known, at, traj)
        return len(known)

    def buffer_recall(
        self, tenant: str, ids: Sequence[str], at: datetime, trajectory_id: str | None
    ) -> None:
        """:meth:`record_recall` of ``ids`` the caller read from the tenant's rows (already
        canonical, ``at`` aware UTC): no check, no read. Without a buffer (closed store) it
        is written at once."""
        item = PendingRecall(tenant, tuple(dict.fromkeys(ids)), at, trajectory_id)
        if self._recall_buffer is None:
            self._write_recalls([item])
        else:
            self._recall_buffer.add(item)

    def _write_recalls(self, batch: Sequence[PendingRecall]) -> None:
        """Write a batch of recall bookkeeping in one transaction, in recall order, for the
        experiences that still exist (a hard delete may have come between)."""
        with self._tx(write=True) as conn:
            by_tenant: dict[str, set[str]] = {}
            for item in batch:
                by_tenant.setdefault(item.tenant_id, set()).update(item.ids)
            self._lock_tenants(conn, by_tenant)
            alive: set[tuple[str, str]] = set()
            for tenant, ids in by_tenant.items():
                for part in chunks(sorted(ids)):
                    found = conn.execute(_IDS_IN_TENANT, {"ids": part, "tenant": tenant})
                    alive.update((tenant, eid) for eid in found.scalars())
            counts: dict[tuple[str, str], list[Any]] = {}
            log_rows: list[dict[str, Any]] = []
            for item in batch:
                for eid in item.ids:
                    if (item.tenant_id, eid) not in alive:
                        continue
                    entry = counts.setdefault((item.tenant_id, eid), [0, item.at])
                    entry[0] += 1
                    entry[1] = item.at
                    log_rows.append(
                        {
                            "tenant_id": item.tenant_id,
                            "experience_id": eid,
                            "trajectory_id": item.trajectory_id,
                            "recalled_at": item.at,
                        }
                    )
            if not counts:
                return
            conn.execute(
                _COUNT_RECALLS,
                [
                    {"b_id": eid, "b_tenant": tenant, "b_n": n, "b_at": at}
                    for (tenant, eid), (n, at) in counts.items()
                ],
            )
            conn.execute(_INSERT_RECALLS, log_rows)

    def _overlaid_list(self, tenant: str, rows: list[Experience]) -> list[Experience]:
        if self._recall_buffer is None or not self._recall_buffer.pending:
            return rows
        found = self._overlaid(tenant, {e.id: e for e in rows})
        return [found[e.id] for e in rows]

    def _overlaid(self, tenant: str, found: dict[str, Experience]) -> dict[str, Experience]:
        """``found`` with the pending recall counters of :mod:`.recall_buffer` added."""
        if self._recall_buffer is not None:
            self._recall_buffer.overlay(tenant, found)
        return found

    def active_by_lesson_key(
        self, tenant_id: str, namespace: str, lesson_key: str
    ) -> Experience | None:
        """The oldest ``active`` experience of ``tenant_id`` and ``namespace`` whose
        ``metadata["lesson_key"]`` is ``lesson_key`` (the one a new lesson with that
        key folds into), or ``None``. An index lookup (``lesson_key_hash``).

        Raises:
            TenantRequiredError: empty or missing tenant.
        """
        tenant = validate_tenant(tenant_id)
        digest = lesson_key_hash(lesson_key)
        if digest is None:
            return None
        keys = {"tenant": tenant, "digest": digest, "namespace": namespace}
        with self._tx() as conn:
            for row in conn.execute(_BY_LESSON_KEY, keys):
                exp = experience_from_stored(row)
                if exp.metadata.get("lesson_key") == lesson_key:  # not just the same hash
                    return exp
        return None

    def experiences_about_tool(
        self,
        tenant_id: str,
        tool: str,
        *,
        namespaces: Sequence[str],
        kinds: Sequence[str],
        limit: int = 200,
    ) -> list[Experience]:
        """The tenant's ``active`` experiences of ``kinds`` in ``namespaces`` that may be about
        the tool ``tool``: its name is in their ``tools``, or in their text when they have no
        tools list (written by a model, say) or a structured condition or comparison in their
        metadata (which names its own tool, :mod:`hindsight.checks.compile`). Most confident
        first, at most ``limit``. Exact lookups, no vectors (the risk checks,
        :mod:`hindsight.checks`, docs/checks.md).

        Cached per store: a lookup is answered from memory while the tenant's stamp
        (``experience_stamps``, bumped by database triggers on every write of the tenant's
        experiences, by any process) has not moved, one primary-key read instead of a scan of
        the tenant's lessons. A stamp read less than :attr:`about_tool_max_age` seconds ago
        (:data:`ABOUT_TOOL_MAX_AGE`, 1 s) is trusted without that read while this store object
        has ended no write transaction since: a write through this store is seen by the next
        call, one by another process (or another store object) within that many seconds. The
        recall bookkeeping alone (``recall_count``, ``last_recalled_at``) does not move the
        stamp: those two fields are as of when the rows were read, plus this process's pending
        recalls. The experiences returned may be shared with later calls: do not change
        them.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: an empty tool name, namespace or kind list.
        """
        tenant = validate_tenant(tenant_id)
        if not isinstance(tool, str) or not tool.strip():
            raise UsageError("tool must be a non-empty tool name")
        if not namespaces or not kinds:
            raise UsageError("namespaces and kinds must be non-empty lists")
        cache = self._about_tool_cache
        if cache is None:
            cache = self._about_tool_cache = _AboutToolCache()
        key = (tenant, tool, tuple(namespaces), tuple(kinds), int(limit))
        trusted = cache.trusted_stamp(tenant, self._writes, self.about_tool_max_age)
        if trusted is not None and not self._closed:
            cached = cache.get(key, trusted)
            if cached is not None:
                with self._stable():
                    return self._overlaid_list(tenant, list(cached))
        with self._stable():  # the overlay sees each pending recall once
            with self._tx() as conn:
                # the write count, then the stamp: a write ended after either makes the next
                # lookup read the stamp again, and one committed after it moves the stamp
                writes, at = self._writes, time.monotonic()
                stamp = int(conn.execute(_STAMP_OF_TENANT, {"tenant": tenant}).scalar() or 0)
                cache.read_stamp(tenant, stamp, writes, at)
                cached = cache.get(key, stamp)
                if cached is not None:
                    return self._overlaid_list(tenant, list(cached))
                # the query is built on a miss only (building it costs as much as the hit);
                # it reads the rows as the driver gives them, unconverted: a row equal to the
                # one read before keeps its experience object (and its compiled checks), so
                # after a write that touched none of the tool's lessons the lookup costs the
                # query, not converting and decoding every lesson again
                query, values = self._about_tool_query(tenant, tool, namespaces, kinds, limit)
                raw = conn.execute(query, values).all()
                fresh: dict[str, Experience] = {}
                changed = cache.changed(key, raw)
                if changed:  # read with the column types; validated on their way in
                    again = {k: v for k, v in values.items() if k != "limit"}
                    for row in conn.execute(self._by_ids, {**again, "ids": changed}):
                        exp = experience_from_stored(tuple(row))
                        fresh[exp.id] = exp
                decoded = cache.assemble(key, raw, fresh)
            rows = cache.put(key, stamp, decoded)
            return self._overlaid_list(tenant, list(rows))

    def _about_tool_query(
        self, tenant: str, tool: str, namespaces: Sequence[str], kinds: Sequence[str], limit: int
    ) -> tuple[Any, dict[str, Any]]:
        """The lookup's statement, built once per store (its values are bound parameters,
        the lists expanding ones; with it ``_by_ids``, the same conditions on the ids bound
        as ``ids``, every column converted by its type), and the values of this lookup."""
        statement = self._about_tool_statement
        if statement is None:
            if self._info.backend == "postgresql":
                from sqlalchemy.dialects.postgresql import JSONB

                # JSONB containment of a one-item array: the tool's name is in the array
                tools = type_coerce(_table.c.tools, JSONB)
                has_tool = tools.contains(bindparam("tool_list", type_=JSONB))
                meta = type_coerce(_table.c.metadata, JSONB)
                no_tools = tools == literal([], JSONB)  # never raises, whatever the value
                structured = meta.has_key("condition") | meta.has_key("contrast")
            else:
                items = func.json_each(_table.c.tools).table_valued("value")
                has_tool = select(items.c.value).where(items.c.value == bindparam("tool")).exists()
                no_tools = func.json_array_length(_table.c.tools) == 0
                structured = func.json_extract(_table.c.metadata, "$.condition").is_not(
                    None
                ) | func.json_extract(_table.c.metadata, "$.contrast").is_not(None)
            # a lesson with a tools list is about those tools, or about the tool its
            # structured condition or comparison names: its text is read for the name only
            # when it has neither (hindsight.checks.compile)
            in_text = _table.c.content.like(bindparam("pattern"), escape="\\") & (
                no_tools | structured
            )
            where = (
                _table.c.tenant_id == bindparam("tenant"),
                _table.c.status == ExperienceStatus.ACTIVE.value,
                _table.c.namespace.in_(bindparam("namespaces", expanding=True)),
                _table.c.kind.in_(bindparam("kinds", expanding=True)),
                has_tool | in_text,
            )
            statement = self._about_tool_statement = (
                select(*(type_coerce(c, NullType()).label(c.name) for c in _COLUMNS))
                .where(*where)
                .order_by(_table.c.confidence.desc(), _table.c.updated_at.desc(), _table.c.id)
                .limit(bindparam("limit"))
            )
            # the changed rows, read again under the same conditions: a row that stopped
            # matching between the two reads (another snapshot on PostgreSQL) is left out
            self._by_ids = select(*_COLUMNS).where(
                *where, _table.c.id.in_(bindparam("ids", expanding=True))
            )
        pattern = "%" + tool.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        values = {
            "tenant": tenant,
            "namespaces": list(namespaces),
            "kinds": list(kinds),
            "tool": tool,
            "tool_list": [tool],
            "pattern": pattern,
            "limit": int(limit),
        }
        return statement, values

    def experiences_of_runs(
        self,
        tenant_id: str,
        trajectory_ids: Sequence[Any],
        *,
        statuses: Sequence[str] = ("active",),
    ) -> dict[str, list[str]]:
        """The experiences each run taught: ``{trajectory id: [experience ids]}`` for the
        tenant's experiences in ``statuses`` whose ``source_trajectory_ids`` hold the run
        (the ``experience_sources`` table, an index lookup). Runs that taught nothing are left
        out; ids within a run are in id order.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: an id is not a UUID, or an unknown status.
        """
        tenant = validate_tenant(tenant_id)
        wanted = norm_ids(trajectory_ids, "trajectory id")
        found: dict[str, list[str]] = {}
        if not wanted:
            return found
        with self._tx() as conn:
            wanted_statuses = norm_statuses(statuses)
            for part in chunks(wanted):
                values = {"tenant": tenant, "ids": part, "statuses": wanted_statuses}
                for tid, eid in conn.execute(_TAUGHT_BY_RUNS, values):
                    found.setdefault(tid, []).append(eid)
        return found

    def recalled_ids(self, tenant_id: str, trajectory_id: Any) -> list[str]:
        """Ids of the experiences recalled by the run ``trajectory_id`` (first recall first).

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: the id is not a UUID.
        """
        tenant = validate_tenant(tenant_id)
        traj = normalize_id(trajectory_id, "trajectory id")
        query = (
            select(recalls.c.experience_id)
            .where(recalls.c.tenant_id == tenant, recalls.c.trajectory_id == traj)
            .order_by(recalls.c.id)
        )
        with self._tx() as conn:
            return list(dict.fromkeys(conn.execute(query).scalars()))
