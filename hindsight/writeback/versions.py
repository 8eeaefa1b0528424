"""Versioning (MISSION S3, issue 4 item 4): every edit, merge, supersede and rollback keeps the
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

from typing import Any

from pydantic import ValidationError

from hindsight._errors import NotFoundError, UsageError
from hindsight.models import Experience

__all__ = ["EDITABLE", "ROLLED_BACK_FIELDS", "edited", "rolled_back"]

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


def edited(current: Experience, changes: dict[str, Any]) -> Experience:
    """``current`` with ``changes`` applied (only :data:`EDITABLE` fields, validated).

    Raises:
        UsageError: an unknown field, no change at all, or an invalid value.
    """
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise UsageError(f"cannot edit {', '.join(unknown)}; editable: {', '.join(EDITABLE)}")
    wanted = {k: v for k, v in changes.items() if v is not None}
    if not wanted:
        raise UsageError("nothing to edit: pass at least one of " + ", ".join(EDITABLE))
    try:
        return Experience.model_validate({**dict(current), **wanted})
    except ValidationError as err:
        from hindsight._contract import validation_message

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
    return current.model_copy(update={f: getattr(old, f) for f in ROLLED_BACK_FIELDS})
