"""A run reviewed by the worker and by ``review_now`` at the same time (the MCP
``summarize_trajectory`` right after ``store_episode``): both return its lessons, the job
succeeds on its first attempt, and each lesson is stored once."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from hindsight import Lesson, Trajectory
from tests.helpers import lesson, make_memory, trajectory


class SlowReviewer:
    name = "slow"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.calls = 0

    async def review(self, traj: Trajectory) -> list[Lesson]:
        self.calls += 1
        self.started.set()
        await asyncio.sleep(0.3)
        return [
            lesson(f"When order_query times out, retry once ({traj.task})"),
            lesson(f"Check the order id format before order_query ({traj.task})"),
        ]


def test_worker_review_and_review_now_of_one_run_do_not_collide(
    tmp_path: Path, database_url: str
) -> None:
    reviewer = SlowReviewer()
    with make_memory(tmp_path, database_url, reviewer=reviewer) as mem:
        run = trajectory("acme", "find order 1")
        mem.store_episode(run)  # queues the worker's review
        assert reviewer.started.wait(30)
        now = mem.review_now(run.id, tenant_id="acme")  # while the worker's is in flight
        assert mem.flush(30)
        lessons = sorted(e.content for e in now if e.kind.value != "episode")
        stored = mem.list_experiences(tenant_id="acme")
        assert sorted(e.content for e in stored if e.kind.value != "episode") == lessons
        assert len(lessons) == 2
        (job,) = mem.review_jobs(tenant_id="acme")
        assert (job.state.value, job.attempts, job.last_error) == ("succeeded", 0, None)
