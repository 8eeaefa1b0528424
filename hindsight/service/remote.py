"""The memory surface the framework integrations use, local or on a server
(docs/http.md#python-client).

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
import atexit
import hashlib
import os
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight._errors import UsageError
from hindsight.capture.unsaved import UnsavedArea
from hindsight.capture.writer import TrajectoryWriter

if TYPE_CHECKING:
    from hindsight.checks import CheckResult
    from hindsight.engine import AsyncMemory, EpisodeReceipt
    from hindsight.engine.memory import Memory
    from hindsight.models import Experience, Trajectory
    from hindsight.recall import RecallResult
    from hindsight.service.client import HindsightClient

__all__ = ["ACCEPTED", "RemoteAsync", "RemoteMemory", "memory_faces", "writer_of"]

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
        self._writer: TrajectoryWriter | None = None
        self._lock = threading.Lock()

    @property
    def writer(self) -> TrajectoryWriter:
        """The background writer of the integrations using this service (one per client),
        with a durable unsaved area ``<data_dir>/unsaved/remote-<hash of URL and key>``: what
        could not be sent before the client closed or the process exited is sent again by the
        next program that writes to the same service with the same key."""
        with self._lock:
            if self._writer is None:
                self._writer = TrajectoryWriter(
                    self, unsaved=UnsavedArea(_remote_area(self.client)), name="hindsight-remote"
                )
                _REMOTE_WRITERS.add(self._writer)
                self._writer.replay()
            return self._writer

    def store_episode(
        self, trajectory: Trajectory, *, review: bool = True, merge: bool = False
    ) -> EpisodeReceipt:
        """Store a finished run; the server queues its review when ``review``; ``merge``: a
        run stored in parts (see :meth:`hindsight.AsyncMemory.store_episode`)."""
        return self.client.store_episode(trajectory, review=review, merge=merge)

    def recall(
        self, query: str = "", *, tenant_id: str | None = None, **options: Any
    ) -> RecallResult:
        """:meth:`hindsight.AsyncMemory.recall` on the server; ``tenant_id`` is the key's."""
        return self.client.recall(query, **options)

    def record_recall(
        self, trajectory_id: str, experience_ids: Sequence[str], *, tenant_id: str | None = None
    ) -> int:
        """Count a recall made with ``record=False`` (``AsyncMemory.record_recall``)."""
        return self.client.record_recall(trajectory_id, experience_ids)

    def check_action(
        self, tool: str, args: Any = None, *, tenant_id: str | None = None, **options: Any
    ) -> CheckResult:
        """:meth:`hindsight.AsyncMemory.check_action` on the server; ``tenant_id`` is the
        key's."""
        return self.client.check_action(tool, args, **options)

    def paused_trajectory(
        self, thread_id: str, *, tenant_id: str | None = None, namespace: str = "default"
    ) -> str | None:
        """:meth:`hindsight.AsyncMemory.paused_trajectory` on the server."""
        return self.client.paused_trajectory(thread_id, namespace=namespace)

    def record_outcome(
        self, trajectory_id: str, success: bool, *, tenant_id: str | None = None
    ) -> list[Experience]:
        """Credit (success) or blame what the run recalled
        (docs/concepts.md#experiences-and-confidence)."""
        return self.client.record_outcome(trajectory_id, success)

    def get_trajectory(self, trajectory_id: str, *, tenant_id: str | None = None) -> Trajectory:
        """The stored run. Raises NotFoundError."""
        return self.client.get_trajectory(trajectory_id)


class RemoteAsync:
    """The async face of :class:`RemoteMemory` (each call in a worker thread)."""

    def __init__(self, sync: RemoteMemory) -> None:
        self.sync = sync

    async def store_episode(
        self, trajectory: Trajectory, *, review: bool = True, merge: bool = False
    ) -> EpisodeReceipt:
        return await asyncio.to_thread(
            self.sync.store_episode, trajectory, review=review, merge=merge
        )

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

    async def record_recall(
        self, trajectory_id: str, experience_ids: Sequence[str], *, tenant_id: str | None = None
    ) -> int:
        return await asyncio.to_thread(self.sync.record_recall, trajectory_id, experience_ids)

    async def check_action(
        self, tool: str, args: Any = None, *, tenant_id: str | None = None, **options: Any
    ) -> CheckResult:
        return await asyncio.to_thread(self.sync.check_action, tool, args, **options)

    async def paused_trajectory(
        self, thread_id: str, *, tenant_id: str | None = None, namespace: str = "default"
    ) -> str | None:
        return await asyncio.to_thread(self.sync.paused_trajectory, thread_id, namespace=namespace)


