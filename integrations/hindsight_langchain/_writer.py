"""A background writer: finished trajectories are built and stored off the agent's path.

When a root run ends, the callback handler hands the run's captured events to this writer and
returns at once; one daemon thread per handler builds the trajectory (validation, JSON
clean-up, the ``outcome`` callable) and stores it through the engine, which queues the review.
``wait()`` blocks until everything handed over is written; handlers call it on ``flush()``,
``close()`` and at interpreter exit, so a finished run is not lost when the process ends.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

__all__ = ["Writer"]

log = logging.getLogger("hindsight.langchain")


class Writer:
    """Runs submitted jobs one at a time, in order, on a daemon thread started lazily."""

    def __init__(self, name: str = "hindsight-langchain-writer") -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._pending = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], None]) -> None:
        """Queue ``job`` (it must handle its own errors; any that escape are logged)."""
        with self._cond:
            self._pending += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except BaseException:  # a job must not stop the writer
                log.exception("hindsight: a background write failed")
            finally:
                with self._cond:
                    self._pending -= 1
                    if self._pending == 0:
                        self._cond.notify_all()

    @property
    def pending(self) -> int:
        """Jobs queued or running."""
        return self._pending

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every submitted job is done; False when ``timeout`` seconds passed
        first (the jobs go on)."""
        if self._thread is not None and threading.current_thread() is self._thread:
            return self._pending <= 1  # called from a job: do not wait for ourselves
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)
