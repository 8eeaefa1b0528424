"""Storing finished trajectories off the host's event loop.

Instrumentation handlers are synchronous and run inside the agent's task: a blocking SQL write
there would stall the host app. Trajectories go to one worker thread that awaits
``AsyncMemory.store_episode`` (which queues the review; the review itself runs on the engine's
own background loop and is never awaited here). The worker is a normal (non-daemon) thread, so
queued writes still finish when the interpreter exits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from typing import Any

from hindsight import AsyncMemory, EpisodeReceipt, Trajectory
from hindsight.service.remote import RemoteAsync, memory_faces

__all__ = ["EpisodeWriter", "as_async_memory"]

log = logging.getLogger("hindsight.llamaindex")


def as_async_memory(memory: Any) -> AsyncMemory | RemoteAsync:
    """The async face of ``memory``: the :class:`~hindsight.AsyncMemory` behind a Memory or an
    AsyncMemory, or the :class:`~hindsight.service.remote.RemoteAsync` of a ``HindsightClient`` /
    ``AsyncHindsightClient`` (issue 9; the same object for the same client).

    Raises:
        UsageError: anything else (the message lists the accepted types).
    """
    return memory_faces(memory)[1]


class EpisodeWriter:
    """Stores trajectories through the engine on a worker thread; never raises to the caller.

    Attributes:
        unsaved: trajectories whose store failed (kept so nothing disappears silently).
        errors: how many stores failed.
    """

    def __init__(self, memory: AsyncMemory | RemoteAsync, *, review: bool = True) -> None:
        self._memory = memory
        self._review = review
        self._lock = threading.Lock()
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self.unsaved: list[Trajectory] = []
        self.errors = 0

    def _store(self, trajectory: Trajectory) -> EpisodeReceipt | None:
        try:
            try:
                return asyncio.run(self._memory.store_episode(trajectory, review=self._review))
            except RuntimeError as err:
                if "shutdown" not in str(err):
                    raise
                return self._store_at_exit(trajectory)
        except Exception:
            log.exception(
                "hindsight: could not store trajectory %s (kept in capture.unsaved)",
                trajectory.id,
            )
            with self._lock:
                self.errors += 1
                self.unsaved.append(trajectory)
            return None

    def _store_at_exit(self, trajectory: Trajectory) -> EpisodeReceipt:
        """Interpreter shutdown forbids new threads (``asyncio.to_thread`` fails): write the
        row directly. Its review job stays pending and resumes when the store is next opened
        (the engine's rule for jobs left at exit, case C16)."""
        if isinstance(self._memory, RemoteAsync):  # no new threads at exit: send from here
            return self._memory.sync.store_episode(trajectory, review=self._review)
        queue = self._review and not trajectory.is_empty()
        stored = bool(self._memory.store.add_trajectory(trajectory, enqueue_review=queue))
        return EpisodeReceipt(
            trajectory_id=trajectory.id, stored=stored, review_queued=stored and queue
        )

    def submit(self, trajectory: Trajectory) -> concurrent.futures.Future[EpisodeReceipt | None]:
        """Queue ``trajectory``; the future gives the receipt, or None when the store failed.

        After interpreter shutdown has begun, the store happens at once on this thread.
        """
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="hindsight-llamaindex-store"
                )
            executor = self._executor
        try:
            return executor.submit(self._store, trajectory)
        except RuntimeError:  # "cannot schedule new futures after (interpreter) shutdown"
            done: concurrent.futures.Future[EpisodeReceipt | None] = concurrent.futures.Future()
            done.set_result(self._store(trajectory))
            return done

    def store_now(self, trajectory: Trajectory) -> EpisodeReceipt | None:
        """Store on the calling thread (used at exit, when no worker may start)."""
        return self._store(trajectory)

    def shutdown(self, wait: bool = True) -> None:
        """Finish queued stores (``wait``) and stop the worker; a later submit starts a new one."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=wait)
