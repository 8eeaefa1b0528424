"""Versioning (docs/lifecycle.md): every edit, merge, supersede and rollback keeps the
state it replaced, so a disproven update can be rolled back.

Design: the ``experiences`` row always holds the **current** version under a stable id (recall
records, outcomes and links keep pointing at it). Before a change, the current state is copied
into ``experience_versions`` (a full JSON snapshot with its own id); the new state gets
``version = old + 1`` and ``parent_id`` = that snapshot's id. :func:`history` lists the
snapshots; :func:`rolled_back` builds the state a rollback writes - itself a new version, so
nothing is ever lost, not even by a rollback.

What is versioned: content, kind, task_type, tools, tags, metadata, status and confidence
changed by edits, merges, supersedes, rollbacks and compression. What is *not* (it would
drown the history): confidence moves from outcomes and support bumps, recall counters and
plain status changes (archive, restore, soft delete) - those are in the audit table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from hindsight._contract import validation_message
from hindsight._errors import NotFoundError, UsageError
from hindsight.guard.screening import (
    GUARD_METADATA_KEYS,
    GUARD_OWNED_FIELDS,
    check_user_metadata,
    guard_metadata,
    owned_by_guard,
)
from hindsight.models import Experience, ExperienceStatus
from hindsight.ports import Embedder, embedded

__all__ = [
    "EDITABLE",
    "ROLLED_BACK_FIELDS",
    "edit",
    "edited",
    "edited_fields_check",
    "history",
    "rollback",
    "rolled_back",
]

Guard = Callable[[Experience, Any], Experience]
"""The memory guard's check of a new text and its vector (``WriteBack.guard_experience``)."""

EDITABLE = ("content", "kind", "task_type", "tools", "tags", "importance", "metadata")
"""Fields :func:`edited` accepts."""

ROLLED_BACK_FIELDS = (
    "content",
    "kind",
    "task_type",
    "tools",
    "tags",
    "importance",
    "confidence",
    "status",
    "source_trajectory_ids",
    "metadata",
)
"""Fields a rollback takes from the old version; usage counters (recalls, helped, misled,
support) and timestamps stay as they are now: they record what happened, not what was said."""


def edited_fields_check(changes: dict[str, Any]) -> None:
    """Refuse fields that cannot be edited: a guard-owned field first (one line naming it,
    :func:`~hindsight.guard.screening.owned_by_guard`), then any field not in :data:`EDITABLE`.

    Raises:
        UsageError: such a field is among ``changes``.
    """
    owned = [f for f in GUARD_OWNED_FIELDS if f in changes]
    if owned:
        raise UsageError(owned_by_guard(owned[0]))
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise UsageError(f"cannot edit {', '.join(unknown)}; editable: {', '.join(EDITABLE)}")


def edited(current: Experience, changes: dict[str, Any]) -> Experience:
    """``current`` with ``changes`` applied (only :data:`EDITABLE` fields, validated).

    ``metadata`` replaces the caller's part of the metadata; the guard's keys
    (:data:`~hindsight.guard.screening.GUARD_METADATA_KEYS`: quarantine reasons, approvals,
    verdicts, evidence...) are kept as they are and may not be sent.

    Raises:
        UsageError: a guard-owned field or metadata key (one line naming it), an unknown
            field, no change at all, or an invalid value.
    """
    edited_fields_check(changes)
    wanted = {k: v for k, v in changes.items() if v is not None}
    if not wanted:
        raise UsageError("nothing to edit: pass at least one of " + ", ".join(EDITABLE))
    if "metadata" in wanted:
        wanted["metadata"] = {**check_user_metadata(wanted["metadata"]), **guard_metadata(current)}
    try:
        return Experience.model_validate({**dict(current), **wanted})
    except ValidationError as err:
        raise UsageError(f"invalid edit: {validation_message(err)}") from None


