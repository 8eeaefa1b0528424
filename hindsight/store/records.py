"""Plain records the store hands out besides the pydantic models: review jobs and trajectory
summaries."""

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
    "ReviewJob",
    "TrajectorySummary",
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


@dataclass(frozen=True, slots=True)
class ReviewJob:
    """A queued post-hoc review of one trajectory (one job per trajectory).

    ``attempts`` counts failed attempts so far (a review that reached the model and
    failed); ``lost_leases`` counts claims whose worker died before it finished (not
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
    ``list_trajectories`` / ``runs_of_task``.

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
