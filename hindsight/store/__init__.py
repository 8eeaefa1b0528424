"""The SQL store (source of truth): trajectories, events, experiences with their embeddings,
review jobs, recall records, versions and audit, and the vector log that every vector index
follows as a replica (:mod:`.vector_sync` applies it to whatever
:class:`~hindsight.ports.VectorIndex` it is given, from that index's own position).
Persistence only: what to write, and when, is decided by the stages that call it.

May import: the foundation only (``models``, ``ports``, ``clock``, ``_ids``, ``_errors``).

>>> from hindsight.store import SqlStore
>>> store = SqlStore("sqlite://")          # in memory; a file: "sqlite:///path/hindsight.db"
>>> store.count_experiences("tenant-a")
0
>>> store.close()
"""

from hindsight.store.codec import vector_payload
from hindsight.store.records import (
    JobState,
    ReplicaRecord,
    ReviewJob,
    TrajectorySummary,
    VectorChange,
    VectorLogState,
    VectorOp,
)
from hindsight.store.sql_store import SqlStore

__all__ = [
    "JobState",
    "ReplicaRecord",
    "ReviewJob",
    "SqlStore",
    "TrajectorySummary",
    "VectorChange",
    "VectorLogState",
    "VectorOp",
    "vector_payload",
]
