"""The quarantine workflow (docs/security.md#guard-owned-state): list, approve, reject, rescan.

An experience the guard quarantined (before write, or after it misled runs) is stored but never
recalled. A human looks at it and either **approves** it (status back to ``active``; the
reasons stay in ``metadata["quarantine_reasons"]`` for audit, ``approved_at`` is set and the
misled count restarts from here) or **rejects** it (soft delete: status ``deleted``, vector
removed, row kept for audit with ``rejected_at``). The engine wraps these functions
(:meth:`hindsight.AsyncMemory.list_quarantined`, ``approve``, ``reject``) and the CLI wraps the
engine (``hindsight quarantine list|approve|reject``).

These, and :func:`rescan` (the guard checks stored experiences again, e.g. after its rules or
bank changed), are the only ways the guard's state of an experience changes: its reasons,
approvals, verdicts, evidence and trust are refused by edits
(:data:`~hindsight.guard.screening.GUARD_METADATA_KEYS`,
:data:`~hindsight.guard.screening.GUARD_OWNED_FIELDS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hindsight._errors import NotFoundError, UsageError
from hindsight.models import Experience, ExperienceStatus

if TYPE_CHECKING:
    from hindsight.guard.screening import WriteScreen

__all__ = ["RESCAN_PAGE", "approve", "quarantine_entry", "reject", "rescan", "rescan_tenant"]

RESCAN_PAGE = 1000
"""Experiences read per page by :func:`rescan_tenant`."""
_RESCANNED = (ExperienceStatus.ACTIVE, ExperienceStatus.QUARANTINED)


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
    """The JSON shape of one quarantined experience (``hindsight quarantine list --json``): ``id,
    namespace, task_type, kind, content, reasons, findings, llm, quarantined_at, provenance, trust,
    confidence, source_trajectory_ids, original_content`` (``None`` when the content was not
    cleaned). ``findings`` are the reasons with their layer, category and score (``[]`` for reasons
    recorded before the guard kept findings, or by a human); ``llm`` the LLM judge's verdict, when
    it ran."""
    return {
        "id": exp.id,
        "namespace": exp.namespace,
        "task_type": exp.task_type,
        "kind": exp.kind.value,
        "content": exp.content,
        "reasons": list(exp.metadata.get("quarantine_reasons", [])),
        "findings": list((exp.metadata.get("guard") or {}).get("findings", [])),
        "llm": (exp.metadata.get("guard") or {}).get("llm"),
        "quarantined_at": exp.metadata.get("quarantined_at"),
        "provenance": exp.provenance.value,
        "trust": exp.trust,
        "confidence": exp.confidence,
        "source_trajectory_ids": list(exp.source_trajectory_ids),
        "original_content": exp.metadata.get("original_content"),
    }


def _rescanned(store: Any, screen: WriteScreen, exp: Experience, vector: Any) -> Experience | None:
    """``exp`` checked again and saved when the guard found something new, else ``None``."""
    checked = screen.check(exp, vector=vector)
    known = exp.metadata.get("quarantine_reasons", [])
    added = checked.metadata.get("quarantine_reasons", [])[len(known) :]
    if checked.status is exp.status and not added:
        return None
    saved: Experience = store.save_version(
        checked,
        change="rescan",
        actor="guard",
        reason="; ".join(added) or None,
        expected_version=exp.version,
    )
    return saved


def rescan(store: Any, screen: WriteScreen, tenant: str, experience_id: str) -> Experience:
    """Run the guard again on one stored experience (its stored vector is reused); returns it
    as stored.

    An active experience the guard now flags is quarantined; a quarantined one gains the new
    reasons and stays quarantined (only :func:`approve` releases it); reasons already recorded
    (also those a human approved) are not added again. A change is saved as a new version
    (``change="rescan"``, actor ``guard``, the new reasons as its reason), audited like every
    version; nothing new, nothing written.

    Raises:
        NotFoundError: no such experience in this tenant.
        UsageError: it is archived, superseded or deleted (only active and quarantined
            experiences are screened).
    """
    exp: Experience = store.get_experience(tenant, experience_id)
    if exp.status not in _RESCANNED:
        raise UsageError(
            f"experience {experience_id} is {exp.status.value}: only active and quarantined "
            "experiences are rescanned"
        )
    vector = store.get_vectors([exp.id]).get(exp.id)
    return _rescanned(store, screen, exp, vector) or exp


def rescan_tenant(
    store: Any, screen: WriteScreen, tenant: str, namespaces: Sequence[str] | None = None
) -> list[Experience]:
    """:func:`rescan` of every active and quarantined experience of ``tenant`` (in
    ``namespaces``, ``None``: all); returns those that changed (newly quarantined, or with new
    reasons), as stored."""
    ids: list[str] = []
    statuses = [s.value for s in _RESCANNED]
    while True:
        page = store.list_experiences(
            tenant, namespaces=namespaces, statuses=statuses, limit=RESCAN_PAGE, offset=len(ids)
        )
        ids += [e.id for e in page]
        if len(page) < RESCAN_PAGE:
            break
    changed: list[Experience] = []
    for start in range(0, len(ids), RESCAN_PAGE):
        chunk = ids[start : start + RESCAN_PAGE]
        rows = store.get_experiences(tenant, chunk)
        vectors = store.get_vectors(chunk)
        for eid in chunk:
            exp = rows.get(eid)
            if exp is None or exp.status not in _RESCANNED:
                continue
            saved = _rescanned(store, screen, exp, vectors.get(eid))
            if saved is not None:
                changed.append(saved)
    return changed
