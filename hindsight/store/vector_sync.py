"""Keeps the vector index in step with the SQL store through the store's outbox.

Every SQL write that changes what the index must hold also writes outbox rows in the same
transaction. :meth:`VectorSync.sync` applies them to the index and acknowledges them; it runs
after each write and at open, so a crash between the SQL commit and the vector write is
repaired on the next open (issue 2: SQL and vectors never silently diverge).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from hindsight.models import Experience, ExperienceStatus
from hindsight.ports import VectorIndex, VectorPoint
from hindsight.store import SqlStore, vector_payload

__all__ = ["VectorSync"]

log = logging.getLogger("hindsight")


class VectorSync:
    """Applies pending outbox operations of ``store`` to ``index`` (thread-safe)."""

    def __init__(self, store: SqlStore, index: VectorIndex) -> None:
        self.store = store
        self.index = index
        self._lock = threading.Lock()

    def sync(self) -> int:
        """Apply every pending outbox operation; returns how many were applied."""
        applied = 0
        with self._lock:
            while True:
                items = self.store.pending_outbox(limit=1000)
                if not items:
                    return applied
                self._apply(items)
                self.store.ack_outbox([item.id for item in items])
                applied += len(items)

    def _apply(self, items: Sequence[Any]) -> None:
        wanted: dict[str, list[str]] = {}
        for item in items:
            if item.op in ("upsert", "set_status"):
                wanted.setdefault(item.tenant_id, []).append(item.experience_id)
        # Upserts re-read the current row, so replaying them in any order converges.
        current: dict[str, Experience] = {}
        vectors: dict[str, Any] = {}
        for tenant, ids in wanted.items():
            current.update(self.store.get_experiences(tenant, ids))
            vectors.update(self.store.get_vectors(ids))
        upserts: list[VectorPoint] = []
        for item in items:
            if item.op in ("upsert", "set_status"):
                exp = current.get(item.experience_id)
                if exp is None or exp.status is ExperienceStatus.DELETED:
                    self._flush(upserts)
                    self.index.delete([item.experience_id])
                elif item.experience_id in vectors:
                    upserts.append(VectorPoint(exp.id, vectors[exp.id], vector_payload(exp)))
            elif item.op == "delete":
                self._flush(upserts)
                self.index.delete([item.experience_id])
            elif item.op == "delete_tenant":
                self._flush(upserts)
                self.index.delete_tenant(item.tenant_id)
            else:
                log.warning("hindsight: unknown outbox op %r skipped", item.op)
        self._flush(upserts)

    def _flush(self, upserts: list[VectorPoint]) -> None:
        if upserts:
            self.index.upsert(list(upserts))
            upserts.clear()
