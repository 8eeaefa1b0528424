"""The async facade: capture -> review -> write-back -> recall (docs/concepts.md).

:class:`AsyncMemory` checks each call's arguments (:mod:`hindsight._contract`) and hands the
work to the stage that owns it: capture (:mod:`hindsight.capture`), review
(:class:`~hindsight.review.runner.ReviewRunner`), write-back (:mod:`hindsight.writeback`),
recall (:class:`~hindsight.recall.pipeline.Recall`), the guard (:mod:`hindsight.guard`).
:class:`hindsight.Memory` is its sync twin. The SQL store is the source of truth; the vector
index is pgvector in a PostgreSQL store (written in the transaction of each row), or an index
kept apart from SQL that follows it through the vector outbox
(:mod:`hindsight.store.outbox`: applied after each write, so a crash between the two writes is
repaired at the next write or open).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from hindsight._contract import (
    Confidence,
    Cursor,
    ExperienceId,
    ExperienceOrder,
    Importance,
    Kind,
    Limit,
    Namespace,
    Namespaces,
    Offset,
    OptionalTenantId,
    OutcomeFilter,
    RunState,
    SimilarityFloor,
    Status,
    TaskKey,
    TaskType,
    TenantId,
    ToolName,
    TopK,
    TrajectoryId,
    check,
    forget_filter,
    switch,
    wait_seconds,
)
from hindsight._errors import MemoryClosedError, NotFoundError, UsageError
from hindsight._paging import Page, awalk, decode_cursor, page_of, paging
from hindsight._runtime import BackgroundLoop
from hindsight.capture import RunRecorder
from hindsight.capture.trajectory import checked_run, coerce_trajectory
from hindsight.capture.unsaved import UnsavedArea
from hindsight.capture.writer import TrajectoryWriter
from hindsight.clock import SystemClock, utc_clock
from hindsight.config import MemoryConfig
from hindsight.engine._lifecycle import LifecycleMethods
from hindsight.engine._open import open_components, resolve_config
from hindsight.models import (
    AddResult,
    Exclusion,
    Experience,
    ExperienceKind,
    Provenance,
    Trajectory,
)
from hindsight.observability import Metrics, StoreGauges, operation
from hindsight.ports import Clock, Embedder, Reviewer, VectorIndex
from hindsight.recall import RecallMode, RecallResult
from hindsight.recall.render import strip_block
from hindsight.recall.scoring import evidence
from hindsight.store import ReviewJob, TrajectorySummary
from hindsight.store.experiences import CREATED_KEY, EXPERIENCE_KEY, created_key, experience_key

if TYPE_CHECKING:  # the write side loads at its first use (docs/architecture.md#cold-start)
    from hindsight.checks import CheckResult
    from hindsight.engine._open import Writes
    from hindsight.guard import Guard
    from hindsight.review.runner import ReviewRunner
    from hindsight.review.worker import ReviewWorker
    from hindsight.writeback import WriteBack
    from hindsight.writeback.dedup import Deduper

__all__ = ["AsyncMemory", "EpisodeReceipt"]

T = TypeVar("T")

#: Share of the recall token budget the run-start risk checks may take (the lessons and
#: episodes share the rest); the checks are short, one line each.
RISK_BUDGET_SHARE = 0.25
#: Risk checks per tool in the run-start section (those that fit the request best first).
RISK_CHECKS_PER_TOOL = 2
#: Checks of each tool ranked against the request for the run-start section (the most
#: confident of the tool's checks, before the ranking keeps ``RISK_CHECKS_PER_TOOL``).
RISK_CANDIDATES_PER_TOOL = 20


log = logging.getLogger("hindsight")


class _LocalSink:
    """The writer's way into this memory (called on the writer thread, blocking)."""

    def __init__(self, memory: AsyncMemory) -> None:
        self._memory = weakref.ref(memory)

    def _open(self) -> AsyncMemory:
        memory = self._memory()
        if memory is None or memory._closed:
            raise MemoryClosedError("this memory is closed; open a new one")
        return memory

    def store_episode(self, trajectory: Trajectory, *, review: bool, merge: bool) -> Any:
        return self._open()._store_trajectory(trajectory, review, merge)

    def record_outcome(self, trajectory_id: str, success: bool, *, tenant_id: str) -> Any:
        memory = self._open()
        return memory._runtime.run(
            memory.record_outcome(trajectory_id, success, tenant_id=tenant_id)
        )

    def record_recall(
        self, trajectory_id: str, experience_ids: Sequence[str], *, tenant_id: str
    ) -> Any:
        memory = self._open()
        return memory._record_recall(trajectory_id, experience_ids, tenant_id)


class EpisodeReceipt(dict[str, Any]):
    """What :meth:`AsyncMemory.store_episode` returns: a dict with ``trajectory_id`` (str),
    ``stored`` (False when the trajectory was already there) and ``review_queued`` (bool)."""

    @property
    def trajectory_id(self) -> str:
        return str(self["trajectory_id"])


