"""The vector log: every change of what the vector indexes must hold, in commit order.

Each write that changes a vector (insert, re-embed, status change, delete, forget) appends
entries in its own transaction (:meth:`StoreCore._log_vector_changes`, inserted just before the
commit so that ``seq`` order is commit order). Consumers never delete entries: each vector
index is a replica that remembers the last ``seq`` it applied (:mod:`.vector_sync`), like a
consumer offset in Kafka or a subscription in PostgreSQL logical replication. Entries older
than the retention are compacted away; a replica that was behind them rebuilds from the
experience rows, which keep every embedding.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import delete, func, select

from hindsight._errors import UsageError
from hindsight.models import ExperienceStatus
from hindsight.store._base import StoreCore, chunks, norm_ids
from hindsight.store.codec import change_from_row, payload_from_values, vector_from_bytes
from hindsight.store.records import VectorChange, VectorLogState
from hindsight.store.schema import experiences as _exp
from hindsight.store.schema import meta, vector_log

__all__ = ["VectorLogStore", "VectorRow", "log_head"]

LOG_ID_KEY = "vector_log_id"
LOG_FLOOR_KEY = "vector_log_floor"
_DELETED = ExperienceStatus.DELETED.value
_PAYLOAD_COLUMNS = (
    _exp.c.id,
    _exp.c.tenant_id,
    _exp.c.namespace,
    _exp.c.task_type,
    _exp.c.status,
    _exp.c.kind,
    _exp.c.tags,
    _exp.c.tools,
    _exp.c.confidence,
    _exp.c.trust,
    _exp.c.updated_at,
    _exp.c.source_trajectory_ids,
    _exp.c.embedding,
)

VectorRow = tuple[str, dict[str, Any], npt.NDArray[np.float32]]
"""``(experience id, vector payload, float32 embedding)`` of a point an index must hold."""


_HEAD = select(
    select(meta.c.value).where(meta.c.key == LOG_ID_KEY).scalar_subquery(),
    select(meta.c.value).where(meta.c.key == LOG_FLOOR_KEY).scalar_subquery(),
    select(func.max(vector_log.c.seq)).scalar_subquery(),
)


def log_head(conn: Any) -> tuple[str | None, int]:
    """``(log id, head)`` of the vector log as :meth:`VectorLogStore.vector_log_state` gives
    them, in one statement on ``conn``'s transaction (``None`` as the id before the first
    ``vector_log_state``). Recall compares it with the position its replica had applied when
    it searched (:mod:`hindsight.recall.pipeline`)."""
    log_id, floor, head = conn.execute(_HEAD).one()
    return log_id, max(int(floor or 0), int(head or 0))


def _check_count(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(f"{what} must be an integer >= {minimum}, got {value!r:.40}")
    return value


def _row_point(row: Any) -> VectorRow:
    payload = payload_from_values(
        row["tenant_id"],
        row["namespace"],
        row["task_type"],
        row["status"],
        row["kind"],
        row["tags"],
        scoring=(
            row["tools"],
            row["confidence"],
            row["trust"],
            row["updated_at"],
            row["source_trajectory_ids"],
        ),
    )
    return row["id"], payload, vector_from_bytes(row["embedding"])


class VectorLogStore(StoreCore):
    """Vector-log methods of :class:`~hindsight.store.SqlStore` (see the module docstring)."""

    def vector_log_state(self) -> VectorLogState:
        """The log's id, head and floor (see :class:`VectorLogState`), read in one
        transaction; the id is created on first use."""
        with self._tx() as conn:
            values = dict(
                conn.execute(
                    select(meta.c.key, meta.c.value).where(
                        meta.c.key.in_([LOG_ID_KEY, LOG_FLOOR_KEY])
                    )
                ).all()
            )
            head = conn.execute(select(func.max(vector_log.c.seq))).scalar_one_or_none()
        log_id = values.get(LOG_ID_KEY)
        if log_id is None:
            with self._tx(write=True) as conn:
                conn.execute(
                    self._insert_ignore(meta).values(key=LOG_ID_KEY, value=str(uuid.uuid4()))
                )
                log_id = conn.execute(
                    select(meta.c.value).where(meta.c.key == LOG_ID_KEY)
                ).scalar_one()
        floor = int(values.get(LOG_FLOOR_KEY) or 0)
        return VectorLogState(str(log_id), max(floor, int(head or 0)), floor)

    def read_vector_log(
        self, after: int, limit: int = 1000
    ) -> tuple[list[VectorChange], str | None, int]:
        """Up to ``limit`` log entries with ``seq > after`` in ``seq`` order, then the log's id
        and floor, read after them (a compaction that removed entries after ``after`` shows
        in the floor: the caller must then rebuild instead of applying a log with a hole).

        Returns:
            ``(changes, log_id, floor)``; ``log_id`` is ``None`` before the first
            :meth:`vector_log_state`.

        Raises:
            UsageError: ``after`` is not an integer >= 0 or ``limit`` not >= 1.
        """
        _check_count(after, "after", 0)
        _check_count(limit, "limit", 1)
        query = (
            select(vector_log)
            .where(vector_log.c.seq > after)
            .order_by(vector_log.c.seq)
            .limit(limit)
        )
        with self._tx() as conn:
            changes = [change_from_row(row) for row in conn.execute(query).mappings()]
            values = dict(
                conn.execute(
                    select(meta.c.key, meta.c.value).where(
                        meta.c.key.in_([LOG_ID_KEY, LOG_FLOOR_KEY])
                    )
                ).all()
            )
        return changes, values.get(LOG_ID_KEY), int(values.get(LOG_FLOOR_KEY) or 0)

    def vector_points(self, ids: Sequence[Any]) -> dict[str, VectorRow | None]:
        """What the index must hold for each of ``ids`` (any tenant: the log names them):
        the point, or ``None`` when the row is gone, deleted or has no embedding."""
        wanted = norm_ids(ids)
        found: dict[str, VectorRow | None] = dict.fromkeys(wanted)
        with self._tx() as conn:
            for part in chunks(wanted):
                query = select(*_PAYLOAD_COLUMNS).where(_exp.c.id.in_(part))
                for row in conn.execute(query).mappings():
                    if row["status"] != _DELETED and row["embedding"] is not None:
                        found[row["id"]] = _row_point(row)
        return found

    def vector_rows(self, after_id: str = "", limit: int = 1000) -> list[VectorRow]:
        """Up to ``limit`` points the index must hold, ordered by id after ``after_id``: every
        experience of every tenant that is not deleted and has an embedding (a rebuild pages
        through them; maintenance only, never show them to a tenant).

        Raises:
            UsageError: ``limit`` not >= 1.
        """
        _check_count(limit, "limit", 1)
        query = (
            select(*_PAYLOAD_COLUMNS)
            .where(_exp.c.id > after_id, _exp.c.status != _DELETED, _exp.c.embedding.is_not(None))
            .order_by(_exp.c.id)
            .limit(limit)
        )
        with self._tx() as conn:
            return [_row_point(row) for row in conn.execute(query).mappings()]

    def count_vector_rows(self) -> int:
        """How many points a complete index holds (:meth:`vector_rows` counted)."""
        query = (
            select(func.count())
            .select_from(_exp)
            .where(_exp.c.status != _DELETED, _exp.c.embedding.is_not(None))
        )
        with self._tx() as conn:
            return int(conn.execute(query).scalar_one())

    def restart_vector_log(self) -> VectorLogState:
        """Start a new log (new id, no entries): every replica rebuilds from SQL at its next
        catch-up. For changes made without log entries: a restore, a re-embed."""
        with self._tx(write=True) as conn:
            self._lock_vector_log(conn)
            conn.execute(delete(vector_log))
            for key, value in ((LOG_ID_KEY, str(uuid.uuid4())), (LOG_FLOOR_KEY, "0")):
                conn.execute(
                    self._upsert_insert(meta)
                    .values(key=key, value=value)
                    .on_conflict_do_update(index_elements=[meta.c.key], set_={"value": value})
                )
        return self.vector_log_state()

    def compact_vector_log(self, before: datetime) -> int:
        """Delete entries written before ``before``, always keeping the newest one (so ``seq``
        keeps growing on SQLite too), and raise the floor to the last one deleted.

        Returns:
            How many entries were deleted.
        """
        with self._tx(write=True) as conn:
            self._lock_vector_log(conn)  # one compaction at a time; the floor only grows
            head = conn.execute(select(func.max(vector_log.c.seq))).scalar_one_or_none()
            if head is None:
                return 0
            floor = conn.execute(
                select(meta.c.value).where(meta.c.key == LOG_FLOOR_KEY)
            ).scalar_one_or_none()
            cutoff = conn.execute(
                select(func.max(vector_log.c.seq)).where(
                    vector_log.c.created_at < before, vector_log.c.seq < head
                )
            ).scalar_one_or_none()
            if cutoff is None:
                return 0
            result = conn.execute(delete(vector_log).where(vector_log.c.seq <= cutoff))
            value = str(max(int(cutoff), int(floor or 0)))
            conn.execute(
                self._upsert_insert(meta)
                .values(key=LOG_FLOOR_KEY, value=value)
                .on_conflict_do_update(index_elements=[meta.c.key], set_={"value": value})
            )
            return int(result.rowcount or 0)
