"""The clock port's implementations: the system clock and a manual one for tests."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

__all__ = ["ManualClock", "SystemClock"]


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