class AsyncMemory(LifecycleMethods):
    """Experience memory for agents, async API.

    Opening is synchronous (it creates folders, applies SQL migrations, opens the vector index)
    and may raise:

    Raises:
        EmbedderMismatchError: the store was built with another embedding model.
        StoreLockedError: another live process owns the embedded data dir.
        UsageError: invalid configuration.

    Args:
        config: a :class:`MemoryConfig`; default: read from the environment.
        store, index, embedder, reviewer, clock: replace a port (see :mod:`hindsight.testing`).
            ``reviewer`` may also name one: ``"heuristic"``, ``"llm"`` or ``"both"``
            (the ``reviewer`` setting, docs/review.md).
        **overrides: :class:`MemoryConfig` fields, e.g. ``data_dir="./mem"``.
    """

    def __init__(
        self,
        config: MemoryConfig | None = None,
        *,
        store: Any | None = None,
        index: VectorIndex | None = None,
        embedder: Embedder | None = None,
        reviewer: Reviewer | str | None = None,
        clock: Clock | None = None,
        **overrides: Any,
    ) -> None:
        self.config, given = resolve_config(config, reviewer, overrides)
        self.clock: Clock = utc_clock(clock or SystemClock())
        self.clock.now()  # a clock that does not tell the time is refused here, at open
        self._closed = False
        self._runtime = BackgroundLoop()
        self._parts = parts = open_components(
            self.config,
            self.clock,
            self._runtime,
            store=store,
            index=index,
            embedder=embedder,
            reviewer=given,
        )
        self.embedder, self.store, self.index = parts.embedder, parts.store, parts.index
        self._recall = parts.recall
        self.metrics = parts.metrics = Metrics(self._store_gauges)
        """This memory's metrics (:class:`hindsight.observability.Metrics`): ``/metrics`` of
        ``hindsight serve`` and ``hindsight worker --metrics-port`` (docs/deploy.md#metrics)."""
        _OPEN.add(self)
        self._integrations: weakref.WeakSet[Any] = weakref.WeakSet()
        area = self.config.unsaved_dir()
        self.writer = TrajectoryWriter(
            _LocalSink(self),
            unsaved=UnsavedArea(area) if area is not None else None,
            closed=(MemoryClosedError,),
        )
        """The background writer the framework integrations end their runs with
        (:mod:`hindsight.capture.writer`); drained by :meth:`close`."""
        self.writer.replay()  # runs a closed memory could not store before (its unsaved area)
        self.found_open_reviews = (
            self.config.background_review and self.store.has_open_review_jobs()
        )
        if self.found_open_reviews:
            self.reviews.ensure_worker()  # resume jobs a previous process left pending

    def _store_gauges(self) -> StoreGauges:
        """The store's gauges at scrape time: one grouped query over the review jobs, one
        count of the vector outbox when the store keeps one."""
        counts, oldest = self.store.review_job_summary()
        age = None if oldest is None else max(0.0, (self.store.now() - oldest).total_seconds())
        outbox = None
        if not self.store.vectors_in_sql:
            outbox = int(self.store.vector_outbox_state()["pending"])
        return StoreGauges(review_jobs=counts, oldest_pending_seconds=age, outbox_pending=outbox)

    # -- the write side, wired at its first use (docs/architecture.md#cold-start) -------------
    @property
    def reviewer(self) -> Reviewer:
        """The reviewer that turns a finished run into lessons (docs/review.md)."""
        return self._parts.writes().reviewer

    @property
    def guard(self) -> Guard | None:
        """The memory guard that screens each write (docs/security.md); ``None`` when off."""
        return self._parts.writes().guard

    @property
    def writeback(self) -> WriteBack:
        """The write path: guard, dedup, store, vectors (docs/lifecycle.md)."""
        return self._parts.writes().writeback

    @property
    def deduper(self) -> Deduper:
        """The write path's dedup / supersede step (docs/lifecycle.md)."""
        return self._parts.writes().deduper

    @property
    def reviews(self) -> ReviewRunner:
        """The reviews: jobs, the in-process worker, the write-back of lessons."""
        return self._parts.writes().reviews

    async def _wired(self) -> Writes:
        """The write side for a coroutine: wired in a worker thread on first use (its imports
        and the guard's build take a moment once), never on the event loop."""
        wired = self._parts.wired
        return wired if wired is not None else await asyncio.to_thread(self._parts.writes)

    @property
    def _worker(self) -> ReviewWorker | None:
        """The in-process review worker, once started."""
        wired = self._parts.wired
        return None if wired is None else wired.reviews.worker

    @property
    def _lock(self) -> Any:
        """The data-dir lock this memory holds (an embedded store: one process per data dir),
        or ``None``."""
        return self._parts.lock

    # -- opening / closing ----------------------------------------------------------------
    def attach(self, integration: Any) -> None:
        """Register a framework integration that writes into this memory (kept by weak
        reference). At :meth:`close` its ``memory_closing()`` method, if any, is called first
        (it hands over what it holds, e.g. runs whose parent never showed up), then the
        writer is drained."""
        self._integrations.add(integration)

    @property
    def integrations(self) -> list[Any]:
        """The framework integrations writing into this memory (handlers, middleware, graph
        nodes, captures), in no particular order."""
        return list(self._integrations)

    def close(self, timeout: float = 5.0, *, drain_timeout: float | None = None) -> None:
        """Hand over what the attached integrations hold, drain the background writer (at
        most ``drain_timeout`` seconds, default ``config.drain_timeout``: 10; what is still
        unwritten goes to the unsaved area, stored at the next open), stop the review worker
        (an interrupted job goes back to pending), flush vectors, release files and locks.
        Safe to call twice. ``timeout``: seconds for the review worker."""
        if self._closed:
            return
        for integration in self.integrations:
            closing = getattr(integration, "memory_closing", None)
            if closing is None:
                continue
            try:
                closing()
            except Exception:
                log.warning(
                    "hindsight: %r failed while the memory closed", integration, exc_info=True
                )
        wait = self.config.drain_timeout if drain_timeout is None else drain_timeout
        self.writer.close(wait)
        self._closed = True
        if (wired := self._parts.shut()) is not None:
            wired.reviews.close(timeout)
        self._parts.close()

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _check_open(self) -> None:
        if self._closed:
            raise MemoryClosedError("this memory is closed; open a new one")

    def _scope(self, tenant_id: Any) -> str:
        """The checked tenant of a call on an open memory."""
        self._check_open()
        tenant: str = check(TenantId, tenant_id)
        return tenant

    async def _write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a worker thread, then the vectors follow SQL."""

        def run() -> T:
            out = fn(*args, **kwargs)
            self.sync_vectors()
            return out

        return await asyncio.to_thread(run)

    # -- vectors follow SQL ---------------------------------------------------------------
    def sync_vectors(self) -> int:
        """Apply the pending vector-outbox rows to an index kept apart from SQL (every
        process's); returns how many. Called after every write of this memory
        (read-your-writes) and at open; 0 with pgvector (the vectors are the rows).
        """
        return self._parts.vectors.sync()

    @property
    def vectors(self) -> Any:
        """How this memory's index follows the store
        (:class:`hindsight.store.outbox.VectorSync`: ``status()``, ``sync()``)."""
        return self._parts.vectors

    # -- capture ----------------------------------------------------------------------------
    def record(
        self,
        task: str = "",
        *,
        tenant_id: str,
        namespace: str = "default",
        task_type: str | None = None,
        tags: Sequence[str] = (),
        source: Provenance | str = Provenance.USER,
        metadata: dict[str, Any] | None = None,
        system_prompt: str | None = None,
        task_key: str | None = None,
    ) -> RunRecorder:
        """A recorder for one run: ``async with memory.record(task, tenant_id=...) as run:``.

        Leaving the block stores the trajectory and queues its review (not awaited).
        ``system_prompt``: the run's system prompt / policy (stored once per distinct text;
        the review reads it); ``task_key``: the run's task group (non-blank, <= 200
        characters; runs without one are grouped by intent at review). The outcome and its
        evidence: ``run.set_outcome(outcome, reason=..., expected_actions=...)``.
        """
        self._check_open()
        return RunRecorder(
            task,
            tenant_id=tenant_id,
            namespace=namespace,
            task_type=task_type,
            tags=tags,
            source=source,
            metadata=metadata,
            system_prompt=system_prompt,
            task_key=task_key,
            afinish=self.store_episode,
            clock=self.clock,
        )

    async def store_episode(
        self,
        trajectory: Trajectory | Mapping[str, Any],
        *,
        review: bool = True,
        merge: bool = False,
    ) -> EpisodeReceipt:
        """Store a finished trajectory and queue its post-hoc review (docs/review.md) in the
        background.

        Idempotent: storing a trajectory whose id exists changes nothing, unless ``merge``.
        Empty trajectories (no content anywhere) are stored but never reviewed;
        a paused one (``metadata["paused"] is True``: a run waiting at an interrupt) is
        stored but reviewed only once its end is merged into it.

        Args:
            trajectory: a :class:`Trajectory` or a dict of its fields.
            review: queue a review job (default True).
            merge: one run stored in parts (paused, resumed, maybe in another process): merge
                into the stored trajectory of the same id, events joined by ``event_id``
                (:func:`hindsight.store.trajectories.merge_trajectories`).

        Returns:
            :class:`EpisodeReceipt` (``trajectory_id``, ``stored``, ``review_queued``).

        Raises:
            InvalidTrajectoryError: the trajectory does not validate, an event's tool name is
                longer than the recorder and ``check_action`` take, or its reward contradicts
                its outcome (:func:`hindsight.capture.trajectory.checked_run`; one-line reason).
            TenantRequiredError: the trajectory has no tenant.
            UsageError: ``review`` or ``merge`` is not true or false.
        """
        self._check_open()

        def store() -> EpisodeReceipt:  # a large dict is validated off the event loop too
            traj = coerce_trajectory(trajectory, self.clock.now())
            return self._store_trajectory(traj, review, merge)

        return await asyncio.to_thread(store)

    def _store_trajectory(
        self, traj: Trajectory, review: bool, merge: bool = False
    ) -> EpisodeReceipt:
        """The blocking part of :meth:`store_episode`, on the caller's thread: one SQL
        transaction (trajectory + job) and a thread-safe wake of the worker. The sync facade
        calls it directly, so the end of a run never waits behind the review loop; so does the
        integrations' writer, whose refused runs are logged and kept aside
        (:mod:`hindsight.capture.writer`)."""
        review, merge = switch(review, "review", True), switch(merge, "merge", False)
        traj = checked_run(traj)
        paused = traj.metadata.get("paused") is True
        queue = review and not traj.is_empty() and not paused
        if traj.system_prompt is not None:
            # The policy, not the lessons this run was shown (stored once per policy).
            policy = strip_block(traj.system_prompt)
            if policy != traj.system_prompt:
                traj = traj.model_copy(update={"system_prompt": policy or None})
        stored = self.store.add_trajectory(traj, enqueue_review=queue, merge=merge)
        if (stored and queue) or self._parts.wired is not None:  # no review: nothing to wake
            self.reviews.stored(bool(stored and queue))
        return EpisodeReceipt(
            trajectory_id=traj.id, stored=stored, review_queued=bool(stored and queue)
        )

    async def paused_trajectory(
        self, thread_id: str, *, tenant_id: str, namespace: str = "default"
    ) -> str | None:
        """The id of the tenant's latest stored run still paused on the thread ``thread_id``
        (``metadata`` ``paused: true`` and ``thread_id``), or ``None``: a run resumed in another
        process continues that trajectory (:meth:`store_episode` with ``merge=True``).

        Raises:
            TenantRequiredError: missing or empty tenant. UsageError: bad namespace.
        """
        tenant = self._scope(tenant_id)
        ns: str = check(Namespace, namespace)
        if not isinstance(thread_id, str) or not thread_id:
            raise UsageError("thread_id must be a non-empty string")
        return await asyncio.to_thread(self.store.find_paused, tenant, thread_id, ns)

    # -- review ------------------------------------------------------------------------------
    async def review_now(self, trajectory_id: Any, *, tenant_id: str) -> list[Experience]:
        """Review a stored trajectory now, write its lessons and its episode, and return them
        (the episode, kind ``episode``, last).

        Raises:
            NotFoundError: no such trajectory in this tenant.
            ReviewTimeoutError: the review took longer than ``review_timeout`` seconds.
            ReviewError: the reviewer failed (lessons of a ``both`` part that succeeded are
                stored first).
        """
        tenant, tid = self._scope(tenant_id), check(TrajectoryId, trajectory_id)
        traj = await asyncio.to_thread(self.store.get_trajectory, tenant, tid)
        return await (await self._wired()).reviews.review(traj)

    async def review_jobs(
        self,
        *,
        state: str | None = None,
        tenant_id: str | None = None,
        limit: int | None = 100,
        cursor: str | None = None,
    ) -> Page[ReviewJob]:
        """Review jobs, oldest first (:class:`hindsight.store.ReviewJob`: ``state``,
        ``attempts``, ``last_error``, ``trajectory_id`` ...). ``state``: pending, running,
        succeeded or failed; ``tenant_id=None``: every tenant (operators). ``limit``
        1..10000; ``cursor``: the ``next_cursor`` of the previous page (keyset paging on
        ``(created_at, id)``, docs/concepts.md).

        Raises:
            UsageError: unknown state, a bad limit or cursor. TenantRequiredError: empty tenant.
        """
        self._check_open()
        n = check(Limit, limit)
        return await asyncio.to_thread(
            review_jobs_page, self.store, state=state, tenant_id=tenant_id, limit=n, cursor=cursor
        )

    async def retry_review_jobs(
        self,
        job_ids: Sequence[Any] = (),
        *,
        all_failed: bool = False,
        tenant_id: str | None = None,
    ) -> list[Any]:
        """Put failed review jobs back to pending (attempts reset) and wake the worker;
        returns the jobs as now stored. See :meth:`hindsight.store.SqlStore.retry_review_jobs`.

        Raises:
            UsageError: neither or both of ``job_ids`` / ``all_failed``; a job not failed.
            NotFoundError: an unknown job id.
        """
        self._check_open()
        every = switch(all_failed, "all_failed", False)
        jobs: list[Any] = await asyncio.to_thread(
            self.store.retry_review_jobs, job_ids, all_failed=every, tenant_id=tenant_id
        )
        if jobs and self.config.background_review:
            (await self._wired()).reviews.ensure_worker()
        return jobs

    async def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until the runs the framework integrations handed to the background writer are
        written (:attr:`writer`), then until no queued review is ready to run (``timeout`` in
        seconds, for each of the two).

        Returns:
            True when both drained, False on timeout (nothing is lost: writes and jobs stay
            queued).

        Raises:
            UsageError: ``timeout`` is neither ``None`` nor a number of seconds from 0
                (:func:`hindsight._contract.wait_seconds`).
        """
        timeout = wait_seconds(timeout)
        self._check_open()
        written = await asyncio.to_thread(self.writer.wait, timeout)
        if self._parts.wired is None and not await asyncio.to_thread(
            self.store.has_open_review_jobs
        ):
            return written  # nothing reviewed in this process, and no job waits
        return await (await self._wired()).reviews.flush(timeout) and written

    # -- write-back (manual) -----------------------------------------------------------------
    async def add_experience(
        self,
        content: str,
        *,
        tenant_id: str,
        namespace: str = "default",
        kind: ExperienceKind | str = ExperienceKind.RULE,
        task_type: str | None = None,
        tools: Sequence[str] = (),
        tags: Sequence[str] = (),
        confidence: float = 0.5,
        importance: float = 0.5,
        source: Provenance | str = Provenance.USER,
        metadata: dict[str, Any] | None = None,
    ) -> Experience:
        """Store a lesson directly (no review). ``confidence``/``importance`` in [0,1].

        The memory guard checks it first (docs/security.md): the returned experience has
        status ``quarantined`` and ``metadata["quarantine_reasons"]`` when a rule fired. Its
        trust is the weight of ``source`` (:data:`hindsight.guard.TRUST_WEIGHTS`).

        Raises:
            UsageError: an argument is invalid (one-line reason), or ``metadata`` uses a key
                reserved for the guard.
        """
        from hindsight.writeback.lessons import manual_experience

        confidence, importance = check(Confidence, confidence), check(Importance, importance)
        exp = manual_experience(
            content,
            tenant_id=self._scope(tenant_id),  # TenantRequiredError, as everywhere
            namespace=namespace,
            kind=kind,
            task_type=task_type,
            tools=tools,
            tags=tags,
            confidence=confidence,
            importance=importance,
            source=source,
            metadata=metadata,
            embedding_model=self.embedder.name,
            now=self.clock.now(),
        )
        written = await asyncio.to_thread((await self._wired()).writeback.write, [exp])
        return written[0] if written else exp

    async def add_experiences(
        self, items: Sequence[Mapping[str, Any]], *, tenant_id: str
    ) -> list[AddResult]:
        """Store a batch of lessons directly (no review): the public batch write.

        Each item is a mapping with :meth:`add_experience`'s arguments but ``tenant_id``
        (:data:`hindsight.writeback.lessons.ADD_FIELDS`: ``content`` required; ``namespace``,
        ``kind``, ``task_type``, ``tools``, ``tags``, ``confidence``, ``importance``,
        ``source``, ``metadata`` optional, same defaults). Every item is validated before
        anything is written: one invalid item refuses the whole batch and nothing is stored.

        The batch is decided in memory - the memory guard screens each item (neighbour rows
        read once for the batch), dedup compares each with the index **and** with the earlier
        items of the batch (an item equal to an earlier one is merged into it) - and every row
        is written in one SQL transaction; the vector index is brought up to date after the
        commit (the vector log only repairs a crash in between).

        Returns:
            One :class:`hindsight.models.AddResult` per item, in input order: ``index``,
            ``id``, ``result`` (``"created"``, ``"merged"``, ``"quarantined"``) and the
            ``experience`` as stored.

        Raises:
            TenantRequiredError: missing or empty tenant.
            UsageError: ``items`` is not a list of mappings, or an item is invalid (one line
                naming its index and field, e.g. ``item 3: confidence: ...``); nothing is
                written.
            StoreError: the database failed; the transaction is rolled back, nothing written.
        """
        from hindsight.writeback.lessons import manual_experiences

        self._check_open()
        exps = manual_experiences(
            items,
            tenant_id=self._scope(tenant_id),
            embedding_model=self.embedder.name,
            now=self.clock.now(),
        )
        if not exps:
            return []
        done = await asyncio.to_thread((await self._wired()).writeback.write_items, exps)
        return [
            AddResult(index=i, id=stored.id, result=result, experience=stored)  # type: ignore[arg-type]
            for i, (result, stored) in enumerate(done)
        ]

    # -- recall ----------------------------------------------------------------------------------
    async def recall(
        self,
        query: str,
        *,
        tenant_id: str,
        namespace: str | Sequence[str] = "default",
        include_shared: bool = True,
        task_type: str | None = None,
        tags: Sequence[str] = (),
        tools: Sequence[str] = (),
        top_k: int | None = None,
        mode: RecallMode | None = None,
        similarity_floor: float | None = None,
        trajectory_id: str | None = None,
        token_budget: int | None = None,
        include_episodes: bool = False,
        explain: bool = False,
        record: bool = True,
        risk_checks: bool = True,
    ) -> RecallResult:
        """Recall the experiences most useful for ``query`` (docs/concepts.md#recall).

        Args:
            query: the task or latest user message (may be empty in ``task_type`` mode).
            tenant_id: required; ``None``/``""``/non-strings are refused.
            namespace: the private namespace (or several, in priority order), searched
                first; then ``config.shared_namespace`` when ``include_shared``.
            task_type: exact filter on task_type.
            tags: soft boost, +0.05 per matching tag (tags and tools together max +0.15).
            tools: the tools the asking agent has; they boost like tags (they are not
                embedded with the query, so many tools do not drown a short request) and
                open the block with their risk checks (``risk_checks``).
            top_k: 1..1000, default ``config.top_k`` (5).
            mode: ``"vector"`` (similarity; default) or ``"task_type"`` (exact task_type match,
                no vectors: docs/concepts.md; default when ``query`` is empty and ``task_type``
                is given).
            similarity_floor: cosine floor; default ``config.similarity_floor`` or the
                embedder's own.
            trajectory_id: the run asking, recorded for outcome attribution.
            token_budget: budget of :meth:`RecallResult.render` (default 2000 tokens).
            include_episodes: also recall the most similar past episodes (run summaries,
                docs/concepts.md#memory-layers) into ``RecallResult.episodes``: at most
                ``min(top_k, EPISODE_TOP_K)`` (3), ranked like lessons, rendered after the
                lessons in their own section with their own share of the budget
                (:mod:`hindsight.recall.candidates`). Episodes are never among ``hits``.
            explain: also list, in ``excluded``, close experiences of this tenant that a
                filter kept out: namespace, task_type, status (archived, superseded,
                quarantined) (:mod:`hindsight.recall.explain`; never other tenants).
                Experiences under ``config.min_confidence`` are always excluded, with reason.
            record: ``False`` makes a dry run that changes nothing: no ``recall_count`` /
                ``last_recalled_at`` update and no usage row for outcome attribution (the
                console's recall playground, docs/console.md; the framework integrations,
                which call :meth:`record_recall` once the model was seen to receive the block,
                so lessons the model never saw are never credited or blamed). Default ``True``.
            risk_checks: with ``tools``, also render the risk checks of those tools at the top
                of the block as "before you call X: ..." lines (docs/checks.md):
                at most ``RISK_BUDGET_SHARE`` (a quarter) of ``token_budget``, two checks per
                tool, those that fit the query best first, the lessons behind them in
                ``RecallResult.risk_lesson_ids`` (recorded for outcome attribution like hits).
                Default ``True``.

        Returns:
            :class:`RecallResult` with hits (score breakdown each) and exclusions.

        Raises:
            TenantRequiredError: missing or empty tenant.
            UsageError: invalid query, top_k, mode, task_type, tags, tools (each a tool name of
                1..200 characters), similarity_floor or token_budget, or a switch
                (``include_shared``, ``include_episodes``, ``explain``, ``record``,
                ``risk_checks``) that is not true or false (docs/concepts.md#the-input-contract).
        """
        return await asyncio.to_thread(
            self._recall_now,
            query,
            tenant_id=tenant_id,
            namespace=namespace,
            include_shared=include_shared,
            task_type=task_type,
            tags=tags,
            tools=tools,
            top_k=top_k,
            mode=mode,
            similarity_floor=similarity_floor,
            trajectory_id=trajectory_id,
            token_budget=token_budget,
            include_episodes=include_episodes,
            explain=explain,
            record=record,
            risk_checks=risk_checks,
        )

    def _recall_now(self, query: Any, *, risk_checks: bool, **options: Any) -> RecallResult:
        """:meth:`recall`, blocking, on the calling thread (``options``: every other argument
        of :meth:`recall`, defaults applied); :class:`hindsight.Memory` calls it directly.
        Its reads leave the recall bookkeeping buffered (:meth:`SqlStore.recall_reads`)."""
        self._check_open()
        risk_checks = switch(risk_checks, "risk_checks", True)
        floor = check(SimilarityFloor, options.pop("similarity_floor", None))
        request = self._recall.request(query, similarity_floor=floor, **options)
        with (
            operation(
                "recall",
                self.metrics,
                tenant=request.tenant_id,
                trajectory_id=request.trajectory_id,
                top_k=request.top_k,
                tools=len(request.tools),
            ) as span,
            self.store.recall_reads(),
        ):
            self._parts.vectors.ensure_ready()  # VectorIndexBehindError: one line, no stale answer
            result, vector = self._recall.run_with_vector(request)
            if risk_checks and request.tools:
                result = self._with_risks(result, request, vector)
            span.set_attributes(
                {
                    "hindsight.hits": len(result.hits),
                    "hindsight.episodes": len(result.episodes),
                    "hindsight.risk_lessons": len(result.risk_lesson_ids),
                }
            )
        return result

    def _with_risks(self, result: RecallResult, request: Any, vector: Any) -> RecallResult:
        """``result`` with the run-start risk section of ``request.tools`` (blocking), ranked
        by how well each check's lesson fits the request when ``vector`` (the query's
        embedding) is known (:func:`hindsight.checks.request_scores`). A lesson already among
        the hits or episodes is not repeated (nor counted twice), nor is its subject, unless a
        check of that subject stands on more runs (or as many, and is more specific:
        :func:`hindsight.recall.scoring.evidence`): then that check is shown and the hit is
        left out (docs/concepts.md#recall)."""
        from hindsight.checks import find_checks, render_risk_section, request_scores

        shown = {h.experience.id for h in [*result.hits, *result.episodes]}
        by_subject = {s: h for h in result.hits if (s := h.experience.subject) is not None}
        by_tool = {
            tool: [
                m.check
                for m in find_checks(
                    self.store,
                    request.tenant_id,
                    tool,
                    {},
                    namespaces=request.namespaces,
                    task_type=request.task_type,
                    min_confidence=self.config.min_confidence,
                    top_k=RISK_CANDIDATES_PER_TOOL + len(shown),
                ).checks
                if m.check.lesson_id not in shown
            ][:RISK_CANDIDATES_PER_TOOL]
            for tool in dict.fromkeys(request.tools)
        }
        scores = None
        candidates = [c for checks in by_tool.values() for c in checks]
        weaker = {  # subjects whose hit a check outweighs: the check may show, the hit goes
            c.subject
            for c in candidates
            if c.subject in by_subject
            and evidence(c.sources, c.lesson_kind)
            > evidence(
                by_subject[c.subject].experience.source_trajectory_ids,
                by_subject[c.subject].experience.kind,
            )
        }
        if vector is not None and candidates:
            weights = self.config.weights
            scores = request_scores(
                candidates,
                self.store.get_vectors([c.lesson_id for c in candidates]),
                vector,
                similarity_weight=weights.similarity,
                confidence_weight=weights.confidence,
                kind_bonus=self.config.kind_bonus,
            )
        budget = int(request.token_budget * RISK_BUDGET_SHARE)
        section, ids = render_risk_section(
            by_tool,
            token_budget=budget,
            per_tool=RISK_CHECKS_PER_TOOL,
            scores=scores,
            shown_subjects=[s for s in by_subject if s not in weaker],
        )
        if not section:
            return result
        checked = {c.subject for c in candidates if c.lesson_id in ids and c.subject in weaker}
        if checked:
            gone = [by_subject[s] for s in checked]
            result = result.model_copy(
                update={
                    "hits": [h for h in result.hits if all(h is not g for g in gone)],
                    "excluded": [
                        *(
                            Exclusion(
                                experience_id=g.experience.id,
                                reason="about the same subject as the run-start check of "
                                + next(
                                    c.lesson_id
                                    for c in candidates
                                    if c.subject == s and c.lesson_id in ids
                                ),
                                similarity=g.breakdown.similarity,
                                score=g.score,
                            )
                            for s, g in zip(checked, gone, strict=True)
                        ),
                        *result.excluded,
                    ],
                }
            )
        if request.record and request.trajectory_id is not None:
            self.store.buffer_recall(
                request.tenant_id, ids, self.clock.now(), request.trajectory_id
            )
        return result.model_copy(update={"risk_section": section, "risk_lesson_ids": ids})

    async def record_recall(
        self, trajectory_id: Any, experience_ids: Sequence[Any], *, tenant_id: str
    ) -> int:
        """Count a recall of ``experience_ids`` by the run ``trajectory_id`` (what
        :meth:`recall` does unless ``record=False``): their ``recall_count`` and
        ``last_recalled_at`` change, and :meth:`record_outcome` for that run credits or blames
        them. Returns how many of the tenant's experiences were counted (others are ignored).

        Raises:
            TenantRequiredError: missing or empty tenant. UsageError: a bad id.
        """
        return await asyncio.to_thread(
            self._record_recall, trajectory_id, experience_ids, tenant_id
        )

    def _record_recall(
        self, trajectory_id: Any, experience_ids: Sequence[Any], tenant_id: Any
    ) -> int:
        tenant, tid = self._scope(tenant_id), check(TrajectoryId, trajectory_id)
        if isinstance(experience_ids, str):
            raise UsageError("experience_ids must be a list of ids, not one string")
        ids = [check(ExperienceId, e) for e in experience_ids]
        if not ids:
            return 0
        return int(self.store.record_recall(tenant, ids, self.clock.now(), tid))

    # -- decision-time risk checks (docs/checks.md) -------------------------------------------
    async def check_action(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        tenant_id: str,
        namespace: str | Sequence[str] = "default",
        include_shared: bool = True,
        task_type: str | None = None,
        top_k: int | None = None,
        trajectory_id: str | None = None,
        record: bool = True,
        state: Sequence[Mapping[str, Any]] | None = None,
    ) -> CheckResult:
        """The risk checks matching a proposed call ``tool(**args)`` (docs/checks.md).

        Checks are compiled from the tenant's active lessons about ``tool`` in ``namespace``
        (and ``config.shared_namespace`` when ``include_shared``): exact lookup by tool name,
        then the arguments matched by class, no vector search (:mod:`hindsight.checks`,
        docs/checks.md). Lessons under ``config.min_confidence`` give no check.

        Args:
            tool: the tool the model proposes to call (exact name).
            args: its arguments (a mapping; ``None`` = none).
            tenant_id: required.
            namespace: the private namespace (or several, in priority order).
            task_type: the run's task type: checks of another task type are left out.
            top_k: 1..1000 checks at most (``None``: 5).
            trajectory_id: the run asking; with ``record``, the lessons behind the returned
                checks are counted as recalled by that run, so :meth:`record_outcome` credits
                or blames them once per run like recalled lessons.
            record: ``False`` (or no ``trajectory_id``) changes nothing.
            state: the tool results the run has seen so far, oldest first:
                ``[{"tool": <name>, "result": <JSON value or its text>}]`` (at most 1000).
                A rule mined with a condition (docs/checks.md#conditions) is shown when its
                condition holds for this state and the call's arguments, ranked lower when it
                cannot be told (``None``: no state known), left out when it is false. Dates
                are measured from the memory's clock.

        Returns:
            :class:`hindsight.checks.CheckResult`: ``checks`` (each a
            :class:`~hindsight.checks.CheckMatch` with ``score`` in [0, 1] and ``match``),
            ``render()`` the advice block.

        Raises:
            TenantRequiredError: missing or empty tenant.
            UsageError: an empty or non-string tool, args not a mapping, a bad namespace,
                task_type, top_k, trajectory id or state.
        """
        return await asyncio.to_thread(
            self._check_action_now,
            tool,
            args,
            tenant_id=tenant_id,
            namespace=namespace,
            include_shared=include_shared,
            task_type=task_type,
            top_k=top_k,
            trajectory_id=trajectory_id,
            record=record,
            state=state,
        )

    def _check_action_now(
        self,
        tool: Any,
        args: Any,
        *,
        tenant_id: Any,
        namespace: Any,
        include_shared: bool,
        task_type: Any,
        top_k: Any,
        trajectory_id: Any,
        record: bool,
        state: Any = None,
    ) -> CheckResult:
        """:meth:`check_action`, blocking, on the calling thread (:class:`hindsight.Memory`
        calls it directly)."""
        from hindsight.checks import find_checks

        tenant = self._scope(tenant_id)
        tool = check(ToolName, tool)
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise UsageError(
                f"args must be a mapping of argument names to values, got {type(args).__name__}"
            )
        namespaces: list[str] = check(Namespaces, namespace)
        shared = switch(include_shared, "include_shared", True)
        if shared and self.config.shared_namespace not in namespaces:
            namespaces.append(self.config.shared_namespace)
        k: int = check(TopK, 5 if top_k is None else top_k)
        tt = check(TaskType, task_type)
        tid = None if trajectory_id is None else check(TrajectoryId, trajectory_id)
        seen = check(RunState, state)
        record = switch(record, "record", True)
        with (
            operation(
                "check_action", self.metrics, tenant=tenant, trajectory_id=tid, top_k=k, tool=tool
            ) as span,
            self.store.recall_reads(),
        ):
            result = find_checks(
                self.store,
                tenant,
                tool,
                args,
                namespaces=namespaces,
                task_type=tt,
                min_confidence=self.config.min_confidence,
                top_k=k,
                state=seen,
                now=self.clock.now(),
            )
            span.set_attribute("hindsight.checks", len(result.checks))
        if record and tid is not None and result.checks:
            self.store.buffer_recall(tenant, result.lesson_ids, self.clock.now(), tid)
        return result

    async def distill(
        self, *, tenant_id: str, min_sources: int = 2, dry_run: bool = False
    ) -> dict[str, Any]:
        """Distil shared rules from the lessons of the tenant's agents (docs/checks.md):
        a lesson learned in at least ``min_sources`` (default 2:
        :data:`hindsight.checks.distill.MIN_SOURCES`) distinct namespaces is written once to
        ``config.shared_namespace`` through the memory guard, with provenance to every source
        lesson (:mod:`hindsight.checks.distill` documents the offline method). Idempotent: a
        second run adds nothing. Reads one tenant only.

        With a ``reflection_model`` configured, the LLM method follows the offline one
        (lessons that say the same thing in different words); a failing model or a malformed
        reply leaves the offline rules only, and ``llm.error`` says why.

        Returns:
            ``{"tenant_id", "method", "dry_run", "clusters": [{"key", "namespaces",
            "content", "id", "status"}], "written": [ids], "quarantined": [ids],
            "existing": [ids]}`` and, with a model, ``"llm": {"model", "prompt_version",
            "candidates", "asked", "merged", "error"}``; ``id``/``status`` are ``None`` in a
            dry run. ``method``: ``offline:lesson_key``, ``+llm:<model>`` when the model
            answered.

        Raises:
            TenantRequiredError: missing or empty tenant. UsageError: ``min_sources`` < 2, or
                ``dry_run`` is not true or false.
        """
        from hindsight.checks.distill import clusters

        tenant = self._scope(tenant_id)
        if isinstance(min_sources, bool) or not isinstance(min_sources, int) or min_sources < 2:
            raise UsageError(f"min_sources must be an integer >= 2, got {min_sources!r}")
        dry_run = switch(dry_run, "dry_run", False)
        shared = self.config.shared_namespace
        lessons, have = await asyncio.to_thread(self._distill_inputs, tenant, shared)
        report: dict[str, Any] = {
            "tenant_id": tenant,
            "method": "offline:lesson_key",
            "dry_run": dry_run,
            "clusters": [],
            "written": [],
            "quarantined": [],
            "existing": [],
        }
        grouped: set[str] = set()
        for cluster in clusters(lessons, shared=shared, min_sources=min_sources):
            grouped.update(m.id for m in cluster.members)
            await self._distilled(tenant, cluster.key, cluster.namespaces, cluster.rule(),
                                  have, report, dry_run=dry_run)  # fmt: skip
        if self.config.reflection_model:
            await self._distill_llm(tenant, shared, lessons, have, grouped, report,
                                    min_sources=min_sources, dry_run=dry_run)  # fmt: skip
        return report

    async def _distilled(
        self,
        tenant: str,
        key: str,
        namespaces: list[str],
        rule: dict[str, Any],
        have: dict[str, Experience],
        report: dict[str, Any],
        *,
        dry_run: bool,
    ) -> None:
        """Write one distilled rule (unless it exists or in a dry run) and report it."""
        entry = {"key": key, "namespaces": namespaces, "content": rule["content"],
                 "id": None, "status": None}  # fmt: skip
        report["clusters"].append(entry)
        lesson_key = rule["metadata"]["lesson_key"]
        if lesson_key in have:
            entry["id"], entry["status"] = have[lesson_key].id, have[lesson_key].status.value
            report["existing"].append(have[lesson_key].id)
            return
        if dry_run:
            return
        exp = await self.add_experience(
            rule["content"],
            tenant_id=tenant,
            namespace=self.config.shared_namespace,
            kind=rule["kind"],
            tools=rule["tools"],
            confidence=rule["confidence"],
            source=Provenance.SYSTEM,
            metadata=rule["metadata"],
        )
        have[lesson_key] = exp
        entry["id"], entry["status"] = exp.id, exp.status.value
        quarantined = exp.status.value == "quarantined"
        report["quarantined" if quarantined else "written"].append(exp.id)

    async def _distill_llm(
        self,
        tenant: str,
        shared: str,
        lessons: list[Experience],
        have: dict[str, Experience],
        grouped: set[str],
        report: dict[str, Any],
        *,
        min_sources: int,
        dry_run: bool,
    ) -> None:
        """The LLM method of :mod:`hindsight.checks.distill` after the offline one: candidate
        groups by embedding, confirmed and merged by the ``reflection_model``."""
        from hindsight.checks.distill import DISTILLED_PREFIX, candidates, merged_rule, sources_of
        from hindsight.review.llm.distill import DISTILL_PROMPT_VERSION, ask_merges

        model = str(self.config.reflection_model)
        skip = grouped | sources_of(have.values())
        pool = [e for e in lessons if e.id not in skip and e.namespace != shared]
        vectors: dict[str, Any] = {}
        if pool:
            matrix = await asyncio.to_thread(self.embedder.embed, [e.content for e in pool])
            vectors = {e.id: row for e, row in zip(pool, matrix, strict=True)}
        groups = candidates(pool, vectors, shared=shared, skip=skip, min_sources=min_sources)
        merged, asked, error = await ask_merges(
            groups,
            model=model,
            api_base=self.config.llm_base_url,
            api_key=self.config.llm_api_key,
            timeout=min(self.config.review_timeout, 60.0),
            min_sources=min_sources,
        )
        report["llm"] = {"model": model, "prompt_version": DISTILL_PROMPT_VERSION,
                         "candidates": len(groups), "asked": asked, "merged": len(merged),
                         "error": error}  # fmt: skip
        if error is not None:
            log.warning("hindsight distill: %s; the offline rules stand", error)
        report["method"] = "offline:lesson_key" + ("" if error else f"+llm:{model}")
        for group in merged:
            rule = merged_rule(group.members, group.rule, model=model)
            rule["metadata"]["prompt_version"] = DISTILL_PROMPT_VERSION
            namespaces = sorted({m.namespace for m in group.members})
            key = rule["metadata"]["lesson_key"].removeprefix(DISTILLED_PREFIX)
            await self._distilled(tenant, key, namespaces, rule,
                                  have, report, dry_run=dry_run)  # fmt: skip

    def _distill_inputs(
        self, tenant: str, shared: str
    ) -> tuple[list[Experience], dict[str, Experience]]:
        """The tenant's active lessons, and its distilled rules by lesson key (active or
        quarantined: a rule the guard held is not written again)."""
        from hindsight.checks.distill import DISTILLED_PREFIX

        lessons: list[Experience] = []
        offset = 0
        while True:
            page = self.store.list_experiences(
                tenant, statuses=("active",), limit=10_000, offset=offset
            )
            lessons += page
            if len(page) < 10_000:
                break
            offset += len(page)
        have: dict[str, Experience] = {}
        for exp in self.store.list_experiences(
            tenant, namespaces=[shared], statuses=("active", "quarantined"), limit=10_000
        ):
            key = exp.metadata.get("lesson_key")
            if isinstance(key, str) and key.startswith(DISTILLED_PREFIX):
                have.setdefault(key, exp)
        return lessons, have

    # -- reading and deleting -------------------------------------------------------------------
    async def get_experience(self, experience_id: Any, *, tenant_id: str) -> Experience:
        """The experience with this id (any UUID form).

        Raises:
            NotFoundError: no such experience in this tenant.
        """
        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        return await asyncio.to_thread(self.store.get_experience, tenant, eid)

    async def list_experiences(
        self,
        *,
        tenant_id: str,
        namespace: str | None = None,
        task_type: str | None = None,
        status: str = "active",
        task_key: str | None = None,
        kind: str | None = None,
        limit: int | None = 100,
        offset: int | None = None,
        cursor: str | None = None,
        order: str = "confidence",
    ) -> Page[Experience]:
        """Experiences of a tenant, most confident first (then the latest updated, then id),
        one page: a list with ``next_cursor`` (:class:`hindsight.Page`). ``order="created"``:
        oldest created first, then id, an order no write to a listed row changes, so its
        cursor never repeats or skips a row even when confidences change between pages
        (a cursor of one order is refused by the other).

        ``task_key``: only those learned from a run of this task group (one of their source
        runs has this key, explicit or assigned by intent). ``kind``: only lessons of this
        kind (:class:`~hindsight.models.ExperienceKind`: ``rule``, ``improvement``, ...,
        ``episode``; ``None``: every kind). ``limit`` 1..10000 (``None``: 100). Paging:
        ``cursor`` is the ``next_cursor`` of the previous page (keyset paging: a write or
        delete between pages neither repeats nor hides an experience; one whose confidence
        changes moves to its new place), or ``offset`` rows to skip (kept for compatibility;
        not both). :meth:`iter_experiences` walks every page.

        Raises:
            TenantRequiredError: missing or empty tenant.
            UsageError: a bad namespace, status, task key, kind, limit, offset, order or cursor
                (one of another listing or order, or changed), or cursor and offset together.
        """
        tenant, n, st = self._scope(tenant_id), check(Limit, limit), check(Status, status)
        only = None if kind is None else [check(Kind, kind).value]
        nss = [check(Namespace, namespace)] if namespace is not None else None
        by = check(ExperienceOrder, order)
        listing, kinds, key = _EXPERIENCE_ORDERS[by]
        after, skip = _start(listing, cursor, offset, kinds)
        items = await asyncio.to_thread(
            self.store.list_experiences,
            tenant,
            namespaces=nss,
            task_type=task_type,
            statuses=(st.value,),
            task_key=check(TaskKey, task_key),
            kinds=only,
            limit=n,
            offset=skip,
            after=after,
            order=by,
        )
        return page_of(listing, items, n, key)

    async def iter_experiences(
        self, *, tenant_id: str, page_size: int = 100, **filters: Any
    ) -> AsyncIterator[Experience]:
        """Every experience :meth:`list_experiences` lists with ``filters`` (``namespace``,
        ``task_type``, ``status``, ``task_key``, ``kind``, ``order``), page after page of
        ``page_size`` by cursor: each experience present from the first page to the last is
        yielded exactly once (with ``order="created"`` also when confidences change meanwhile).

        Raises:
            UsageError: as :meth:`list_experiences` (``cursor``/``offset`` are not filters).
        """

        async def fetch(cursor: str | None) -> Page[Experience]:
            return await self.list_experiences(
                tenant_id=tenant_id, limit=page_size, cursor=cursor, **filters
            )

        async for item in awalk(fetch):
            yield item

    async def list_trajectories(
        self,
        *,
        tenant_id: str,
        task_key: str | None = None,
        outcome: str | None = None,
        task_type: str | None = None,
        limit: int | None = 100,
        offset: int | None = None,
        cursor: str | None = None,
    ) -> Page[TrajectorySummary]:
        """The tenant's stored runs, oldest stored first (then by id), without their events
        (:class:`hindsight.store.TrajectorySummary`: ``id``, ``task``, ``outcome``, ``reward``,
        ``task_key`` and ``task_key_source``, ``system_prompt_sha256``, ``reason``,
        ``review_state`` / ``reviewed`` ...; ``to_json()`` gives the wire shape); one page, a
        list with ``next_cursor`` (:class:`hindsight.Page`).

        Args:
            tenant_id: the tenant (required).
            task_key: only runs of this task group (explicit or assigned by intent).
            outcome: only runs with this outcome (success, failure, partial, unknown).
            task_type: only runs of this exact task type.
            limit: 1..10000 runs (``None``: 100).
            cursor: the ``next_cursor`` of the previous page (keyset paging on
                ``(stored_at, id)``); or ``offset``: runs to skip (>= 0); not both.

        Raises:
            TenantRequiredError: missing or empty tenant.
            UsageError: a blank or too long task key, an unknown outcome, a bad
                limit/offset/cursor, or cursor and offset together.
        """
        tenant, n = self._scope(tenant_id), check(Limit, limit)
        after, skip = _start("trajectories", cursor, offset, _RUN_KEY)
        items = await asyncio.to_thread(
            self.store.list_trajectories,
            tenant,
            task_key=check(TaskKey, task_key),
            outcome=check(OutcomeFilter, outcome),
            task_type=check(TaskType, task_type),
            limit=n,
            offset=skip,
            after=after,
        )
        return page_of("trajectories", items, n, _run_key)

    async def iter_trajectories(
        self, *, tenant_id: str, page_size: int = 100, **filters: Any
    ) -> AsyncIterator[TrajectorySummary]:
        """Every run :meth:`list_trajectories` lists with ``filters`` (``task_key``,
        ``outcome``, ``task_type``), page after page of ``page_size`` by cursor."""

        async def fetch(cursor: str | None) -> Page[TrajectorySummary]:
            return await self.list_trajectories(
                tenant_id=tenant_id, limit=page_size, cursor=cursor, **filters
            )

        async for item in awalk(fetch):
            yield item

    async def get_trajectory(self, trajectory_id: Any, *, tenant_id: str) -> Trajectory:
        """The stored trajectory with its events. Raises NotFoundError when absent."""
        tenant, tid = self._scope(tenant_id), check(TrajectoryId, trajectory_id)
        return await asyncio.to_thread(self.store.get_trajectory, tenant, tid)

    async def delete_experience(self, experience_id: Any, *, tenant_id: str) -> None:
        """Soft-delete an experience: never recalled again, row kept for audit, vector removed.

        Raises:
            NotFoundError: no such (non-deleted) experience in this tenant.
        """
        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        if not await self._write(self.store.delete_experiences, tenant, [eid]):
            raise NotFoundError(f"experience {eid} not found in tenant {tenant!r}")

    async def forget(
        self,
        *,
        tenant_id: str,
        experience_id: Any | None = None,
        trajectory_id: Any | None = None,
        everything: bool = False,
    ) -> int:
        """Hard-delete rows and vectors: one experience, what one trajectory taught, or
        ``everything=True`` of the tenant. Returns the number of experiences removed.

        Raises:
            UsageError: no filter given, or more than one (an empty filter is never "all"), or
                ``everything`` is not true or false (``"no"`` is off: it deletes nothing).
            TenantRequiredError: missing or empty tenant.
        """
        tenant = self._scope(tenant_id)
        target = forget_filter(experience_id, trajectory_id, everything)
        n: int = await self._write(self.store.forget, tenant, **target)
        if experience_id is not None and n == 0:
            raise NotFoundError(f"experience {target['experience_ids'][0]} not found")
        return n

    async def list_quarantined(
        self,
        *,
        tenant_id: str,
        namespace: str | None = None,
        kind: str | None = None,
        limit: int | None = 100,
        offset: int | None = None,
        cursor: str | None = None,
    ) -> Page[Experience]:
        """The tenant's quarantined experiences (most confident first), one page with
        ``next_cursor`` as :meth:`list_experiences`; each one's reasons are in
        ``metadata["quarantine_reasons"]``. ``kind``: only lessons of this kind. ``limit``
        1..10000.

        Raises:
            TenantRequiredError: missing or empty tenant.
            UsageError: bad namespace, kind, limit, offset or cursor, or cursor and offset
                together.
        """
        return await self.list_experiences(
            tenant_id=tenant_id,
            namespace=namespace,
            kind=kind,
            status="quarantined",
            limit=limit,
            offset=offset,
            cursor=cursor,
        )

    async def stats(self, *, tenant_id: str | None = None) -> dict[str, Any]:
        """Counts of trajectories, events, experiences (by status/kind) and jobs, the points
        of the vector index and ``vectors_pending``: vector-outbox rows not applied yet to an
        index kept apart from SQL (0 when up to date, always 0 with pgvector).

        ``tenant_id=None`` reports the whole store (operators only; the CLI ``stats``), with
        ``vector_index``: where the vectors are searched (``pgvector``, ``edge``, ``qdrant
        <url> collection <name>``, ``memory``).
        """
        self._check_open()
        tenant = check(OptionalTenantId, tenant_id)
        data: dict[str, Any] = await asyncio.to_thread(self.store.stats, tenant)
        data["vectors"] = await asyncio.to_thread(self.index.count, tenant)
        status = await asyncio.to_thread(self._parts.vectors.status)
        data["vectors_pending"] = status["pending"]
        data["embedding_model"] = self.embedder.name
        data["embedding_dimension"] = self.embedder.dimension
        if tenant is None:
            data["vector_index"] = status["kind"]
        return data


