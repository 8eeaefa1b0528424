"""The lesson-lifecycle methods of :class:`hindsight.AsyncMemory` (docs/lifecycle.md,
docs/security.md): what happens to a lesson after it is written - confidence from outcomes and
by hand, edits, history and rollback, restore, archive, maintenance, the human audit and
quarantine review - and the doctor.

A mixin of the facade, kept in its own module so the facade stays short: each method checks its
arguments and runs the write-back (or ops) function that does the work in a worker thread, the
vectors following SQL after each change. Rules and numbers: docs/lifecycle.md. It imports the
stages only, never the facade.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from hindsight._contract import (
    AsOf,
    ConfidenceDelta,
    Content,
    Cursor,
    ExperienceId,
    Importance,
    Kind,
    Limit,
    Namespace,
    Success,
    TrajectoryId,
    check,
    switch,
)
from hindsight._paging import Page, decode_cursor, page_of
from hindsight.models import Experience, ExperienceKind

if TYPE_CHECKING:  # the stages load with the first method that needs them (cold start)
    from hindsight.config import MemoryConfig
    from hindsight.engine._open import Writes
    from hindsight.guard import Guard
    from hindsight.ops.doctor import Finding
    from hindsight.ports import Clock, Embedder, VectorIndex
    from hindsight.store import SqlStore
    from hindsight.writeback.dedup import Deduper
    from hindsight.writeback.pipeline import WriteBack

__all__ = ["LifecycleMethods"]

T = TypeVar("T")


class LifecycleMethods:
    """Lifecycle methods of :class:`~hindsight.AsyncMemory` (see the module docstring)."""

    if TYPE_CHECKING:
        store: SqlStore
        index: VectorIndex
        embedder: Embedder
        clock: Clock
        config: MemoryConfig

        @property
        def deduper(self) -> Deduper: ...
        @property
        def guard(self) -> Guard | None: ...
        @property
        def writeback(self) -> WriteBack: ...

        def _check_open(self) -> None: ...
        def _scope(self, tenant_id: Any) -> str: ...
        def sync_vectors(self) -> int: ...

        @property
        def vectors(self) -> Any: ...
        async def _wired(self) -> Writes: ...
        async def _write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    def _as_of(self, as_of: datetime | str | None) -> datetime:
        when: datetime | None = check(AsOf, as_of)
        return when or self.clock.now()

    # -- outcomes -----------------------------------------------------------------------------
    async def record_outcome(
        self, trajectory_id: Any, success: bool, *, tenant_id: str
    ) -> list[Experience]:
        """Credit or blame the experiences the run ``trajectory_id`` recalled
        (docs/concepts.md#experiences-and-confidence).

        The run becomes evidence of each one: a success adds ``OUTCOME_WEIGHT`` (1.0) to its
        supporting mass and 1 to ``helped_count``, a failure to its contradicting mass and
        ``misled_count``; the confidence is the Beta posterior of
        :mod:`hindsight.writeback.confidence` (atomic, audited; docs/lifecycle.md has the
        formula and examples). A run's outcome is counted once; later calls for
        the same run change nothing and return ``[]``. With the memory guard on, an experience
        that misled more runs than it helped is demoted at 2 misled runs and quarantined at 3
        (:func:`hindsight.guard.after_recall.apply_misled_policy`).

        Returns:
            The updated experiences.

        Raises:
            UsageError: ``success`` is not a bool, or the id is not a UUID.
            TenantRequiredError: missing or empty tenant.
        """
        from hindsight.guard.after_recall import apply_misled_policy
        from hindsight.writeback import confidence

        tenant, tid = self._scope(tenant_id), check(TrajectoryId, trajectory_id)
        won: bool = check(Success, success)
        guarded = self.config.guard and not won  # memory guard: demote, then quarantine
        policy = apply_misled_policy if guarded else None
        updated = await self._write(
            confidence.record_outcome, self.store, tenant, tid, won, policy=policy
        )
        return updated or []

    # -- confidence by hand, versions --------------------------------------------------------
    async def adjust_confidence(
        self,
        experience_id: Any,
        delta: float,
        *,
        tenant_id: str,
        reason: str | None = None,
        actor: str = "user",
    ) -> Experience:
        """Add ``delta`` (in [-1, 1]) to an experience's confidence, clamped to [0, 1]; the
        change is written to the audit trail with ``actor`` and ``reason`` (the
        ``adjust_confidence`` tool of MCP and HTTP). It is kept as an offset over the
        evidence-based value, so later evidence moves the confidence from where it was set
        (:func:`hindsight.writeback.confidence.adjusted`). Returns the experience.

        Raises:
            NotFoundError: no such experience in this tenant.
            UsageError: bad id, delta or actor. TenantRequiredError: empty tenant.
        """
        from hindsight.writeback import confidence

        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        change = check(ConfidenceDelta, delta)
        return await self._write(
            confidence.adjust, self.store, tenant, eid, change, actor=actor, reason=reason
        )

    async def edit_experience(
        self,
        /,
        experience_id: Any,
        *,
        tenant_id: str,
        content: str | None = None,
        kind: ExperienceKind | str | None = None,
        task_type: str | None = None,
        tools: list[str] | None = None,
        tags: list[str] | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
        reason: str | None = None,
        actor: str = "user",
        **other: Any,
    ) -> Experience:
        """Edit an experience: a new version whose ``parent_id`` keeps the old one (see
        :meth:`history`, :meth:`rollback`). A new text is embedded again; every edit is
        checked by the memory guard first (a poisoned edit is quarantined; an edit of a
        quarantined lesson is screened again, stays quarantined and keeps its reasons).
        ``metadata`` replaces your own keys; the guard's keys are kept. Returns the new
        version.

        The guard's state is not editable (docs/security.md): ``trust``, ``provenance``,
        ``status`` and the metadata keys of
        :data:`~hindsight.guard.screening.GUARD_METADATA_KEYS` (quarantine reasons, approvals,
        verdicts, evidence) change only through :meth:`approve`, :meth:`reject` and
        :meth:`rescan`.

        Raises:
            NotFoundError: no such experience. UsageError: nothing to edit, a bad value, an
                unknown field, or a guard-owned field or metadata key (one line naming it).
        """
        from hindsight.writeback import versions

        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        if other:
            versions.edited_fields_check(other)
        changes = {
            "content": None if content is None else check(Content, content),
            "kind": None if kind is None else check(Kind, kind),
            "task_type": task_type,
            "tools": tools,
            "tags": tags,
            "importance": None if importance is None else check(Importance, importance),
            "metadata": metadata,
        }
        guard = (await self._wired()).deduper.guard
        parts = (self.store, self.embedder, guard, tenant, eid, changes)
        return await self._write(versions.edit, *parts, actor=actor, reason=reason)

    async def history(
        self,
        experience_id: Any,
        *,
        tenant_id: str,
        limit: int | None = 100,
        cursor: str | None = None,
    ) -> Page[dict[str, Any]]:
        """The versions of an experience, oldest first, the current one last; one page of at
        most ``limit`` (1..10000; ``None``: 100) with ``next_cursor`` (:class:`hindsight.Page`).

        Versions are in a total order, their ``version`` number (each is unique within an
        experience, the current one the highest), so paging by ``cursor`` (the previous page's
        ``next_cursor``) neither repeats nor skips a version when a new one is written between
        pages (it comes last).

        Returns:
            ``[{"version", "id", "parent_id", "change", "actor", "reason", "created_at",
            "current", "experience"}]``; ``change`` says what replaced that version (``None``
            for the current one).

        Raises:
            NotFoundError: no such experience in this tenant.
            UsageError: a bad limit, or a cursor not of this experience's history.
        """
        from hindsight.writeback import versions

        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        n, listing = check(Limit, limit), f"history:{eid}"
        after = None
        if cursor is not None:
            (after,) = decode_cursor(listing, check(Cursor, cursor), (int,))
        rows = await asyncio.to_thread(versions.history, self.store, tenant, eid)
        page = [row for row in rows if after is None or row["version"] > after][:n]
        return page_of(listing, page, n, lambda row: (row["version"],))

    async def rollback(
        self,
        experience_id: Any,
        version: int,
        *,
        tenant_id: str,
        reason: str | None = None,
        actor: str = "user",
    ) -> Experience:
        """Restore what an earlier ``version`` said (content, kind, tags, confidence, status
        ...); written as a new version, so the rollback itself can be undone. Usage counters
        stay, and so does the guard's state (reasons, approvals; a quarantined experience stays
        quarantined); the restored text is checked by the memory guard like an edit. Returns
        the experience.

        Raises:
            NotFoundError: no such experience or version. UsageError: the current version.
        """
        from hindsight.writeback import versions

        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        guard = (await self._wired()).deduper.guard
        parts = (self.store, self.embedder, guard, tenant, eid, version)
        return await self._write(versions.rollback, *parts, actor=actor, reason=reason)

    async def restore(self, experience_id: Any, *, tenant_id: str) -> Experience:
        """Bring back an archived, superseded or soft-deleted experience (recalled again).

        Raises:
            NotFoundError: no such experience. UsageError: active or quarantined.
        """
        from hindsight.writeback import forgetting

        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        return await self._write(forgetting.restore, self.store, tenant, eid)

    async def archive(
        self,
        experience_id: Any,
        *,
        tenant_id: str,
        reason: str | None = None,
        actor: str = "user",
    ) -> Experience:
        """Archive one active experience by hand: never recalled until :meth:`restore`
        (audited with ``actor`` and ``reason``). Returns it.

        Raises:
            NotFoundError: no such experience. UsageError: it is not active.
        """
        from hindsight.writeback import forgetting

        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        return await self._write(
            forgetting.archive, self.store, tenant, eid, actor=actor, reason=reason
        )

    async def archive_stale(
        self, *, tenant_id: str, as_of: datetime | str | None = None
    ) -> list[str]:
        """Archive the tenant's experiences not recalled for ``config.archive_after_days``
        (30) whose confidence is below ``config.archive_below_confidence`` (0.3), judged at
        ``as_of`` (default now). Returns the archived ids."""
        from hindsight.writeback import forgetting

        tenant, when = self._scope(tenant_id), self._as_of(as_of)
        return await self._write(
            forgetting.archive_stale,
            self.store,
            tenant,
            when,
            after_days=self.config.archive_after_days,
            below=self.config.archive_below_confidence,
        )

    async def maintain(
        self,
        *,
        tenant_id: str,
        as_of: datetime | str | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Run the periodic jobs for one tenant: dedup, archive, compression (docs/lifecycle.md).

        Args:
            tenant_id: the tenant.
            as_of: the time the time-based rules use (default now; ISO 8601 accepted).
            progress: called with the name of each step.

        Returns:
            See :func:`hindsight.writeback.maintain.maintain`.
        """
        from hindsight.writeback.maintain import maintain

        tenant, when = self._scope(tenant_id), self._as_of(as_of)
        return await asyncio.to_thread(
            maintain,
            (await self._wired()).deduper,
            self.config,
            tenant,
            when,
            sync=self.sync_vectors,
            progress=progress,
        )

    async def audit_sample(
        self, *, tenant_id: str, size: int = 20, seed: int | None = None
    ) -> list[Experience]:
        """A random sample of the tenant's active experiences for a human audit (about 20,
        docs/console.md)."""
        from hindsight.writeback import audit

        tenant = self._scope(tenant_id)
        return await asyncio.to_thread(audit.sample, self.store, tenant, size, seed=seed)

    async def mark_wrong(
        self, experience_id: Any, *, tenant_id: str, note: str | None = None
    ) -> Experience:
        """A human marks a lesson wrong: it is quarantined (never recalled until approved).

        Raises:
            NotFoundError: no such experience. UsageError: deleted or quarantined already.
        """
        from hindsight.writeback import audit

        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        now = self.clock.now()
        return await self._write(audit.mark_wrong, self.store, tenant, eid, now, note)

    async def start_audit(
        self, *, tenant_id: str, size: int = 20, seed: int | None = None
    ) -> dict[str, Any]:
        """Draw a reproducible random sample of ``size`` (1..1000, default 20) active lessons
        for a human audit and save it as an audit run (docs/console.md; episodes left out). The
        same ``seed`` over the same active lessons draws the same sample; ``None`` picks one
        (saved with the run).

        Returns:
            The run: ``{"id", "tenant_id", "seed", "size", "experience_ids", "actor",
            "created_at", "counts", "unmarked", "verdicts"}`` (see :meth:`audit_run`).

        Raises:
            UsageError: a bad size or seed, or no active lesson to audit.
        """
        from hindsight.writeback import audit

        tenant = self._scope(tenant_id)
        return await asyncio.to_thread(audit.start_run, self.store, tenant, size, seed=seed)

    async def audit_runs(self, *, tenant_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The tenant's audit runs, newest first, with their verdict ``counts`` and how many
        lessons are still ``unmarked`` (``limit`` 1..1000)."""
        tenant = self._scope(tenant_id)
        return await asyncio.to_thread(self.store.list_audit_runs, tenant, limit=limit)

    async def audit_run(self, run_id: Any, *, tenant_id: str) -> dict[str, Any]:
        """One audit run with its ``verdicts`` (experience id -> ``{"verdict", "note",
        "action", "actor", "at"}``).

        Raises:
            NotFoundError: no such run in this tenant.
        """
        tenant = self._scope(tenant_id)
        return await asyncio.to_thread(self.store.get_audit_run, tenant, run_id)

    async def audit_verdict(
        self,
        run_id: Any,
        experience_id: Any,
        verdict: str,
        *,
        tenant_id: str,
        note: str | None = None,
        action: str = "archive",
    ) -> dict[str, Any]:
        """Record a human's verdict on one lesson of an audit run: ``correct``, ``wrong`` or
        ``needs_edit``, with a note. A ``wrong`` lesson is first archived (``action``
        ``"archive"``), demoted (``"demote"``: confidence -0.2) or quarantined
        (``"quarantine"``) through the audited lifecycle actions
        (:func:`hindsight.writeback.audit.give_verdict`). A later verdict replaces an earlier
        one (the action already taken stays: restore the lesson to undo it). Returns the run.

        Raises:
            NotFoundError: no such run or experience. UsageError: a bad verdict or action, an
            experience not in the run, or a wrong lesson that is not active any more.
        """
        from hindsight.writeback import audit

        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        now = self.clock.now()
        return await self._write(
            audit.give_verdict,
            self.store,
            tenant,
            run_id,
            eid,
            verdict,
            now,
            note=note,
            action=action,
        )

    async def audit_log(
        self, *, tenant_id: str, experience_id: Any | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """The audit trail (who / what / when / old / new / reason), newest first."""
        tenant = self._scope(tenant_id)
        rows = await asyncio.to_thread(self.store.audit_log, tenant, experience_id, limit=limit)
        return [dict(r) for r in rows]

    # -- quarantine (memory guard, docs/security.md) ------------------------------------------
    async def approve(
        self, experience_id: Any, *, tenant_id: str, note: str | None = None
    ) -> Experience:
        """A human approves a quarantined experience: it is recalled again. Returns it.

        Raises:
            NotFoundError: no such (non-deleted) experience in this tenant.
            UsageError: it is not quarantined, or a bad id.
            TenantRequiredError: missing or empty tenant.
        """
        from hindsight.guard import quarantine

        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        now = self.clock.now()
        return await self._write(quarantine.approve, self.store, tenant, eid, now, note)

    async def reject(
        self, experience_id: Any, *, tenant_id: str, note: str | None = None
    ) -> Experience:
        """A human rejects a quarantined experience: soft-deleted (row kept for audit, vector
        removed). Returns it. Raises as :meth:`approve`."""
        from hindsight.guard import quarantine

        tenant, eid = self._scope(tenant_id), check(ExperienceId, experience_id)
        now = self.clock.now()
        return await self._write(quarantine.reject, self.store, tenant, eid, now, note)

    async def rescan(
        self, experience_id: Any = None, *, tenant_id: str, namespace: str | None = None
    ) -> list[Experience]:
        """Run the memory guard again on stored experiences (after its rules or its harm model
        changed, or to screen what was stored with the guard off); each one's stored vector is
        reused.

        An active experience the guard now flags is quarantined; a quarantined one gains the
        new reasons and stays quarantined (only :meth:`approve` releases it); reasons already
        recorded, also those a human approved, are not added again. Each change is a new
        version (``change="rescan"``, actor ``guard``), audited.

        Args:
            experience_id: one experience; ``None``: every active and quarantined experience
                of the tenant (in ``namespace`` when given).

        Returns:
            With an id: ``[that experience as stored]``, changed or not. Without: the
            experiences the rescan changed.

        Raises:
            NotFoundError: no such experience. UsageError: it is archived, superseded or
                deleted, or a bad id. TenantRequiredError: missing or empty tenant.
        """
        from hindsight.guard import quarantine

        tenant = self._scope(tenant_id)
        screen = (await self._wired()).writeback.screen
        if screen is None:
            return []
        if experience_id is not None:
            eid = check(ExperienceId, experience_id)
            return [await self._write(quarantine.rescan, self.store, screen, tenant, eid)]
        spaces = None if namespace is None else [check(Namespace, namespace)]
        return await self._write(quarantine.rescan_tenant, self.store, screen, tenant, spaces)

    # -- operators ---------------------------------------------------------------------------
    async def doctor(
        self, *, repair: bool = False, progress: Callable[[str], None] | None = None
    ) -> list[Finding]:
        """Check SQL against vectors, the embedding model and the review queue (docs/deploy.md);
        repair what can be repaired when ``repair=True``. Operator tool (whole store).

        Returns:
            one :class:`hindsight.ops.doctor.Finding` per check (``ok``, ``count``, ``repaired``).

        Raises:
            UsageError: ``repair`` is not true or false.
        """
        from hindsight.ops.doctor import diagnose

        self._check_open()
        parts = (self.store, self.index, self.embedder, self.clock, self.vectors)
        fix = switch(repair, "repair", False)
        return await asyncio.to_thread(diagnose, *parts, repair=fix, progress=progress)