def rolled_back(current: Experience, versions: list[Any], version: int) -> Experience:
    """The state a rollback of ``current`` to ``version`` writes.

    Args:
        current: the experience as stored now.
        versions: its :meth:`~hindsight.store.SqlStore.history` entries.
        version: the version number to go back to (``1 <= version < current.version``).

    Raises:
        UsageError: ``version`` is the current one or not a positive int.
        NotFoundError: no such stored version.
    """
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise UsageError(f"version must be a positive integer, got {version!r}")
    if version == current.version:
        raise UsageError(f"experience {current.id} is at version {version} already")
    match = next((v for v in versions if v["version"] == version), None)
    if match is None:
        known = ", ".join(str(v["version"]) for v in versions) or "none"
        raise NotFoundError(
            f"experience {current.id} has no version {version} (stored versions: {known}; "
            f"current: {current.version})"
        )
    old: Experience = match["experience"]
    update = {f: getattr(old, f) for f in ROLLED_BACK_FIELDS}
    # The guard's state is not rolled back: its reasons, approvals and
    # verdicts stay, and a quarantined lesson stays quarantined (the old text is screened
    # again by the caller); only approve / reject / rescan change them.
    user_meta = {k: v for k, v in old.metadata.items() if k not in GUARD_METADATA_KEYS}
    update["metadata"] = {**user_meta, **guard_metadata(current)}
    if current.status is ExperienceStatus.QUARANTINED or old.status is ExperienceStatus.QUARANTINED:
        update["status"] = current.status
    return current.model_copy(update=update)


def edit(
    store: Any,
    embedder: Embedder,
    guard: Guard | None,
    tenant: str,
    experience_id: str,
    changes: dict[str, Any],
    *,
    actor: str,
    reason: str | None,
) -> Experience:
    """Edit a stored experience: a new version whose ``parent_id`` keeps the old one. A new
    text is stored exactly as given and embedded again; every edit is checked by ``guard``
    first (a poisoned edit is quarantined, an edit of a quarantined lesson is screened again
    and keeps its reasons). Returns the new version
    as stored.

    Raises:
        NotFoundError: no such experience. UsageError: nothing to edit or a bad value (see
            :func:`edited`).
    """
    current = store.get_experience(tenant, experience_id)
    new = edited(current, changes)
    changed = new.content != current.content
    vector = embedded(embedder, [new.content], "content")[0] if changed else None
    if guard is not None:
        new = guard(new, vector if vector is not None else _stored_vector(store, current))
    saved: Experience = store.save_version(
        new,
        change="edit",
        actor=actor,
        reason=reason,
        vector=vector,
        expected_version=current.version,
    )
    return saved


def _stored_vector(store: Any, exp: Experience) -> Any:
    """The stored embedding of ``exp`` (``None`` when it has none: the guard embeds it)."""
    return store.get_vectors([exp.id]).get(exp.id)


def rollback(
    store: Any,
    embedder: Embedder,
    guard: Guard | None,
    tenant: str,
    experience_id: str,
    version: int,
    *,
    actor: str,
    reason: str | None,
) -> Experience:
    """Restore what an earlier ``version`` said (:func:`rolled_back`), written as a new
    version (so the rollback itself can be undone); a changed text is embedded again and the
    restored text is checked by ``guard`` like an edit (the guard's own state is never rolled
    back).

    Raises:
        NotFoundError: no such experience or version. UsageError: the current version.
    """
    current = store.get_experience(tenant, experience_id)
    new = rolled_back(current, store.history(tenant, experience_id), version)
    changed = new.content != current.content
    vector = embedded(embedder, [new.content], "content")[0] if changed else None
    if guard is not None:
        new = guard(new, vector if vector is not None else _stored_vector(store, current))
    saved: Experience = store.save_version(
        new,
        change="rollback",
        actor=actor,
        reason=reason or f"rollback to version {version}",
        vector=vector,
        expected_version=current.version,
    )
    return saved


def history(store: Any, tenant: str, experience_id: str) -> list[dict[str, Any]]:
    """Every version of an experience, oldest first, the current one last: ``[{"version",
    "id", "parent_id", "change", "actor", "reason", "created_at", "current",
    "experience"}]``; ``change`` says what replaced that version (``None`` for the current
    one).

    Raises:
        NotFoundError: no such experience in this tenant.
    """
    current = store.get_experience(tenant, experience_id)
    out = [{**v, "current": False} for v in store.history(tenant, experience_id)]
    out.append(
        {
            "id": None,
            "experience_id": experience_id,
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
