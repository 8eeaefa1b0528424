"""A small cache of what is computed from trajectory objects: one review reads the same run
several times (its gate, its episode, its masking), and each reading derives the same values.

Keyed by the objects' identity, not their content: hashing a run's text would cost what the
cache saves. The cache holds the trajectories it keys on, so an identity is not reused while
it is cached, and a trajectory whose events list or metadata changed (appended to, replaced)
is computed again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["RunCache"]

T = TypeVar("T")


class RunCache(Generic[T]):
    """The last ``size`` values of ``build(*trajectories)``, per tuple of trajectory objects.

    Thread-safe; ``build`` runs outside the lock (two threads may build the same value once
    each; the last one is kept). Never raises but what ``build`` raises.
    """

    def __init__(self, build: Callable[..., T], size: int = 8) -> None:
        self.build = build
        self.size = size
        self._items: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], T]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, *trajectories: Any) -> T:
        """``build(*trajectories)``, or what it gave for the same objects (each with
        ``events`` and ``metadata``: a :class:`hindsight.Trajectory`)."""
        key = tuple(
            (id(t), id(t.events), len(t.events), id(t.metadata), len(t.metadata))
            for t in trajectories
        )
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit[1]
        value = self.build(*trajectories)
        with self._lock:
            self._items[key] = (trajectories, value)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value
