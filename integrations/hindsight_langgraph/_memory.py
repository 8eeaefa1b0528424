"""Call a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory` from sync or async nodes."""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from hindsight import AsyncMemory, Memory, Trajectory, UsageError

__all__ = ["MemoryRef", "as_memory_ref"]

log = logging.getLogger("hindsight.langgraph")

T = TypeVar("T")


class MemoryRef:
    """Both faces of one memory: ``aio`` (awaitable methods) and :meth:`run` for sync code."""

    __slots__ = ("aio",)

    def __init__(self, aio: AsyncMemory) -> None:
        self.aio = aio

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run one of ``aio``'s coroutines to completion from sync code (on the memory's own
        background loop, so it also works inside a thread of a running event loop)."""
        return self.aio._runtime.run(coro)

    def store_episode(self, trajectory: Trajectory, *, review: bool = True) -> Any:
        """Store ``trajectory`` and queue its review from sync code, on the calling thread
        (one SQL transaction, the path of :meth:`hindsight.Memory.store_episode`): no hop
        through the background loop, so the end of a graph run never waits behind the loop
        (issue 10). Returns the :class:`~hindsight.engine.EpisodeReceipt`.

        Raises:
            UsageError: the memory is closed. StoreError: the database failed.
        """
        return Memory.from_async(self.aio).store_episode(trajectory, review=review)

    def submit(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        """Run ``coro`` on the memory's background loop without waiting; a failure is logged
        (``what`` names the work), never raised into the graph."""

        def done(fut: Any) -> None:
            exc = fut.exception()
            if exc is not None:
                log.error("hindsight: %s failed: %s", what, exc, exc_info=exc)

        try:
            self.aio._runtime.submit(coro).add_done_callback(done)
        except Exception:
            coro.close()
            log.exception("hindsight: could not schedule %s", what)


def as_memory_ref(memory: Any) -> MemoryRef:
    """Accept a :class:`Memory` or an :class:`AsyncMemory`.

    Raises:
        UsageError: anything else.
    """
    if isinstance(memory, Memory):
        return MemoryRef(memory.aio)
    if isinstance(memory, AsyncMemory):
        return MemoryRef(memory)
    raise UsageError(
        f"memory must be a hindsight.Memory or hindsight.AsyncMemory, got {type(memory).__name__}"
    )
