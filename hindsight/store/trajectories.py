"""Trajectories and their events (episodic memory): idempotent ingest and scoped reads."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select

from hindsight._errors import NotFoundError, UsageError
from hindsight._ids import new_id, normalize_id, validate_tenant
from hindsight.models import Trajectory
from hindsight.store._base import StoreCore
from hindsight.store.codec import event_rows, trajectory_from_rows, trajectory_row
from hindsight.store.records import JobState
from hindsight.store.schema import events, review_jobs, trajectories

__all__ = ["TrajectoryStore"]


def new_job_row(tenant_id: str, trajectory_id: str, now: Any) -> dict[str, Any]:
    """A fresh pending review job for ``trajectory_id``, runnable at once."""
    return {
        "id": new_id(),
        "tenant_id": tenant_id,
        "trajectory_id": trajectory_id,
        "state": JobState.PENDING.value,
        "attempts": 0,
        "last_error": None,
        "lease_owner": None,
        "lease_expires_at": None,
        "run_after": now,
        "created_at": now,
        "updated_at": now,
    }


class TrajectoryStore(StoreCore):
    """Trajectory methods of :class:`~hindsight.store.SqlStore`."""

    def add_trajectory(self, traj: Trajectory, *, enqueue_review: bool = True) -> bool:
        """Store ``traj`` and its events, plus a pending review job, in one transaction.

        Events keep their list order; on read their ``trajectory_id`` is the trajectory's id.

        Args:
            traj: the trajectory to store (its id decides idempotency).
            enqueue_review: also queue a pending review job for it.

        Returns:
            ``True`` if stored; ``False`` (and nothing changed) if this tenant already has a
            trajectory with this id, so re-ingesting the same run is a no-op.

        Raises:
            UsageError: ``traj`` is not a :class:`~hindsight.models.Trajectory`, or its id
                belongs to a run of another tenant (ids are global; the message does not say
                whose).
            StoreError: the database failed.
        """
        if not isinstance(traj, Trajectory):
            raise UsageError(f"add_trajectory expects a Trajectory, got {type(traj).__name__}")
        now = self._now()
        rows = event_rows(traj)
        with self._tx(write=True) as conn:
            inserted = conn.execute(
                self._insert_ignore(trajectories).returning(trajectories.c.id),
                trajectory_row(traj, now),
            ).first()
            if inserted is None:
                owner = conn.execute(
                    select(trajectories.c.tenant_id).where(trajectories.c.id == traj.id)
                ).scalar_one_or_none()
                if owner is not None and owner != traj.tenant_id:
                    # Ids are global: never drop this tenant's run silently in favour of
                    # another tenant's (and never say whose it is).
                    raise UsageError(
                        f"trajectory id {traj.id} is already in use; send the run with a new id"
                    )
                return False
            if rows:
                conn.execute(insert(events), rows)
            if enqueue_review:
                conn.execute(insert(review_jobs), new_job_row(traj.tenant_id, traj.id, now))
        return True

    def has_trajectory(self, tenant_id: str, trajectory_id: Any) -> bool:
        """Whether ``trajectory_id`` (UUID, any spelling) is stored for ``tenant_id``.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: the id is not a UUID.
        """
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory id")
        query = select(trajectories.c.id).where(
            trajectories.c.tenant_id == tenant, trajectories.c.id == tid
        )
        with self._tx() as conn:
            return conn.execute(query).first() is not None

    def get_trajectory(self, tenant_id: str, trajectory_id: Any) -> Trajectory:
        """The stored trajectory with its events in their original order.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: the id is not a UUID.
            NotFoundError: no such trajectory in this tenant.
        """
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory id")
        with self._tx() as conn:
            row = (
                conn.execute(
                    select(trajectories).where(
                        trajectories.c.tenant_id == tenant, trajectories.c.id == tid
                    )
                )
                .mappings()
                .first()
            )
            if row is None:
                raise NotFoundError(f"trajectory {tid} not found in tenant {tenant!r}")
            event_list = list(
                conn.execute(
                    select(events)
                    .where(events.c.tenant_id == tenant, events.c.trajectory_id == tid)
                    .order_by(events.c.position)
                ).mappings()
            )
        return trajectory_from_rows(row, event_list)

    def list_trajectory_ids(self, tenant_id: str) -> list[str]:
        """Ids of the tenant's trajectories, oldest stored first.

        Raises:
            TenantRequiredError: empty or missing tenant.
        """
        tenant = validate_tenant(tenant_id)
        query = (
            select(trajectories.c.id)
            .where(trajectories.c.tenant_id == tenant)
            .order_by(trajectories.c.stored_at, trajectories.c.id)
        )
        with self._tx() as conn:
            return list(conn.execute(query).scalars())
