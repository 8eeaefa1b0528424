"""The hindsight engine as the LangChain and LangGraph integrations use it.

The handler, the middleware and the graph nodes take a :class:`hindsight.Memory`, a
:class:`hindsight.AsyncMemory` or a client of a hindsight service
(:mod:`hindsight.service.remote`, docs/http.md#python-client) and run in sync code, async code
and executor threads. :class:`Engine` gives them:

* **ending a run**: the trajectory goes to the memory's background writer
  (:mod:`hindsight.capture.writer`); the run waits at most ``write_wait`` seconds for it
  (0 for the handler, the middleware and the LangGraph nodes by default), so a slow or
  locked store never holds the agent up; ``Memory.close()`` drains the writer and keeps
  what it could not write in the memory's unsaved area, stored at the next open;
* **recall**, bounded by ``recall_timeout`` seconds; after a failure recall is skipped for
  :data:`RECALL_COOLDOWN` seconds (one warning, not one per model call);
* the count and last text of the integration's own failures: they are logged, never raised into
  the host application.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from hindsight import Memory, RecallResult, Trajectory, UsageError
from hindsight._contract import switch
from hindsight.capture.unsaved import PendingWrite
from hindsight.capture.writer import WRITE_WAIT, wait_briefly
from hindsight.checks import CheckResult
from hindsight.service.remote import memory_faces, writer_of

__all__ = ["RECALL_COOLDOWN", "RECALL_TIMEOUT", "WRITE_WAIT", "Engine", "log"]

log = logging.getLogger("hindsight.langchain")

RECALL_TIMEOUT = 5.0
"""Seconds a recall may take before the model is called without it (the recall goes on in
the background and is dropped)."""

RECALL_COOLDOWN = 30.0
"""Seconds recall is skipped after it failed or timed out (the agent runs without memory)."""

REMEMBERED_RUNS = 1000
"""How many run keys (root run id, thread id) -> trajectory id pairs are kept."""

_RECALLS = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="hindsight-recall")


def check_seconds(value: Any, what: str) -> float:
    """``value`` as seconds >= 0.

    Raises:
        UsageError: not a number, or negative.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise UsageError(f"{what} must be a number of seconds >= 0, got {value!r:.40}")
    return float(value)


