"""Forgetting: archive stale, low-confidence experiences; restore.

See docs/lifecycle.md#forgetting-hindsightwritebackforgetting.

An **active** experience is archived when both hold at the time ``as_of``:

* it was not recalled, learned again or changed for ``MemoryConfig.archive_after_days``
  (30 days): ``max(last_recalled_at or created_at, updated_at) < as_of - 30 days``;
* its confidence is below ``MemoryConfig.archive_below_confidence`` (0.3).

Archived experiences keep their row and vector (payload status ``archived``), are never
recalled, and come back with :func:`restore`. Quarantined experiences wait for a human and are
never archived by this rule. Soft delete (``delete_experience``) keeps the row for audit;
``forget`` removes rows and vectors for good.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from hindsight._errors import NotFoundError, UsageError
from hindsight.models import Experience, ExperienceStatus

__all__ = [
    "RESTORABLE",
    "archive",
    "archive_stale",
    "is_stale",
    "restore",
    "stale_experiences",
]

RESTORABLE = (
    ExperienceStatus.ARCHIVED.value,
    ExperienceStatus.SUPERSEDED.value,
    ExperienceStatus.DELETED.value,
)
"""Statuses :func:`restore` brings back to ``active`` (quarantine is lifted by approval)."""

_PAGE = 5_000


def is_stale(exp: Experience, as_of: datetime, *, after_days: float, below: float) -> bool:
    """Whether the archive rule applies to ``exp`` at ``as_of`` (see the module docstring)."""
    if exp.status is not ExperienceStatus.ACTIVE or exp.confidence >= below:
        return False
    last = max(exp.last_recalled_at or exp.created_at, exp.updated_at)
    return last < as_of - timedelta(days=after_days)


def stale_experiences(
    store: Any, tenant: str, as_of: datetime, *, after_days: float, below: float
) -> list[Experience]:
    """The tenant's active experiences the archive rule applies to at ``as_of``."""
    found: list[Experience] = []
    offset = 0
    while True:
        page = store.list_experiences(tenant, namespaces=None, limit=_PAGE, offset=offset)
        found += [e for e in page if is_stale(e, as_of, after_days=after_days, below=below)]
        if len(page) < _PAGE:
            return found
        offset += _PAGE


def archive_stale(
    store: Any,
    tenant: str,
    as_of: datetime,
    *,
    after_days: float,
    below: float,
    actor: str = "maintain",
) -> list[str]:
    """Archive what :func:`stale_experiences` finds; returns the archived ids (audited)."""
    if after_days <= 0:
        raise UsageError(f"archive_after_days must be positive, got {after_days}")
    ids = [
        e.id for e in stale_experiences(store, tenant, as_of, after_days=after_days, below=below)
    ]
    if not ids:
        return []
    reason = (
        f"not recalled for {after_days:g} days and confidence < {below:g} (as of {as_of:%Y-%m-%d})"
    )
    changed: list[str] = store.change_status(
        tenant,
        ids,
        ExperienceStatus.ARCHIVED.value,
        actor=actor,
        reason=reason,
        only_from=[ExperienceStatus.ACTIVE.value],
    )
    return changed


def archive(
    store: Any, tenant: str, experience_id: str, *, actor: str = "user", reason: str | None = None
) -> Experience:
    """Archive one active experience by hand (audited; undone by :func:`restore`): it keeps
    its row and vector and is never recalled while archived.

    Raises:
        NotFoundError: no such experience in this tenant.
        UsageError: it is not active (archived already, quarantined, superseded or deleted).
    """
    exp = store.get_experience(tenant, experience_id)
    if exp.status is not ExperienceStatus.ACTIVE:
        state = exp.status.value
        raise UsageError(f"experience {exp.id} is {state}: only active ones are archived")
    changed = store.change_status(
        tenant,
        [exp.id],
        ExperienceStatus.ARCHIVED.value,
        actor=actor,
        reason=reason or "archived by hand",
        only_from=[ExperienceStatus.ACTIVE.value],
    )
    if not changed:
        raise NotFoundError(f"experience {exp.id} changed meanwhile; read it again")
    archived: Experience = store.get_experience(tenant, exp.id)
    return archived


def restore(store: Any, tenant: str, experience_id: str, *, actor: str = "user") -> Experience:
    """Bring an archived, superseded or soft-deleted experience back to ``active`` (audited).

    Its ``updated_at`` becomes now, so the archive rule gives it another 30 days.

    Raises:
        NotFoundError: no such experience in this tenant.
        UsageError: it is active already, or quarantined (approve it instead).
    """
    exp = store.get_experience(tenant, experience_id)
    if exp.status is ExperienceStatus.ACTIVE:
        raise UsageError(f"experience {exp.id} is already active")
    if exp.status.value not in RESTORABLE:
        raise UsageError(
            f"experience {exp.id} is {exp.status.value}: quarantined experiences are released "
            "by a human approval (`hindsight quarantine approve`), not restored"
        )
    changed = store.change_status(
        tenant,
        [exp.id],
        ExperienceStatus.ACTIVE.value,
        actor=actor,
        reason=f"restored from {exp.status.value}",
        only_from=list(RESTORABLE),
    )
    if not changed:
        raise NotFoundError(f"experience {exp.id} changed meanwhile; read it again")
    restored: Experience = store.get_experience(tenant, exp.id)
    return restored
