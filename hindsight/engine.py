"""The async engine: capture -> review -> write-back -> recall (MISSION S1-S6).

:class:`AsyncMemory` is the one implementation; :class:`hindsight.Memory` is a thin sync facade
over it. The SQL store is the source of truth; vectors follow it through an outbox, so a crash
between the two writes is repaired on the next open.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hindsight._contract import validation_message
from hindsight._errors import (
    EmbedderMismatchError,
    InvalidTrajectoryError,
    NotFoundError,
    UsageError,
)
from hindsight._ids import normalize_id, validate_namespace, validate_tenant
from hindsight._runtime import BackgroundLoop
from hindsight.capture import RunRecorder
from hindsight.clock import SystemClock
from hindsight.config import MemoryConfig
from hindsight.lifecycle.api import LifecycleMethods
from hindsight.models import (
    Experience,
    ExperienceKind,
    ExperienceStatus,
    Provenance,
    Trajectory,
)
from hindsight.ports import Clock, Embedder, Lesson, Reviewer, VectorIndex
from hindsight.recall import RecallMode, RecallResult
from hindsight.recall.pipeline import Recall, RecallRequest
from hindsight.review.worker import ReviewWorker
from hindsight.store.vector_sync import VectorSync
from hindsight.writeback import (
    WriteBack,
    lessons_to_experiences,
    normalize_content,
)

__all__ = ["AsyncMemory", "EpisodeReceipt"]

log = logging.getLogger("hindsight")

REVIEW_YIELD_SECONDS = 0.05
"""The in-process review worker claims a job only after no run has ended for this long (50 ms:
longer than storing a run takes, far shorter than a review waits anyway)."""

class EpisodeReceipt(dict[str, Any]):
    """What :meth:`AsyncMemory.store_episode` returns: a dict with ``trajectory_id`` (str),
    ``stored`` (False when the trajectory was already there) and ``review_queued`` (bool)."""

    @property
    def trajectory_id(self) -> str:
        return str(self["trajectory_id"])


def _default_reviewer(config: MemoryConfig) -> Reviewer:
    from hindsight.review import make_reviewer

    return make_reviewer(config)  # heuristic | llm | both (docs/review.md)


_REVIEW_LOCKS = tuple(threading.Lock() for _ in range(64))
"""Striped locks serializing reviews of one trajectory within a process (see ``_review``)."""


class AsyncMemory(LifecycleMethods):
    """Experience memory for agents, async API.

    Opening is synchronous (it creates folders, applies SQL migrations, opens the vector index)
    and may raise:

    Raises:
        EmbedderMismatchError: the store was built with another embedding model (case C07).
        StoreLockedError: another live process owns the embedded data dir (case C09).
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
        if isinstance(reviewer, str):  # a reviewer's name is the config setting of that name
            overrides["reviewer"], reviewer = reviewer, None
        try:
            if config is None:
                config = MemoryConfig(**overrides)
            elif overrides:
                config = config.model_copy(update=overrides)
        except ValidationError as err:
            raise UsageError(f"invalid configuration: {validation_message(err)}") from None
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self._closed = False
        self._lock: Any = None
        self._runtime = BackgroundLoop()
        self._outcome_lock = threading.Lock()
        self._worker: ReviewWorker | None = None
        self._last_store = 0.0

        from hindsight.embedders import make_embedder

        self.embedder: Embedder = embedder or make_embedder(
            config.embedding_model, api_base=config.llm_base_url, api_key=config.llm_api_key
        )
        embedded = index is None and config.uses_embedded_vectors()
        sqlite_in_dir = store is None and config.database_url is None
        try:
            if embedded or sqlite_in_dir:
                from hindsight._lock import DataDirLock

                Path(config.data_dir).mkdir(parents=True, exist_ok=True)
                self._lock = DataDirLock(Path(config.data_dir))
                self._lock.acquire()
            if store is None:
                from hindsight.store import SqlStore

                store = SqlStore(config.sql_url(), clock=self.clock)
            self.store = store
            self._check_embedder()
            if index is None:
                from hindsight.vectors import open_vector_index

                index = open_vector_index(
                    config.vector_db_url,
                    data_dir=Path(config.data_dir),
                    dimension=self.embedder.dimension,
                    api_key=config.vector_db_api_key,
                )
            self.index: VectorIndex = index
            self.reviewer: Reviewer = reviewer or _default_reviewer(config)
            self._vectors = VectorSync(self.store, self.index)
            from hindsight.guard.rules_file import guard_from_file
            from hindsight.guard.screening import WriteScreen

            self.guard = guard_from_file(config.guard_rules) if config.guard else None
            self.writeback = WriteBack(
                self.store,
                self.embedder,
                self.sync_vectors,
                screen=WriteScreen(
                    store=self.store,
                    index=self.index,
                    embedder=self.embedder,
                    guard=self.guard,
                    clock=self.clock,
                    shared_namespace=config.shared_namespace,
                ),
            )
            from hindsight.writeback.dedup import make_deduper

            self.deduper = make_deduper(self)  # issue 4: write step 2, dedup / supersede
            self.writeback.dedup = self.deduper
            self._recall = Recall(
                self.store,
                self.index,
                self.embedder,
                self.clock,
                config,
                consensus=self.guard is not None,
            )
            self.sync_vectors()  # repair a crash between an SQL write and its vector write
        except BaseException:
            self._release_partial()
            raise
        _OPEN.add(self)
        if config.background_review and self._has_open_jobs():
            self._ensure_worker()  # resume jobs a previous process left pending (case C16)

    def _has_open_jobs(self) -> bool:
        """Pending jobs, or running ones: a dead worker's job is re-claimed once its lease
        expires, so it needs a worker too (a live lease makes the worker find nothing)."""
        return bool(
            self.store.count_review_jobs(state="pending")
            or self.store.count_review_jobs(state="running")
        )

    # -- opening / closing ----------------------------------------------------------------
    def _check_embedder(self) -> None:
        name, dim = self.embedder.name, self.embedder.dimension
        stored_name = self.store.get_meta("embedding_model")
        stored_dim = self.store.get_meta("embedding_dimension")
        if stored_name is None:
            self.store.set_meta("embedding_model", name)
            self.store.set_meta("embedding_dimension", str(dim))
            return
        if stored_name != name or stored_dim != str(dim):
            raise EmbedderMismatchError(
                f"this store was built with embedding model {stored_name} ({stored_dim}-d) but "
                f"was opened with {name} ({dim}-d): open it with EMBEDDING_MODEL matching "
                f"{stored_name}, or rebuild its vectors with `hindsight reembed --embedder "
                f"<spec>` (data: {self.config.sql_url()})"
            )

    def _release_partial(self) -> None:
        for closer in (
            getattr(getattr(self, "index", None), "close", None),
            getattr(getattr(self, "store", None), "close", None),
        ):
            if closer is not None:
                try:
                    closer()
                except Exception:
                    log.debug("hindsight: error while closing after a failed open", exc_info=True)
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def close(self, timeout: float = 5.0) -> None:
        """Stop the review worker (an interrupted job goes back to pending), flush vectors,
        release files and locks. Safe to call twice. ``timeout`` in seconds."""
        if self._closed:
            return
        self._closed = True
        worker = self._worker

        async def drain() -> None:
            if worker is not None:
                await worker.stop()
            # A cancelled review may still be writing in an executor thread: let it finish
            # before the store closes under it.
            await asyncio.get_running_loop().shutdown_default_executor()

        self._runtime.stop(timeout, drain=drain)
        if worker is not None:  # the loop was too busy to drain in time: release from here
            worker.release_claimed()
        self._worker = None
        self._release_partial()

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("this memory is closed; open a new one")

    # -- vectors follow SQL ---------------------------------------------------------------
    def sync_vectors(self) -> int:
        """Apply pending outbox operations to the vector index; returns how many.

        Called after every write and at open, so SQL and vectors never diverge for long.
        """
        return self._vectors.sync()

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
    ) -> RunRecorder:
        """A recorder for one run: ``async with memory.record(task, tenant_id=...) as run:``.

        Leaving the block stores the trajectory and queues its review (not awaited).
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
            afinish=self.store_episode,
        )

    async def store_episode(
        self, trajectory: Trajectory | Mapping[str, Any], *, review: bool = True
    ) -> EpisodeReceipt:
        """Store a finished trajectory and queue its post-hoc review (S2) in the background.

        Idempotent: storing a trajectory whose id exists changes nothing. Empty trajectories
        (no content anywhere) are stored but never reviewed (case C05).

        Args:
            trajectory: a :class:`Trajectory` or a dict of its fields.
            review: queue a review job (default True).

        Returns:
            :class:`EpisodeReceipt` (``trajectory_id``, ``stored``, ``review_queued``).

        Raises:
            InvalidTrajectoryError: the trajectory does not validate (one-line reason).
            TenantRequiredError: the trajectory has no tenant.
        """
        self._check_open()
        traj = self._coerce_trajectory(trajectory)
        return await asyncio.to_thread(self._store_trajectory, traj, review)

    def _store_trajectory(self, traj: Trajectory, review: bool) -> EpisodeReceipt:
        """The blocking part of :meth:`store_episode`, on the caller's thread: one SQL
        transaction (trajectory + job) and a thread-safe wake of the worker. The sync facade
        calls it directly, so the end of a run never waits behind the review loop."""
        queue = review and not traj.is_empty()
        stored = self.store.add_trajectory(traj, enqueue_review=queue)
        self._last_store = time.monotonic()
        if stored and queue and self.config.background_review:
            worker = self._worker
            if worker is None or worker.needs_wake():  # skip the wake while it is awake
                self._ensure_worker()
        return EpisodeReceipt(
            trajectory_id=traj.id, stored=stored, review_queued=bool(stored and queue)
        )

    @staticmethod
    def _coerce_trajectory(trajectory: Trajectory | Mapping[str, Any]) -> Trajectory:
        if isinstance(trajectory, Trajectory):
            return trajectory
        if not isinstance(trajectory, Mapping):
            raise InvalidTrajectoryError(
                f"trajectory must be a Trajectory or a dict, got {type(trajectory).__name__}"
            )
        if not trajectory.get("tenant_id"):
            validate_tenant(trajectory.get("tenant_id"))
        try:
            return Trajectory.model_validate(dict(trajectory))
        except ValidationError as err:
            raise InvalidTrajectoryError(f"invalid trajectory: {validation_message(err)}") from None

    # -- review ------------------------------------------------------------------------------
    def _ensure_worker(self) -> None:
        def start() -> None:
            if self._worker is None:
                self._worker = ReviewWorker(
                    self.store,
                    self._handle_job,
                    lease_seconds=self.config.review_timeout + 30,
                    max_attempts=self.config.review_max_attempts,
                    retry_base=self.config.review_retry_base,
                    defer=self._review_defer,
                )
            self._worker.wake()

        self._runtime.call_soon(start) if self._runtime_started() else self._start_runtime(start)

    def _review_defer(self) -> float:
        """Seconds the in-process worker waits before its next claim: reviews start once no
        run has ended for :data:`REVIEW_YIELD_SECONDS`, so a burst of finishing runs is not
        slowed by reviews competing for the interpreter and the SQLite writer."""
        return max(0.0, self._last_store + REVIEW_YIELD_SECONDS - time.monotonic())

    def _runtime_started(self) -> bool:
        return self._runtime._loop is not None

    def _start_runtime(self, fn: Any) -> None:
        _ = self._runtime.loop
        self._runtime.call_soon(fn)

    async def _handle_job(self, job: Any) -> None:
        traj = await asyncio.to_thread(self.store.get_trajectory, job.tenant_id, job.trajectory_id)
        await self._review(traj)

    async def _review(self, traj: Trajectory) -> list[Experience]:
        """Review ``traj`` and store its lessons and episode (:mod:`hindsight.review.run`).

        Reviews of one trajectory in this process run one at a time (the review worker and a
        ``review_now`` may ask together, from different event loops): the second finds the
        lessons stored (stable ids) instead of colliding with the first's inserts.
        """
        from hindsight.review.run import run_review

        lock = _REVIEW_LOCKS[hash(traj.id) % len(_REVIEW_LOCKS)]
        while not lock.acquire(blocking=False):  # polled: cancellation never strands it
            await asyncio.sleep(0.01)
        try:
            return await run_review(self, traj)
        finally:
            lock.release()

    def _write_lessons(
        self, traj: Trajectory, lessons: Sequence[Lesson], reviewer: str | None = None
    ) -> list[Experience]:
        """Turn lessons into experiences and store them (idempotent per trajectory).
        ``reviewer``: the name recorded on them (default: this memory's reviewer)."""
        exps = lessons_to_experiences(
            traj,
            lessons,
            reviewer=reviewer or self.reviewer.name,
            embedding_model=self.embedder.name,
            now=self.clock.now(),
        )
        return self.writeback.write(exps, trajectory=traj) if exps else []

    async def review_now(self, trajectory_id: Any, *, tenant_id: str) -> list[Experience]:
        """Review a stored trajectory now, write its lessons and its episode, and return them
        (the episode, kind ``episode``, last).

        Raises:
            NotFoundError: no such trajectory in this tenant.
            ReviewTimeoutError: the review took longer than ``review_timeout`` seconds.
            ReviewError: the reviewer failed (lessons of a ``both`` part that succeeded are
                stored first).
        """
        self._check_open()
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory_id")
        traj = await asyncio.to_thread(self.store.get_trajectory, tenant, tid)
        return await self._review(traj)

    async def review_jobs(
        self, *, state: str | None = None, tenant_id: str | None = None, limit: int = 100
    ) -> list[Any]:
        """Review jobs, oldest first (:class:`hindsight.store.ReviewJob`: ``state``,
        ``attempts``, ``last_error``, ``trajectory_id`` ...). ``state``: pending, running,
        succeeded or failed; ``tenant_id=None``: every tenant (operators).

        Raises:
            UsageError: unknown state or a bad limit. TenantRequiredError: empty tenant.
        """
        self._check_open()
        return await asyncio.to_thread(
            self.store.list_review_jobs, state=state, tenant_id=tenant_id, limit=limit
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
        jobs: list[Any] = await asyncio.to_thread(
            self.store.retry_review_jobs, job_ids, all_failed=all_failed, tenant_id=tenant_id
        )
        if jobs and self.config.background_review:
            self._ensure_worker()
        return jobs

    async def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until no queued review is ready to run (``timeout`` in seconds).

        Returns:
            True when the queue drained, False on timeout (jobs stay queued, nothing is lost).
        """
        self._check_open()
        if self._worker is None and not self._has_open_jobs():
            return True
        self._ensure_worker()
        while self._worker is None:
            await asyncio.sleep(0.005)
        fut = self._runtime.submit(self._worker.wait_idle(timeout))
        return await asyncio.wrap_future(fut)

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
        self._check_open()
        now = self.clock.now()
        from hindsight.guard import initial_trust
        from hindsight.guard.screening import check_user_metadata

        tenant = validate_tenant(tenant_id)  # TenantRequiredError, as everywhere (case C17)
        try:
            prov = Provenance(source)
            exp = Experience(
                tenant_id=tenant,
                namespace=namespace,
                kind=ExperienceKind(kind),
                content=normalize_content(content) if isinstance(content, str) else content,
                task_type=task_type,
                tools=list(tools),
                tags=list(tags),
                confidence=confidence,
                importance=importance,
                trust=initial_trust([prov.value]),
                provenance=prov,
                created_at=now,
                updated_at=now,
                embedding_model=self.embedder.name,
                reviewer="manual",
                metadata=check_user_metadata(metadata),
            )
        except ValidationError as err:
            raise UsageError(validation_message(err)) from None
        except ValueError as err:
            raise UsageError(str(err)) from None

        written = await asyncio.to_thread(self.writeback.write, [exp])
        return written[0] if written else exp

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
    ) -> RecallResult:
        """Recall the experiences most useful for ``query`` (MISSION S5, S13, S16).

        Args:
            query: the task or latest user message (may be empty in ``task_type`` mode).
            tenant_id: required; ``None``/``""``/non-strings are refused (case C17).
            namespace: the private namespace (or several, in priority order), searched
                first; then ``config.shared_namespace`` when ``include_shared`` (MISSION S9).
            task_type: exact filter on task_type.
            tags: soft boost, +0.05 per matching tag (tags and tools together max +0.15).
            tools: the tools the asking agent has; they are added to the text that is
                embedded (lessons about those tools come closer) and boost like tags.
            top_k: 1..1000, default ``config.top_k`` (5).
            mode: ``"vector"`` (similarity; default) or ``"task_type"`` (exact task_type match,
                no vectors: S16; default when ``query`` is empty and ``task_type`` is given).
            similarity_floor: cosine floor; default ``config.similarity_floor`` or the
                embedder's own.
            trajectory_id: the run asking, recorded for outcome attribution.
            token_budget: budget of :meth:`RecallResult.render` (default 2000 tokens).
            include_episodes: also recall the most similar past episodes (run summaries,
                MISSION S4) into ``RecallResult.episodes``: at most
                ``min(top_k, EPISODE_TOP_K)`` (3), ranked like lessons, rendered after the
                lessons in their own section with their own share of the budget
                (:mod:`hindsight.recall.candidates`). Episodes are never among ``hits``.
            explain: also list, in ``excluded``, close experiences of this tenant that a
                filter kept out: namespace, task_type, status (archived, superseded,
                quarantined) (:mod:`hindsight.recall.explain`; never other tenants).
                Experiences under ``config.min_confidence`` are always excluded, with reason.

        Returns:
            :class:`RecallResult` with hits (score breakdown each) and exclusions.

        Raises:
            TenantRequiredError: missing or empty tenant.
            UsageError: invalid query, top_k, mode or task_type.
        """
        self._check_open()
        tenant = validate_tenant(tenant_id)
        if isinstance(namespace, str):
            namespace = [namespace]
        if not namespace:
            raise UsageError("namespace must name at least one namespace")
        namespaces = list(dict.fromkeys(validate_namespace(n) for n in namespace))
        if not isinstance(query, str):
            raise UsageError(f"query must be a string, got {type(query).__name__}")
        k = self.config.top_k if top_k is None else top_k
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise UsageError(f"top_k must be an integer from 1 to 1000, got {top_k!r}")
        if task_type is not None and (not isinstance(task_type, str) or not task_type.strip()):
            raise UsageError("task_type must be a non-empty string or None")
        if isinstance(tags, str):
            tags = [tags]
        if isinstance(tools, str):
            tools = [tools]
        if not all(isinstance(t, str) for t in [*tags, *tools]):
            raise UsageError("tags and tools must be strings")
        if mode is None:
            mode = "task_type" if (not query.strip() and task_type) else "vector"
        if mode not in ("vector", "task_type"):
            raise UsageError(f"mode must be 'vector' or 'task_type', got {mode!r}")
        if mode == "vector" and not query.strip():
            raise UsageError("query must not be empty (or pass task_type for exact recall)")
        if mode == "task_type" and not task_type:
            raise UsageError("mode 'task_type' needs task_type")
        if include_shared and self.config.shared_namespace not in namespaces:
            namespaces.append(self.config.shared_namespace)
        floor = similarity_floor
        if floor is None:
            floor = self.config.similarity_floor
        if floor is None and mode == "vector":
            floor = self.embedder.similarity_floor
        tid = normalize_id(trajectory_id, "trajectory_id") if trajectory_id else None
        request = RecallRequest(
            query=query,
            tenant_id=tenant,
            namespaces=namespaces,
            task_type=task_type,
            tags=list(tags),
            tools=list(tools),
            top_k=k,
            mode=mode,
            similarity_floor=floor if mode == "vector" else None,
            trajectory_id=tid,
            token_budget=token_budget or self.config.token_budget,
            include_episodes=bool(include_episodes),
            explain=bool(explain),
        )
        return await asyncio.to_thread(self._recall.run, request)

    # -- outcomes -----------------------------------------------------------------------------
    async def record_outcome(
        self, trajectory_id: Any, success: bool, *, tenant_id: str
    ) -> list[Experience]:
        """Credit or blame the experiences the run ``trajectory_id`` recalled (MISSION S3).

        On success each one's confidence rises by ``OUTCOME_SUCCESS_DELTA`` (0.05) and its
        ``helped_count`` by 1; on failure it drops by ``OUTCOME_FAILURE_DELTA`` (0.10) and
        (both in :mod:`hindsight.writeback.confidence`; atomic, audited)
        ``misled_count`` rises by 1. Confidence stays in [0,1]. A run's outcome is counted
        once; later calls for the same run change nothing and return ``[]``. With the memory
        guard on, an experience that misled more runs than it helped is demoted at 2 misled
        runs and quarantined at 3 (:func:`hindsight.guard.after_recall.apply_misled_policy`).

        Returns:
            The updated experiences.

        Raises:
            UsageError: ``success`` is not a bool, or the id is not a UUID.
            TenantRequiredError: missing or empty tenant.
        """
        self._check_open()
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory_id")
        if not isinstance(success, bool):
            raise UsageError(f"success must be True or False, got {success!r}")
        return await asyncio.to_thread(self._record_outcome_sync, tenant, tid, success)

    def _record_outcome_sync(self, tenant: str, tid: str, success: bool) -> list[Experience]:
        # Atomic and audited, once per run (hindsight.writeback.confidence, issue 4).
        from hindsight.writeback.confidence import record_outcome

        policy = None
        if self.guard is not None and not success:  # memory guard: demote, then quarantine
            from hindsight.guard.after_recall import apply_misled_policy

            policy = apply_misled_policy
        updated = record_outcome(self.store, tenant, tid, success, policy=policy)
        self.sync_vectors()
        return updated or []

    # -- reading and deleting -------------------------------------------------------------------
    async def get_experience(self, experience_id: Any, *, tenant_id: str) -> Experience:
        """The experience with this id (any UUID form, case C03).

        Raises:
            NotFoundError: no such experience in this tenant.
        """
        self._check_open()
        tenant = validate_tenant(tenant_id)
        eid = normalize_id(experience_id, "experience_id")
        return await asyncio.to_thread(self.store.get_experience, tenant, eid)

    async def list_experiences(
        self,
        *,
        tenant_id: str,
        namespace: str | None = None,
        task_type: str | None = None,
        status: str = "active",
        limit: int = 100,
        offset: int = 0,
    ) -> list[Experience]:
        """Experiences of a tenant, most confident first (``limit`` 1..10000)."""
        self._check_open()
        tenant = validate_tenant(tenant_id)
        if not 1 <= limit <= 10000:
            raise UsageError(f"limit must be from 1 to 10000, got {limit}")
        try:
            st = ExperienceStatus(status)
        except ValueError:
            raise UsageError(
                f"status must be one of {', '.join(s.value for s in ExperienceStatus)}"
            ) from None
        nss = [validate_namespace(namespace)] if namespace is not None else None
        return await asyncio.to_thread(
            self.store.list_experiences,
            tenant,
            namespaces=nss,
            task_type=task_type,
            statuses=(st.value,),
            limit=limit,
            offset=offset,
        )

    async def get_trajectory(self, trajectory_id: Any, *, tenant_id: str) -> Trajectory:
        """The stored trajectory with its events. Raises NotFoundError when absent."""
        self._check_open()
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory_id")
        return await asyncio.to_thread(self.store.get_trajectory, tenant, tid)

    async def delete_experience(self, experience_id: Any, *, tenant_id: str) -> None:
        """Soft-delete an experience: never recalled again, row kept for audit, vector removed.

        Raises:
            NotFoundError: no such (non-deleted) experience in this tenant (case C03).
        """
        self._check_open()
        tenant = validate_tenant(tenant_id)
        eid = normalize_id(experience_id, "experience_id")

        def delete() -> int:
            n: int = self.store.delete_experiences(tenant, [eid])
            self.sync_vectors()
            return n

        if not await asyncio.to_thread(delete):
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
            UsageError: no filter given, or more than one (an empty filter is never "all").
            TenantRequiredError: missing or empty tenant (case C02).
        """
        self._check_open()
        tenant = validate_tenant(tenant_id)
        chosen = sum(
            x is not None and x is not False
            for x in (experience_id, trajectory_id, everything or None)
        )
        if chosen != 1:
            raise UsageError(
                "forget needs exactly one of experience_id, trajectory_id or everything=True"
            )
        kwargs: dict[str, Any] = {}
        if experience_id is not None:
            kwargs["experience_ids"] = [normalize_id(experience_id, "experience_id")]
        elif trajectory_id is not None:
            kwargs["trajectory_id"] = normalize_id(trajectory_id, "trajectory_id")
        else:
            kwargs["everything"] = True

        def run() -> int:
            n: int = self.store.forget(tenant, **kwargs)
            self.sync_vectors()
            return n

        n = await asyncio.to_thread(run)
        if experience_id is not None and n == 0:
            raise NotFoundError(f"experience {kwargs['experience_ids'][0]} not found")
        return n

    # -- quarantine (memory guard, docs/security.md) ------------------------------------------
    async def list_quarantined(
        self, *, tenant_id: str, namespace: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[Experience]:
        """The tenant's quarantined experiences (most confident first); each one's reasons are
        in ``metadata["quarantine_reasons"]``. ``limit`` 1..10000.

        Raises:
            TenantRequiredError: missing or empty tenant.
            UsageError: bad namespace, limit or offset.
        """
        return await self.list_experiences(
            tenant_id=tenant_id,
            namespace=namespace,
            status="quarantined",
            limit=limit,
            offset=offset,
        )

    async def approve(
        self, experience_id: Any, *, tenant_id: str, note: str | None = None
    ) -> Experience:
        """A human approves a quarantined experience: it is recalled again. Returns it.

        Raises:
            NotFoundError: no such (non-deleted) experience in this tenant.
            UsageError: it is not quarantined, or a bad id.
            TenantRequiredError: missing or empty tenant.
        """
        return await self._decide("approve", experience_id, tenant_id, note)

    async def reject(
        self, experience_id: Any, *, tenant_id: str, note: str | None = None
    ) -> Experience:
        """A human rejects a quarantined experience: soft-deleted (row kept for audit, vector
        removed). Returns it. Raises as :meth:`approve`."""
        return await self._decide("reject", experience_id, tenant_id, note)

    async def _decide(
        self, action: str, experience_id: Any, tenant_id: str, note: str | None
    ) -> Experience:
        from hindsight.guard import quarantine

        self._check_open()
        tenant = validate_tenant(tenant_id)
        eid = normalize_id(experience_id, "experience_id")
        decide = quarantine.approve if action == "approve" else quarantine.reject

        def run() -> Experience:
            exp = decide(self.store, tenant, eid, self.clock.now(), note)
            self.sync_vectors()
            return exp

        return await asyncio.to_thread(run)

    async def stats(self, *, tenant_id: str | None = None) -> dict[str, Any]:
        """Counts of trajectories, events, experiences (by status/kind) and jobs.

        ``tenant_id=None`` reports the whole store (operators only; the CLI ``stats``).
        """
        self._check_open()
        tenant = validate_tenant(tenant_id) if tenant_id is not None else None
        data: dict[str, Any] = await asyncio.to_thread(self.store.stats, tenant)
        data["vectors"] = await asyncio.to_thread(self.index.count, tenant)
        data["embedding_model"] = self.embedder.name
        data["embedding_dimension"] = self.embedder.dimension
        return data


def _close_all_at_exit() -> None:  # pragma: no cover - exercised at interpreter exit
    for mem in list(_OPEN):
        with contextlib.suppress(Exception):
            mem.close(timeout=2.0)


_OPEN: weakref.WeakSet[AsyncMemory] = weakref.WeakSet()
atexit.register(_close_all_at_exit)
