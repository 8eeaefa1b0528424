"""Store side of the human audit (docs/console.md): audit runs and their verdicts.

What a run draws and what a wrong lesson turns into is decided in
:mod:`hindsight.writeback.audit`; this module keeps the rows, scoped to one tenant.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, insert, select

from hindsight._errors import NotFoundError, UsageError
from hindsight._ids import new_id, normalize_id, validate_tenant
from hindsight.store._base import StoreCore, norm_ids
from hindsight.store.audit_schema import audit_runs, audit_verdicts
from hindsight.store.lifecycle_schema import experience_audit

__all__ = ["VERDICTS", "AuditStore"]

VERDICTS = ("correct", "wrong", "needs_edit")
"""What a human may say about a lesson in an audit."""
MAX_NOTE = 10_000


def _run_doc(row: Any, counts: dict[str, int]) -> dict[str, Any]:
    ids = list(row["experience_ids"] or [])
    return {
        "id": row["id"],
        "tenant_id": row["tenant_id"],
        "seed": int(row["seed"]),
        "size": int(row["size"]),
        "experience_ids": ids,
        "actor": row["actor"],
        "created_at": row["created_at"],
        "counts": {v: counts.get(v, 0) for v in VERDICTS},
        "unmarked": len(ids) - sum(counts.get(v, 0) for v in VERDICTS),
    }


class AuditStore(StoreCore):
    """Audit-run methods of :class:`~hindsight.store.SqlStore` (see the module docstring)."""

    def add_audit_run(
        self,
        tenant_id: str,
        *,
        seed: int,
        size: int,
        experience_ids: Sequence[Any],
        actor: str,
    ) -> dict[str, Any]:
        """Save a drawn sample as a new audit run; returns it (see :meth:`get_audit_run`).

        Raises:
            TenantRequiredError: empty tenant. UsageError: a bad id, seed or size.
        """
        tenant = validate_tenant(tenant_id)
        ids = norm_ids(experience_ids)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
            raise UsageError(f"seed must be an integer in [0, 2**63), got {seed!r:.40}")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise UsageError(f"size must be a positive integer, got {size!r:.40}")
        run_id = new_id()
        with self._tx(write=True) as conn:
            conn.execute(
                insert(audit_runs).values(
                    id=run_id,
                    tenant_id=tenant,
                    seed=seed,
                    size=size,
                    experience_ids=ids,
                    actor=str(actor)[:200] or "user",
                    created_at=self._now(),
                )
            )
        return self.get_audit_run(tenant, run_id)

    def _counts(self, conn: Any, tenant: str, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {r: {} for r in run_ids}
        if not run_ids:
            return out
        query = (
            select(audit_verdicts.c.run_id, audit_verdicts.c.verdict, func.count())
            .where(audit_verdicts.c.tenant_id == tenant, audit_verdicts.c.run_id.in_(run_ids))
            .group_by(audit_verdicts.c.run_id, audit_verdicts.c.verdict)
        )
        for run_id, verdict, n in conn.execute(query):
            out[run_id][verdict] = int(n)
        return out

    def get_audit_run(self, tenant_id: str, run_id: Any) -> dict[str, Any]:
        """One audit run of the tenant: ``id, tenant_id, seed, size, experience_ids, actor,
        created_at``, ``counts`` (verdict -> n), ``unmarked`` and ``verdicts`` (experience id
        -> ``{verdict, note, action, actor, at}``).

        Raises:
            TenantRequiredError: empty tenant. UsageError: a bad id.
            NotFoundError: no such run in this tenant.
        """
        tenant = validate_tenant(tenant_id)
        rid = normalize_id(run_id, "audit run id")
        with self._tx() as conn:
            row = (
                conn.execute(
                    select(audit_runs).where(
                        audit_runs.c.tenant_id == tenant, audit_runs.c.id == rid
                    )
                )
                .mappings()
                .first()
            )
            if row is None:
                raise NotFoundError(f"audit run {rid} not found in tenant {tenant!r}")
            verdicts = {
                v["experience_id"]: {
                    "verdict": v["verdict"],
                    "note": v["note"],
                    "action": v["action"],
                    "actor": v["actor"],
                    "at": v["at"],
                }
                for v in conn.execute(
                    select(audit_verdicts).where(
                        audit_verdicts.c.tenant_id == tenant, audit_verdicts.c.run_id == rid
                    )
                ).mappings()
            }
        counts: dict[str, int] = {}
        for v in verdicts.values():
            counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
        doc = _run_doc(row, counts)
        doc["verdicts"] = verdicts
        return doc

    def list_audit_runs(self, tenant_id: str, *, limit: int = 50) -> list[dict[str, Any]]:
        """The tenant's audit runs, newest first (``limit`` 1..1000), each as
        :meth:`get_audit_run` without ``verdicts``.

        Raises:
            TenantRequiredError: empty tenant. UsageError: a bad limit.
        """
        tenant = validate_tenant(tenant_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise UsageError(f"limit must be an integer in 1..1000, got {limit!r:.40}")
        query = (
            select(audit_runs)
            .where(audit_runs.c.tenant_id == tenant)
            .order_by(audit_runs.c.created_at.desc(), audit_runs.c.id)
            .limit(limit)
        )
        with self._tx() as conn:
            rows = list(conn.execute(query).mappings())
            counts = self._counts(conn, tenant, [r["id"] for r in rows])
        return [_run_doc(r, counts[r["id"]]) for r in rows]

    def set_audit_verdict(
        self,
        tenant_id: str,
        run_id: Any,
        experience_id: Any,
        *,
        verdict: str,
        note: str | None,
        action: str | None,
        actor: str,
    ) -> dict[str, Any]:
        """Record (or replace) the verdict on one experience of a run, and add a ``verdict``
        row to the experience's audit trail (``new_value`` the verdict, ``old_value`` the
        previous one, ``reason`` the note), in one transaction. Returns the run.

        Raises:
            TenantRequiredError: empty tenant. UsageError: a bad id, verdict or note, or an
            experience that is not in the run's sample. NotFoundError: no such run.
        """
        tenant = validate_tenant(tenant_id)
        rid = normalize_id(run_id, "audit run id")
        eid = normalize_id(experience_id, "experience id")
        if verdict not in VERDICTS:
            raise UsageError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r:.40}")
        if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE):
            raise UsageError(f"note must be a string of at most {MAX_NOTE} characters")
        now = self._now()
        with self._tx(write=True) as conn:
            ids = conn.execute(
                select(audit_runs.c.experience_ids).where(
                    audit_runs.c.tenant_id == tenant, audit_runs.c.id == rid
                )
            ).scalar_one_or_none()
            if ids is None:
                raise NotFoundError(f"audit run {rid} not found in tenant {tenant!r}")
            if eid not in ids:
                raise UsageError(f"experience {eid} is not in the sample of audit run {rid}")
            where = (audit_verdicts.c.run_id == rid, audit_verdicts.c.experience_id == eid)
            before = conn.execute(select(audit_verdicts.c.verdict).where(*where)).scalar()
            conn.execute(delete(audit_verdicts).where(*where))
            conn.execute(
                insert(audit_verdicts).values(
                    run_id=rid,
                    experience_id=eid,
                    tenant_id=tenant,
                    verdict=verdict,
                    note=note,
                    action=action,
                    actor=actor,
                    at=now,
                )
            )
            conn.execute(
                insert(experience_audit).values(
                    tenant_id=tenant,
                    experience_id=eid,
                    at=now,
                    actor=actor,
                    action="verdict",
                    old_value=before,
                    new_value=verdict,
                    reason=note,
                )
            )
        return self.get_audit_run(tenant, rid)
