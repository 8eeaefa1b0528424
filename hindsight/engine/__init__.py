"""The engine: the facade the rest of the world calls, and the wiring behind it.

:class:`AsyncMemory` (:mod:`.async_memory`, with the lesson-lifecycle methods in
:mod:`._lifecycle`) checks each call and delegates to the stage that owns the work;
:class:`Memory` (:mod:`.memory`) is its sync twin; :mod:`._open` opens the components a
:class:`~hindsight.MemoryConfig` names (store, vector index, embedder, reviewer, guard, write
path) and wires them together.

May import: every stage (capture, review, writeback, recall, guard, store, vectors, embedders,
ops) and the foundation. Never the service or the CLI; no stage imports the engine.
"""

from hindsight.engine.async_memory import AsyncMemory, EpisodeReceipt
from hindsight.engine.memory import Memory

__all__ = ["AsyncMemory", "EpisodeReceipt", "Memory"]
