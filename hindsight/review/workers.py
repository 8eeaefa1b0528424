"""Review workers outside the agent's process (``hindsight worker``; docs/deploy.md).

Review jobs are rows in the SQL store, so any process that opens the same store can run them.
:func:`run_workers` runs ``concurrency`` workers on one event loop; each claims one job at a
time (PostgreSQL: ``SELECT ... FOR UPDATE SKIP LOCKED``, so workers on many machines never take
the same job; SQLite: one writer at a time, same machine only), reviews it with the memory's
reviewer and writes its lessons and episode, exactly as the in-process worker does.

Which processes may run workers depends on where the store lives:

* ``DATABASE_URL`` and ``VECTOR_DB_URL`` point at servers (PostgreSQL + Qdrant): no data-dir
  lock is taken; start as many worker processes, on as many machines, as you like.
* the embedded default (SQLite and Qdrant Edge in the data dir): the store belongs to one live
  process (it holds the data-dir lock, docs/concepts.md#storage). A worker process then *is*
  that process: run it only while no agent has the store open, or let the agent's own
  in-process worker do the reviews (the default), or share the store through ``hindsight serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hindsight._errors import UsageError
from hindsight.review.worker import ReviewWorker

__all__ = ["WorkerReport", "run_workers"]


@dataclass
class WorkerReport:
    """What :func:`run_workers` did.

    Attributes:
        succeeded: jobs reviewed and written.
        failed: failed attempts (each one either rescheduled with backoff or left ``failed``).
        errors: ``(trajectory_id, error)`` of each failed attempt, in order.
        stopped_by_signal: the run ended on SIGINT/SIGTERM (interrupted jobs went back to
            pending).
    """

    succeeded: int = 0
    failed: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    stopped_by_signal: bool = False


async def run_workers(
    memory: Any,
    *,
    concurrency: int = 1,
    once: bool = False,
    on_job: Callable[[Any, str | None], None] | None = None,
    stop: asyncio.Event | None = None,
    poll_seconds: float = 1.0,
    on_ready: Callable[[], None] | None = None,
) -> WorkerReport:
    """Run ``concurrency`` review workers against ``memory``'s store.

    Args:
        memory: an open :class:`hindsight.AsyncMemory`, best opened with
            ``background_review=False`` so that its own in-process worker stays off.
        concurrency: workers on this loop, 1..64 (each reviews one job at a time).
        once: return when no job is claimable any more (jobs rescheduled for later are left
            for the next run); otherwise run until ``stop`` is set or SIGINT/SIGTERM.
        on_job: called after each attempt with the job and ``None`` (success) or the error.
        stop: set it to stop the workers (besides SIGINT/SIGTERM).
        poll_seconds: how often an idle worker looks for new jobs.
        on_ready: called once the workers run and SIGINT/SIGTERM stop them gracefully.

    Returns:
        a :class:`WorkerReport`. A job interrupted by the stop goes back to pending.

    Raises:
        UsageError: ``concurrency`` out of range.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int):
        raise UsageError(f"concurrency must be an integer from 1 to 64, got {concurrency!r}")
    if not 1 <= concurrency <= 64:
        raise UsageError(f"concurrency must be an integer from 1 to 64, got {concurrency!r}")
    report = WorkerReport()
    stop = stop or asyncio.Event()
    # the memory's reviews, wired in a worker thread on first use (not on this event loop)
    reviews = await asyncio.to_thread(lambda: memory.reviews)

    async def handle(job: Any) -> None:
        try:
            await reviews.handle_job(job)
        except Exception as exc:
            report.failed += 1
            text = f"{type(exc).__name__}: {exc}"
            report.errors.append((job.trajectory_id, text))
            if on_job is not None:
                on_job(job, text)
            raise
        report.succeeded += 1
        if on_job is not None:
            on_job(job, None)

    config = memory.config
    workers = [
        ReviewWorker(
            memory.store,
            handle,
            lease_seconds=config.review_timeout + 30,
            poll_seconds=poll_seconds,
            max_attempts=config.review_max_attempts,
            retry_base=config.review_retry_base,
            backoff=reviews.backoff,
            on_failure=reviews.job_failed,
        )
        for _ in range(concurrency)
    ]
    loop = asyncio.get_running_loop()
    signalled = asyncio.Event()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, signalled.set)
            installed.append(sig)
    try:
        for worker in workers:
            worker.start()
        if on_ready is not None:
            on_ready()
        waiters: list[asyncio.Future[Any]] = [
            asyncio.ensure_future(stop.wait()),
            asyncio.ensure_future(signalled.wait()),
        ]
        if once:
            waiters.append(asyncio.ensure_future(_until_idle(workers)))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        report.stopped_by_signal = signalled.is_set()
    finally:
        for worker in workers:
            await worker.stop()
        for sig in installed:
            loop.remove_signal_handler(sig)
    return report


async def _until_idle(workers: list[ReviewWorker]) -> None:
    """Return once every worker found nothing to claim and none is reviewing."""
    while True:
        await asyncio.gather(*(w.wait_idle(None) for w in workers))
        if not any(w.busy for w in workers):
            return
