"""Talk to a hindsight service over HTTP (docs/http.md#python-client).

:class:`HindsightClient` (sync) and :class:`AsyncHindsightClient` have the engine's method
names, arguments and return types (:class:`~hindsight.Experience`,
:class:`~hindsight.RecallResult` with ``.render()``, ...) minus ``tenant_id``: the API key
decides the tenant. Errors are the engine's (:class:`~hindsight.NotFoundError`,
:class:`~hindsight.UsageError`, ...; :mod:`hindsight.service._wire`), plus
:class:`~hindsight.AuthenticationError` (HTTP 401) and :class:`~hindsight.ServiceError`
(unreachable, timeout, unexpected 5xx). Requests are built once in
:mod:`hindsight.service._client_calls`; the two classes only send them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, TypeVar, Unpack

import httpx

from hindsight._errors import ServiceError, UsageError
from hindsight._paging import NEXT_CURSOR_HEADER, Page, awalk, walk
from hindsight.checks import CheckResult
from hindsight.engine import EpisodeReceipt
from hindsight.models import AddResult, Experience, Trajectory
from hindsight.recall import RecallResult
from hindsight.service import _client_calls as calls
from hindsight.service._client_calls import (
    AddOptions,
    Call,
    CheckOptions,
    EditOptions,
    ListOptions,
    RecallOptions,
    StoreOptions,
    TrajectoryListOptions,
)
from hindsight.service._wire import exception_for
from hindsight.store import TrajectorySummary

__all__ = ["AsyncHindsightClient", "HindsightClient"]

T = TypeVar("T")
DEFAULT_TIMEOUT = 10.0
"""Seconds per request (connect, read, write). Reviews can take longer: pass ``timeout=``."""


def _settings(base_url: Any, api_key: Any, timeout: Any) -> dict[str, Any]:
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise UsageError(f"base_url must be an http(s) URL, got {base_url!r:.80}")
    if api_key is not None and (not isinstance(api_key, str) or not api_key.strip()):
        raise UsageError("api_key must be a non-empty string (or None for a keyless server)")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise UsageError(f"timeout must be a positive number of seconds, got {timeout!r}")
    headers = {"Authorization": f"Bearer {api_key.strip()}"} if api_key else {}
    headers["User-Agent"] = "hindsight-client"
    return {"base_url": base_url.rstrip("/"), "headers": headers, "timeout": float(timeout)}


def _args(call: Call[Any]) -> dict[str, Any]:
    if call.json is None:
        return {"params": call.query()}
    # NaN and infinity as Python's json writes them (httpx refuses them): the service then
    # refuses them with the words of the local memory ("... got nan"), not json's ValueError
    return {
        "content": json.dumps(call.json, allow_nan=True).encode(),
        "headers": {"Content-Type": "application/json"},
        "params": call.query(),
    }


def _finish(call: Call[T], response: httpx.Response) -> T:
    if response.status_code >= 400:
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        raise exception_for(response.status_code, body)
    if response.status_code == 204 or not response.content:
        return call.parse(None)
    result = call.parse(response.json())
    if isinstance(result, Page) and NEXT_CURSOR_HEADER in response.headers:
        result.next_cursor = response.headers[NEXT_CURSOR_HEADER]
    return result


def _transport_error(exc: httpx.HTTPError, url: str, timeout: float) -> ServiceError:
    if isinstance(exc, httpx.TimeoutException):
        return ServiceError(f"no answer from {url} within {timeout} s ({type(exc).__name__})")
    return ServiceError(f"cannot reach the hindsight service at {url}: {exc}")


class HindsightClient:
    """Sync client of a hindsight service.

    Args:
        base_url: e.g. ``"http://127.0.0.1:8710"``.
        api_key: the tenant's API key (``hindsight keys create``); ``None`` only for a server
            run with ``--insecure-single-tenant``.
        timeout: seconds per request (default 10).
        transport: an ``httpx.BaseTransport`` (tests: ``httpx.MockTransport``, or a WSGI one).

    Raises:
        UsageError: a bad base_url, api_key or timeout.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._settings = _settings(base_url, api_key, timeout)
        self._http = httpx.Client(transport=transport, **self._settings)

    def _send(self, call: Call[T]) -> T:
        try:
            response = self._http.request(call.method, call.path, **_args(call))
        except httpx.HTTPError as exc:
            raise _transport_error(
                exc, self._settings["base_url"], self._settings["timeout"]
            ) from exc
        return _finish(call, response)

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until the runs the framework integrations handed to this client's background
        writer are sent to the service (``timeout`` seconds; an integration does not wait for
        its run's write, docs/integrations/langchain.md#lifecycle-when-runs-are-written), as
        ``Memory.flush`` does for an embedded memory. The review of a run is the service's
        (``review_now`` runs it at once).

        Returns:
            True when everything was sent; False on timeout or when a write could not be sent
            (the service unreachable: it is tried again with the next write, and
            :meth:`close` keeps what is still unsent in the unsaved area). Nothing is lost.

        Raises:
            UsageError: ``timeout`` is neither ``None`` nor a number of seconds from 0, as
                for ``Memory.flush`` (:func:`hindsight._contract.wait_seconds`).
        """
        from hindsight._contract import wait_seconds
        from hindsight.service.remote import wait_writer

        return wait_writer(self, wait_seconds(timeout))

    def close(self) -> None:
        """Send what the framework integrations still hold for this service (at most
        ``HINDSIGHT_DRAIN_TIMEOUT`` seconds; the rest waits in the unsaved area, see
        :attr:`hindsight.service.remote.RemoteMemory.writer`), then close the connection pool."""
        from hindsight.service.remote import close_writer

        close_writer(self)
        self._http.close()

    def __enter__(self) -> HindsightClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- service --------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """``GET /health``: ``{"status": "ok"}``."""
        return self._send(calls.health())

    def ready(self) -> dict[str, Any]:
        """``GET /ready``. Raises ServiceError (503) naming what is not ready."""
        return self._send(calls.ready())

    # -- runs -----------------------------------------------------------------------------------
    def store_episode(
        self, trajectory: Trajectory | dict[str, Any] | list[Any], **options: Unpack[StoreOptions]
    ) -> EpisodeReceipt:
        """Store a run: a :class:`Trajectory` (its tenant must be the key's, or leave
        ``tenant_id`` out of a dict), an OpenAI record or message list, a tau-bench record.
        Options: ``review`` (True), ``merge`` (False: merge into the stored run of the same
        id, a run stored in parts), ``format`` ("auto"), ``namespace``, ``task_type``.
        Returns the receipt of the (first) trajectory; :meth:`store_records` for all."""
        return self._send(calls.store_episode(trajectory, options))

    def store_records(
        self, record: dict[str, Any] | list[Any], **options: Unpack[StoreOptions]
    ) -> list[EpisodeReceipt]:
        """Store every trajectory a record holds (e.g. events of several runs)."""
        return self._send(calls.store_records(record, options))

    def get_trajectory(self, trajectory_id: Any) -> Trajectory:
        """The stored run (with its system prompt, evidence and task key). Raises
        NotFoundError."""
        return self._send(calls.get_trajectory(trajectory_id))

    def list_trajectories(
        self, **options: Unpack[TrajectoryListOptions]
    ) -> Page[TrajectorySummary]:
        """One page of stored runs, oldest first (``task_key``, ``outcome``, ``task_type``,
        ``limit`` 100, ``cursor`` or ``offset``), with ``next_cursor``, as
        :meth:`hindsight.AsyncMemory.list_trajectories`."""
        return self._send(calls.list_trajectories(options))

    def iter_trajectories(
        self, *, page_size: int = 100, **filters: Unpack[TrajectoryListOptions]
    ) -> Iterator[TrajectorySummary]:
        """Every stored run with ``filters``, page after page of ``page_size`` by cursor."""
        return walk(
            lambda c: self._send(calls.list_trajectories(calls.page_options(filters, page_size, c)))
        )

    def review_now(self, trajectory_id: Any) -> list[Experience]:
        """Review a stored run now; the experiences written (episode last)."""
        return self._send(calls.review_now(trajectory_id))

    def recall(self, query: str = "", **options: Unpack[RecallOptions]) -> RecallResult:
        """As :meth:`hindsight.AsyncMemory.recall` (without ``tenant_id``)."""
        return self._send(calls.recall(query, options))

    def record_outcome(self, trajectory_id: Any, success: bool) -> list[Experience]:
        """Credit or blame what the run recalled; the experiences updated."""
        return self._send(calls.record_outcome(trajectory_id, success))

    def check_action(
        self, tool: str, args: Any = None, **options: Unpack[CheckOptions]
    ) -> CheckResult:
        """As :meth:`hindsight.AsyncMemory.check_action` (without ``tenant_id``): the risk
        checks of a proposed call."""
        return self._send(calls.check_action(tool, args, options))

    def record_recall(self, trajectory_id: Any, experience_ids: Sequence[Any]) -> int:
        """Count a recall made with ``record=False`` for the run (its model saw it); how many
        experiences were counted."""
        return self._send(calls.record_recall(trajectory_id, experience_ids))

    def paused_trajectory(self, thread_id: str, *, namespace: str = "default") -> str | None:
        """The id of the latest run stored as paused on ``thread_id``, or None."""
        return self._send(calls.paused_trajectory(thread_id, namespace))

    # -- experiences ----------------------------------------------------------------------------
    def add_experience(self, content: str, **options: Unpack[AddOptions]) -> Experience:
        """Store a lesson directly (checked by the memory guard)."""
        return self._send(calls.add_experience(content, options))

    def add_experiences(self, items: Sequence[Mapping[str, Any]]) -> list[AddResult]:
        """As :meth:`hindsight.AsyncMemory.add_experiences` (without ``tenant_id``): 1..1000
        lessons as one batch (``POST /v1/experiences:batch``); one result per item, in order.
        """
        return self._send(calls.add_experiences(items))

    def get_experience(self, experience_id: Any) -> Experience:
        """Raises NotFoundError (also for another tenant's id)."""
        return self._send(calls.get_experience(experience_id))

    def list_experiences(self, **options: Unpack[ListOptions]) -> Page[Experience]:
        """One page (``limit`` 100; ``cursor`` = the previous page's ``next_cursor``, or
        ``offset``) of one ``status`` ("active"), with ``next_cursor``."""
        return self._send(calls.list_experiences(options))

    def iter_experiences(
        self, *, page_size: int = 100, **filters: Unpack[ListOptions]
    ) -> Iterator[Experience]:
        """Every experience with ``filters`` (``namespace``, ``status`` ...), page after page
        of ``page_size`` by cursor: each one present throughout is yielded exactly once."""
        return walk(
            lambda c: self._send(calls.list_experiences(calls.page_options(filters, page_size, c)))
        )

    def list_quarantined(self, **options: Unpack[ListOptions]) -> Page[Experience]:
        """Quarantined experiences (``namespace``, ``limit``, ``cursor`` or ``offset``)."""
        return self._send(calls.list_experiences(options, quarantined=True))

    def adjust_confidence(
        self, experience_id: Any, delta: float, *, reason: str | None = None
    ) -> Experience:
        """Add ``delta`` in [-1, 1] to the confidence (clamped to [0, 1], audited)."""
        return self._send(calls.adjust_confidence(experience_id, delta, reason))

    def edit_experience(self, experience_id: Any, **options: Unpack[EditOptions]) -> Experience:
        """Edit fields as a new version; returns it."""
        return self._send(calls.edit_experience(experience_id, options))

    def delete_experience(self, experience_id: Any) -> None:
        """Soft-delete. Raises NotFoundError when unknown or deleted already."""
        return self._send(calls.delete_experience(experience_id))

    def forget(
        self,
        *,
        experience_id: Any | None = None,
        trajectory_id: Any | None = None,
        everything: bool = False,
    ) -> int:
        """Hard-delete (exactly one filter); the number of experiences removed."""
        return self._send(calls.forget(experience_id, trajectory_id, everything))

    def history(
        self, experience_id: Any, *, limit: int = 100, cursor: str | None = None
    ) -> Page[dict[str, Any]]:
        """The versions, oldest first (``experience`` is an :class:`Experience`); one page
        of at most ``limit`` with ``next_cursor``."""
        return self._send(calls.history(experience_id, limit, cursor))

    def rollback(
        self, experience_id: Any, version: int, *, reason: str | None = None
    ) -> Experience:
        """Restore what ``version`` said, as a new version."""
        return self._send(calls.rollback(experience_id, version, reason))

    def restore(self, experience_id: Any) -> Experience:
        """Bring back an archived, superseded or deleted experience."""
        return self._send(calls.restore(experience_id))

    def approve(self, experience_id: Any, *, note: str | None = None) -> Experience:
        """Approve a quarantined experience."""
        return self._send(calls.decide("approve", experience_id, note))

    def reject(self, experience_id: Any, *, note: str | None = None) -> Experience:
        """Reject a quarantined experience (soft-deleted)."""
        return self._send(calls.decide("reject", experience_id, note))

    def rescan(
        self, experience_id: Any = None, *, namespace: str | None = None
    ) -> list[Experience]:
        """Run the memory guard again: one experience (as stored), or the key's tenant (those
        that changed)."""
        return self._send(calls.rescan(experience_id, namespace))

    # -- operations -----------------------------------------------------------------------------
    def review_jobs(
        self, *, state: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> Page[dict[str, Any]]:
        """The tenant's review jobs, oldest first; one page with ``next_cursor``."""
        return self._send(calls.review_jobs(state, limit, cursor))

    def retry_review_jobs(
        self, job_ids: Sequence[Any] = (), *, all_failed: bool = False
    ) -> list[dict[str, Any]]:
        """Put failed jobs back to pending."""
        return self._send(calls.retry_review_jobs(job_ids, all_failed))

    def stats(self) -> dict[str, Any]:
        """Counts of the key's tenant."""
        return self._send(calls.stats())


class AsyncHindsightClient:
    """Async client of a hindsight service: :class:`HindsightClient`'s methods, awaited.

    ``transport``: an ``httpx.AsyncBaseTransport`` (e.g. ``httpx.ASGITransport(app)``).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._settings = _settings(base_url, api_key, timeout)
        self._http = httpx.AsyncClient(transport=transport, **self._settings)

    async def _send(self, call: Call[T]) -> T:
        try:
            response = await self._http.request(call.method, call.path, **_args(call))
        except httpx.HTTPError as exc:
            raise _transport_error(
                exc, self._settings["base_url"], self._settings["timeout"]
            ) from exc
        return _finish(call, response)

    async def flush(self, timeout: float | None = 30.0) -> bool:
        """Async :meth:`HindsightClient.flush`."""
        from hindsight._contract import wait_seconds
        from hindsight.service.remote import wait_writer

        return await asyncio.to_thread(wait_writer, self, wait_seconds(timeout))

    async def aclose(self) -> None:
        """Send what the integrations still hold (as :meth:`HindsightClient.close`), then close
        the connection pool (also done by ``async with``)."""
        from hindsight.service.remote import close_writer

        await asyncio.to_thread(close_writer, self)
        await self._http.aclose()

    async def __aenter__(self) -> AsyncHindsightClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def health(self) -> dict[str, Any]:
        return await self._send(calls.health())

    async def ready(self) -> dict[str, Any]:
        return await self._send(calls.ready())

    async def store_episode(
        self, trajectory: Trajectory | dict[str, Any] | list[Any], **options: Unpack[StoreOptions]
    ) -> EpisodeReceipt:
        return await self._send(calls.store_episode(trajectory, options))

    async def store_records(
        self, record: dict[str, Any] | list[Any], **options: Unpack[StoreOptions]
    ) -> list[EpisodeReceipt]:
        return await self._send(calls.store_records(record, options))

    async def get_trajectory(self, trajectory_id: Any) -> Trajectory:
        return await self._send(calls.get_trajectory(trajectory_id))

    async def list_trajectories(
        self, **options: Unpack[TrajectoryListOptions]
    ) -> Page[TrajectorySummary]:
        return await self._send(calls.list_trajectories(options))

    def iter_trajectories(
        self, *, page_size: int = 100, **filters: Unpack[TrajectoryListOptions]
    ) -> AsyncIterator[TrajectorySummary]:
        """``async for`` every stored run with ``filters``, page by page by cursor."""
        return awalk(
            lambda c: self._send(calls.list_trajectories(calls.page_options(filters, page_size, c)))
        )

    async def review_now(self, trajectory_id: Any) -> list[Experience]:
        return await self._send(calls.review_now(trajectory_id))

    async def recall(self, query: str = "", **options: Unpack[RecallOptions]) -> RecallResult:
        return await self._send(calls.recall(query, options))

    async def record_outcome(self, trajectory_id: Any, success: bool) -> list[Experience]:
        return await self._send(calls.record_outcome(trajectory_id, success))

    async def check_action(
        self, tool: str, args: Any = None, **options: Unpack[CheckOptions]
    ) -> CheckResult:
        return await self._send(calls.check_action(tool, args, options))

    async def record_recall(self, trajectory_id: Any, experience_ids: Sequence[Any]) -> int:
        return await self._send(calls.record_recall(trajectory_id, experience_ids))

    async def paused_trajectory(self, thread_id: str, *, namespace: str = "default") -> str | None:
        return await self._send(calls.paused_trajectory(thread_id, namespace))

    async def add_experience(self, content: str, **options: Unpack[AddOptions]) -> Experience:
        return await self._send(calls.add_experience(content, options))

    async def add_experiences(self, items: Sequence[Mapping[str, Any]]) -> list[AddResult]:
        return await self._send(calls.add_experiences(items))

    async def get_experience(self, experience_id: Any) -> Experience:
        return await self._send(calls.get_experience(experience_id))

    async def list_experiences(self, **options: Unpack[ListOptions]) -> Page[Experience]:
        return await self._send(calls.list_experiences(options))

    def iter_experiences(
        self, *, page_size: int = 100, **filters: Unpack[ListOptions]
    ) -> AsyncIterator[Experience]:
        """``async for`` every experience with ``filters``, page by page by cursor."""
        return awalk(
            lambda c: self._send(calls.list_experiences(calls.page_options(filters, page_size, c)))
        )

    async def list_quarantined(self, **options: Unpack[ListOptions]) -> Page[Experience]:
        return await self._send(calls.list_experiences(options, quarantined=True))

    async def adjust_confidence(
        self, experience_id: Any, delta: float, *, reason: str | None = None
    ) -> Experience:
        return await self._send(calls.adjust_confidence(experience_id, delta, reason))

    async def edit_experience(
        self, experience_id: Any, **options: Unpack[EditOptions]
    ) -> Experience:
        return await self._send(calls.edit_experience(experience_id, options))

    async def delete_experience(self, experience_id: Any) -> None:
        return await self._send(calls.delete_experience(experience_id))

    async def forget(
        self,
        *,
        experience_id: Any | None = None,
        trajectory_id: Any | None = None,
        everything: bool = False,
    ) -> int:
        return await self._send(calls.forget(experience_id, trajectory_id, everything))

    async def history(
        self, experience_id: Any, *, limit: int = 100, cursor: str | None = None
    ) -> Page[dict[str, Any]]:
        return await self._send(calls.history(experience_id, limit, cursor))

    async def rollback(
        self, experience_id: Any, version: int, *, reason: str | None = None
    ) -> Experience:
        return await self._send(calls.rollback(experience_id, version, reason))

    async def restore(self, experience_id: Any) -> Experience:
        return await self._send(calls.restore(experience_id))

    async def approve(self, experience_id: Any, *, note: str | None = None) -> Experience:
        return await self._send(calls.decide("approve", experience_id, note))

    async def reject(self, experience_id: Any, *, note: str | None = None) -> Experience:
        return await self._send(calls.decide("reject", experience_id, note))

    async def rescan(
        self, experience_id: Any = None, *, namespace: str | None = None
    ) -> list[Experience]:
        return await self._send(calls.rescan(experience_id, namespace))

    async def review_jobs(
        self, *, state: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> Page[dict[str, Any]]:
        return await self._send(calls.review_jobs(state, limit, cursor))

    async def retry_review_jobs(
        self, job_ids: Sequence[Any] = (), *, all_failed: bool = False
    ) -> list[dict[str, Any]]:
        return await self._send(calls.retry_review_jobs(job_ids, all_failed))

    async def stats(self) -> dict[str, Any]:
        return await self._send(calls.stats())


def _share_docs() -> None:
    """Each async method documents itself with its sync twin's docstring (same arguments,
    results and errors; awaited)."""
    for name, method in vars(AsyncHindsightClient).items():
        twin = getattr(HindsightClient, name, None)
        if callable(method) and not name.startswith("_") and not method.__doc__ and twin:
            method.__doc__ = twin.__doc__


_share_docs()
