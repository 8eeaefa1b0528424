"""The SQL store (source of truth): trajectories, events, experiences with their embeddings,
review jobs, recall records, versions and audit. On PostgreSQL the embeddings are pgvector
columns that recall searches (:mod:`.pgvector`); an index kept apart from SQL follows the store
through the vector outbox (:mod:`.outbox`).
Persistence only: what to write, and when, is decided by the stages that call it.

May import: the foundation only (``models``, ``ports``, ``clock``, ``_ids``, ``_errors``).

>>> from hindsight.store import SqlStore
>>> store = SqlStore("sqlite://")          # in memory; a file: "sqlite:///path/hindsight.db"
>>> store.count_experiences("tenant-a")
0
>>> store.close()
"""

from hindsight.store.codec import vector_payload
from hindsight.store.records import JobState, ReviewJob, TrajectorySummary
from hindsight.store.sql_store import SqlStore

__all__ = [
    "JobState",
    "ReviewJob",
    "SqlStore",
    "TrajectorySummary",
    "vector_payload",
]
