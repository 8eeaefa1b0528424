"""Storing finished trajectories off the host's event loop, through the memory's writer.

Instrumentation handlers are synchronous and run inside the agent's task: a blocking SQL write
there would stall the host app. Finished runs go to the memory's background writer
(:mod:`hindsight.capture.writer`, shared with the LangChain and LangGraph integrations): it
stores them in order, queues their review and credits or blames what they recalled when the
outcome is known. ``Memory.close()`` drains it (bounded) and keeps what it could not write in
the memory's unsaved area, stored at its next open (docs/concepts.md#storage).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from typing import Any

from hindsight import AsyncMemory, Memory, Trajectory
from hindsight._contract import switch
from hindsight.capture.unsaved import PendingWrite
from hindsight.service.remote import RemoteAsync, memory_faces, writer_of

__all__ = ["EpisodeWriter", "as_async_memory"]

log = logging.getLogger("hindsight.llamaindex")

REMEMBERED = 10_000
"""Trajectory ids of this integration remembered (to tell its kept writes from others')."""


def as_async_memory(memory: Any) -> AsyncMemory | RemoteAsync:
    """The async face of ``memory``: the :class:`~hindsight.AsyncMemory` behind a Memory or an
    AsyncMemory, or the :class:`~hindsight.service.remote.RemoteAsync` of a ``HindsightClient`` /
    ``AsyncHindsightClient`` (the same object for the same client).

    Raises:
        UsageError: anything else (the message lists the accepted types).
    """
    return memory_faces(memory)[1]


class EpisodeWriter:
    """Hands trajectories to the memory's background writer; never raises to the caller.

    Attributes:
        errors: how many of this integration's writes failed (each is kept for a retry).
    """

    def __init__(self, memory: AsyncMemory | RemoteAsync, *, review: bool = True) -> None:
        self.sync = memory_faces(memory)[0]
        self.writer = writer_of(self.sync)
        self._review = switch(review, "review", True)  # refused here, not in the writer
        self._lock = threading.Lock()
        self._mine: dict[str, None] = {}
        self.errors = 0

    def attach(self, owner: Any) -> None:
        """Tell a local memory that ``owner`` writes into it (``Memory.close()`` drains it)."""
        if isinstance(self.sync, Memory):
            self.sync.attach(owner)

    def _done(self, future: concurrent.futures.Future[Any], write: PendingWrite) -> None:
        if future.cancelled() or future.exception() is not None or future.result() is None:
            with self._lock:
                self.errors += 1

    def submit(
        self, trajectory: Trajectory, *, attribute: bool = True
    ) -> concurrent.futures.Future[Any]:
        """Queue ``trajectory``; the future gives the receipt, or None when it was not written
        now (kept for a retry, or in the unsaved area when the memory is closed)."""
        with self._lock:
            self._mine[trajectory.id] = None
            while len(self._mine) > REMEMBERED:
                self._mine.pop(next(iter(self._mine)))
        write = PendingWrite(trajectory, review=self._review, attribute=attribute)
        future = self.writer.submit(write)
        future.add_done_callback(lambda f: self._done(f, write))
        return future

    @property
    def unsaved(self) -> list[Trajectory]:
        """This integration's runs whose store failed, waiting for a retry (oldest first)."""
        with self._lock:
            mine = set(self._mine)
        return [w.trajectory for w in self.writer.kept if w.trajectory.id in mine]

    def store_now(self, trajectory: Trajectory, timeout: float = 5.0) -> None:
        """Hand over and wait at most ``timeout`` seconds (at interpreter exit)."""
        future = self.submit(trajectory)
        try:
            future.result(timeout)
        except Exception:
            log.warning("hindsight: trajectory %s not written at exit", trajectory.id)

    def shutdown(self, wait: bool = True) -> None:
        """Nothing to stop: the writer belongs to the memory (``wait``: wait for it)."""
        if wait:
            self.writer.wait(30.0)
