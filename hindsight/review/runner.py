"""Reviews for one open memory: on demand (``review_now``) and from its queue of review jobs.

:class:`ReviewRunner` owns the in-process :class:`~hindsight.review.worker.ReviewWorker` (started
on the memory's background loop when a job is queued, or at open when a previous process left
jobs pending, docs/review.md#review-jobs), the wake after each stored run, ``flush`` and
the shutdown of the worker. Reviews of one trajectory in this process run one at a time (the
worker and a ``review_now`` may ask together, from different event loops): the second finds
the lessons stored (stable ids) instead of colliding with the first's inserts.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING, Any

from hindsight._runtime import BackgroundLoop
from hindsight.config import MemoryConfig
from hindsight.models import Experience, Trajectory
from hindsight.observability import Metrics, operation
from hindsight.ports import Clock, Reviewer
from hindsight.review.worker import (
    ModelBackoff,
    ReviewWorker,
    failure_reason,
    model_of,
    prepare_reviewer,
)

if TYPE_CHECKING:
    from hindsight.review.groups import TaskGroups
    from hindsight.review.mining.stage import ConditionMining
    from hindsight.review.run import ReviewRun
    from hindsight.writeback import WriteBack

__all__ = ["REVIEW_YIELD_SECONDS", "ReviewRunner"]

REVIEW_YIELD_SECONDS = 0.05
"""The in-process review worker claims a job only after no run has ended for this long (50 ms:
longer than storing a run takes, far shorter than a review waits anyway)."""

_REVIEW_LOCKS = tuple(threading.Lock() for _ in range(64))
"""Striped locks serializing reviews of one trajectory within a process."""


class ReviewRunner:
    """Runs the reviews of one memory (see the module docstring).

    Args:
        store: the SQL store (the review jobs and the stored trajectories).
        reviewer, writeback, embedding_model, clock: what a
            :class:`~hindsight.review.run.ReviewRun` needs (built on the first review: it
            imports the reviewers, which ``import hindsight`` does not need).
        config: ``review_timeout`` (the job lease is 30 s longer), ``review_max_attempts``,
            ``review_retry_base`` and ``background_review``.
        runtime: the memory's background loop, where the worker runs.
        groups: task groups for the contrastive step of each review.
        mining: the condition-mining stage (:mod:`hindsight.review.mining.stage`): told of
            every reviewed tenant, run when the queue empties (at most every
            ``MIN_INTERVAL`` seconds per tenant) and at every :meth:`flush`.
    """

    def __init__(
        self,
        store: Any,
        reviewer: Reviewer,
        writeback: WriteBack,
        embedding_model: str,
        clock: Clock,
        config: MemoryConfig,
        runtime: BackgroundLoop,
        groups: TaskGroups | None = None,
        mining: ConditionMining | None = None,
    ) -> None:
        self.store = store
        self.groups = groups
        self.mining = mining
        self.config = config
        self.worker: ReviewWorker | None = None
        self._parts = (reviewer, writeback, store, embedding_model, clock)
        self._review: ReviewRun | None = None
        self._runtime = runtime
        self._last_store = 0.0
        self._prepared = False
        self.backoff = ModelBackoff(store, model_of(reviewer), config.review_retry_base)
        self.metrics: Metrics | None = None
        """The memory's metrics (set by the engine): review latency and failed attempts."""

    @property
    def run(self) -> ReviewRun:
        """The memory's :class:`~hindsight.review.run.ReviewRun`."""
        if self._review is None:
            from hindsight.review.run import ReviewRun

            self._review = ReviewRun(
                *self._parts, float(self.config.review_timeout), groups=self.groups
            )
        return self._review

    async def review(self, traj: Trajectory) -> list[Experience]:
        """Review ``traj`` and store its lessons and episode, one review of it at a time."""
        if not self._prepared:  # imports and start-up: outside review_timeout
            await asyncio.to_thread(prepare_reviewer, self._parts[0])
            self._prepared = True
        lock = _REVIEW_LOCKS[hash(traj.id) % len(_REVIEW_LOCKS)]
        while not lock.acquire(blocking=False):  # polled: cancellation never strands it
            await asyncio.sleep(0.01)
        try:
            with operation(
                "review",
                self.metrics,
                tenant=traj.tenant_id,
                trajectory_id=traj.id,
                events=len(traj.events),
            ) as span:
                found = await self.run(traj)
                span.set_attribute("hindsight.experiences_written", len(found))
        finally:
            lock.release()
        if self.mining is not None:
            self.mining.touched(traj.tenant_id)
        return found

    async def handle_job(self, job: Any) -> None:
        """Review the trajectory of one claimed job (raises to fail the job)."""
        traj = await asyncio.to_thread(self.store.get_trajectory, job.tenant_id, job.trajectory_id)
        await self.review(traj)
        mining = self.mining
        if mining is not None and mining.pending():
            idle = await asyncio.to_thread(self.store.count_review_jobs, state="pending")
            if not idle:
                await asyncio.to_thread(mining.settle, force=False)

    def job_failed(self, exc: BaseException) -> None:
        """Count a failed review attempt in the memory's metrics, by
        :func:`~hindsight.review.worker.failure_reason`."""
        if self.metrics is not None:
            self.metrics.job_failed(failure_reason(exc))

    # -- the queue ---------------------------------------------------------------------------
    def stored(self, queued: bool) -> None:
        """A run was just stored (``queued``: with a review job): wake the worker unless it is
        awake anyway, from the caller's thread."""
        self._last_store = time.monotonic()
        if queued and self.config.background_review:
            worker = self.worker
            if worker is None or worker.needs_wake():  # skip the wake while it is awake
                self.ensure_worker()

    def has_open_jobs(self) -> bool:
        """Pending or running jobs (:meth:`SqlStore.has_open_review_jobs
        <hindsight.store.jobs.JobStore.has_open_review_jobs>`)."""
        return bool(self.store.has_open_review_jobs())

    def ensure_worker(self) -> None:
        """Start the in-process worker (once) and wake it, on the background loop."""

        def start() -> None:
            if self.worker is None:
                self.worker = ReviewWorker(
                    self.store,
                    self.handle_job,
                    lease_seconds=self.config.review_timeout + 30,
                    max_attempts=self.config.review_max_attempts,
                    retry_base=self.config.review_retry_base,
                    defer=self._defer,
                    backoff=self.backoff,
                    on_failure=self.job_failed,
                )
            self.worker.wake()

        _ = self._runtime.loop  # started on first use
        self._runtime.call_soon(start)

    def _defer(self) -> float:
        """Seconds the in-process worker waits before its next claim: reviews start once no
        run has ended for :data:`REVIEW_YIELD_SECONDS`, so a burst of finishing runs is not
        slowed by reviews competing for the interpreter and the SQLite writer."""
        return max(0.0, self._last_store + REVIEW_YIELD_SECONDS - time.monotonic())

    async def flush(self, timeout: float | None) -> bool:
        """Wait until no queued review is ready to run (``timeout`` in seconds), then mine the
        tenants reviewed meanwhile (docs/review.md#condition-mining); False on
        timeout (jobs stay queued, nothing is lost)."""
        if self.worker is None and not self.has_open_jobs():
            await self._settle()
            return True
        self.ensure_worker()
        while self.worker is None:
            await asyncio.sleep(0.005)
        fut = self._runtime.submit(self.worker.wait_idle(timeout))
        idle: bool = await asyncio.wrap_future(fut)
        if idle:
            await self._settle()
        return idle

    async def _settle(self) -> None:
        """Mine the tenants whose runs were reviewed since the last pass."""
        if self.mining is not None and self.mining.pending():
            await asyncio.to_thread(self.mining.settle)

    def close(self, timeout: float) -> None:
        """Stop the worker (an interrupted job goes back to pending) and the background loop,
        within ``timeout`` seconds."""
        worker = self.worker

        async def drain() -> None:
            if worker is not None:
                await worker.stop()
            # A cancelled review may still be writing in an executor thread: let it finish
            # before the store closes under it.
            await asyncio.get_running_loop().shutdown_default_executor()

        self._runtime.stop(timeout, drain=drain)
        if worker is not None:  # the loop was too busy to drain in time: release from here
            worker.release_claimed()
        self.worker = None
