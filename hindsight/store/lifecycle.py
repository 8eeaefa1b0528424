"""Store side of the write-back lifecycle (docs/lifecycle.md): audited confidence changes, run
outcomes counted once, versions with rollback, audited status changes and the dedup write
operations.

Every method here does its reads and writes in **one transaction**, so concurrent writers
(threads or processes) never lose an update: confidence moves with ``confidence = old +
delta`` computed on the row read ``FOR UPDATE`` (PostgreSQL) or inside SQLite's single writer,
and an outcome is counted once per run by the primary key of the ``outcomes`` table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy.typing as npt
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.engine import Connection

from hindsight._errors import NotFoundError, UsageError
from hindsight._ids import new_id, normalize_id, validate_tenant
from hindsight.models import Experience, ExperienceStatus
from hindsight.store._base import StoreCore, chunks, norm_ids, norm_status, norm_statuses
from hindsight.store.codec import (
    EXPERIENCE_FIELDS,
    checked,
    experience_from_row,
    experience_from_stored,
    experience_row,
)
from hindsight.store.lifecycle_schema import experience_audit, experience_versions, outcomes
from hindsight.store.records import JobState
from hindsight.store.schema import experiences as _table
from hindsight.store.schema import recalls, review_jobs

__all__ = ["AuditEntry", "LifecycleStore", "OutcomeChange", "VersionEntry"]

_COLUMNS = [_table.c[name] for name in EXPERIENCE_FIELDS]


def folded_entry(incoming: Experience, stored_text: str) -> dict[str, Any]:
    """The reason of a fold's ``support`` audit row: ``{"from": id, "sources": [run ids]}``
    and ``"content"``, the incoming text exactly as sent, when the stored text is another
    (a paraphrase merged, a lesson folded on its lesson key)."""
    entry: dict[str, Any] = {"from": incoming.id, "sources": incoming.source_trajectory_ids}
    if incoming.content != stored_text:
        entry["content"] = incoming.content
    return entry


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, round(value, 6)))


def _check_delta(delta: Any) -> float:
    if isinstance(delta, bool) or not isinstance(delta, int | float) or delta != delta:
        raise UsageError(f"delta must be a number, got {delta!r:.40}")
    if not -1.0 <= float(delta) <= 1.0:
        raise UsageError(f"delta must be between -1 and 1, got {delta}")
    return float(delta)


def _check_actor(actor: Any) -> str:
    if not isinstance(actor, str) or not actor.strip():
        raise UsageError("actor must be a non-empty string")
    return actor.strip()[:200]


class AuditEntry(dict[str, Any]):
    """One audit row: ``id, tenant_id, experience_id, at, actor, action, old_value,
    new_value, reason`` (values are strings or ``None``)."""


class VersionEntry(dict[str, Any]):
    """One stored version: ``id, experience_id, version, parent_id, change, actor, reason,
    created_at`` and ``experience`` (the :class:`Experience` as it was)."""


# Built once: building a statement per call (and its cache key) cost SQLAlchemy about as much
# as running it (docs/benchmarks.md#sql-statements).
_INSERT_AUDIT = insert(experience_audit)
_INSERT_VERSION = insert(experience_versions)
_LOCKED_ROWS = (
    select(*_COLUMNS)
    .where(
        _table.c.tenant_id == bindparam("tenant"),
        _table.c.id.in_(bindparam("ids", expanding=True)),
    )
    .with_for_update()
)
"""The tenant's rows among some ids, locked ``FOR UPDATE`` on PostgreSQL."""
_RECALLED_BY_RUN = (
    select(recalls.c.experience_id)
    .where(recalls.c.tenant_id == bindparam("tenant"), recalls.c.trajectory_id == bindparam("tid"))
    .order_by(recalls.c.id)
)
"""The experiences a run recalled, first recall first (with repeats)."""
_OUTCOME_EXPERIENCES = (
    update(outcomes)
    .where(
        outcomes.c.tenant_id == bindparam("tenant"), outcomes.c.trajectory_id == bindparam("tid")
    )
    .values(experiences=bindparam("changed"))
)
"""Record which experiences a run's outcome changed."""


