"""Plain records the store hands out besides the pydantic models: review jobs, vector changes,
the replicas of the vector log and trajectory summaries."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from hindsight.models import Outcome

__all__ = [
    "MAX_LOST_LEASES",
    "JobState",
    "ReplicaRecord",
    "ReviewJob",
    "TrajectorySummary",
    "VectorChange",
    "VectorLogState",
    "VectorOp",
]

MAX_LOST_LEASES = 5
"""A job whose worker died this many times while running it is left ``failed`` (the review may
crash or hang its process): lost leases are not attempts, but they are not unbounded either."""


class JobState(StrEnum):
    """Life cycle of a review job: pending -> running -> succeeded | failed (or back to pending)."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class VectorOp(StrEnum):
    """What a change in the vector log asks a vector index to do.

    - ``upsert``: (re)write the point ``experience_id`` from its current row: its stored
      embedding and payload (no embedding stored, or the row is gone or deleted -> remove it).
    - ``delete``: remove the point ``experience_id``.
    - ``set_status``: the row's status changed (applied like ``upsert``: the current row wins).
    - ``delete_tenant``: remove every point of ``tenant_id`` (``experience_id`` is ``None``).

    Every op is idempotent and reads the current row, so applying the log again from any
    earlier position converges to the same index.
    """

    UPSERT = "upsert"
    DELETE = "delete"
    SET_STATUS = "set_status"
    DELETE_TENANT = "delete_tenant"


@dataclass(frozen=True, slots=True)
class VectorChange:
    """One entry of the vector log; ``seq`` grows in commit order."""

    seq: int
    op: VectorOp
    experience_id: str | None
    tenant_id: str


@dataclass(frozen=True, slots=True)
class VectorLogState:
    """Where the vector log stands: ``log_id`` (changes when the log starts over: a restore or
    a re-embed), ``head`` (the last ``seq`` written, or ``floor`` when none is kept) and
    ``floor`` (changes up to it were compacted away: a replica behind it rebuilds)."""

    log_id: str
    head: int
    floor: int


@dataclass(frozen=True, slots=True)
class ReplicaRecord:
    """A registered replica of the vector log (a row of ``vector_replicas``).

    ``id`` is ``kind:host:location`` for a per-process index, ``kind:location`` for a shared
    Qdrant collection; ``position`` is the last log ``seq`` it applied under ``log_id``;
    ``points`` its point count when last seen; datetimes are timezone-aware UTC.
    """

    id: str
    kind: str
    location: str
    host: str
    pid: int
    log_id: str
    position: int
    points: int | None
    started_at: datetime
    last_seen: datetime
    last_error: str | None

    def to_json(self) -> dict[str, Any]:
        """The record as JSON (datetimes as ISO-8601 UTC)."""
        doc = dataclasses.asdict(self)
        for key in ("started_at", "last_seen"):
            doc[key] = getattr(self, key).isoformat()
        return doc


@dataclass(frozen=True, slots=True)
class ReviewJob:
    """A queued post-hoc review of one trajectory (one job per trajectory).

    ``attempts`` counts failed attempts so far (a review that reached the model and failed;
    issue 22); ``lost_leases`` counts claims whose worker died before it finished (not
    attempts; a job is given up after :data:`MAX_LOST_LEASES` of them);
    ``lease_expires_at`` is when a running job may be taken over by another worker;
    ``run_after`` is the earliest time a pending job may be claimed. All datetimes are
    timezone-aware UTC.
    """

    id: str
    tenant_id: str
    trajectory_id: str
    state: JobState
    attempts: int
    last_error: str | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    run_after: datetime
    created_at: datetime
    updated_at: datetime
    lost_leases: int = 0

    def to_json(self) -> dict[str, Any]:
        """The job as JSON (``state`` as its value, datetimes as ISO-8601 UTC): the one shape
        of ``hindsight jobs --json`` and ``GET /v1/jobs``."""
        doc = dataclasses.asdict(self)
        doc["state"] = self.state.value
        for key, value in doc.items():
            if hasattr(value, "isoformat"):
                doc[key] = value.isoformat()
        return doc


@dataclass(frozen=True, slots=True)
class TrajectorySummary:
    """One stored run without its events, prompt text or evidence body: a row of
    ``list_trajectories`` / ``runs_of_task`` (issue 15).

    ``task_key`` is the run's task group; ``task_key_source`` is ``"explicit"`` (given by the
    caller or the source) or ``"intent"`` (assigned by the review), ``None`` without a key.
    ``system_prompt_sha256`` is the SHA-256 hex digest of its system prompt (``None``: none);
    ``reason`` is its outcome evidence's reason and ``has_evidence`` whether it has evidence at
    all. ``review_state`` is the state of its review job (``None``: never queued); ``reviewed``
    is true when that job succeeded or the run has its episode (reviewed without a job, e.g.
    ``review_now``). ``reward`` is the environment's reward; ``trust`` in
    [0,1]; ``event_count`` the number of events. Datetimes are timezone-aware UTC.
    """

    id: str
    tenant_id: str
    namespace: str
    task: str
    task_type: str | None
    tags: list[str]
    outcome: Outcome
    reward: float | None
    trust: float
    started_at: datetime
    ended_at: datetime | None
    stored_at: datetime
    event_count: int
    task_key: str | None
    task_key_source: str | None
    system_prompt_sha256: str | None
    has_evidence: bool
    reason: str | None
    review_state: JobState | None
    reviewed: bool

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON (enums as their values, datetimes as ISO-8601 UTC): the one
        shape of ``hindsight trajectories list --json``, ``GET /v1/trajectories`` and the MCP
        tool ``list_trajectories``."""
        doc = dataclasses.asdict(self)
        doc["outcome"] = self.outcome.value
        doc["review_state"] = self.review_state.value if self.review_state else None
        for key, value in doc.items():
            if hasattr(value, "isoformat"):
                doc[key] = value.isoformat()
        return doc
