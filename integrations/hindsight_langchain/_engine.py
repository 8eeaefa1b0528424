"""The hindsight engine as the integration uses it, with error accounting.

The handler and the middleware take a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`
and must work from sync code, from async code and from executor threads. This wraps both
behind one sync and one async API, and keeps the count and last text of the integration's own
failures: they are logged, never raised into the host application.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any
from uuid import UUID

from hindsight import AsyncMemory, Memory, Outcome, Trajectory
from hindsight._errors import UsageError

__all__ = ["Engine", "log"]

log = logging.getLogger("hindsight.langchain")

REMEMBERED_RUNS = 1000
"""How many root run id -> trajectory id pairs a handler keeps (oldest dropped first)."""


class Engine:
    """A memory (sync and async), the trajectories stored through it and the failures seen.

    Raises:
        UsageError: ``memory`` is neither a ``Memory`` nor an ``AsyncMemory``.
    """

    def __init__(self, memory: Memory | AsyncMemory, *, review: bool = True) -> None:
        if isinstance(memory, Memory):
            self.sync, self.aio = memory, memory.aio
        elif isinstance(memory, AsyncMemory):
            self.sync, self.aio = Memory.from_async(memory), memory
        else:
            raise UsageError(
                f"memory must be a hindsight.Memory or hindsight.AsyncMemory, "
                f"got {type(memory).__name__}"
            )
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

    def store(self, traj: Trajectory, run_id: UUID | str | None = None) -> bool:
        """Store ``traj`` (review queued by the engine) and, when its outcome is known,
        attribute it to what the run recalled. Returns False on failure (logged, counted)."""
        try:
            receipt = self.sync.store_episode(traj, review=self.review)
            self._stored(traj, receipt, run_id)
            if traj.outcome in (Outcome.SUCCESS, Outcome.FAILURE):
                self.sync.record_outcome(
                    traj.id, traj.outcome is Outcome.SUCCESS, tenant_id=traj.tenant_id
                )
        except Exception as exc:
            self.fail(f"could not store trajectory {traj.id}", exc)
            return False
        return True

    async def astore(self, traj: Trajectory, run_id: UUID | str | None = None) -> bool:
        """Async :meth:`store`."""
        try:
            receipt = await self.aio.store_episode(traj, review=self.review)
            self._stored(traj, receipt, run_id)
            if traj.outcome in (Outcome.SUCCESS, Outcome.FAILURE):
                await self.aio.record_outcome(
                    traj.id, traj.outcome is Outcome.SUCCESS, tenant_id=traj.tenant_id
                )
        except Exception as exc:
            self.fail(f"could not store trajectory {traj.id}", exc)
            return False
        return True
