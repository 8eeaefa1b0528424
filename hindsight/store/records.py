"""Plain records the store hands out besides the pydantic models: review jobs and outbox items."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

__all__ = ["JobState", "OutboxItem", "OutboxOp", "ReviewJob"]


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
