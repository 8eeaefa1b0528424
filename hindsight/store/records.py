"""Plain records the store hands out besides the pydantic models: review jobs, outbox items and
trajectory summaries."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from hindsight.models import Outcome

__all__ = ["JobState", "OutboxItem", "OutboxOp", "ReviewJob", "TrajectorySummary"]


class JobState(StrEnum):
    """Life cycle of a review job: pending -> running -> succeeded | failed (or back to pending)."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class OutboxOp(StrEnum):
    """What an outbox item asks the vector index to do.

    - ``upsert``: (re)write the point ``experience_id`` with its stored embedding (read it with
      :meth:`SqlStore.get_vectors`; no embedding stored -> nothing to write) and ``payload``.
    - ``delete``: remove the point ``experience_id``.
    - ``set_status``: set the ``status`` payload (``payload["status"]``) of ``experience_id``.
    - ``delete_tenant``: remove every point of ``tenant_id`` (``experience_id`` is ``None``).
    """

    UPSERT = "upsert"
    DELETE = "delete"
    SET_STATUS = "set_status"
    DELETE_TENANT = "delete_tenant"


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """One pending change for the vector index, in commit order (``id`` grows).

    ``payload`` for ``upsert`` holds the vector payload (``tenant_id``, ``namespace``,
    ``task_type``, ``status``, ``kind``, ``tags``); for ``set_status`` ``{"status": ...}``;
    otherwise ``{}``.
    """

    id: int
    op: OutboxOp
    experience_id: str | None
    tenant_id: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReviewJob:
    """A queued post-hoc review of one trajectory (one job per trajectory).

    ``attempts`` counts claims so far; ``lease_expires_at`` is when a running job may be taken
    over by another worker; ``run_after`` is the earliest time a pending job may be claimed.
    All datetimes are timezone-aware UTC.
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
