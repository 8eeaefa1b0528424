"""The registry of vector-log replicas: which indexes follow the log, where, how far.

Each process registers the index it opened (:class:`~hindsight.store.vector_sync.VectorSync`)
and refreshes its row while it runs (position, point count, last error, last seen), so that
``hindsight doctor``, ``hindsight stats`` and ``/ready`` can show every replica's lag. A Qdrant
collection shared by several processes is one row, whose ``position`` is the collection's own
and whose lease lets one process at a time apply the log to it.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, or_, select, update

from hindsight._errors import UsageError
from hindsight.store._base import StoreCore
from hindsight.store.codec import replica_from_row
from hindsight.store.records import ReplicaRecord
from hindsight.store.schema import vector_replicas

__all__ = ["ReplicaStore"]

_r = vector_replicas.c
_MAX_ERROR = 2000


def _check_id(replica_id: Any) -> str:
    if not isinstance(replica_id, str) or not replica_id.strip() or len(replica_id) > 400:
        raise UsageError(
            f"replica id must be a non-empty string of <= 400 characters, got {replica_id!r:.80}"
        )
    return replica_id


class ReplicaStore(StoreCore):
    """Replica-registry methods of :class:`~hindsight.store.SqlStore`."""

    def register_replica(
        self,
        replica_id: str,
        *,
        kind: str,
        location: str,
        host: str,
        pid: int,
        log_id: str,
        position: int | None,
    ) -> ReplicaRecord:
        """Create or take over the row of ``replica_id`` (a process (re)opening its index).

        ``position=None`` keeps the stored position (a shared collection: the collection's
        own position, which this process does not know yet).

        Returns:
            The row as stored now.
        """
        rid = _check_id(replica_id)
        now = self._now()
        values: dict[str, Any] = {
            "kind": kind[:32],
            "location": location,
            "host": host[:200],
            "pid": int(pid),
            "started_at": now,
            "last_seen": now,
            "last_error": None,
        }
        with self._tx(write=True) as conn:
            insert_values = {
                **values,
                "id": rid,
                "log_id": log_id,
                "position": int(position or 0),
            }
            conn.execute(self._insert_ignore(vector_replicas).values(**insert_values))
            if position is not None:
                values.update(log_id=log_id, position=int(position))
            conn.execute(update(vector_replicas).where(_r.id == rid).values(**values))
            row = conn.execute(select(vector_replicas).where(_r.id == rid)).mappings().one()
        return replica_from_row(row)

    def heartbeat_replica(
        self,
        replica_id: str,
        *,
        log_id: str | None = None,
        position: int | None = None,
        points: int | None = None,
        error: str | None = None,
    ) -> None:
        """Record that the replica is alive: ``last_seen`` now, and the given position (with
        its ``log_id``), point count and last error (``None`` clears it)."""
        rid = _check_id(replica_id)
        values: dict[str, Any] = {
            "last_seen": self._now(),
            "last_error": None if error is None else str(error)[:_MAX_ERROR],
        }
        if position is not None:
            values["position"] = int(position)
            if log_id is not None:
                values["log_id"] = log_id
        if points is not None:
            values["points"] = int(points)
        with self._tx(write=True) as conn:
            conn.execute(update(vector_replicas).where(_r.id == rid).values(**values))

    def get_replica(self, replica_id: str) -> ReplicaRecord | None:
        """The row of ``replica_id``, or ``None``."""
        rid = _check_id(replica_id)
        with self._tx() as conn:
            row = conn.execute(select(vector_replicas).where(_r.id == rid)).mappings().first()
        return None if row is None else replica_from_row(row)

    def list_replicas(self) -> list[ReplicaRecord]:
        """Every registered replica, most recently seen first."""
        query = select(vector_replicas).order_by(_r.last_seen.desc(), _r.id)
        with self._tx() as conn:
            return [replica_from_row(row) for row in conn.execute(query).mappings()]

    def forget_replica(self, replica_id: str) -> None:
        """Remove the row of ``replica_id`` (an in-process index that closed: it is gone)."""
        rid = _check_id(replica_id)
        with self._tx(write=True) as conn:
            conn.execute(delete(vector_replicas).where(_r.id == rid))

    def prune_replicas(self, before: datetime) -> int:
        """Remove replicas not seen since ``before``; returns how many."""
        with self._tx(write=True) as conn:
            result = conn.execute(delete(vector_replicas).where(_r.last_seen < before))
            return int(result.rowcount or 0)

    def take_replica_lease(self, replica_id: str, owner: str, seconds: float) -> bool:
        """Take (or renew) the apply lease of a shared replica for ``seconds``; ``False`` when
        another owner holds an unexpired lease (or there is no such row)."""
        rid = _check_id(replica_id)
        if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds <= 0:
            raise UsageError(f"seconds must be a positive number, got {seconds!r:.40}")
        now = self._now()
        free = or_(_r.lease_owner.is_(None), _r.lease_owner == owner, _r.lease_expires_at < now)
        with self._tx(write=True) as conn:
            result = conn.execute(
                update(vector_replicas)
                .where(and_(_r.id == rid, free))
                .values(lease_owner=owner[:200], lease_expires_at=now + timedelta(seconds=seconds))
            )
            return int(result.rowcount or 0) == 1

    def release_replica_lease(
        self, replica_id: str, owner: str, *, log_id: str | None = None, position: int | None = None
    ) -> None:
        """Give the lease back; with ``position`` (and ``log_id``), record how far the holder
        applied the log to the shared collection."""
        rid = _check_id(replica_id)
        values: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None}
        if position is not None:
            values["position"] = int(position)
            values["last_seen"] = self._now()
            if log_id is not None:
                values["log_id"] = log_id
        with self._tx(write=True) as conn:
            conn.execute(
                update(vector_replicas)
                .where(_r.id == rid, _r.lease_owner == owner[:200])
                .values(**values)
            )