_REMOTE_WRITERS: weakref.WeakSet[TrajectoryWriter] = weakref.WeakSet()


def _remote_area(client: HindsightClient) -> Path:
    from hindsight.config import default_data_dir

    settings = client._settings
    auth = settings["headers"].get("Authorization", "")
    digest = hashlib.sha256(f"{settings['base_url']}\n{auth}".encode()).hexdigest()[:16]
    base = Path(os.environ.get("HINDSIGHT_DATA_DIR") or default_data_dir())
    return base / "unsaved" / f"remote-{digest}"


def _drain_timeout() -> float:
    try:
        return max(0.0, float(os.environ.get("HINDSIGHT_DRAIN_TIMEOUT", "10")))
    except ValueError:
        return 10.0


def close_writer(client: Any) -> None:
    """Drain the integrations' writer of a client being closed (``HINDSIGHT_DRAIN_TIMEOUT``
    seconds at most; the rest goes to its unsaved area)."""
    remote = getattr(client, "_hindsight_remote", None)
    if isinstance(remote, RemoteMemory) and remote._writer is not None:
        remote._writer.close(_drain_timeout())


def wait_writer(client: Any, timeout: float | None) -> bool:
    """Wait until the runs the integrations handed to a client's writer are sent (``timeout``
    seconds); True when every one was sent (also when no integration wrote through this
    client), False on timeout or when a write failed and waits for a retry (the service was
    unreachable: it is sent with the next write, or by ``close()``, or kept in the unsaved
    area)."""
    remote = getattr(client, "_hindsight_remote", None)
    if isinstance(remote, RemoteMemory) and remote._writer is not None:
        writer = remote._writer
        return bool(writer.wait(timeout)) and not writer.kept
    return True


def _close_writers_at_exit() -> None:  # pragma: no cover - exercised at interpreter exit
    for writer in list(_REMOTE_WRITERS):
        writer.close(min(_drain_timeout(), 5.0))


atexit.register(_close_writers_at_exit)


def remote_memory(memory: Any) -> RemoteMemory | None:
    """The :class:`RemoteMemory` of a client (or of a RemoteMemory / RemoteAsync), else None.

    An :class:`~hindsight.client.AsyncHindsightClient` gives a sync client with the same URL,
    key and timeout (its custom ``transport``, if any, is not reused)."""
    from hindsight.service.client import AsyncHindsightClient, HindsightClient

    if isinstance(memory, RemoteMemory):
        return memory
    if isinstance(memory, RemoteAsync):
        return memory.sync
    if not isinstance(memory, HindsightClient | AsyncHindsightClient):
        return None
    cached = getattr(memory, "_hindsight_remote", None)
    if isinstance(cached, RemoteMemory):
        return cached
    if isinstance(memory, HindsightClient):
        remote = RemoteMemory(memory)
    else:
        settings = memory._settings
        key = settings["headers"].get("Authorization", "").removeprefix("Bearer ") or None
        sync = HindsightClient(settings["base_url"], key, timeout=settings["timeout"])
        remote = RemoteMemory(sync)
    setattr(memory, "_hindsight_remote", remote)  # noqa: B010 - one face and writer per client
    return remote


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


def writer_of(face: Memory | RemoteMemory) -> TrajectoryWriter:
    """The background writer the integrations end their runs with, for the sync face of a
    memory (:func:`memory_faces`): the memory's own (:attr:`hindsight.AsyncMemory.writer`) or
    the one of a service client (:attr:`RemoteMemory.writer`)."""
    if isinstance(face, RemoteMemory):
        return face.writer
    return face.aio.writer
