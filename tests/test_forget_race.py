"""Forget while a review of the forgotten run is in flight: its lessons must not come back.

Found in the field (``hindsight forget --all`` right after an ingest): the worker had read the
trajectory before the forget and wrote its lessons after it, so forgotten runs taught again.
Variants: forget everything, forget the trajectory; SQLite and PostgreSQL; the worker stays
alive and reviews the next run.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from hindsight import Lesson, Trajectory
from tests.helpers import lesson, make_memory, trajectory


class HeldReviewer:
    """Returns one lesson per run, but only once the test releases the review."""

    name = "held"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    async def review(self, traj: Trajectory) -> list[Lesson]:
        self.started.set()
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        return [lesson(f"When order_query times out, retry once ({traj.task})")]


@pytest.mark.parametrize("how", ["everything", "trajectory"])
def test_lessons_of_a_run_forgotten_during_its_review_are_not_stored(
    tmp_path: Path, database_url: str, how: str
) -> None:
    reviewer = HeldReviewer()
    with make_memory(tmp_path, database_url, reviewer=reviewer) as mem:
        run = trajectory("acme", "find order 1")
        mem.store_episode(run)
        assert reviewer.started.wait(30), "the review never started"
        if how == "everything":
            mem.forget(tenant_id="acme", everything=True)
        else:
            mem.forget(tenant_id="acme", trajectory_id=run.id)
        reviewer.release.set()
        assert mem.flush(30)
        assert mem.list_experiences(tenant_id="acme") == []
        assert mem.stats(tenant_id="acme")["experiences"]["total"] == 0
        assert mem.aio.index.count("acme") == 0
        assert not mem.recall("order_query timed out", tenant_id="acme").hits

        # The worker is still alive: the next run is reviewed and its lesson stored.
        reviewer.started.clear()
        nxt = trajectory("acme", "find order 2")
        mem.store_episode(nxt)
        assert mem.flush(30)
        stored = mem.list_experiences(tenant_id="acme")
        assert stored and all(e.source_trajectory_ids == [nxt.id] for e in stored)
        deadline = time.monotonic() + 10
        while mem.aio.index.count("acme") != len(stored) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mem.aio.index.count("acme") == len(stored)
