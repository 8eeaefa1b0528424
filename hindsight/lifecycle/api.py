"""The lifecycle methods of :class:`hindsight.AsyncMemory` and :class:`hindsight.Memory`
(issue 4): confidence, history and rollback, restore, maintenance, audit and doctor.

:class:`LifecycleMethods` is a mixin of ``AsyncMemory`` (async, the implementation: each
method runs its SQL in a worker thread) and :class:`LifecycleFacade` one of ``Memory`` (sync
twins with the same arguments, results and errors). Rules and numbers: docs/lifecycle.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from hindsight._errors import UsageError
from hindsight._ids import normalize_id, validate_tenant
from hindsight._sync import sync_twin
from hindsight.models import Experience, ExperienceKind

if TYPE_CHECKING:
    from hindsight.config import MemoryConfig
    from hindsight.engine import AsyncMemory
    from hindsight.ops.doctor import Finding
    from hindsight.ports import Clock, Embedder, VectorIndex
    from hindsight.store import SqlStore
    from hindsight.writeback.dedup import Deduper

__all__ = ["LifecycleFacade", "LifecycleMethods", "parse_as_of"]

T = TypeVar("T")


def parse_as_of(value: datetime | str | None, now: datetime) -> datetime:
    """``as_of`` for time rules: a datetime (naive = UTC), an ISO 8601 string, or ``None``
    (now).

    Raises:
        UsageError: not a date/time.
    """
    if value is None:
        return now
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(
                f"as_of must be an ISO 8601 date or date-time (e.g. 2026-12-31T00:00:00Z), "
                f"got {value!r:.60}"
            ) from None
    if not isinstance(value, datetime):
        raise UsageError(f"as_of must be a datetime, got {type(value).__name__}")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class LifecycleMethods:
    """Lifecycle methods of :class:`~hindsight.AsyncMemory` (see the module docstring)."""

    if TYPE_CHECKING:
        store: SqlStore
        index: VectorIndex
        embedder: Embedder
        clock: Clock
        config: MemoryConfig
        deduper: Deduper

        def _check_open(self) -> None: ...
        def sync_vectors(self) -> int: ...

    def _scope(self, tenant_id: Any) -> str:
        self._check_open()
        return validate_tenant(tenant_id)

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
        change is written to the audit trail with ``actor`` and ``reason`` (MISSION S7
        ``adjust_confidence(experience_id, delta)``). Returns the experience.

        Raises:
            NotFoundError: no such experience in this tenant.
            UsageError: bad id, delta or actor. TenantRequiredError: empty tenant.
        """
        tenant = self._scope(tenant_id)
        eid = normalize_id(experience_id, "experience_id")

        def run() -> Experience:
            self.store.adjust_confidence(tenant, eid, delta, actor=actor, reason=reason)
            return self.store.get_experience(tenant, eid)

        return await asyncio.to_thread(run)

    async def edit_experience(
        self,
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
    ) -> Experience:
        """Edit an experience: a new version whose ``parent_id`` keeps the old one (see
        :meth:`history`, :meth:`rollback`). A new text is embedded again and checked by the
        memory guard first (a poisoned edit is quarantined). Returns the new version.

        Raises:
            NotFoundError: no such experience. UsageError: nothing to edit or a bad value.
        """
        from hindsight.writeback import normalize_content
        from hindsight.writeback.versions import edited

        tenant = self._scope(tenant_id)
        eid = normalize_id(experience_id, "experience_id")
        changes: dict[str, Any] = {
            "content": normalize_content(content) if isinstance(content, str) else content,
            "kind": kind,
            "task_type": task_type,
            "tools": tools,
            "tags": tags,
            "importance": importance,
            "metadata": metadata,
        }

        def run() -> Experience:
            current = self.store.get_experience(tenant, eid)
            new = edited(current, changes)
            vector = None
            if new.content != current.content:
                vector = self.embedder.embed([new.content])[0]
                if self.deduper.guard is not None:
                    new = self.deduper.guard(new, vector)
            saved = self.store.save_version(
                new,
                change="edit",
                actor=actor,
                reason=reason,
                vector=vector,
                expected_version=current.version,
            )
            self.sync_vectors()
            return saved

        return await asyncio.to_thread(run)

    async def history(self, experience_id: Any, *, tenant_id: str) -> list[dict[str, Any]]:
        """Every version of an experience, oldest first, the current one last.

        Returns:
            ``[{"version", "id", "parent_id", "change", "actor", "reason", "created_at",
            "current", "experience"}]``; ``change`` says what replaced that version (``None``
            for the current one).

        Raises:
            NotFoundError: no such experience in this tenant.
        """
        tenant = self._scope(tenant_id)
        eid = normalize_id(experience_id, "experience_id")

        def run() -> list[dict[str, Any]]:
            current = self.store.get_experience(tenant, eid)
            out = [{**v, "current": False} for v in self.store.history(tenant, eid)]
            out.append(
                {
                    "id": None,
                    "experience_id": eid,
                    "version": current.version,
                    "parent_id": current.parent_id,
                    "change": None,
                    "actor": None,
                    "reason": None,
                    "created_at": current.updated_at,
                    "current": True,
                    "experience": current,
                }
            )
            return out

        return await asyncio.to_thread(run)

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
        stay. Returns the experience.

        Raises:
            NotFoundError: no such experience or version. UsageError: the current version.
        """
        from hindsight.writeback.versions import rolled_back

        tenant = self._scope(tenant_id)
        eid = normalize_id(experience_id, "experience_id")

        def run() -> Experience:
            current = self.store.get_experience(tenant, eid)
            new = rolled_back(current, self.store.history(tenant, eid), version)
            vector = (
                self.embedder.embed([new.content])[0] if new.content != current.content else None
            )
            saved = self.store.save_version(
                new,
                change="rollback",
                actor=actor,
                reason=reason or f"rollback to version {version}",
                vector=vector,
                expected_version=current.version,
            )
            self.sync_vectors()
            return saved

        return await asyncio.to_thread(run)

    async def restore(self, experience_id: Any, *, tenant_id: str) -> Experience:
        """Bring back an archived, superseded or soft-deleted experience (recalled again).

        Raises:
            NotFoundError: no such experience. UsageError: active or quarantined.
        """
        from hindsight.writeback.forgetting import restore

        tenant = self._scope(tenant_id)
        eid = normalize_id(experience_id, "experience_id")

        def run() -> Experience:
            exp = restore(self.store, tenant, eid)
            self.sync_vectors()
            return exp

        return await asyncio.to_thread(run)

    async def archive_stale(
        self, *, tenant_id: str, as_of: datetime | str | None = None
    ) -> list[str]:
        """Archive the tenant's experiences not recalled for ``config.archive_after_days``
        (30) whose confidence is below ``config.archive_below_confidence`` (0.3), judged at
        ``as_of`` (default now). Returns the archived ids."""
        from hindsight.writeback.forgetting import archive_stale

        tenant = self._scope(tenant_id)
        when = parse_as_of(as_of, self.clock.now())

        def run() -> list[str]:
            ids = archive_stale(
                self.store,
                tenant,
                when,
                after_days=self.config.archive_after_days,
                below=self.config.archive_below_confidence,
            )
            self.sync_vectors()
            return ids

        return await asyncio.to_thread(run)

    async def maintain(
        self,
        *,
        tenant_id: str,
        as_of: datetime | str | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Run the periodic jobs for one tenant: dedup, archive, compression (MISSION S12).

        Args:
            tenant_id: the tenant.
            as_of: the time the time-based rules use (default now; ISO 8601 accepted).
            progress: called with the name of each step.

        Returns:
            See :func:`hindsight.writeback.maintain.maintain`.
        """
        from hindsight.writeback.judge import abstract
        from hindsight.writeback.maintain import maintain

        tenant = self._scope(tenant_id)
        when = parse_as_of(as_of, self.clock.now())
        judge = self.deduper.judge
        summarize = (lambda members: abstract(judge, members)) if judge is not None else None
        return await asyncio.to_thread(
            maintain, self, tenant, when, abstract=summarize, progress=progress
        )

    async def audit_sample(
        self, *, tenant_id: str, size: int = 20, seed: int | None = None
    ) -> list[Experience]:
        """A random sample of the tenant's active experiences for a human audit (MISSION S12:
        ~20)."""
        from hindsight.writeback.audit import sample

        tenant = self._scope(tenant_id)
        return await asyncio.to_thread(sample, self.store, tenant, size, seed=seed)

    async def mark_wrong(
        self, experience_id: Any, *, tenant_id: str, note: str | None = None
    ) -> Experience:
        """A human marks a lesson wrong: it is quarantined (never recalled until approved).

        Raises:
            NotFoundError: no such experience. UsageError: deleted or quarantined already.
        """
        from hindsight.writeback.audit import mark_wrong

        tenant = self._scope(tenant_id)
        eid = normalize_id(experience_id, "experience_id")

        def run() -> Experience:
            exp = mark_wrong(self.store, tenant, eid, self.clock.now(), note)
            self.sync_vectors()
            return exp

        return await asyncio.to_thread(run)

    async def audit_log(
        self, *, tenant_id: str, experience_id: Any | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """The audit trail (who / what / when / old / new / reason), newest first."""
        tenant = self._scope(tenant_id)
        rows = await asyncio.to_thread(self.store.audit_log, tenant, experience_id, limit=limit)
        return [dict(r) for r in rows]

    async def doctor(
        self, *, repair: bool = False, progress: Callable[[str], None] | None = None
    ) -> list[Finding]:
        """Check SQL against vectors, the embedding model and the review queue (MISSION S11);
        repair what can be repaired when ``repair=True``. Operator tool (whole store)."""
        from hindsight.ops.doctor import diagnose

        self._check_open()
        return await asyncio.to_thread(diagnose, self, repair=repair, progress=progress)


class LifecycleFacade:
    """Sync twins of :class:`LifecycleMethods` for :class:`hindsight.Memory`."""

    if TYPE_CHECKING:
        aio: AsyncMemory

        def _run(self, coro: Coroutine[Any, Any, T]) -> T: ...

    adjust_confidence = sync_twin(LifecycleMethods.adjust_confidence)
    edit_experience = sync_twin(LifecycleMethods.edit_experience)
    history = sync_twin(LifecycleMethods.history)
    rollback = sync_twin(LifecycleMethods.rollback)
    restore = sync_twin(LifecycleMethods.restore)
    archive_stale = sync_twin(LifecycleMethods.archive_stale)
    maintain = sync_twin(LifecycleMethods.maintain)
    audit_sample = sync_twin(LifecycleMethods.audit_sample)
    mark_wrong = sync_twin(LifecycleMethods.mark_wrong)
    audit_log = sync_twin(LifecycleMethods.audit_log)
    doctor = sync_twin(LifecycleMethods.doctor)
