"""The background review worker: claims review jobs from the SQL store and runs them.

Jobs are durable rows (pending / running / succeeded / failed) so nothing is lost when the
process exits: a job interrupted by shutdown goes back to pending, and a job whose process died
is re-claimed when its lease expires (case C16).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from hindsight._errors import NotFoundError

__all__ = ["ReviewWorker"]

log = logging.getLogger("hindsight.review")

MAX_ATTEMPTS = 3
"""A job is retried up to this many attempts in total, then left in state ``failed``."""

RETRY_BASE_SECONDS = 5.0
"""Backoff before retry n is ``RETRY_BASE_SECONDS * 2 ** (n - 1)`` seconds."""


class ReviewWorker:
    """Runs review jobs one at a time on the engine's background loop.

    Args:
        store: the SQL store (``claim_review_job`` / ``complete_review_job`` /
            ``fail_review_job``).
        handle: coroutine function doing the review of one job (raises to fail it).
        lease_seconds: how long a claimed job is reserved before others may re-claim it.
        poll_seconds: how often to look for jobs (retries, other processes' jobs) when idle.
    """

    def __init__(
        self,
        store: Any,
        handle: Callable[[Any], Awaitable[None]],
        *,
        lease_seconds: float,
        poll_seconds: float = 1.0,
    ) -> None:
        self._store = store
        self._handle = handle
        self._lease = lease_seconds
        self._poll = poll_seconds
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._current: Any = None
        self.processed = 0
        self.failed = 0

    def start(self) -> None:
        """Start the loop task (must be called on the background loop)."""
        if self._task is None or self._task.done():
            self._idle.clear()
            self._task = asyncio.get_running_loop().create_task(self._run())

    def wake(self) -> None:
        """Look for jobs now (call on the loop thread)."""
        self._idle.clear()
        self._wake.set()
        self.start()

    async def wait_idle(self, timeout: float | None) -> bool:
        """Wait until no job is ready to run; False when ``timeout`` seconds passed first."""
        self.wake()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        """Cancel the loop; an interrupted job is put back to pending."""
        task, self._task = self._task, None
        interrupted = self._current
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if interrupted is not None:
            await asyncio.to_thread(
                self._store.fail_review_job,
                interrupted.id,
                "interrupted by shutdown",
                retry_after=0.0,
            )

    async def _run(self) -> None:
        while True:
            try:
                job = await asyncio.to_thread(
                    self._store.claim_review_job, self.worker_id, self._lease
                )
            except Exception:  # store trouble: log, back off, keep the worker alive
                log.exception("hindsight: could not claim a review job")
                job = None
            if job is None:
                self._idle.set()
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._poll)
                continue
            self._current = job
            try:
                await self._handle(job)
            except asyncio.CancelledError:
                raise
            except NotFoundError:
                # The trajectory was forgotten meanwhile: nothing left to review.
                await asyncio.to_thread(self._store.complete_review_job, job.id)
            except Exception as exc:
                self.failed += 1
                error = f"{type(exc).__name__}: {exc}"[:2000]
                retry = (
                    RETRY_BASE_SECONDS * 2 ** (job.attempts - 1)
                    if job.attempts < MAX_ATTEMPTS
                    else None
                )
                log.warning("hindsight: review of %s failed (%s)", job.trajectory_id, error)
                await asyncio.to_thread(
                    self._store.fail_review_job, job.id, error, retry_after=retry
                )
            else:
                self.processed += 1
                await asyncio.to_thread(self._store.complete_review_job, job.id)
            finally:
                self._current = None
