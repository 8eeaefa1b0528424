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
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from hindsight._errors import NotFoundError

__all__ = ["MAX_ATTEMPTS", "RETRY_BASE_SECONDS", "ReviewWorker", "is_retryable"]

log = logging.getLogger("hindsight.review")

MAX_ATTEMPTS = 3
"""A job is retried up to this many attempts in total, then left in state ``failed``
(config ``review_max_attempts``)."""

RETRY_BASE_SECONDS = 5.0
"""Backoff before retry n is ``RETRY_BASE_SECONDS * 2 ** (n - 1)`` seconds (config
``review_retry_base``)."""


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed review is worth another attempt later.

    An exception whose class sets ``retryable = False`` is not: e.g.
    :class:`~hindsight.review.ReportParseError`, raised after the reviewer already re-asked
    the model once with the error (issue 3: "then the job fails visibly"). Timeouts, provider
    and store errors are retried.
    """
    return bool(getattr(exc, "retryable", True))


class ReviewWorker:
    """Runs review jobs one at a time on the engine's background loop.

    Args:
        store: the SQL store (``claim_review_job`` / ``complete_review_job`` /
            ``fail_review_job``).
        handle: coroutine function doing the review of one job (raises to fail it).
        lease_seconds: how long a claimed job is reserved before others may re-claim it.
        poll_seconds: how often to look for jobs (retries, other processes' jobs) when idle.
        max_attempts: attempts in total before a job is left ``failed`` (:data:`MAX_ATTEMPTS`).
        retry_base: seconds of backoff before the first retry, doubled for each next one
            (:data:`RETRY_BASE_SECONDS`).
        defer: seconds to wait before claiming the next job, called before each claim (e.g.
            "until the agent has been quiet for 50 ms"); ``None``: never wait.
    """

    def __init__(
        self,
        store: Any,
        handle: Callable[[Any], Awaitable[None]],
        *,
        lease_seconds: float,
        poll_seconds: float = 1.0,
        max_attempts: int = MAX_ATTEMPTS,
        retry_base: float = RETRY_BASE_SECONDS,
        defer: Callable[[], float] | None = None,
    ) -> None:
        self._store = store
        self._handle = handle
        self._lease = lease_seconds
        self._poll = poll_seconds
        self._max_attempts = max_attempts
        self._retry_base = retry_base
        self._defer = defer
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._current: Any = None
        self._armed = False  # woken and not idle yet: it will claim again before sleeping
        self._arm_lock = threading.Lock()
        self.processed = 0
        self.failed = 0

    def needs_wake(self) -> bool:
        """From any thread, after committing a job: ``False`` when the worker is already awake
        (woken, deferring, claiming or reviewing) and so will claim that job before it goes
        idle; ``True`` when the caller must :meth:`wake` it (it is then counted as awake).

        This spares the end of each run a cross-thread wake of the loop (a GIL handoff to the
        loop thread on the agent's path, issue 10) while the worker is busy anyway. It is
        safe: the worker clears the flag *before* its last claim (see :meth:`_disarm`), so a
        job committed before a ``False`` answer is seen by that claim.
        """
        task = self._task
        with self._arm_lock:
            if self._armed and task is not None and not task.done():
                return False
            self._armed = True
            return True

    def _disarm(self) -> bool:
        """Mark the worker idle; returns whether it was armed (then claim once more)."""
        with self._arm_lock:
            was, self._armed = self._armed, False
            return was

    @property
    def busy(self) -> bool:
        """True while a job is being reviewed."""
        return self._current is not None

    def start(self) -> None:
        """Start the loop task (must be called on the background loop)."""
        if self._task is None or self._task.done():
            self._idle.clear()
            self._task = asyncio.get_running_loop().create_task(self._run())

    def wake(self) -> None:
        """Look for jobs now (call on the loop thread)."""
        with self._arm_lock:
            self._armed = True
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

    def release_claimed(self) -> None:
        """Put every job this worker holds back to pending now, from any thread.

        Releases by lease owner (this worker's id), so a job whose claim was still in flight
        when the worker was cancelled is released too. :meth:`stop` calls it, and
        :meth:`AsyncMemory.close` again after stopping the loop: when the loop was too busy to
        run :meth:`stop` in time (a provider client importing or blocking at interpreter exit),
        the job still goes back to pending instead of waiting for its lease to expire (case
        C16). Called directly, not through a thread: at interpreter exit the default executor
        refuses new work. Errors are logged, never raised.
        """
        self._current = None
        try:
            self._store.release_review_jobs(self.worker_id, "interrupted by shutdown")
        except Exception:
            log.warning(
                "hindsight: could not release the review jobs of %s", self.worker_id, exc_info=True
            )

    async def stop(self) -> None:
        """Cancel the loop; an interrupted job is put back to pending."""
        task, self._task = self._task, None
        self._disarm()
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:  # e.g. a provider client failing while it is cancelled at exit
                log.debug("hindsight: review worker ended with an error", exc_info=True)
        self.release_claimed()

    @staticmethod
    async def _settle(finish: Any, *args: Any, **kwargs: Any) -> None:
        """Record a job's end; a job deleted meanwhile (``forget``) has nothing to record."""
        try:
            await asyncio.to_thread(finish, *args, **kwargs)
        except NotFoundError:
            log.debug("hindsight: review job %s was forgotten meanwhile", args[0])

    async def _run(self) -> None:
        while True:
            while self._defer is not None and (delay := self._defer()) > 0:
                await asyncio.sleep(delay)  # reviews yield to the agent's own writes
            try:
                job = await asyncio.to_thread(
                    self._store.claim_review_job, self.worker_id, self._lease
                )
            except RuntimeError:
                # The executor is shut down: the interpreter is exiting. Pending jobs stay
                # pending in SQL; close() releases anything this worker held.
                log.debug("hindsight: review worker stops: no executor", exc_info=True)
                return
            except Exception:  # store trouble: log, back off, keep the worker alive
                log.exception("hindsight: could not claim a review job")
                job = None
            if job is None:
                if self._disarm():
                    continue  # a job committed while armed is seen by this next claim
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
                # The trajectory was forgotten meanwhile (before or during the review): nothing
                # left to review, and nothing it taught was written.
                await self._settle(self._store.complete_review_job, job.id)
            except Exception as exc:
                self.failed += 1
                error = f"{type(exc).__name__}: {exc}"[:2000]
                retry = (
                    self._retry_base * 2 ** (job.attempts - 1)
                    if job.attempts < self._max_attempts and is_retryable(exc)
                    else None
                )
                log.warning("hindsight: review of %s failed (%s)", job.trajectory_id, error)
                await self._settle(self._store.fail_review_job, job.id, error, retry_after=retry)
            else:
                self.processed += 1
                await self._settle(self._store.complete_review_job, job.id)
            finally:
                self._current = None
