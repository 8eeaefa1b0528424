"""Call a :class:`hindsight.Memory`, an :class:`hindsight.AsyncMemory` or a client of a
``hindsight serve`` (:mod:`hindsight.service.remote`, issue 9) from sync or async nodes."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from hindsight import AsyncMemory, Memory, Trajectory
from hindsight.service.remote import RemoteAsync, RemoteMemory, memory_faces

__all__ = ["MemoryRef", "as_memory_ref"]

log = logging.getLogger("hindsight.langgraph")

T = TypeVar("T")

_REMOTE_WORK = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="hindsight-remote")
"""Runs a remote memory's coroutines off the caller's loop (non-daemon: finishes at exit)."""


class MemoryRef:
    """Both faces of one memory: ``aio`` (awaitable methods) and :meth:`run` for sync code."""

    __slots__ = ("aio", "remote")

    def __init__(self, aio: AsyncMemory | RemoteAsync) -> None:
        self.aio: Any = aio
        self.remote: RemoteMemory | None = aio.sync if isinstance(aio, RemoteAsync) else None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run one of ``aio``'s coroutines to completion from sync code (on the memory's own
        background loop, so it also works inside a thread of a running event loop; for a
        remote memory, in a fresh loop, on a worker thread when this thread runs a loop)."""
        if self.remote is None:
            return self.aio._runtime.run(coro)  # type: ignore[no-any-return]
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        return _REMOTE_WORK.submit(asyncio.run, coro).result()

    def store_episode(self, trajectory: Trajectory, *, review: bool = True) -> Any:
        """Store ``trajectory`` and queue its review from sync code, on the calling thread
        (one SQL transaction, the path of :meth:`hindsight.Memory.store_episode`): no hop
        through the background loop, so the end of a graph run never waits behind the loop
        (issue 10). Returns the :class:`~hindsight.engine.EpisodeReceipt`.

        Raises:
            UsageError: the memory is closed. StoreError: the database failed.
        """
        if self.remote is not None:
            return self.remote.store_episode(trajectory, review=review)
        return Memory.from_async(self.aio).store_episode(trajectory, review=review)

    def submit(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        """Run ``coro`` on the memory's background loop without waiting; a failure is logged
        (``what`` names the work), never raised into the graph."""

        def done(fut: Any) -> None:
            exc = fut.exception()
            if exc is not None:
                log.error("hindsight: %s failed: %s", what, exc, exc_info=exc)

        try:
            if self.remote is not None:
                _REMOTE_WORK.submit(asyncio.run, coro).add_done_callback(done)
                return
            self.aio._runtime.submit(coro).add_done_callback(done)
        except Exception:
            coro.close()
            log.exception("hindsight: could not schedule %s", what)


def as_memory_ref(memory: Any) -> MemoryRef:
    """Accept a :class:`Memory`, an :class:`AsyncMemory`, a ``HindsightClient`` or an
    ``AsyncHindsightClient`` (:func:`hindsight.service.remote.memory_faces`).

    Raises:
        UsageError: anything else (the message lists the accepted types).
    """
    return MemoryRef(memory_faces(memory)[1])