class Engine:
    """A memory (sync and async faces), its background writer and the failures seen.

    Args:
        memory: a Memory, AsyncMemory, HindsightClient or AsyncHindsightClient.
        review: queue the post-hoc review of stored runs.
        write_wait: seconds the end of a run waits for its write (then it goes on).
        recall_timeout: seconds a recall may take.
        logger: where the integration's own failures are logged.

    Raises:
        UsageError: ``memory`` is none of those; a negative ``write_wait`` /
            ``recall_timeout``.
    """

    def __init__(
        self,
        memory: Any,
        *,
        review: bool = True,
        write_wait: float = WRITE_WAIT,
        recall_timeout: float = RECALL_TIMEOUT,
        logger: logging.Logger = log,
    ) -> None:
        self.log = logger
        self.memory = memory
        self.sync, self.aio = memory_faces(memory)
        self.writer = writer_of(self.sync)
        self.review = switch(review, "review", True)  # refused here, not in the writer
        self.write_wait = check_seconds(write_wait, "write_wait")
        self.recall_timeout = check_seconds(recall_timeout, "recall_timeout")
        self.errors = 0
        self.last_error: str | None = None
        self.stored = 0
        self.last_trajectory_id: str | None = None
        self.trajectory_ids: OrderedDict[str, str] = OrderedDict()
        self._mine: OrderedDict[str, None] = OrderedDict()
        self._recall_off_until = 0.0
        self._lock = threading.Lock()

    def attach(self, owner: Any) -> None:
        """Tell a local memory that ``owner`` writes into it (``Memory.close()`` then calls
        ``owner.memory_closing()`` and drains the writer)."""
        if isinstance(self.sync, Memory):
            self.sync.attach(owner)

    def fail(self, what: str, exc: BaseException) -> None:
        """Count and log one of our own failures (never re-raised)."""
        text = f"{what}: {type(exc).__name__}: {exc}"
        with self._lock:
            self.errors += 1
            self.last_error = text
        self.log.warning("hindsight: %s", text, exc_info=self.log.isEnabledFor(logging.DEBUG))

    # -- ending runs --------------------------------------------------------------------------
    def _handed(self, trajectory_id: str, key: Any) -> None:
        with self._lock:
            self.last_trajectory_id = trajectory_id
            self._mine[trajectory_id] = None
            while len(self._mine) > 10 * REMEMBERED_RUNS:
                self._mine.popitem(last=False)
            if key is not None:
                self.trajectory_ids[str(key)] = trajectory_id
                self.trajectory_ids.move_to_end(str(key))
                while len(self.trajectory_ids) > REMEMBERED_RUNS:
                    self.trajectory_ids.popitem(last=False)

    def _written(self, future: concurrent.futures.Future[Any], write: PendingWrite | None) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        if future.result() is not None:
            with self._lock:
                self.stored += 1
        elif write is not None and write.error is not None:
            text = f"could not store trajectory {write.trajectory.id} ({write.error})"
            with self._lock:
                self.errors += 1
                self.last_error = f"{text}; kept for a retry"

    def submit(
        self,
        trajectory: Trajectory,
        key: Any = None,
        *,
        merge: bool = True,
        recalled: Sequence[str] = (),
        review: bool | None = None,
    ) -> concurrent.futures.Future[Any]:
        """Hand ``trajectory`` to the writer (``merge``: join a part stored before, e.g. the
        paused part of a resumed run; ``recalled``: experience ids its model saw). Never
        raises; the future gives the store receipt or ``None``."""
        self._handed(trajectory.id, key)
        write = PendingWrite(
            trajectory,
            review=self.review if review is None else review,
            merge=merge,
            recalled=tuple(recalled),
        )
        future = self.writer.submit(write)
        future.add_done_callback(lambda f: self._written(f, write))
        return future

    def submit_later(
        self,
        build: Callable[[], tuple[Trajectory, Any, PendingWrite] | None],
        *,
        handed: tuple[str, Any] | None = None,
    ) -> concurrent.futures.Future[Any]:
        """Hand the writer a run it builds itself, off the agent's path: ``build()`` returns
        ``(trajectory, key, write)`` or ``None`` (nothing to store). ``handed``: the run's
        ``(trajectory id, key)`` when known now: recorded as handed over now
        (``last_trajectory_id`` names it as soon as the run ends), not once built."""

        made_write: list[PendingWrite] = []
        if handed is not None:
            self._handed(*handed)

        def make() -> PendingWrite | None:
            made = build()
            if made is None:
                return None
            traj, key, write = made
            if handed is None:
                self._handed(traj.id, key)
            made_write.append(write)
            return write

        future = self.writer.submit_later(make)
        future.add_done_callback(lambda f: self._written(f, made_write[0] if made_write else None))
        return future

    def write(self, trajectory: Trajectory, **options: Any) -> PendingWrite:
        """The :class:`PendingWrite` of ``trajectory`` with this engine's review setting."""
        options.setdefault("review", self.review)
        return PendingWrite(trajectory, **options)

    def end(self, future: concurrent.futures.Future[Any]) -> None:
        """Wait at most ``write_wait`` seconds for a run's write (sync code)."""
        wait_briefly(future, self.write_wait)

    async def aend(self, future: concurrent.futures.Future[Any]) -> None:
        """Wait at most ``write_wait`` seconds for a run's write without blocking the loop."""
        if future.done() or self.write_wait <= 0:
            return
        await asyncio.wait({asyncio.wrap_future(future)}, timeout=self.write_wait)

    def wait(self, timeout: float | None = 30.0) -> bool:
        """Block until every write handed to the writer so far is done (False on timeout)."""
        return self.writer.wait(timeout)

    @property
    def unsaved(self) -> list[Trajectory]:
        """This integration's runs whose store failed, waiting for a retry (oldest first)."""
        with self._lock:
            mine = set(self._mine)
        return [w.trajectory for w in self.writer.kept if w.trajectory.id in mine]

    # -- recall -------------------------------------------------------------------------------
    def _recall_allowed(self) -> bool:
        return time.monotonic() >= self._recall_off_until

    def _recall_failed(self, exc: BaseException) -> None:
        with self._lock:
            self._recall_off_until = time.monotonic() + RECALL_COOLDOWN
        what = "recall timed out" if isinstance(exc, TimeoutError) else "recall failed"
        self.fail(
            f"{what}; the agent goes on without memory (recall skipped for "
            f"{RECALL_COOLDOWN:.0f} s)",
            exc,
        )

    def recall(self, query: str, **options: Any) -> RecallResult | None:
        """Recall with ``record=False`` (the caller records what the model saw), at most
        ``recall_timeout`` seconds; ``None`` when it failed, timed out or is cooling down."""
        if not self._recall_allowed():
            return None
        recall = self.sync.recall
        future = _RECALLS.submit(lambda: recall(query, record=False, **options))
        try:
            return future.result(self.recall_timeout or None)
        except concurrent.futures.TimeoutError:
            self._recall_failed(TimeoutError(f"no answer in {self.recall_timeout:g} s"))
        except Exception as exc:
            self._recall_failed(exc)
        return None

    async def arecall(self, query: str, **options: Any) -> RecallResult | None:
        """Async :meth:`recall`."""
        if not self._recall_allowed():
            return None
        try:
            result: RecallResult = await asyncio.wait_for(
                self.aio.recall(query, record=False, **options), self.recall_timeout or None
            )
            return result
        except TimeoutError:
            self._recall_failed(TimeoutError(f"no answer in {self.recall_timeout:g} s"))
        except Exception as exc:
            self._recall_failed(exc)
        return None

    def check(self, tool: str, args: Any, **options: Any) -> CheckResult | None:
        """Risk checks of a proposed call with ``record=False``, at most ``recall_timeout``
        seconds; ``None`` when it failed, timed out or recall is cooling down (docs/checks.md)."""
        if not self._recall_allowed():
            return None
        check = self.sync.check_action
        future = _RECALLS.submit(lambda: check(tool, args, record=False, **options))
        try:
            return future.result(self.recall_timeout or None)
        except concurrent.futures.TimeoutError:
            self._recall_failed(TimeoutError(f"no answer in {self.recall_timeout:g} s"))
        except Exception as exc:
            self._recall_failed(exc)
        return None

    async def acheck(self, tool: str, args: Any, **options: Any) -> CheckResult | None:
        """Async :meth:`check`."""
        if not self._recall_allowed():
            return None
        try:
            result: CheckResult = await asyncio.wait_for(
                self.aio.check_action(tool, args, record=False, **options),
                self.recall_timeout or None,
            )
            return result
        except TimeoutError:
            self._recall_failed(TimeoutError(f"no answer in {self.recall_timeout:g} s"))
        except Exception as exc:
            self._recall_failed(exc)
        return None

    def paused_trajectory(self, thread_id: str, tenant_id: str, namespace: str) -> str | None:
        """The stored paused part of ``thread_id`` (a run resumed in another process), or
        ``None`` (also on failure, logged). Blocking: call it off the agent's path."""
        try:
            found = self.sync.paused_trajectory(thread_id, tenant_id=tenant_id, namespace=namespace)
        except Exception as exc:
            self.fail(f"could not look up the paused run of thread {thread_id!r}", exc)
            return None
        return str(found) if found else None
