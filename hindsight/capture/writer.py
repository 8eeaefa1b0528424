"""The background writer: finished runs are stored off the agent's path, and never lost.

Every framework integration (LangChain handler and middleware, LangGraph nodes, LlamaIndex
capture) ends a run by handing a :class:`~hindsight.capture.unsaved.PendingWrite` to the
writer of its memory and waiting for it at most a short, documented bound (``write_wait``: 0,
no wait, for the LangChain handler and middleware and the LangGraph reflect node;
:data:`WRITE_WAIT` for a LlamaIndex run, which returns the write's receipt): a slow or locked
store delays the write, never the agent. One daemon thread
per memory runs the writes in order:

1. record the experiences the run's model saw as recalled by it (outcome attribution);
2. store the trajectory, its review queued (a paused run: stored, not reviewed; its resumed
   end merges into it);
3. credit or blame what it recalled when its outcome is known (``record_outcome``).

A write that fails is kept and tried again before the next one. :meth:`TrajectoryWriter.close`
(called by ``Memory.close()``) waits for the queue at most ``timeout`` seconds; whatever is
still unwritten then (queued, failed, or blocked on a locked store) goes to the memory's
durable unsaved area (:mod:`hindsight.capture.unsaved`) and is stored at its next open. A run
handed over after the close goes there directly. So closing a memory never hangs, and never
loses a run.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from hindsight._errors import UsageError
from hindsight.capture.unsaved import PendingWrite, UnsavedArea
from hindsight.models import Outcome

__all__ = ["WRITE_WAIT", "TrajectoryWriter", "WriteSink", "wait_briefly"]

log = logging.getLogger("hindsight")

WRITE_WAIT = 0.05
"""Seconds the end of a run waits for its write by default before the run goes on (the
write continues in the background): at most this is added to a run by a slow or locked
store. The LangChain callback handler waits 0 s (it never held the run up)."""

MAX_KEPT = 1000
"""Failed writes kept in memory for a retry when there is no unsaved area (an in-memory
store); beyond that the oldest is dropped with an error log."""


class WriteSink(Protocol):
    """Where the writer writes: the sync face of a memory (local or a hindsight service)."""

    def store_episode(self, trajectory: Any, *, review: bool, merge: bool) -> Any: ...

    def record_outcome(self, trajectory_id: str, success: bool, *, tenant_id: str) -> Any: ...

    def record_recall(
        self, trajectory_id: str, experience_ids: Sequence[str], *, tenant_id: str
    ) -> Any: ...


def wait_briefly(future: concurrent.futures.Future[Any], timeout: float | None) -> bool:
    """Wait at most ``timeout`` seconds for ``future`` (0 or None-free: no wait); True when
    it is done. Never raises."""
    if timeout is not None and timeout <= 0:
        return future.done()
    try:
        future.result(timeout)
    except concurrent.futures.TimeoutError:
        return False
    except Exception:
        return True
    return True


class _Job:
    __slots__ = ("build", "cancelled", "fn", "future", "spooled", "write")

    def __init__(
        self,
        write: PendingWrite | None,
        fn: Callable[[], Any] | None = None,
        build: Callable[[], PendingWrite | None] | None = None,
    ) -> None:
        self.write = write
        self.fn = fn
        self.build = build
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.spooled: Any = None
        self.cancelled = False


class TrajectoryWriter:
    """Writes :class:`PendingWrite` s through ``sink`` on one daemon thread, in order.

    Args:
        sink: the memory face the writes go to (see :class:`WriteSink`).
        unsaved: the durable unsaved area (``None``: an in-memory store; failed writes are then
            kept in memory only).
        name: the thread's name.
        closed: exception types that mean "the memory is closed": such a failure sends the
            write to the unsaved area at once.

    Attributes:
        stored: writes completed. errors: failed attempts (each logged).
        last_error: text of the last failure.
    """

    def __init__(
        self,
        sink: WriteSink,
        *,
        unsaved: UnsavedArea | None = None,
        name: str = "hindsight-writer",
        closed: tuple[type[BaseException], ...] = (),
    ) -> None:
        self.sink = sink
        self.unsaved = unsaved
        self._name = name
        self._closed_errors = closed
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._queued: list[_Job] = []
        self._running: _Job | None = None
        self._kept: list[PendingWrite] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.stored = 0
        self.errors = 0
        self.last_error: str | None = None

    # -- handing over -------------------------------------------------------------------------
    def submit(self, write: PendingWrite) -> concurrent.futures.Future[Any]:
        """Queue ``write``; the future's result is the store receipt, or ``None`` when the
        write was not completed now (kept for a retry, or sent to the unsaved area). Never
        raises. After :meth:`close` the write goes to the unsaved area at once."""
        job = _Job(write)
        with self._cond:
            if not self._closed:
                self._enqueue(job)
                return job.future
        self._set_aside([write], "the memory is closed")
        job.future.set_result(None)
        return job.future

    def submit_later(
        self, build: Callable[[], PendingWrite | None]
    ) -> concurrent.futures.Future[Any]:
        """Queue a write that ``build()`` makes on the writer thread (building a trajectory
        costs too much for the agent's path: the LangChain handler); ``build`` returns
        ``None`` for nothing to write and handles its own errors. After :meth:`close`, or
        for a build still queued when the memory closes, ``build()`` runs on the closing
        thread and its write goes to the unsaved area."""
        job = _Job(None, build=build)
        with self._cond:
            if not self._closed:
                self._enqueue(job)
                return job.future
        write = self._built(job)
        if write is not None:
            self._set_aside([write], "the memory is closed")
        job.future.set_result(None)
        return job.future

    @staticmethod
    def _built(job: _Job) -> PendingWrite | None:
        if job.write is None and job.build is not None:
            try:
                job.write = job.build()
            except Exception:
                log.exception("hindsight: could not build a run to store")
            job.build = None
        return job.write

    def call(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """Run ``fn`` on the writer thread after the writes queued before it (its errors are
        logged; the future gives its result or ``None``). Ignored after :meth:`close`."""
        job = _Job(None, fn)
        with self._cond:
            if not self._closed:
                self._enqueue(job)
                return job.future
        job.future.set_result(None)
        return job.future

    def replay(self) -> None:
        """Store the writes waiting in the unsaved area (from earlier runs of the program), on
        the writer thread; each file is deleted once written, the rest stay for later."""
        if self.unsaved is not None and len(self.unsaved):
            self.call(self._replay)

    def _enqueue(self, job: _Job) -> None:  # lock held
        self._queued.append(job)
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
            self._thread.start()
        self._jobs.put(job)

    # -- the thread ---------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            with self._cond:
                if job in self._queued:
                    self._queued.remove(job)
                if job.cancelled:
                    self._cond.notify_all()
                    continue
                self._running = job
            result: Any = None
            try:
                result = self._run(job)
            except BaseException:  # a job must never stop the writer
                log.exception("hindsight: a background write failed")
            finally:
                if not job.future.done():
                    job.future.set_result(result)  # its callbacks run before wait() returns
                with self._cond:
                    self._running = None
                    self._cond.notify_all()

    def _run(self, job: _Job) -> Any:
        if job.fn is not None:
            return job.fn()
        if self._built(job) is None:
            return None
        assert job.write is not None
        if not self._retry_kept():
            self._keep(job.write, "the store is still failing")
            return None
        try:
            receipt = self._apply(job.write)
        except Exception as exc:
            with self._cond:
                spooled = job.spooled
            if spooled is None:  # else its copy waits in the unsaved area already
                self._failed(job.write, exc)
            return None
        with self._cond:
            spooled = job.spooled
        if spooled is not None and self.unsaved is not None:
            self.unsaved.remove(spooled)  # written after all: not a leftover
        return receipt

    def _apply(self, write: PendingWrite) -> Any:
        traj = write.trajectory
        if write.recalled and "recall" not in write.done:
            self.sink.record_recall(traj.id, list(write.recalled), tenant_id=traj.tenant_id)
            write.done.add("recall")
        receipt = None
        if "store" not in write.done:
            receipt = self.sink.store_episode(traj, review=write.review, merge=write.merge)
            write.done.add("store")
        known = traj.outcome in (Outcome.SUCCESS, Outcome.FAILURE)
        paused = traj.metadata.get("paused") is True
        if write.attribute and known and not paused and "outcome" not in write.done:
            success = traj.outcome is Outcome.SUCCESS
            self.sink.record_outcome(traj.id, success, tenant_id=traj.tenant_id)
            write.done.add("outcome")
        with self._cond:
            self.stored += 1
        return receipt

    def _retry_kept(self) -> bool:
        """Write the kept writes, oldest first; False at the first that fails again."""
        while True:
            with self._cond:
                if not self._kept:
                    return True
                write = self._kept[0]
            try:
                self._apply(write)
            except UsageError as exc:
                if isinstance(exc, self._closed_errors):
                    self._note(exc, write, kept=True)
                    return False
                self._reject(write, exc)
            except Exception as exc:
                self._note(exc, write, kept=True)
                return False
            with self._cond:
                if self._kept and self._kept[0] is write:
                    self._kept.pop(0)

    def _failed(self, write: PendingWrite, exc: Exception) -> None:
        if isinstance(exc, self._closed_errors):
            self._note(exc, write)
            self._set_aside([write], "the memory is closed")
        elif isinstance(exc, UsageError):  # the run itself is refused: retrying cannot help
            self._reject(write, exc)
        else:
            self._note(exc, write)
            self._keep(write, None)

    def _reject(self, write: PendingWrite, exc: Exception) -> None:
        """A write the memory refuses (e.g. its id belongs to another tenant): logged, and
        kept in ``unsaved/rejected/`` for inspection, never retried."""
        text = f"trajectory {write.trajectory.id} was refused: {type(exc).__name__}: {exc}"
        write.error = f"refused: {type(exc).__name__}: {exc}"
        with self._cond:
            self.errors += 1
            self.last_error = text
        where = ""
        if self.unsaved is not None:
            try:
                where = f"; kept in {self.unsaved.reject(write, str(exc))}"
            except OSError as err:
                where = f"; not kept: {err}"
        log.error("hindsight: %s%s", text, where)

    def _note(self, exc: BaseException, write: PendingWrite, *, kept: bool = False) -> None:
        text = f"could not store trajectory {write.trajectory.id}: {type(exc).__name__}: {exc}"
        write.error = f"{type(exc).__name__}: {exc}"
        with self._cond:
            self.errors += 1
            self.last_error = text
        log.warning("hindsight: %s (%s)", text, "still kept" if kept else "kept for a retry")

    def _keep(self, write: PendingWrite, why: str | None) -> None:
        with self._cond:
            closed = self._closed
            if not closed:
                self._kept.append(write)
                while len(self._kept) > MAX_KEPT and self.unsaved is None:
                    lost = self._kept.pop(0)
                    log.error(
                        "hindsight: dropped unsaved trajectory %s (over %d kept in memory)",
                        lost.trajectory.id,
                        MAX_KEPT,
                    )
        if closed:
            self._set_aside([write], why or "the memory is closed")

    def _set_aside(self, writes: Sequence[PendingWrite], why: str) -> list[Any]:
        """Send ``writes`` to the unsaved area (or keep them in memory without one)."""
        paths: list[Any] = []
        for write in writes:
            if self.unsaved is None:
                with self._cond:
                    self._kept.append(write)
                log.error(
                    "hindsight: trajectory %s not stored (%s) and this memory has no unsaved "
                    "area (in-memory store): kept in memory only",
                    write.trajectory.id,
                    why,
                )
                paths.append(None)
                continue
            try:
                paths.append(self.unsaved.put(write))
                log.info(
                    "hindsight: trajectory %s kept in %s (%s); it is stored at the next open",
                    write.trajectory.id,
                    self.unsaved.path,
                    why,
                )
            except OSError as exc:
                paths.append(None)
                log.error(
                    "hindsight: trajectory %s is lost: not stored (%s) and not written to %s: %s",
                    write.trajectory.id,
                    why,
                    self.unsaved.path,
                    exc,
                )
        return paths

    def _replay(self) -> int:
        assert self.unsaved is not None
        done = 0
        for path, write in self.unsaved.pending():
            with self._cond:
                if self._closed:
                    break
            try:
                self._apply(write)
            except UsageError as exc:
                if isinstance(exc, self._closed_errors):
                    break
                self._reject(write, exc)
            except Exception as exc:
                self._note(exc, write, kept=True)
                break
            self.unsaved.remove(path)
            done += 1
        if done:
            log.info("hindsight: stored %d run(s) from %s", done, self.unsaved.path)
        return done

    # -- waiting and closing ------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Writes queued or running."""
        with self._cond:
            return len(self._queued) + (1 if self._running is not None else 0)

    @property
    def kept(self) -> list[PendingWrite]:
        """Writes that failed and wait for a retry, oldest first."""
        with self._cond:
            return list(self._kept)

    @property
    def closed(self) -> bool:
        return self._closed

    def wait(self, timeout: float | None = 30.0) -> bool:
        """Block until every write handed over so far is done (written, kept or set aside);
        False when ``timeout`` seconds passed first (the writes go on)."""
        if self._thread is not None and threading.current_thread() is self._thread:
            return True  # called from a job: do not wait for ourselves
        with self._cond:
            return self._cond.wait_for(lambda: not self._queued and self._running is None, timeout)

    def close(self, timeout: float | None = 10.0) -> int:
        """Stop taking writes, try the kept ones once more, wait at most ``timeout`` seconds
        for the queue, then send whatever is still unwritten to the unsaved area. Returns how
        many writes went there. Safe to call twice."""
        with self._cond:
            if self._closed:
                return 0
        if self._kept:
            self.call(self._retry_kept)
        self.wait(timeout)
        with self._cond:
            self._closed = True
            leftovers = [j for j in self._queued if j.write is not None or j.build is not None]
            for job in self._queued:
                job.cancelled = True
                if not job.future.done():
                    job.future.set_result(None)
            self._queued.clear()
            running = self._running
            kept, self._kept = self._kept, []
            self._cond.notify_all()
        built = [self._built(j) for j in leftovers]
        writes = [w for w in built if w is not None] + kept
        blocked = running.write if running is not None and running.write is not None else None
        if blocked is not None:
            # Still blocked (a locked store): a copy goes to the unsaved area, removed again
            # if the write completes after all (storing twice is harmless: it is idempotent).
            assert running is not None
            path = self._set_aside([blocked], "the store did not answer")[0]
            with self._cond:
                running.spooled = path
        self._set_aside(writes, "not written before the memory closed")
        return len(writes) + (1 if blocked is not None else 0)
