"""Recall scoring and selection (MISSION S5, S13, S16).

``score = (w_sim*similarity + w_conf*confidence + w_rec*recency) * trust + boost``

* weights default to 0.6 / 0.3 / 0.1 (MISSION S5), configurable via :class:`RecallWeights`;
* ``recency = 0.5 ** (age_days / half_life_days)``, age measured from the experience's last
  update, half-life 30 days by default (MISSION S5);
* ``trust`` in [0,1] is the provenance weight of the experience (MISSION S8);
* ``boost`` is +0.05 per requested tag or tool the experience carries, at most +0.15 (the
  context-tag match of MISSION S5's second variant, kept small so similarity still leads).

Selection: candidates under the similarity floor are dropped; private-namespace hits come
before shared-namespace hits (MISSION S9); within a namespace, semantic lessons (rules,
improvements, tool reliability, anti-patterns, failure causes) come before the episodic
summaries of single runs (outcome, key step, task scope): "semantic rules are consulted before
episodic cases" (MISSION S5); no source trajectory may supply more than ``max_per_source`` of
``top_k`` (one half by default, MISSION S5).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from hindsight.config import RecallWeights
from hindsight.models import Exclusion, Experience, ExperienceKind, RecallHit, ScoreBreakdown

__all__ = [
    "EPISODIC_KINDS",
    "Candidate",
    "RecallMode",
    "recency_weight",
    "score_candidates",
    "select_hits",
]

RecallMode = Literal["vector", "task_type"]
EPISODIC_KINDS = frozenset(
    {ExperienceKind.OUTCOME, ExperienceKind.KEY_STEP, ExperienceKind.TASK_SCOPE}
)
"""Kinds that summarise one run rather than state a reusable rule; ranked after the others."""
TAG_BOOST = 0.05
TAG_BOOST_MAX = 0.15


def recency_weight(age_days: float, half_life_days: float) -> float:
    """``0.5 ** (age_days / half_life_days)``, in (0, 1]; negative ages count as 0."""
    return math.pow(0.5, max(0.0, age_days) / half_life_days)


@dataclass(frozen=True, slots=True)
class Candidate:
    """An experience found by the vector index or the task_type query, before scoring.

    ``tier`` is 0 for the private namespace and 1 for the shared one.
    """

    experience: Experience
    similarity: float
    tier: int


def score_candidates(
    candidates: Sequence[Candidate],
    *,
    weights: RecallWeights,
    half_life_days: float,
    now: datetime,
    tags: Sequence[str] = (),
    tools: Sequence[str] = (),
    mode: RecallMode = "vector",
) -> list[tuple[Candidate, RecallHit]]:
    """Score each candidate; returns ``(candidate, hit)`` pairs in candidate order."""
    wanted = {t.lower() for t in tags}
    wanted_tools = {t.lower() for t in tools}
    out: list[tuple[Candidate, RecallHit]] = []
    w = {
        "similarity": weights.similarity,
        "confidence": weights.confidence,
        "recency": weights.recency,
    }
    for cand in candidates:
        exp = cand.experience
        age_days = (now - exp.updated_at).total_seconds() / 86400.0
        rec = recency_weight(age_days, half_life_days)
        matched = sorted(wanted & {t.lower() for t in exp.tags})
        matched_tools = sorted(wanted_tools & {t.lower() for t in exp.tools})
        boost = min(TAG_BOOST_MAX, TAG_BOOST * (len(matched) + len(matched_tools)))
        base = (
            weights.similarity * cand.similarity
            + weights.confidence * exp.confidence
            + weights.recency * rec
        )
        score = base * exp.trust + boost
        reasons = [f"tag match: {t}" for t in matched]
        reasons += [f"tool match: {t}" for t in matched_tools]
        if mode == "task_type":
            reasons.append(f"exact task_type match: {exp.task_type}")
        breakdown = ScoreBreakdown(
            similarity=round(cand.similarity, 6),
            confidence=exp.confidence,
            recency=round(rec, 6),
            trust=exp.trust,
            boost=boost,
            weights=w,
            age_days=round(max(0.0, age_days), 4),
            namespace=exp.namespace,
            mode=mode,
            reasons=reasons,
        )
        out.append((cand, RecallHit(experience=exp, score=round(score, 6), breakdown=breakdown)))
    return out


def select_hits(
    scored: Sequence[tuple[Candidate, RecallHit]],
    *,
    top_k: int,
    similarity_floor: float | None,
    max_per_source: float,
) -> tuple[list[RecallHit], list[Exclusion]]:
    """Apply the floor, the namespace order and the per-source cap; keep ``top_k``.

    Returns:
        ``(hits, excluded)``; ``excluded`` names each dropped candidate and the reason.
    """
    excluded: list[Exclusion] = []
    passing: list[tuple[Candidate, RecallHit]] = []
    for cand, hit in scored:
        if similarity_floor is not None and cand.similarity < similarity_floor:
            excluded.append(
                Exclusion(
                    experience_id=hit.experience.id,
                    reason=f"similarity {cand.similarity:.3f} below floor {similarity_floor:.3f}",
                    similarity=cand.similarity,
                    score=hit.score,
                )
            )
        else:
            passing.append((cand, hit))
    passing.sort(
        key=lambda pair: (
            pair[0].tier,
            pair[1].experience.kind in EPISODIC_KINDS,
            -pair[1].score,
            pair[1].experience.id,
        )
    )
    cap = max(1, math.floor(top_k * max_per_source))
    per_source: Counter[str] = Counter()
    hits: list[RecallHit] = []
    for cand, hit in passing:
        if len(hits) >= top_k:
            excluded.append(
                Exclusion(
                    experience_id=hit.experience.id,
                    reason=f"below the top {top_k}",
                    similarity=cand.similarity,
                    score=hit.score,
                )
            )
            continue
        sources = hit.experience.source_trajectory_ids
        crowded = [s for s in sources if per_source[s] >= cap]
        if crowded:
            excluded.append(
                Exclusion(
                    experience_id=hit.experience.id,
                    reason=f"source trajectory {crowded[0]} already supplies {cap} of top {top_k}",
                    similarity=cand.similarity,
                    score=hit.score,
                )
            )
            continue
        per_source.update(sources)
        hits.append(hit)
    return hits, excluded
