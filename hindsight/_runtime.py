"""A private asyncio event loop on a daemon thread.

It hosts the background review worker and runs the sync facade's calls, so that review never
runs on (or blocks) the caller's thread or loop. A daemon thread never holds up interpreter
exit: jobs still pending at exit stay pending in the SQL store and resume on the next open.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["BackgroundLoop"]

T = TypeVar("T")


class BackgroundLoop:
    """An event loop running forever on its own daemon thread, started lazily."""

    def __init__(self, name: str = "hindsight-loop") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop, started on first use."""
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=run, name=self._name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def in_loop_thread(self) -> bool:
        """True when called from the loop's own thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; returns a thread-safe future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (sync facade).

        Raises:
            RuntimeError: called from the loop's own thread (would deadlock).
            TimeoutError: ``timeout`` seconds passed.
        """
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("cannot block on the hindsight loop from its own thread")
        return self.submit(coro).result(timeout)

    def call_soon(self, fn: Callable[[], Any]) -> None:
        """Call ``fn`` on the loop thread as soon as possible (thread-safe)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn)

    def stop(
        self, timeout: float = 5.0, drain: Callable[[], Coroutine[Any, Any, None]] | None = None
    ) -> None:
        """Run ``drain`` (bounded by ``timeout`` seconds), cancel every task still on the loop
        (e.g. an HTTP client's background logging task) and wait for them briefly, then stop
        and close the loop and its thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or loop.is_closed():
            return
        if drain is not None and thread is not threading.current_thread():
            fut = asyncio.run_coroutine_threadsafe(drain(), loop)
            try:
                fut.result(timeout)
            except Exception:  # drain is best effort; pending jobs stay pending in SQL
                fut.cancel()
        if thread is not threading.current_thread():
            rest = asyncio.run_coroutine_threadsafe(_cancel_other_tasks(), loop)
            try:
                rest.result(min(timeout, 2.0))
            except Exception:  # best effort: a task that ignores cancellation is left behind
                rest.cancel()
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if not thread.is_alive():
                loop.close()


async def _cancel_other_tasks() -> None:
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
