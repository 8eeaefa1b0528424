"""The clock port's implementations: the system clock and a manual one for tests, and
:class:`UtcClock`, the view of any clock the engine reads.

A memory reads one clock, the one it was given (``Memory(clock=...)``, default
:class:`SystemClock`): the stamps of stored rows, runs recorded with ``memory.record`` and
their events, recall bookkeeping, confidence decay and maintenance all come from it
(docs/concepts.md#the-clock). A clock may return naive datetimes: they are taken as UTC, as
everywhere in the data model.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from hindsight._errors import UsageError

__all__ = ["ManualClock", "SystemClock", "UtcClock", "utc_clock"]


class SystemClock:
    """The real time, timezone-aware UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to (for tests and ``--as-of`` maintenance runs).

    Args:
        start: the initial time; naive datetimes are taken as UTC. Default: now.
    """

    def __init__(self, start: datetime | None = None) -> None:
        value = start or datetime.now(UTC)
        self._now = value if value.tzinfo else value.replace(tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, *, days: float = 0, seconds: float = 0) -> datetime:
        """Move forward by ``days`` + ``seconds``; returns the new time."""
        with self._lock:
            self._now += timedelta(days=days, seconds=seconds)
            return self._now

    def set(self, value: datetime) -> None:
        """Jump to ``value`` (naive = UTC)."""
        with self._lock:
            self._now = value if value.tzinfo else value.replace(tzinfo=UTC)


class UtcClock:
    """``clock`` as the engine reads it: :meth:`now` is always timezone-aware UTC (a naive
    datetime is taken as UTC, an aware one converted). Other attributes are the wrapped
    clock's (``advance`` and ``set`` of a :class:`ManualClock`).

    Raises:
        UsageError: (from :meth:`now`) the clock returned something that is not a datetime.
    """

    def __init__(self, clock: Any) -> None:
        self.inner: Any = clock.inner if isinstance(clock, UtcClock) else clock

    def now(self) -> datetime:
        value = self.inner.now()
        if not isinstance(value, datetime):
            raise UsageError(
                f"the memory's clock ({type(self.inner).__name__}) must return a datetime "
                f"from now(), got {type(value).__name__}"
            )
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"UtcClock({self.inner!r})"


def utc_clock(clock: Any) -> UtcClock:
    """``clock`` (any object with ``now()``) as a :class:`UtcClock`; one is returned as is.

    Raises:
        UsageError: ``clock`` has no callable ``now``.
    """
    if isinstance(clock, UtcClock):
        return clock
    if not callable(getattr(clock, "now", None)):
        raise UsageError(f"clock must have a now() method, got {type(clock).__name__}")
    return UtcClock(clock)