_RUN_KEY = (datetime, str)
_EXPERIENCE_ORDERS: dict[str, tuple[str, Sequence[type], Callable[[Experience], Sequence[Any]]]] = {
    "confidence": ("experiences", EXPERIENCE_KEY, experience_key),
    "created": ("experiences:created", CREATED_KEY, created_key),
}
"""Each order of :meth:`AsyncMemory.list_experiences`: its listing name (so a cursor of one
order is refused by the other), the types of its sort key and the key of a row."""
_JOB_KEY = (datetime, str)


def _run_key(run: TrajectorySummary) -> tuple[datetime, str]:
    return (run.stored_at, run.id)


def _job_key(job: ReviewJob) -> tuple[datetime, str]:
    return (job.created_at, job.id)


def review_jobs_page(
    store: Any, *, state: str | None, tenant_id: str | None, limit: int, cursor: Any
) -> Page[ReviewJob]:
    """One page of review jobs of ``store`` (a :class:`hindsight.store.SqlStore`), oldest
    first, keyset-paged on ``(created_at, id)``: ``cursor`` is the previous page's
    ``next_cursor`` (``None``: the first page); ``limit`` >= 1, already checked. Shared by
    :meth:`AsyncMemory.review_jobs` and ``hindsight jobs`` (which opens the SQL store alone).

    Raises:
        UsageError: unknown state, or not a cursor of this listing.
    """
    after, _ = _start("jobs", cursor, None, _JOB_KEY)
    jobs = store.list_review_jobs(state=state, tenant_id=tenant_id, limit=limit, after=after)
    return page_of("jobs", jobs, limit, _job_key)


def _start(
    listing: str, cursor: Any, offset: Any, kinds: Sequence[type]
) -> tuple[tuple[Any, ...] | None, int]:
    """Where a page of ``listing`` starts: the sort key after which it starts (from
    ``cursor``) and the rows it skips (``offset``; ``None`` = 0).

    Raises:
        UsageError: both given, a bad offset, or not a cursor of ``listing``.
    """
    paging(cursor, offset)
    if cursor is not None:
        return decode_cursor(listing, check(Cursor, cursor), kinds), 0
    return None, 0 if offset is None else check(Offset, offset)


def _close_all_at_exit() -> None:  # pragma: no cover - exercised at interpreter exit
    for mem in list(_OPEN):
        with contextlib.suppress(Exception):
            mem.close(timeout=2.0)


_OPEN: weakref.WeakSet[AsyncMemory] = weakref.WeakSet()
atexit.register(_close_all_at_exit)
