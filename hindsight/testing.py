"""Test doubles for every port, for your tests and ours (like httpx's MockTransport).

* :class:`FakeEmbedder` - deterministic, offline, any dimension and name.
* :class:`InMemoryVectorIndex` - numpy brute force, thread-safe.
* :class:`ScriptedReviewer` - returns the lessons you give it and counts calls.
* :class:`ManualClock` - time moves only when you say so.
* :func:`memory_store` - the real SQL store on an in-memory SQLite database.
* :func:`test_memory` - a :class:`hindsight.Memory` wired to all of the above.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hindsight.clock import ManualClock
from hindsight.embedders import HashEmbedder
from hindsight.engine.memory import Memory
from hindsight.models import Trajectory
from hindsight.ports import FloatMatrix, Lesson
from hindsight.vectors import InMemoryVectorIndex

__all__ = [
    "FakeEmbedder",
    "InMemoryVectorIndex",
    "ManualClock",
    "ScriptedReviewer",
    "memory_store",
    "test_memory",
]


class FakeEmbedder:
    """A deterministic offline embedder of any ``dimension`` (feature hashing).

    Args:
        dimension: vector length (e.g. 8 or 16 to test a model change,
            docs/concepts.md#embedders-and-their-floors).
        name: recorded model name; default ``"fake-<dimension>"``.
        similarity_floor: floor used by recall (default 0.0: keep everything).
    """

    def __init__(
        self, dimension: int = 64, *, name: str | None = None, similarity_floor: float = 0.0
    ) -> None:
        self._inner = HashEmbedder(dimension)
        self.dimension = dimension
        self.name = name or f"fake-{dimension}"
        self.similarity_floor = similarity_floor
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.calls += 1
        return self._inner.embed(texts)


class ScriptedReviewer:
    """A reviewer that returns scripted lessons.

    Args:
        lessons: a list of :class:`Lesson` returned for every trajectory, or a callable
            ``trajectory -> list[Lesson]``.
        name: recorded on each experience.

    Attributes:
        reviewed: the trajectories reviewed so far, in order.
    """

    def __init__(
        self,
        lessons: Sequence[Lesson] | Callable[[Trajectory], Sequence[Lesson]] = (),
        *,
        name: str = "scripted",
    ) -> None:
        self._lessons = lessons
        self.name = name
        self.reviewed: list[Trajectory] = []

    async def review(self, trajectory: Trajectory) -> list[Lesson]:
        self.reviewed.append(trajectory)
        if callable(self._lessons):
            return list(self._lessons(trajectory))
        return list(self._lessons)


def memory_store(clock: Any = None) -> Any:
    """The real :class:`hindsight.store.SqlStore` on a private in-memory SQLite database."""
    from hindsight.store import SqlStore

    return SqlStore("sqlite://", clock=clock)


def test_memory(**kwargs: Any) -> Memory:
    """A :class:`Memory` on in-memory fakes (no files, no network, no locks).

    Keyword arguments replace a fake (``embedder=``, ``reviewer=``, ``clock=``, ``index=``,
    ``store=``) or set a :class:`~hindsight.config.MemoryConfig` field.
    """
    clock = kwargs.pop("clock", None) or ManualClock()
    embedder = kwargs.pop("embedder", None) or FakeEmbedder()
    index = kwargs.pop("index", None) or InMemoryVectorIndex(embedder.dimension)
    store = kwargs.pop("store", None) or memory_store(clock)
    kwargs.setdefault("database_url", "sqlite://")
    kwargs.setdefault("vector_db_url", "memory://")
    return Memory(store=store, index=index, embedder=embedder, clock=clock, **kwargs)


test_memory.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
