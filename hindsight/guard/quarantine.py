"""The quarantine workflow (issue 5 item 4): list, approve, reject.

An experience the guard quarantined (before write, or after it misled runs) is stored but never
recalled. A human looks at it and either **approves** it (status back to ``active``; the
reasons stay in ``metadata["quarantine_reasons"]`` for audit, ``approved_at`` is set and the
misled count restarts from here) or **rejects** it (soft delete: status ``deleted``, vector
removed, row kept for audit with ``rejected_at``). The engine wraps these functions
(:meth:`hindsight.AsyncMemory.list_quarantined`, ``approve``, ``reject``) and the CLI wraps the
engine (``hindsight quarantine list|approve|reject``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hindsight._errors import NotFoundError, UsageError
from hindsight.models import Experience, ExperienceStatus

__all__ = ["approve", "quarantine_entry", "reject"]


def _quarantined(store: Any, tenant: str, experience_id: str) -> Experience:
    exp: Experience = store.get_experience(tenant, experience_id)
    if exp.status is ExperienceStatus.DELETED:
        raise NotFoundError(f"experience {experience_id} not found in tenant {tenant!r}")
    if exp.status is not ExperienceStatus.QUARANTINED:
        raise UsageError(
            f"experience {experience_id} is not quarantined (status {exp.status.value})"
        )
    return exp


def _note(note: str | None) -> str | None:
    if note is not None and not isinstance(note, str):
        raise UsageError(f"note must be a string, got {type(note).__name__}")
    return (note.strip() or None) if note is not None else None


def approve(
    store: Any, tenant: str, experience_id: str, now: datetime, note: str | None = None
) -> Experience:
    """Put a quarantined experience back into recall; returns it as stored.

    Sets ``metadata["approved_at"]`` (ISO 8601), ``approved_note`` when given, and
    ``misled_at_approval`` (the misled count so far, so that only new misled runs count
    toward another automatic quarantine). A demotion is undone (trust restored from
    ``demoted_from_trust``).

    Raises:
        NotFoundError: no such experience in this tenant (or it was deleted / rejected).
        UsageError: it is not quarantined, or ``note`` is not a string.
    """
    text = _note(note)
    exp = _quarantined(store, tenant, experience_id)
    meta = dict(exp.metadata)
    meta["approved_at"] = now.isoformat()
    meta["misled_at_approval"] = exp.misled_count
    if text:
        meta["approved_note"] = text
    trust = exp.trust
    if "demoted_from_trust" in meta:
        trust = float(meta.pop("demoted_from_trust"))
        meta.pop("demoted_at", None)
    exp = exp.model_copy(
        update={
            "status": ExperienceStatus.ACTIVE,
            "metadata": meta,
            "trust": trust,
            "updated_at": now,
        }
    )
    store.update_experience(exp)
    return exp


def reject(
    store: Any, tenant: str, experience_id: str, now: datetime, note: str | None = None
) -> Experience:
    """Soft-delete a quarantined experience (row kept for audit, vector removed); returns it.

    Raises:
        NotFoundError: no such experience in this tenant (or it was already deleted).
        UsageError: it is not quarantined, or ``note`` is not a string.
    """
    text = _note(note)
    exp = _quarantined(store, tenant, experience_id)
    meta = {**exp.metadata, "rejected_at": now.isoformat()}
    if text:
        meta["rejected_note"] = text
    exp = exp.model_copy(
        update={"status": ExperienceStatus.DELETED, "metadata": meta, "updated_at": now}
    )
    store.update_experience(exp)
    return exp


def quarantine_entry(exp: Experience) -> dict[str, Any]:
    """The JSON shape of one quarantined experience (``hindsight quarantine list --json``):
    ``id, namespace, task_type, kind, content, reasons, quarantined_at, provenance, trust,
    confidence, source_trajectory_ids, original_content`` (``None`` when the content was not
    cleaned)."""
    return {
        "id": exp.id,
        "namespace": exp.namespace,
        "task_type": exp.task_type,
        "kind": exp.kind.value,
        "content": exp.content,
        "reasons": list(exp.metadata.get("quarantine_reasons", [])),
        "quarantined_at": exp.metadata.get("quarantined_at"),
        "provenance": exp.provenance.value,
        "trust": exp.trust,
        "confidence": exp.confidence,
        "source_trajectory_ids": list(exp.source_trajectory_ids),
        "original_content": exp.metadata.get("original_content"),
    }
