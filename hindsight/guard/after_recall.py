"""The memory guard after recall (docs/security.md#layer-3-after-recall): consensus and misled
runs.

* :func:`drop_outliers` runs the consensus check (:func:`hindsight.guard.consensus.find_outliers`)
  over the recalled set and moves flagged items from the hits to the exclusions, with the
  reason, so they never reach the rendered block.
* :func:`apply_misled_policy` is applied to every experience a failed run recalled, after
  its ``misled_count`` was raised: an experience that misled more runs than it helped is first
  demoted (its trust halved, at :data:`MISLED_DEMOTE_AT` misled runs) and then quarantined
  (at :data:`MISLED_QUARANTINE_AT`), which takes it out of recall until a human approves it.
  The counts start again from an approval (``metadata["misled_at_approval"]``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from hindsight.guard.consensus import ADVICE_KINDS, find_outliers
from hindsight.models import Exclusion, Experience, ExperienceStatus, RecallHit

__all__ = [
    "DEMOTED_TRUST_FACTOR",
    "MISLED_DEMOTE_AT",
    "MISLED_QUARANTINE_AT",
    "apply_misled_policy",
    "drop_outliers",
]

MISLED_DEMOTE_AT = 2
"""Misled runs (since the last approval) at which an experience that misled more runs than it
helped is demoted."""
MISLED_QUARANTINE_AT = 3
"""Misled runs (since the last approval) at which such an experience is quarantined: "repeat
offenders removed" (docs/security.md#layer-3-after-recall)."""
DEMOTED_TRUST_FACTOR = 0.5
"""Factor applied once to the trust of a demoted experience (on top of the confidence that
every failed run already takes away)."""


def drop_outliers(
    hits: Sequence[RecallHit],
    vectors: Callable[[Sequence[str]], Mapping[str, npt.NDArray[np.float32]]] | None = None,
) -> tuple[list[RecallHit], list[Exclusion]]:
    """Remove the recalled items that contradict the majority of the recalled set.

    Only hits of the advice kinds (:data:`hindsight.guard.consensus.ADVICE_KINDS`) take part;
    descriptions of single runs are never flagged nor count as a majority.

    Args:
        hits: the selected hits, best first.
        vectors: ``ids -> {id: embedding}`` (e.g. ``SqlStore.get_vectors``) for the
            embedding rule; ``None``, or an id without a stored vector, applies the majority
            rule only.

    Returns:
        ``(kept, excluded)``: the hits in their order minus the outliers, and one
        :class:`Exclusion` per outlier whose reason starts with ``"consensus:"`` and names the
        experiences it contradicts.
    """
    advice = [h for h in hits if h.experience.kind in ADVICE_KINDS]
    if len(advice) < 2:
        return list(hits), []
    texts = [h.experience.content for h in advice]

    def matrix() -> npt.NDArray[np.float32] | None:
        """The stored embeddings, fetched only when the embedding rule has to decide."""
        if vectors is None:
            return None
        ids = [h.experience.id for h in advice]
        found = vectors(ids)
        if not all(i in found for i in ids):
            return None
        return np.stack([np.asarray(found[i], dtype=np.float32) for i in ids])

    outliers = find_outliers(texts, matrix)
    if not outliers:
        return list(hits), []
    flagged = {advice[o.index].experience.id: o for o in outliers}
    kept = [h for h in hits if h.experience.id not in flagged]
    excluded = []
    for outlier in flagged.values():
        hit = advice[outlier.index]
        against = ", ".join(advice[j].experience.id for j in outlier.against)
        excluded.append(
            Exclusion(
                experience_id=hit.experience.id,
                reason=f"consensus: {outlier.reason} ({against})",
                similarity=hit.breakdown.similarity,
                score=hit.score,
            )
        )
    return kept, excluded


def apply_misled_policy(exp: Experience, now: datetime) -> Experience:
    """Demote or quarantine an experience that keeps misleading runs (see module docstring).

    Counts are taken since the last approval: ``misled = misled_count -
    metadata.get("misled_at_approval", 0)``. Nothing changes unless ``exp`` is active and
    ``misled > helped_count``. At ``misled >= MISLED_QUARANTINE_AT`` (3) it is quarantined with
    the reason ``"misled: ..."``; else at ``misled >= MISLED_DEMOTE_AT`` (2) its trust is
    multiplied by ``DEMOTED_TRUST_FACTOR`` (0.5) once (``metadata["demoted_at"]``,
    ``metadata["demoted_from_trust"]``).

    Returns:
        The experience to store (``exp`` itself when nothing changes).
    """
    if exp.status is not ExperienceStatus.ACTIVE:
        return exp
    baseline = exp.metadata.get("misled_at_approval", 0)
    misled = exp.misled_count - (baseline if isinstance(baseline, int) else 0)
    if misled <= exp.helped_count:
        return exp
    if misled >= MISLED_QUARANTINE_AT:
        from hindsight.guard.screening import quarantine  # the write side: loaded when needed

        reason = (
            f"misled: recalled by {misled} failed runs and {exp.helped_count} successful ones "
            f"(quarantined at {MISLED_QUARANTINE_AT} misled runs)"
        )
        return quarantine(exp, [reason], now)
    if misled >= MISLED_DEMOTE_AT and "demoted_at" not in exp.metadata:
        meta = {**exp.metadata, "demoted_at": now.isoformat(), "demoted_from_trust": exp.trust}
        return exp.model_copy(
            update={
                "trust": round(exp.trust * DEMOTED_TRUST_FACTOR, 4),
                "metadata": meta,
                "updated_at": now,
            }
        )
    return exp
