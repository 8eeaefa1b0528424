"""The background review worker: claims review jobs from the SQL store and runs them.

Jobs are durable rows (pending / running / succeeded / failed) so nothing is lost when the
process exits: a job interrupted by shutdown goes back to pending, and a job whose process died
is re-claimed when its lease expires (docs/review.md#review-jobs), or at once by the next
worker on the same machine, which sees that the process is gone.

Jobs end in a clear state (docs/review.md):

* ``attempts`` counts only reviews that failed (the reviewer, usually a model call, raised);
  a claim is not an attempt, a lease lost to a crash is not one (those are ``lost_leases``,
  bounded by :data:`~hindsight.store.records.MAX_LOST_LEASES`), and neither is a failure of
  the store around the review (it is retried with backoff);
* the lease is renewed while a review runs, so a slow start (importing a provider library,
  which happens outside ``review_timeout``) never lets a second worker take the job;
* a provider that answers 429 (honouring ``Retry-After``) or fails with 5xx twice in a row
  pauses every job of that model, in this process and (through the store) in every other
  (:class:`ModelBackoff`): the next job waits instead of calling the model 40 ms later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from hindsight._errors import NotFoundError, StoreError

__all__ = [
    "MAX_ATTEMPTS",
    "MAX_PAUSE_SECONDS",
    "RETRY_BASE_SECONDS",
    "ModelBackoff",
    "ReviewWorker",
    "failure_reason",
    "is_retryable",
    "model_of",
    "prepare_reviewer",
    "provider_failure",
]

log = logging.getLogger("hindsight.review")

MAX_ATTEMPTS = 3
"""A job is retried up to this many attempts in total, then left in state ``failed``
(config ``review_max_attempts``)."""

RETRY_BASE_SECONDS = 5.0
"""Backoff before retry n is ``RETRY_BASE_SECONDS * 2 ** (n - 1)`` seconds (config
``review_retry_base``)."""


MAX_PAUSE_SECONDS = 300.0
"""Longest pause of a model's jobs after a 429 or repeated 5xx (a ``Retry-After`` is capped to
it too): shared, and bounded."""

_HOST = socket.gethostname()


def _pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this machine (signal 0 checks, sends nothing)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def provider_failure(exc: BaseException) -> tuple[int | None, float | None]:
    """``(HTTP status, Retry-After seconds)`` of the provider error behind ``exc`` (searched
    along ``__cause__`` / ``__context__``: a reviewer wraps the provider's exception), each
    ``None`` when absent."""
    status: int | None = None
    retry_after: float | None = None
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        code = getattr(current, "status_code", None)
        if status is None and isinstance(code, int) and not isinstance(code, bool):
            status = code
        response = getattr(current, "response", None)
        headers = getattr(response, "headers", None)
        value = None
        if headers is not None:
            try:
                value = headers.get("retry-after")
            except Exception:
                value = None
        if retry_after is None and value is not None:
            try:
                retry_after = max(0.0, float(value))
            except (TypeError, ValueError):
                retry_after = None
        current = current.__cause__ or current.__context__
    return status, retry_after


class ModelBackoff:
    """A pause shared by every job of one model ("429 and repeated 5xx back off
    across jobs of the same model").

    A 429 pauses the model for its ``Retry-After`` (else ``base`` seconds); a 5xx pauses it
    when the previous failure of that model was one too; each further failure in a row doubles
    the pause, capped at :data:`MAX_PAUSE_SECONDS`; a success resets the streak. The pause is
    kept in this process (every worker of it sees it at once) and in the store's ``meta`` table
    as ``review_pause:<model>`` (workers of other processes, and other memories of this one,
    read it before they claim).

    Args:
        store: the SQL store (``get_meta`` / ``set_meta`` / ``now``).
        model: the model the reviews call (``None``: no pause, e.g. the heuristic reviewer).
        base: seconds of the first pause without ``Retry-After`` (``review_retry_base``).
    """

    def __init__(self, store: Any, model: str | None, base: float = RETRY_BASE_SECONDS) -> None:
        self.store = store
        self.model = model
        self.base = max(0.5, float(base))
        self._checked = 0.0
        # model -> (paused until, failures in a row, last status), for the workers sharing
        # this object (one memory's); other memories and processes see the stored pause
        self._local: dict[str, tuple[float, int, int]] = {}
        self._guard = threading.Lock()

    @property
    def key(self) -> str:
        name = self.model or ""
        if len(name) > 150:
            import hashlib

            name = name[:100] + "#" + hashlib.sha256(name.encode()).hexdigest()[:16]
        return f"review_pause:{name}"

    def _now(self) -> float:
        return float(self.store.now().timestamp())

    def delay(self) -> float:
        """Seconds to wait before the next review of this model may call it (0: go)."""
        if not self.model:
            return 0.0
        now = self._now()
        with self._guard:
            until = self._local.get(self.model, (0.0, 0, 0))[0]
        if time.monotonic() - self._checked >= 1.0:  # the shared pause, at most once a second
            self._checked = time.monotonic()
            try:
                stored = self.store.get_meta(self.key)
                until = max(until, float(stored)) if stored else until
            except (StoreError, ValueError):
                pass
            with self._guard:
                old = self._local.get(self.model, (0.0, 0, 0))
                self._local[self.model] = (max(old[0], until), old[1], old[2])
        return min(MAX_PAUSE_SECONDS, max(0.0, until - now))

    def failed(self, exc: BaseException) -> float:
        """Record a failed review; returns the pause it started (0 when none)."""
        if not self.model:
            return 0.0
        status, retry_after = provider_failure(exc)
        server = status is not None and status >= 500
        with self._guard:
            until, streak, last = self._local.get(self.model, (0.0, 0, 0))
            pause = 0.0
            if status == 429 or (server and last >= 500):
                streak += 1
                pause = self.base * float(2 ** (streak - 1))
                if retry_after is not None:
                    pause = max(pause, retry_after)
                pause = min(pause, MAX_PAUSE_SECONDS)
            now = self._now()
            if pause:
                until = max(until, now + pause)
            self._local[self.model] = (until, streak, status or 0)
        if pause:
            log.warning(
                "hindsight: %s answered HTTP %s: reviews of this model pause for %.0f s",
                self.model,
                status,
                pause,
            )
            try:
                self.store.set_meta(self.key, f"{until:.3f}")
            except StoreError:
                log.debug("hindsight: could not share the pause of %s", self.model)
        return pause

    def succeeded(self) -> None:
        """A review of this model succeeded: the next failure starts a new streak."""
        if self.model:
            with self._guard:
                until, _, _ = self._local.get(self.model, (0.0, 0, 0))
                self._local[self.model] = (until, 0, 0)


def model_of(reviewer: Any) -> str | None:
    """The model a reviewer calls (its ``model``, or the first part's of a combined one), the
    key of its :class:`ModelBackoff`; ``None`` for a reviewer without a model."""
    for part in getattr(reviewer, "parts", None) or [reviewer]:
        model = getattr(part, "model", None)
        if isinstance(model, str) and model:
            return model
    return None


def prepare_reviewer(reviewer: Any) -> None:
    """Do the slow start of a reviewer before its first review, outside ``review_timeout``:
    import the review modules and call each part's ``prepare()`` (the LLM reviewer imports
    litellm there, which takes seconds)."""
    import hindsight.review.llm.reviewer  # noqa: F401  (ReviewTimeoutError, httpx)

    for part in getattr(reviewer, "parts", None) or [reviewer]:
        prepare = getattr(part, "prepare", None)
        if callable(prepare):
            prepare()


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed review is worth another attempt later.

    An exception whose class sets ``retryable = False`` is not: e.g.
    :class:`~hindsight.review.ReportParseError`, raised after the reviewer already re-asked
    the model once with the error (then the job fails visibly). Timeouts, provider
    and store errors are retried.
    """
    return bool(getattr(exc, "retryable", True))


def failure_reason(exc: BaseException) -> str:
    """The bounded reason of a failed review attempt, the ``reason`` label of
    ``hindsight_review_job_failures_total`` (docs/deploy.md#metrics): ``"store_error"`` (the
    store around the review failed), ``"timeout"`` (``review_timeout`` or the provider's),
    ``"rate_limited"`` (HTTP 429), ``"provider_error"`` (another HTTP error of the provider),
    ``"invalid_reply"`` (a reply the reviewer could not use, not retried) or ``"other"``."""
    from hindsight.review.llm.reviewer import ReviewTimeoutError

    if isinstance(exc, StoreError):
        return "store_error"
    if isinstance(exc, (TimeoutError, ReviewTimeoutError)):
        return "timeout"
    status, _ = provider_failure(exc)
    if status == 429:
        return "rate_limited"
    if status is not None and status >= 400:
        return "provider_error"
    if not is_retryable(exc):
        return "invalid_reply"
    return "other"


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
        backoff: the pause shared by the jobs of the reviewer's model (:class:`ModelBackoff`);
            ``None``: no shared pause.
        on_failure: called with the exception of each failed review attempt (the memory's
            metrics count it by :func:`failure_reason`); ``None``: nothing is called.
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
        backoff: ModelBackoff | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._store = store
        self._on_failure = on_failure
        self._backoff = backoff
        self._dead_checked = -1e9
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
        loop thread on the agent's path) while the worker is busy anyway. It is
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
        the job still goes back to pending instead of waiting for its lease to expire.
        Called directly, not through a thread: at interpreter exit the default executor
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

    async def _release_dead(self) -> None:
        """Release the jobs of dead worker processes on this machine (at start, then every
        30 s while idle): their reviews run now instead of when the lease expires."""
        if time.monotonic() - self._dead_checked < 30.0:
            return
        self._dead_checked = time.monotonic()
        try:
            n = await asyncio.to_thread(self._store.release_dead_leases, _HOST, _pid_alive)
        except RuntimeError:
            raise
        except Exception:
            log.debug("hindsight: could not check for dead workers' jobs", exc_info=True)
            return
        if n:
            log.warning("hindsight: %d review job(s) of dead workers on this host released", n)

    async def _renew(self, job: Any) -> None:
        """Renew the job's lease every third of it while the review runs."""
        while True:
            await asyncio.sleep(max(1.0, self._lease / 3))
            try:
                await asyncio.to_thread(
                    self._store.renew_review_lease, job.id, self.worker_id, self._lease
                )
            except RuntimeError:
                return
            except Exception:
                log.debug("hindsight: could not renew the lease of %s", job.id, exc_info=True)

    def _retry_after(self, job: Any, exc: Exception) -> tuple[float | None, bool]:
        """``(seconds until the retry or None to give up, whether it was an attempt)``."""
        attempt = not isinstance(exc, StoreError)  # the store around the review failed
        attempts = job.attempts + int(attempt)
        pause = self._backoff.failed(exc) if (self._backoff is not None and attempt) else 0.0
        if not is_retryable(exc) or (attempt and attempts >= self._max_attempts):
            return None, attempt
        delay = self._retry_base * 2 ** max(0, attempts - 1)
        return min(max(delay, pause), MAX_PAUSE_SECONDS * 2), attempt

    async def _run(self) -> None:
        while True:
            while self._defer is not None and (delay := self._defer()) > 0:
                await asyncio.sleep(delay)  # reviews yield to the agent's own writes
            try:
                await self._release_dead()
                backoff = self._backoff
                paused = backoff is not None and await asyncio.to_thread(backoff.delay) > 0
                # While the model asked every job to wait, claim nothing: idle, like an
                # empty queue (flush() returns; the poll looks again).
                job = (
                    None
                    if paused
                    else await asyncio.to_thread(
                        self._store.claim_review_job, self.worker_id, self._lease
                    )
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
            renew = asyncio.get_running_loop().create_task(self._renew(job))
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
                if self._on_failure is not None:
                    self._on_failure(exc)
                error = f"{type(exc).__name__}: {exc}"[:2000]
                retry, attempt = self._retry_after(job, exc)
                log.warning("hindsight: review of %s failed (%s)", job.trajectory_id, error)
                await self._settle(
                    self._store.fail_review_job, job.id, error, retry_after=retry, attempt=attempt
                )
            else:
                self.processed += 1
                if self._backoff is not None:
                    self._backoff.succeeded()
                await self._settle(self._store.complete_review_job, job.id)
            finally:
                renew.cancel()
                self._current = None
