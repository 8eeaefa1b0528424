"""Hard deletion ("forget"): by experience ids, by source trajectory, or a whole tenant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection

from hindsight._errors import UsageError
from hindsight._ids import normalize_id, validate_tenant
from hindsight.store._base import StoreCore, chunks, norm_ids
from hindsight.store.audit_schema import audit_runs, audit_verdicts
from hindsight.store.schema import events, experiences, recalls, review_jobs, trajectories
from hindsight.store.trajectories import drop_orphan_prompts

__all__ = ["ForgetStore"]

_FILTER_HELP = "pass exactly one of experience_ids=[...], trajectory_id=... or everything=True"


class ForgetStore(StoreCore):
    """The ``forget`` method of :class:`~hindsight.store.SqlStore`."""

    def forget(
        self,
        tenant_id: str,
        *,
        experience_ids: Sequence[Any] | None = None,
        trajectory_id: Any | None = None,
        everything: bool = False,
    ) -> int:
        """Hard delete (rows gone, no audit trail) within one tenant, vectors included (in the
        same transaction with pgvector; an index kept apart from SQL follows through the vector
        outbox). Other tenants are never touched.

        Args:
            tenant_id: the tenant (required; never "all").
            experience_ids: forget these experiences.
            trajectory_id: forget this run: its trajectory, events, review job and recall
                records, its system prompt when no other run of the tenant uses it, and every
                experience whose ``source_trajectory_ids`` contain it.
            everything: forget all of the tenant's experiences, trajectories, system prompts,
                events, review jobs, recall records and audit runs.

        Returns:
            How many experiences were removed.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: not exactly one filter, an empty id list, or a malformed id.
        """
        tenant = validate_tenant(tenant_id)
        if not isinstance(everything, bool):
            raise UsageError(f"everything must be True or False, got {everything!r:.40}")
        chosen = (experience_ids is not None) + (trajectory_id is not None) + everything
        if chosen != 1:
            raise UsageError(f"forget needs one filter: {_FILTER_HELP}")
        now = self._now()
        if everything:
            with self._tx(write=True) as conn:
                self._lock_tenants(conn, [tenant])
                count = int(
                    conn.execute(
                        select(func.count())
                        .select_from(experiences)
                        .where(experiences.c.tenant_id == tenant)
                    ).scalar_one()
                )
                tables = (audit_verdicts, audit_runs, recalls, review_jobs, events)
                for table in (*tables, trajectories):
                    conn.execute(delete(table).where(table.c.tenant_id == tenant))
                gone = conn.execute(
                    delete(experiences)
                    .where(experiences.c.tenant_id == tenant)
                    .returning(experiences.c.id)
                ).scalars()
                self._note_vector_changes(conn, now, tenant, list(gone))
                drop_orphan_prompts(conn, tenant, None)
            return count
        if experience_ids is not None:
            ids = norm_ids(experience_ids)
            if not ids:
                raise UsageError(f"experience_ids is empty: nothing to forget ({_FILTER_HELP})")
            with self._tx(write=True) as conn:
                self._lock_tenants(conn, [tenant])
                return self._hard_delete(conn, tenant, ids, now)
        tid = normalize_id(trajectory_id, "trajectory id")
        with self._tx(write=True) as conn:
            self._lock_tenants(conn, [tenant])
            sourced = list(
                conn.execute(
                    select(experiences.c.id).where(
                        experiences.c.tenant_id == tenant,
                        self._json_array_has(experiences.c.source_trajectory_ids, tid),
                    )
                ).scalars()
            )
            count = self._hard_delete(conn, tenant, sourced, now)
            conn.execute(
                delete(recalls).where(recalls.c.tenant_id == tenant, recalls.c.trajectory_id == tid)
            )
            for table in (review_jobs, events):
                conn.execute(
                    delete(table).where(table.c.tenant_id == tenant, table.c.trajectory_id == tid)
                )
            prompt_shas = conn.execute(
                delete(trajectories)
                .where(trajectories.c.tenant_id == tenant, trajectories.c.id == tid)
                .returning(trajectories.c.system_prompt_sha256)
            ).scalars()
            drop_orphan_prompts(conn, tenant, [sha for sha in prompt_shas if sha is not None])
        return count

    def _hard_delete(self, conn: Connection, tenant: str, ids: list[str], now: Any) -> int:
        removed: list[str] = []
        for part in chunks(ids):
            conn.execute(
                delete(recalls).where(
                    recalls.c.tenant_id == tenant, recalls.c.experience_id.in_(part)
                )
            )
            removed += conn.execute(
                delete(experiences)
                .where(experiences.c.tenant_id == tenant, experiences.c.id.in_(part))
                .returning(experiences.c.id)
            ).scalars()
        self._note_vector_changes(conn, now, tenant, removed)
        return len(removed)
