"""The hindsight engine as the integration uses it, with error accounting.

The handler and the middleware take a :class:`hindsight.Memory`, a
:class:`hindsight.AsyncMemory` or a client of a hindsight service (:mod:`hindsight.service.remote`,
issue 9) and must work from sync code, from async code and from executor threads. This wraps both
behind one sync and one async API, and keeps the count and last text of the integration's own
failures: they are logged, never raised into the host application.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any
from uuid import UUID

from hindsight import Outcome, Trajectory
from hindsight.service.remote import memory_faces

__all__ = ["Engine", "log"]

log = logging.getLogger("hindsight.langchain")

REMEMBERED_RUNS = 1000
"""How many root run id -> trajectory id pairs a handler keeps (oldest dropped first)."""

MAX_UNSAVED = 1000
"""How many trajectories whose store failed (e.g. the server was down) are kept and retried at
the next end of run; beyond that the oldest is dropped with a warning."""


class Engine:
    """A memory (sync and async), the trajectories stored through it and the failures seen.

    Raises:
        UsageError: ``memory`` is not a Memory, AsyncMemory, HindsightClient or
            AsyncHindsightClient.

    A trajectory whose store fails is kept in ``unsaved`` (at most :data:`MAX_UNSAVED`) and
    stored again before the next run's, so a server that was down loses nothing it comes back
    from.
    """

    def __init__(self, memory: Any, *, review: bool = True) -> None:
        self.sync, self.aio = memory_faces(memory)
        self.unsaved: OrderedDict[str, tuple[Trajectory, UUID | str | None]] = OrderedDict()
        self.review = review
        self.errors = 0
        self.last_error: str | None = None
        self.stored = 0
        self.last_trajectory_id: str | None = None
        self.trajectory_ids: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def fail(self, what: str, exc: BaseException) -> None:
        """Count and log one of our own failures (never re-raised)."""
        text = f"{what}: {type(exc).__name__}: {exc}"
        with self._lock:
            self.errors += 1
            self.last_error = text
        log.warning("hindsight: %s", text, exc_info=log.isEnabledFor(logging.DEBUG))

    def _stored(self, traj: Trajectory, receipt: Any, run_id: UUID | str | None) -> None:
        if not receipt.get("stored", True):
            log.warning(
                "hindsight: trajectory %s was already stored; this run was not stored again "
                "(was a run_id reused?)",
                traj.id,
            )
        with self._lock:
            self.stored += 1
            self.last_trajectory_id = traj.id
            if run_id is not None:
                self.trajectory_ids[str(run_id)] = traj.id
                while len(self.trajectory_ids) > REMEMBERED_RUNS:
                    self.trajectory_ids.popitem(last=False)

    def _keep(self, traj: Trajectory, run_id: UUID | str | None) -> None:
        with self._lock:
            self.unsaved[traj.id] = (traj, run_id)
            while len(self.unsaved) > MAX_UNSAVED:
                lost, _ = self.unsaved.popitem(last=False)[1]
                log.warning(
                    "hindsight: dropped unsaved trajectory %s (over %d)", lost.id, MAX_UNSAVED
                )

    def _failed(self, items: list[tuple[Trajectory, UUID | str | None]], exc: Exception) -> bool:
        """Keep the run that failed and this end of run's own; log once. Returns False."""
        for traj, run_id in items:
            self._keep(traj, run_id)
        self.fail(f"could not store trajectory {items[0][0].id} (kept for a retry)", exc)
        return False

    def _done(self, traj: Trajectory) -> None:
        with self._lock:
            self.unsaved.pop(traj.id, None)

    def _retry_list(self, traj: Trajectory) -> list[tuple[Trajectory, UUID | str | None]]:
        with self._lock:
            return [item for tid, item in self.unsaved.items() if tid != traj.id]

    def _store_one(self, traj: Trajectory, run_id: UUID | str | None) -> None:
        receipt = self.sync.store_episode(traj, review=self.review)
        self._stored(traj, receipt, run_id)
        if traj.outcome in (Outcome.SUCCESS, Outcome.FAILURE):
            self.sync.record_outcome(
                traj.id, traj.outcome is Outcome.SUCCESS, tenant_id=traj.tenant_id
            )

    async def _astore_one(self, traj: Trajectory, run_id: UUID | str | None) -> None:
        receipt = await self.aio.store_episode(traj, review=self.review)
        self._stored(traj, receipt, run_id)
        if traj.outcome in (Outcome.SUCCESS, Outcome.FAILURE):
            await self.aio.record_outcome(
                traj.id, traj.outcome is Outcome.SUCCESS, tenant_id=traj.tenant_id
            )

    def store(self, traj: Trajectory, run_id: UUID | str | None = None) -> bool:
        """Store ``traj`` (review queued by the engine) and, when its outcome is known,
        attribute it to what the run recalled; first retry the runs kept in ``unsaved``.
        Returns False on failure (logged, counted, ``traj`` kept in ``unsaved``)."""
        for old, old_run in [*self._retry_list(traj), (traj, run_id)]:
            try:
                self._store_one(old, old_run)
            except Exception as exc:
                return self._failed([(old, old_run), (traj, run_id)], exc)
            self._done(old)
        return True

    async def astore(self, traj: Trajectory, run_id: UUID | str | None = None) -> bool:
        """Async :meth:`store`."""
        for old, old_run in [*self._retry_list(traj), (traj, run_id)]:
            try:
                await self._astore_one(old, old_run)
            except Exception as exc:
                return self._failed([(old, old_run), (traj, run_id)], exc)
            self._done(old)
        return True
