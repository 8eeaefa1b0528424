"""Why close experiences were *not* recalled (``recall --explain``; docs/troubleshooting.md).

The normal recall reports candidates it dropped (similarity floor, top_k, per-source cap).
:func:`near_misses` adds the close experiences the recall never saw because a filter excluded
them: another namespace, another task_type, a status other than ``active`` (archived,
superseded, quarantined), or a confidence below ``MemoryConfig.min_confidence``. It searches
**only the asking tenant's** experiences: other tenants never appear, not even as a count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hindsight.models import Exclusion, Experience, ExperienceStatus

__all__ = ["NEAR_MISSES", "confidence_floor", "near_misses"]

NEAR_MISSES = 20
"""How many filtered-out neighbours ``--explain`` looks at."""

_VISIBLE = [s.value for s in ExperienceStatus if s is not ExperienceStatus.DELETED]


def _why(exp: Experience, namespaces: Sequence[str], task_type: str | None) -> list[str]:
    reasons: list[str] = []
    if exp.status is not ExperienceStatus.ACTIVE:
        detail = ""
        if exp.status is ExperienceStatus.SUPERSEDED and exp.metadata.get("superseded_by"):
            detail = f" by {exp.metadata['superseded_by']}"
        elif exp.status is ExperienceStatus.QUARANTINED:
            why = exp.metadata.get("quarantine_reasons") or []
            detail = f" ({why[0]})" if isinstance(why, list) and why else ""
        reasons.append(f"status {exp.status.value}{detail}")
    if exp.namespace not in namespaces:
        reasons.append(
            f"namespace {exp.namespace!r} not searched (searched: {', '.join(namespaces)})"
        )
    if task_type is not None and exp.task_type != task_type:
        reasons.append(f"task_type {exp.task_type!r} is not {task_type!r}")
    return reasons


def near_misses(
    store: Any,
    index: Any,
    vector: Any,
    *,
    tenant: str,
    namespaces: Sequence[str],
    task_type: str | None,
    seen: set[str],
    limit: int = NEAR_MISSES,
) -> list[Exclusion]:
    """Close experiences of ``tenant`` that a filter kept out of the recall, with the reason.

    Args:
        vector: the embedded query.
        seen: ids the recall already reported (hits and exclusions); left out here.
    """
    all_namespaces = store.namespaces(tenant)
    if not all_namespaces:
        return []
    found = index.search(
        vector,
        tenant_id=tenant,
        namespaces=all_namespaces,
        limit=limit,
        task_type=None,
        statuses=_VISIBLE,
    )
    rows = store.get_experiences(tenant, [h.id for h in found if h.id not in seen])
    out: list[Exclusion] = []
    for hit in found:
        exp = rows.get(hit.id)
        if exp is None or exp.tenant_id != tenant:
            continue
        reasons = _why(exp, namespaces, task_type)
        if reasons:
            out.append(
                Exclusion(
                    experience_id=exp.id,
                    reason="; ".join(reasons),
                    similarity=round(float(hit.similarity), 6),
                )
            )
    return out


def confidence_floor(
    scored: Sequence[Any], floor: float | None
) -> tuple[list[Any], list[Exclusion]]:
    """Drop scored candidates whose confidence is below ``floor`` (an experience demoted by
    failed outcomes, docs/security.md#layer-3-after-recall); returns ``(kept, excluded)``."""
    if floor is None or floor <= 0:
        return list(scored), []
    kept: list[Any] = []
    excluded: list[Exclusion] = []
    for cand, hit in scored:
        conf = hit.experience.confidence
        if conf < floor:
            excluded.append(
                Exclusion(
                    experience_id=hit.experience.id,
                    reason=f"confidence {conf:.2f} below min_confidence {floor:.2f}",
                    similarity=cand.similarity,
                    score=hit.score,
                )
            )
        else:
            kept.append((cand, hit))
    return kept, excluded
