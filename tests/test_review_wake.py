"""The end of a run wakes the review worker only when it is idle
(docs/benchmarks.md#capture-overhead).

Storing a trajectory used to wake the worker's loop from the caller's thread every time (a
cross-thread wake and a GIL handoff on the agent's path). Now a store skips the wake while
the worker is awake anyway (deferring, claiming or reviewing); the worker marks itself idle
before its last claim, so a job committed meanwhile is still claimed: nothing waits for the
next poll, nothing is lost (jobs are durable rows, docs/review.md#review-jobs).
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from hindsight import Lesson, Trajectory
from hindsight.review.worker import ReviewWorker
from tests.helpers import make_memory, trajectory

TENANT = "acme"


class GatedReviewer:
    """Reviews block until ``gate`` is set (in a thread, so the loop stays free)."""

    name = "gated"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.reviewed: list[str] = []

    async def review(self, traj: Trajectory) -> list[Lesson]:
        await asyncio.to_thread(self.gate.wait, 30)
        self.reviewed.append(traj.id)
        return []


def _count_wakes(memory: Any) -> list[int]:
    calls = [0]
    runtime = memory.aio._runtime
    original = runtime.call_soon

    def counting(fn: Any) -> None:
        calls[0] += 1
        original(fn)

    runtime.call_soon = counting
    return calls


def _until(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def test_stores_while_the_worker_reviews_do_not_wake_it_and_all_are_reviewed(
    tmp_path: Path, database_url: str
) -> None:
    reviewer = GatedReviewer()
    with make_memory(tmp_path, database_url, reviewer=reviewer) as memory:
        first = memory.store_episode(trajectory(TENANT, "first run"))
        _until(lambda: memory.aio._worker is not None and memory.aio._worker.busy)
        wakes = _count_wakes(memory)
        later = [memory.store_episode(trajectory(TENANT, f"run {i}")) for i in range(4)]
        assert wakes[0] == 0  # the busy worker will claim them itself
        reviewer.gate.set()
        assert memory.flush(timeout=60)
        expected = {first.trajectory_id, *(r.trajectory_id for r in later)}
        assert set(reviewer.reviewed) == expected
        assert memory.review_jobs(state="pending", tenant_id=TENANT) == []


def test_a_store_wakes_an_idle_worker_once(tmp_path: Path, database_url: str) -> None:
    reviewer = GatedReviewer()
    reviewer.gate.set()
    with make_memory(tmp_path, database_url, reviewer=reviewer) as memory:
        memory.store_episode(trajectory(TENANT, "first run"))
        assert memory.flush(timeout=60)
        worker = memory.aio._worker
        assert worker is not None
        _until(lambda: not worker.busy and worker._idle.is_set())
        wakes = _count_wakes(memory)
        receipt = memory.store_episode(trajectory(TENANT, "second run"))
        assert wakes[0] == 1
        _until(lambda: receipt.trajectory_id in reviewer.reviewed)


class _RacingStore:
    """A job store whose first claim loses a race: the job is committed (and the store asks
    ``needs_wake``) right after the claim looked, so the claim returns nothing."""

    def __init__(self) -> None:
        self.jobs: list[Any] = []
        self.completed: list[Any] = []
        self.wake_answers: list[bool] = []
        self.worker: ReviewWorker | None = None
        self.claims = 0

    def claim_review_job(self, worker_id: str, lease: float) -> Any:
        self.claims += 1
        if self.claims == 1:
            assert self.worker is not None
            self.jobs.append(type("Job", (), {"id": 1, "trajectory_id": "t", "attempts": 1}))
            self.wake_answers.append(self.worker.needs_wake())
            return None
        return self.jobs.pop() if self.jobs else None

    def complete_review_job(self, job_id: Any) -> None:
        self.completed.append(job_id)

    def fail_review_job(self, job_id: Any, error: str, retry_after: Any = None) -> None:
        raise AssertionError(error)

    def release_review_jobs(self, worker_id: str, reason: str) -> int:
        return 0


def test_a_job_committed_during_the_last_claim_is_claimed_without_a_wake() -> None:
    async def scenario() -> _RacingStore:
        store = _RacingStore()
        handled: list[Any] = []

        async def handle(job: Any) -> None:
            handled.append(job.id)

        worker = ReviewWorker(store, handle, lease_seconds=30, poll_seconds=60)
        store.worker = worker
        worker.wake()
        assert await worker.wait_idle(10)
        await worker.stop()
        assert handled == [1]
        return store

    store = asyncio.run(scenario())
    assert store.wake_answers == [False]  # the store was told not to wake ...
    assert store.completed == [1]  # ... and the job was still reviewed, not left for a poll
