"""The memory surface the framework integrations use, local or on a server (issue 9).

The LangChain, LangGraph and LlamaIndex integrations call five things on a memory:
``store_episode(trajectory, review=...)``, ``recall(query, tenant_id=..., ...)``,
``record_outcome(trajectory_id, success, tenant_id=...)`` and ``get_trajectory(id,
tenant_id=...)``, from sync and from async code. :func:`memory_faces` gives both faces of what
the user passed: a :class:`hindsight.Memory` / :class:`hindsight.AsyncMemory` (embedded store)
or a :class:`hindsight.client.HindsightClient` / :class:`~hindsight.client.AsyncHindsightClient`
(a ``hindsight serve`` by URL). For a client, ``tenant_id`` arguments are dropped: the API key
decides the tenant, and a trajectory whose ``tenant_id`` is not the key's is refused by the
server (``UsageError``, logged by the integration).

Both faces of a client send through one sync ``httpx`` client; the async face runs it in a
worker thread (``asyncio.to_thread``), so it is bound to no event loop (an
``httpx.AsyncClient`` is tied to the loop that opened its connections, and integrations are
called from many loops and threads). This module never imports an integration.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from hindsight._errors import UsageError

if TYPE_CHECKING:
    from hindsight.engine import AsyncMemory, EpisodeReceipt
    from hindsight.engine.memory import Memory
    from hindsight.models import Experience, Trajectory
    from hindsight.recall import RecallResult
    from hindsight.service.client import HindsightClient

__all__ = ["ACCEPTED", "RemoteAsync", "RemoteMemory", "memory_faces"]

ACCEPTED = (
    "hindsight.Memory, hindsight.AsyncMemory, hindsight.client.HindsightClient or "
    "hindsight.client.AsyncHindsightClient"
)
"""The types an integration accepts as ``memory`` (named in its UsageError)."""


class RemoteMemory:
    """The sync face of a hindsight service for integrations (engine-like signatures).

    Args:
        client: the :class:`~hindsight.client.HindsightClient` to send through.

    Every method raises what the client raises: ``ServiceError`` (server down, timeout, 5xx),
    ``AuthenticationError`` (401), ``UsageError`` / ``NotFoundError`` (as the engine).
    """

    def __init__(self, client: HindsightClient) -> None:
        self.client = client
        self.aio = RemoteAsync(self)

    def store_episode(self, trajectory: Trajectory, *, review: bool = True) -> EpisodeReceipt:
        """Store a finished run; the server queues its review when ``review``."""
        return self.client.store_episode(trajectory, review=review)

    def recall(
        self, query: str = "", *, tenant_id: str | None = None, **options: Any
    ) -> RecallResult:
        """:meth:`hindsight.AsyncMemory.recall` on the server; ``tenant_id`` is the key's."""
        return self.client.recall(query, **options)

    def record_outcome(
        self, trajectory_id: str, success: bool, *, tenant_id: str | None = None
    ) -> list[Experience]:
        """Credit (success) or blame what the run recalled (MISSION S3)."""
        return self.client.record_outcome(trajectory_id, success)

    def get_trajectory(self, trajectory_id: str, *, tenant_id: str | None = None) -> Trajectory:
        """The stored run. Raises NotFoundError."""
        return self.client.get_trajectory(trajectory_id)


class RemoteAsync:
    """The async face of :class:`RemoteMemory` (each call in a worker thread)."""

    def __init__(self, sync: RemoteMemory) -> None:
        self.sync = sync

    async def store_episode(self, trajectory: Trajectory, *, review: bool = True) -> EpisodeReceipt:
        return await asyncio.to_thread(self.sync.store_episode, trajectory, review=review)

    async def recall(
        self, query: str = "", *, tenant_id: str | None = None, **options: Any
    ) -> RecallResult:
        return await asyncio.to_thread(self.sync.recall, query, **options)

    async def record_outcome(
        self, trajectory_id: str, success: bool, *, tenant_id: str | None = None
    ) -> list[Experience]:
        return await asyncio.to_thread(self.sync.record_outcome, trajectory_id, success)

    async def get_trajectory(
        self, trajectory_id: str, *, tenant_id: str | None = None
    ) -> Trajectory:
        return await asyncio.to_thread(self.sync.get_trajectory, trajectory_id)


def remote_memory(memory: Any) -> RemoteMemory | None:
    """The :class:`RemoteMemory` of a client (or of a RemoteMemory / RemoteAsync), else None.

    An :class:`~hindsight.client.AsyncHindsightClient` gives a sync client with the same URL,
    key and timeout (its custom ``transport``, if any, is not reused)."""
    from hindsight.service.client import AsyncHindsightClient, HindsightClient

    if isinstance(memory, RemoteMemory):
        return memory
    if isinstance(memory, RemoteAsync):
        return memory.sync
    if isinstance(memory, HindsightClient):
        return RemoteMemory(memory)
    if isinstance(memory, AsyncHindsightClient):
        settings = memory._settings
        key = settings["headers"].get("Authorization", "").removeprefix("Bearer ") or None
        return RemoteMemory(HindsightClient(settings["base_url"], key, timeout=settings["timeout"]))
    return None


def memory_faces(
    memory: Any,
) -> tuple[Memory | RemoteMemory, AsyncMemory | RemoteAsync]:
    """The sync and the async face of what a user passed to an integration as ``memory``.

    Returns:
        ``(sync, aio)``: ``(Memory, AsyncMemory)`` for an embedded memory,
        ``(RemoteMemory, RemoteAsync)`` for a client of a hindsight service.

    Raises:
        UsageError: ``memory`` is none of :data:`ACCEPTED` (the message lists them).
    """
    from hindsight.engine import AsyncMemory
    from hindsight.engine.memory import Memory

    if isinstance(memory, Memory):
        return memory, memory.aio
    if isinstance(memory, AsyncMemory):
        return Memory.from_async(memory), memory
    remote = remote_memory(memory)
    if remote is None:
        raise UsageError(f"memory must be a {ACCEPTED}, got {type(memory).__name__}")
    return remote, remote.aio
