"""The outbox: vector-index changes committed with the SQL rows, replayed until acknowledged."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select

from hindsight._errors import UsageError
from hindsight.store._base import StoreCore, chunks
from hindsight.store.codec import outbox_from_row
from hindsight.store.records import OutboxItem
from hindsight.store.schema import outbox

__all__ = ["OutboxStore"]


class OutboxStore(StoreCore):
    """Outbox methods of :class:`~hindsight.store.SqlStore`.

    Every write that should change the vector index adds outbox rows in the same transaction.
    A consumer applies :meth:`pending_outbox` in order to the index (each op is idempotent),
    then calls :meth:`ack_outbox`. A crash in between only means the ops are applied again.
    """

    def pending_outbox(self, limit: int = 1000) -> list[OutboxItem]:
        """Up to ``limit`` (>= 1) unacknowledged items, oldest first.

        Raises:
            UsageError: ``limit`` is not a positive integer.
        """
        if not isinstance(limit, int) or limit < 1:
            raise UsageError(f"limit must be a positive integer, got {limit!r}")
        query = select(outbox).order_by(outbox.c.id).limit(limit)
        with self._tx() as conn:
            return [outbox_from_row(row) for row in conn.execute(query).mappings()]

    def ack_outbox(self, ids: Sequence[int]) -> None:
        """Remove applied items by id; unknown ids are ignored.

        Raises:
            UsageError: an id is not an integer.
        """
        values = list(dict.fromkeys(ids))
        if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            raise UsageError("outbox ids must be integers (OutboxItem.id)")
        if not values:
            return
        with self._tx(write=True) as conn:
            for part in chunks(values):
                conn.execute(delete(outbox).where(outbox.c.id.in_(part)))
