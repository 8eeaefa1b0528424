"""Buffered recall bookkeeping: recall is read-mostly.

Every recall used to write its bookkeeping at once: ``recall_count + 1`` and
``last_recalled_at`` on each recalled experience and one ``recalls`` row each (the log
:meth:`hindsight.AsyncMemory.record_outcome` credits or blames from), one transaction per
recall. :class:`RecallBuffer` keeps that bookkeeping in memory and writes it in batches, one
transaction per batch, when

* :data:`FLUSH_ROWS` recalled experiences are pending (size), or
* the oldest pending recall is :data:`FLUSH_SECONDS` old (age; a background thread), or
* the store is about to run any other transaction in this process (so every in-process
  reader - outcome attribution, ``get_experience``, stats, forgetting, the console - sees
  the bookkeeping exactly as if it had been written at once), or
* the store closes (``Memory.close()``), or the interpreter exits (``atexit``).

Reads on the recall path do not flush (that is the point); the rows they return carry the
pending counters (:meth:`RecallBuffer.overlay`), so recall results are the same as before.

Durability: experiences, trajectories and everything else are written as before. A crash
(``kill -9``, power loss, ``os._exit``) loses at most the bookkeeping of the recalls not yet
flushed - at most :data:`FLUSH_SECONDS` seconds or :data:`FLUSH_ROWS` recalled experiences of
them: their ``recall_count`` / ``last_recalled_at`` updates and their ``recalls`` rows, so an
outcome recorded later for such a run credits or blames nothing. Other processes on the same
database see the bookkeeping once it is flushed. A batch the database refuses is logged and
dropped (bookkeeping only), never retried forever.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from hindsight.models import Experience

__all__ = ["FLUSH_ROWS", "FLUSH_SECONDS", "PendingRecall", "RecallBuffer"]

FLUSH_ROWS = 512
"""Pending recalled experiences (one per experience per recall) that start a flush."""
FLUSH_SECONDS = 1.0
"""Longest a pending recall waits for its flush, in seconds (the background thread)."""

log = logging.getLogger("hindsight")


@dataclass(frozen=True, slots=True)
class PendingRecall:
    """One recall's bookkeeping: ``ids`` (canonical, de-duplicated, of ``tenant_id``) recalled
    at ``at`` (UTC) by the run ``trajectory_id`` (``None``: unknown)."""

    tenant_id: str
    ids: tuple[str, ...]
    at: datetime
    trajectory_id: str | None


class RecallBuffer:
    """Pending :class:`PendingRecall` s of one store and the thread that flushes them.

    Args:
        write: writes one batch in one transaction (blocking; the store's
            ``_write_recalls``); exceptions are logged and the batch dropped.
        rows: flush when this many recalled experiences are pending.
        seconds: flush when the oldest pending recall is this old.
    """

    def __init__(
        self,
        write: Callable[[list[PendingRecall]], None],
        *,
        rows: int = FLUSH_ROWS,
        seconds: float = FLUSH_SECONDS,
    ) -> None:
        self._write = write
        self.rows = rows
        self.seconds = seconds
        self._pending: list[PendingRecall] = []
        self._count = 0
        self._in_flight = 0  # batches taken from _pending and not written yet
        self._since = 0.0
        self._cond = threading.Condition()
        self._flushing = threading.RLock()  # held while a batch is taken and written
        self._local = threading.local()
        self._thread: threading.Thread | None = None
        self._stopped = False
        _BUFFERS.add(self)

    @property
    def pending(self) -> bool:
        """Whether any bookkeeping is not in the database yet: queued, or in a batch being
        written right now (a cheap, lock-free look). A transaction that sees it flushes first
        (:meth:`flush` waits for a batch in flight), so a reader never misses a recall whose
        batch another thread took but has not committed yet."""
        return bool(self._pending) or self._in_flight > 0

    def writing_here(self) -> bool:
        """Whether this thread is writing a batch right now (its transaction must not flush)."""
        return bool(getattr(self._local, "writing", False))

    def add(self, item: PendingRecall) -> None:
        """Queue one recall's bookkeeping; wakes the flusher at :attr:`rows`. After
        :meth:`close` it is written at once."""
        if not item.ids:
            return
        with self._cond:
            if self._stopped:
                closed = True
            else:
                closed = False
                if not self._pending:
                    self._since = time.monotonic()
                self._pending.append(item)
                self._count += len(item.ids)
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="hindsight-recall-log", daemon=True
                    )
                    self._thread.start()
                if self._count >= self.rows:
                    self._cond.notify_all()
        if closed:
            self._write_batch([item])

    def flush(self) -> int:
        """Write everything pending now (one transaction); returns how many recalls.
        Waits for a flush in progress on another thread, so after it returns every recall
        queued before the call is in the database (or was logged as dropped)."""
        with self._flushing:
            with self._cond:
                batch, self._pending, self._count = self._pending, [], 0
                self._in_flight += 1
            try:
                if batch:
                    self._write_batch(batch)
            finally:
                with self._cond:
                    self._in_flight -= 1
            return len(batch)

    @contextmanager
    def stable(self) -> Iterator[None]:
        """No batch is written while this is held: a read and :meth:`overlay` inside it see
        each pending recall exactly once (in the rows or in the buffer)."""
        with self._flushing:
            yield

    def overlay(self, tenant_id: str, found: dict[str, Experience]) -> None:
        """Add the pending counters to ``found`` (experiences of ``tenant_id`` by id), in
        place: ``recall_count`` + pending recalls, ``last_recalled_at`` = the latest one."""
        if not self._pending or not found:
            return
        with self._cond:
            extra: dict[str, tuple[int, datetime]] = {}
            for item in self._pending:
                if item.tenant_id != tenant_id:
                    continue
                for eid in item.ids:
                    if eid in found:
                        n, _ = extra.get(eid, (0, item.at))
                        extra[eid] = (n + 1, item.at)
        for eid, (n, at) in extra.items():
            exp = found[eid]
            found[eid] = exp.model_copy(
                update={"recall_count": exp.recall_count + n, "last_recalled_at": at}
            )

    def close(self) -> None:
        """Stop the flusher and write what is pending. Idempotent."""
        with self._cond:
            self._stopped = True
            thread, self._thread = self._thread, None
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self.flush()
        _BUFFERS.discard(self)

    def _run(self) -> None:
        """Flush when a threshold is reached; exit once nothing is pending (the next
        :meth:`add` starts a new thread), so an idle or forgotten store holds no thread."""
        while True:
            with self._cond:
                while not self._stopped and self._pending:
                    wait = self.seconds - (time.monotonic() - self._since)
                    if self._count >= self.rows or wait <= 0:
                        break
                    self._cond.wait(wait)
                if self._stopped or not self._pending:
                    if self._thread is threading.current_thread():
                        self._thread = None
                    return
            self.flush()

    def _write_batch(self, batch: list[PendingRecall]) -> None:
        self._local.writing = True
        try:
            self._write(batch)
        except Exception:
            log.warning(
                "hindsight: recall bookkeeping of %d recalls was not written",
                len(batch),
                exc_info=True,
            )
        finally:
            self._local.writing = False


_BUFFERS: weakref.WeakSet[RecallBuffer] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    for buffer in list(_BUFFERS):
        try:
            buffer.flush()
        except Exception:  # pragma: no cover - the interpreter is going away
            log.debug("hindsight: recall bookkeeping flush at exit failed", exc_info=True)