class OutcomeChange(dict[str, Any]):
    """One experience changed by a run outcome: ``experience_id``, ``old`` and ``new``
    confidence, ``helped_count``, ``misled_count``."""


class LifecycleStore(StoreCore):
    """Lifecycle methods of :class:`~hindsight.store.SqlStore` (see the module docstring)."""

    # -- shared building blocks (inside a write transaction) ------------------------------
    def _audit(
        self,
        conn: Connection,
        now: datetime,
        rows: Sequence[tuple[str, str, str, str, Any, Any, str | None]],
    ) -> None:
        """Audit rows ``(tenant, experience_id, actor, action, old, new, reason)``."""
        if rows:
            conn.execute(
                _INSERT_AUDIT,
                [
                    {
                        "tenant_id": tenant,
                        "experience_id": exp_id,
                        "at": now,
                        "actor": actor,
                        "action": action,
                        "old_value": None if old is None else str(old),
                        "new_value": None if new is None else str(new),
                        "reason": reason,
                    }
                    for tenant, exp_id, actor, action, old, new, reason in rows
                ],
            )

    def _locked_rows(self, conn: Connection, tenant: str, ids: Sequence[str]) -> dict[str, Any]:
        """The rows of the tenant's experiences among ``ids``, locked ``FOR UPDATE`` after the
        tenant's stamp row (:meth:`_lock_tenants`: one lock order everywhere)."""
        self._lock_tenants(conn, [tenant])
        found: dict[str, Any] = {}
        for part in chunks(list(ids)):
            for row in conn.execute(_LOCKED_ROWS, {"tenant": tenant, "ids": part}).mappings():
                found[row["id"]] = row
        return found

    def _snapshot(
        self, conn: Connection, exp: Experience, change: str, actor: str, reason: str | None
    ) -> str:
        """Store ``exp`` (its current state) as a version row; returns the row's id."""
        snap_id = new_id()
        conn.execute(
            _INSERT_VERSION,
            {
                "id": snap_id,
                "tenant_id": exp.tenant_id,
                "experience_id": exp.id,
                "version": exp.version,
                "parent_id": exp.parent_id,
                "snapshot": exp.model_dump(mode="json"),
                "change": change,
                "actor": actor,
                "reason": reason,
                "created_at": self._now(),
            },
        )
        return snap_id

    def _new_version(
        self,
        conn: Connection,
        current: Experience,
        new: Experience,
        *,
        change: str,
        actor: str,
        reason: str | None,
        vector: npt.ArrayLike | None,
        now: datetime,
    ) -> Experience:
        """Snapshot ``current``, then write ``new`` as version ``current.version + 1`` whose
        ``parent_id`` is that snapshot."""
        snap = self._snapshot(conn, current, change, actor, reason)
        result = checked(
            new.model_copy(
                update={"version": current.version + 1, "parent_id": snap, "updated_at": now}
            )
        )
        self._update_experience_row(conn, result, vector, now)  # type: ignore[attr-defined]
        self._audit(
            conn,
            now,
            [
                (
                    result.tenant_id,
                    result.id,
                    actor,
                    change,
                    current.version,
                    result.version,
                    reason,
                )
            ],
        )
        return result

    # -- confidence ------------------------------------------------------------------------
    def adjust_confidence(
        self,
        tenant_id: str,
        experience_id: Any,
        delta: float,
        *,
        actor: str = "user",
        reason: str | None = None,
        rescore: Callable[[Experience, float, datetime], Experience] | None = None,
    ) -> tuple[float, float]:
        """Move an experience's confidence by ``delta``, clamped to [0, 1], and audit it.

        Atomic: the row is read and written in one transaction, so concurrent adjustments
        add up. Works on any status (an archived lesson can be re-rated).

        Args:
            tenant_id: the tenant.
            experience_id: any UUID spelling.
            delta: in [-1, 1].
            actor: who asks, recorded in the audit row (default ``"user"``).
            reason: free text recorded in the audit row.
            rescore: ``rescore(experience, delta, now)`` returns the experience to store (the
                write-back keeps the change as an offset over the evidence,
                :func:`hindsight.writeback.confidence.adjusted`); ``None``: ``confidence +
                delta``, clamped.

        Returns:
            ``(old, new)`` confidence.

        Raises:
            TenantRequiredError: empty tenant. UsageError: bad id, delta or actor.
            NotFoundError: no such experience in this tenant.
        """
        tenant = validate_tenant(tenant_id)
        eid = normalize_id(experience_id, "experience id")
        step = _check_delta(delta)
        who = _check_actor(actor)
        now = self._now()
        with self._tx(write=True) as conn:
            row = self._locked_rows(conn, tenant, [eid]).get(eid)
            if row is None:
                raise NotFoundError(f"experience {eid} not found in tenant {tenant!r}")
            current = experience_from_row(row)
            if rescore is None:
                after = current.model_copy(
                    update={"confidence": _clamp(current.confidence + step), "updated_at": now}
                )
            else:
                after = rescore(current, step, now)
            after = checked(after)
            self._update_experience_row(conn, after, None, now)  # type: ignore[attr-defined]
            old, new = current.confidence, after.confidence
            self._audit(conn, now, [(tenant, eid, who, "confidence", old, new, reason)])
        return old, new

    def apply_outcome(
        self,
        tenant_id: str,
        trajectory_id: Any,
        success: bool,
        *,
        credit: Callable[[Experience, bool, datetime], Experience],
        weight: float = 1.0,
        policy: Callable[[Experience, datetime], Experience] | None = None,
    ) -> list[OutcomeChange] | None:
        """Credit or blame every experience the run ``trajectory_id`` recalled, once per run.

        ``credit(experience, success, now)`` returns each recalled experience as it is to be
        stored (the write-back adds the outcome to its evidence and recomputes its confidence,
        and counts ``helped_count`` / ``misled_count``,
        :func:`hindsight.writeback.confidence.with_outcome`); one audit row each (actor
        ``outcome:<trajectory id>``). ``policy(experience, now)`` may change each updated
        experience further (the memory guard demotes or quarantines repeat offenders); a
        status it sets is audited too. The ``outcomes`` row (primary key tenant + trajectory;
        ``delta`` = ``+weight`` on success, ``-weight`` on failure: the evidence it added) is
        inserted in the same transaction, so a second call for the same run, from any thread
        or process, changes nothing.

        Returns:
            The changes, or ``None`` when this run's outcome was already recorded.

        Raises:
            TenantRequiredError: empty tenant. UsageError: bad id or ``success`` not a bool.
        """
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory id")
        if not isinstance(success, bool):
            raise UsageError(f"success must be True or False, got {success!r:.40}")
        delta = float(weight) if success else -float(weight)
        now = self._now()
        with self._tx(write=True) as conn:
            recorded = {
                "tenant_id": tenant,
                "trajectory_id": tid,
                "success": success,
                "delta": delta,
                "experiences": [],
                "recorded_at": now,
            }
            inserted = conn.execute(
                self._insert_ignore(outcomes, outcomes.c.trajectory_id), recorded
            ).first()
            if inserted is None:
                return None
            run = {"tenant": tenant, "tid": tid}
            ids = list(dict.fromkeys(conn.execute(_RECALLED_BY_RUN, run).scalars()))
            rows = self._locked_rows(conn, tenant, ids)
            changes: list[OutcomeChange] = []
            audit: list[tuple[str, str, str, str, Any, Any, str | None]] = []
            for eid in ids:
                row = rows.get(eid)
                if row is None:
                    continue
                before = experience_from_stored([row[name] for name in EXPERIENCE_FIELDS])
                runs = tuple(before.source_trajectory_ids)  # kept: a callback may edit in place
                after = credit(before, success, now)
                if policy is not None:
                    after = policy(after, now)
                after = checked(after)
                same_runs = tuple(after.source_trajectory_ids) == runs
                self._update_experience_row(  # type: ignore[attr-defined]
                    conn, after, None, now, links=not same_runs
                )
                if after.status is not before.status:
                    audit.append(
                        (
                            tenant,
                            eid,
                            f"outcome:{tid}",
                            "status",
                            before.status.value,
                            after.status.value,
                            "guard policy after a failed run",
                        )
                    )
                changes.append(
                    OutcomeChange(
                        experience_id=eid,
                        old=before.confidence,
                        new=after.confidence,
                        helped_count=after.helped_count,
                        misled_count=after.misled_count,
                    )
                )
                verdict = "success" if success else "failure"
                audit.append(
                    (
                        tenant,
                        eid,
                        f"outcome:{tid}",
                        "confidence",
                        before.confidence,
                        after.confidence,
                        f"run {verdict}",
                    )
                )
            self._audit(conn, now, audit)
            changed = [c["experience_id"] for c in changes]
            conn.execute(_OUTCOME_EXPERIENCES, {**run, "changed": changed})
        return changes

    def get_outcome(self, tenant_id: str, trajectory_id: Any) -> dict[str, Any] | None:
        """The recorded outcome of a run: ``success``, ``delta``, ``experiences`` (ids),
        ``recorded_at``; ``None`` when none was recorded."""
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory id")
        query = select(outcomes).where(
            outcomes.c.tenant_id == tenant, outcomes.c.trajectory_id == tid
        )
        with self._tx() as conn:
            row = conn.execute(query).mappings().first()
        if row is None:
            return None
        return {
            "trajectory_id": tid,
            "success": bool(row["success"]),
            "delta": float(row["delta"]),
            "experiences": list(row["experiences"] or []),
            "recorded_at": row["recorded_at"],
        }

    # -- status changes ----------------------------------------------------------------------
    def change_status(
        self,
        tenant_id: str,
        ids: Sequence[Any],
        status: str,
        *,
        actor: str,
        reason: str | None = None,
        only_from: Sequence[str] | None = None,
    ) -> list[str]:
        """Set the status of the tenant's experiences among ``ids`` and audit each change.

        Vectors follow as with ``set_status``. ``only_from`` restricts the
        change to experiences currently in one of these statuses (others are left alone).

        Returns:
            The ids that changed.

        Raises:
            TenantRequiredError: empty tenant. UsageError: bad id or status.
        """
        tenant = validate_tenant(tenant_id)
        new = norm_status(status)
        who = _check_actor(actor)
        wanted = norm_ids(ids)
        allowed = None if only_from is None else set(norm_statuses(only_from))
        now = self._now()
        with self._tx(write=True) as conn:
            if allowed is not None:
                current = self._locked_rows(conn, tenant, wanted)
                wanted = [i for i in wanted if i in current and current[i]["status"] in allowed]
            rows = self._set_status_rows(conn, tenant, wanted, new, now)  # type: ignore[attr-defined]
            self._audit(
                conn,
                now,
                [(tenant, r["id"], who, "status", r["status"], new, reason) for r in rows],
            )
        return [r["id"] for r in rows]

    # -- versions ----------------------------------------------------------------------------
    def save_version(
        self,
        exp: Experience,
        *,
        change: str,
        actor: str,
        reason: str | None = None,
        vector: npt.ArrayLike | None = None,
        expected_version: int | None = None,
    ) -> Experience:
        """Write ``exp`` as the next version of the stored experience with its id.

        The stored state is kept as a version row (see :meth:`history`); the written
        experience gets ``version = stored.version + 1`` and ``parent_id`` = that row's id.

        Args:
            exp: the new state (its ``version``/``parent_id`` are set here).
            change: what kind of edit this is (``edit``, ``merge``, ``rollback`` ...).
            actor, reason: recorded in the version row and the audit trail.
            vector: a new embedding when the content changed (1-D).
            expected_version: refuse (UsageError) when the stored version differs
                (optimistic concurrency for read-modify-write callers).

        Raises:
            NotFoundError: no such experience. UsageError: a version conflict or bad input.
        """
        if not isinstance(exp, Experience):
            raise UsageError(f"save_version expects an Experience, got {type(exp).__name__}")
        who = _check_actor(actor)
        now = self._now()
        with self._tx(write=True) as conn:
            row = self._locked_rows(conn, exp.tenant_id, [exp.id]).get(exp.id)
            if row is None:
                raise NotFoundError(f"experience {exp.id} not found in tenant {exp.tenant_id!r}")
            current = experience_from_row(row)
            if expected_version is not None and current.version != expected_version:
                raise UsageError(
                    f"experience {exp.id} changed meanwhile (version {current.version}, "
                    f"expected {expected_version}); read it again"
                )
            return self._new_version(
                conn,
                current,
                exp,
                change=change,
                actor=who,
                reason=reason,
                vector=vector,
                now=now,
            )

    def history(self, tenant_id: str, experience_id: Any) -> list[VersionEntry]:
        """Every earlier version of an experience, oldest first (the current state is the
        experience itself, not listed here).

        Raises:
            TenantRequiredError, UsageError (bad id), NotFoundError (no such experience).
        """
        tenant = validate_tenant(tenant_id)
        eid = normalize_id(experience_id, "experience id")
        query = (
            select(experience_versions)
            .where(
                experience_versions.c.tenant_id == tenant,
                experience_versions.c.experience_id == eid,
            )
            .order_by(experience_versions.c.version)
        )
        with self._tx() as conn:
            exists = conn.execute(
                select(_table.c.id).where(_table.c.tenant_id == tenant, _table.c.id == eid)
            ).first()
            if exists is None:
                raise NotFoundError(f"experience {eid} not found in tenant {tenant!r}")
            rows = list(conn.execute(query).mappings())
        return [
            VersionEntry(
                id=r["id"],
                experience_id=eid,
                version=r["version"],
                parent_id=r["parent_id"],
                change=r["change"],
                actor=r["actor"],
                reason=r["reason"],
                created_at=r["created_at"],
                experience=Experience.model_validate(r["snapshot"]),
            )
            for r in rows
        ]

    def audit_log(
        self, tenant_id: str, experience_id: Any | None = None, *, limit: int = 100
    ) -> list[AuditEntry]:
        """Audit rows of the tenant (of one experience if given), newest first (``limit``
        1..10000)."""
        tenant = validate_tenant(tenant_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise UsageError(f"limit must be an integer in 1..10000, got {limit!r}")
        query = select(experience_audit).where(experience_audit.c.tenant_id == tenant)
        if experience_id is not None:
            eid = normalize_id(experience_id, "experience id")
            query = query.where(experience_audit.c.experience_id == eid)
        query = query.order_by(experience_audit.c.id.desc()).limit(limit)
        with self._tx() as conn:
            return [AuditEntry(dict(r)) for r in conn.execute(query).mappings()]

    def all_experiences(self) -> list[Experience]:
        """Every experience of every tenant, any status (maintenance only: doctor, reembed).

        Not tenant-scoped on purpose; never expose its result to a tenant.
        """
        found: list[Experience] = []
        last = ""
        with self._tx() as conn:
            while True:
                query = (
                    select(*_COLUMNS).where(_table.c.id > last).order_by(_table.c.id).limit(2000)
                )
                page = [experience_from_row(r) for r in conn.execute(query).mappings()]
                found += page
                if len(page) < 2000:
                    return found
                last = page[-1].id

    def set_embeddings(self, vectors: dict[str, Any], model: str) -> None:
        """Replace stored embeddings (``{id: 1-D vector}``) and their ``embedding_model``, one
        transaction (maintenance: ``hindsight reembed``; with pgvector the HNSW index of the
        old dimension must be dropped first, :func:`hindsight.store.pgvector.drop_hnsw`)."""
        with self._tx(write=True) as conn:
            tenants: set[str] = set()
            for part in chunks(list(vectors)):
                query = select(_table.c.tenant_id).where(_table.c.id.in_(part)).distinct()
                tenants.update(conn.execute(query).scalars())
            self._lock_tenants(conn, tenants)
            now = self._now()
            for exp_id, vec in vectors.items():
                tenant = conn.execute(
                    update(_table)
                    .where(_table.c.id == exp_id)
                    .values(embedding=vec, embedding_model=model)
                    .returning(_table.c.tenant_id)
                ).scalar()
                if tenant is not None:
                    self._note_vector_changes(conn, now, tenant, [exp_id])

    def expired_leases(self, now: datetime) -> list[str]:
        """Ids of review jobs ``running`` whose lease expired before ``now`` (their worker
        died or hung); a worker re-claims them, ``release_expired_leases`` frees them now."""
        query = select(review_jobs.c.id).where(
            review_jobs.c.state == JobState.RUNNING.value, review_jobs.c.lease_expires_at < now
        )
        with self._tx() as conn:
            return [str(i) for i in conn.execute(query).scalars()]

    def release_expired_leases(self, now: datetime) -> int:
        """Put ``running`` jobs with an expired lease back to ``pending`` (a lost lease, not an
        attempt); returns how many."""
        stmt = (
            update(review_jobs)
            .where(
                review_jobs.c.state == JobState.RUNNING.value,
                review_jobs.c.lease_expires_at < now,
            )
            .values(
                state=JobState.PENDING.value,
                lost_leases=review_jobs.c.lost_leases + 1,
                lease_owner=None,
                lease_expires_at=None,
                run_after=now,
                updated_at=now,
            )
        )
        with self._tx(write=True) as conn:
            return int(conn.execute(stmt).rowcount)

    def namespaces(self, tenant_id: str) -> list[str]:
        """The namespaces the tenant has experiences in (sorted)."""
        tenant = validate_tenant(tenant_id)
        query = (
            select(_table.c.namespace)
            .where(_table.c.tenant_id == tenant)
            .distinct()
            .order_by(_table.c.namespace)
        )
        with self._tx() as conn:
            return [str(n) for n in conn.execute(query).scalars()]

    # -- write-back operations (used by hindsight.writeback.dedup) ----------------------------
    def fold_into(
        self,
        target_id: str,
        incoming: Experience,
        *,
        fold: Callable[[Experience, Experience, datetime], Experience],
        actor: str,
        merge: bool,
        content: str | None = None,
        vector: npt.ArrayLike | None = None,
        reason: str | None = None,
    ) -> Experience:
        """Fold ``incoming`` into the stored experience ``target_id`` (no new row).

        ``fold(target, incoming, now)`` returns the target as it is to be stored (the
        write-back unites sources and evidence and recomputes the confidence,
        :func:`hindsight.writeback.confidence.folded`); it runs on the row read under lock,
        so concurrent folds never lose one another. With ``merge=True`` this is a new version
        (``content``/``vector`` may replace the text, e.g. an LLM's merged wording); otherwise
        (an exact duplicate) only audit rows are written: ``confidence`` (old, new) and
        ``support`` (old and new ``support_count``, with :func:`folded_entry`: the incoming
        id, its sources and, when it differs from the stored text, its text, so that no
        folded text is lost). A fold that changes nothing (the same run or source again)
        writes nothing.

        Raises:
            NotFoundError: the target is gone.
        """
        tenant = incoming.tenant_id
        now = self._now()
        with self._tx(write=True) as conn:
            row = self._locked_rows(conn, tenant, [target_id]).get(target_id)
            if row is None:
                raise NotFoundError(f"experience {target_id} not found in tenant {tenant!r}")
            current = experience_from_row(row)
            new = fold(current, incoming, now)
            if content is not None:
                new = new.model_copy(update={"content": content})
            if new.model_copy(update={"updated_at": current.updated_at}) == current:
                return current  # nothing new (e.g. the same run reviewed again)
            audit = [
                (
                    tenant,
                    current.id,
                    actor,
                    "confidence",
                    current.confidence,
                    new.confidence,
                    "supported again" + (f": {reason}" if reason else ""),
                ),
                (
                    tenant,
                    current.id,
                    actor,
                    "support",
                    current.support_count,
                    new.support_count,
                    json.dumps(folded_entry(incoming, new.content)),
                ),
            ]
            if merge:
                result = self._new_version(
                    conn,
                    current,
                    new,
                    change="merge",
                    actor=actor,
                    reason=reason,
                    vector=vector,
                    now=now,
                )
            else:
                result = checked(new)
                self._update_experience_row(conn, result, None, now)  # type: ignore[attr-defined]
            self._audit(conn, now, audit)
            return result

    def add_with_links(
        self,
        incoming: Experience,
        vector: npt.ArrayLike,
        *,
        supersede: str | None = None,
        conflict: str | None = None,
        demote: Callable[[Experience, Experience, datetime], Experience] | None = None,
        actor: str,
        reason: str | None = None,
    ) -> Experience:
        """Insert ``incoming`` and, in the same transaction, link it to an older experience.

        ``supersede=<id>``: the older one becomes ``superseded`` (never recalled), gets
        ``metadata["superseded_by"]`` and, with ``demote(older, incoming, now)``, the evidence
        and confidence that returns (the write-back counts the newer lesson's runs against it,
        :func:`hindsight.writeback.confidence.superseded`), as a new version;
        ``incoming.metadata["supersedes"]`` names it. ``conflict=<id>``: both stay active,
        ``incoming.metadata["conflicts_with"]`` names the older one and, with ``demote``, the
        older one gets the lowered evidence and confidence ``demote`` returns and
        ``metadata["conflicts_with"]`` naming the newer one, as a new version (the rendered
        block marks both, docs/lifecycle.md).

        Raises:
            UsageError: the id exists already, or both/neither link given.
        """
        if (supersede is None) == (conflict is None):
            raise UsageError("add_with_links needs exactly one of supersede= or conflict=")
        tenant = incoming.tenant_id
        other = supersede or conflict
        assert other is not None
        key = "supersedes" if supersede else "conflicts_with"
        meta = dict(incoming.metadata)
        meta[key] = list(dict.fromkeys([*meta.get(key, []), other]))
        item = checked(incoming.model_copy(update={"metadata": meta}))
        now = self._now()
        row = experience_row(item)
        row["embedding"] = vector
        with self._tx(write=True) as conn:
            old_row = self._locked_rows(conn, tenant, [other]).get(other)
            self._insert_experience_rows(conn, [item], [row], now)  # type: ignore[attr-defined]
            if old_row is None:
                return item
            older = experience_from_row(old_row)
            audits: list[tuple[Any, ...]] = [
                (tenant, item.id, actor, "conflict", None, older.id, reason)
            ]
            if supersede:
                audits = [
                    (tenant, older.id, actor, "status", older.status.value, "superseded", reason)
                ]
            elif demote is None:
                self._audit(conn, now, audits)
                return item
            lowered = demote(older, item, now) if demote is not None else older
            if supersede:
                update: dict[str, Any] = {
                    "status": ExperienceStatus.SUPERSEDED,
                    "metadata": {**lowered.metadata, "superseded_by": item.id},
                }
            else:
                links = [*lowered.metadata.get("conflicts_with", []), item.id]
                update = {
                    "metadata": {**lowered.metadata, "conflicts_with": list(dict.fromkeys(links))}
                }
            self._new_version(
                conn,
                older,
                lowered.model_copy(update=update),
                change="supersede" if supersede else "conflict",
                actor=actor,
                reason=reason,
                vector=None,
                now=now,
            )
            conf = (tenant, older.id, actor, "confidence", older.confidence, lowered.confidence)
            self._audit(conn, now, [*audits, (*conf, reason)])
        return item
