"""Recall scoring and selection (docs/concepts.md#recall).

``score = (w_sim*similarity + w_conf*confidence + w_rec*recency) * trust + boost + kind_bonus``

* weights default to 0.6 / 0.3 / 0.1, configurable via :class:`RecallWeights`;
* ``similarity = max(cos(query, lesson), cos(query, best episode of a source run))``: the
  *situation match* - a lesson also scores by how similar the query is to the runs it was
  learned from (their episodes, one per reviewed run); the breakdown's ``situation`` and
  ``situation_episode`` say when and which, with the reason "learned from a run like this one";
* ``recency = 0.5 ** (age_days / half_life_days)``, age measured from the experience's last
  update, half-life 30 days by default;
* ``trust`` in [0,1] is the provenance weight of the experience
  (docs/security.md#layer-2-provenance-trust);
* ``boost`` is +0.05 per requested tag or tool the experience carries, at most +0.15 (the
  context-tag term of another published weighting, semantic 0.4 / recency 0.2 / context-tag
  match 0.2 / importance 0.2; kept small so similarity still leads);
* ``kind_bonus`` is a small per-kind addition (``MemoryConfig.kind_bonus``: rule and
  improvement +0.05, tool_reliability +0.03, anti_pattern and failure_cause +0.02, records of
  single runs 0): general advice ranks a little ahead of more specific lessons at equal
  relevance ("semantic rules are consulted before episodic cases"), without a less
  relevant rule outranking a much more relevant lesson as a strict kind order would.

Selection: candidates under the similarity floor are dropped; private-namespace hits come
before shared-namespace hits (docs/concepts.md#tenants-and-namespaces); within a namespace,
restatements of one run written by earlier reviewers (``outcome``, ``key_step``,
``task_scope``: :data:`EPISODIC_KINDS`) come after the other lessons, then by score; no source
trajectory may supply more than ``max_per_source`` of ``top_k`` (one half by default): a hit
learned from ``n`` runs counts ``1/n`` for each of them, so a lesson many runs agree on (merged
on its lesson key) does not use up the share of every one of its runs - the rule is against
over-fitting to one run, and such a lesson is the opposite.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar

from hindsight._errors import UsageError
from hindsight.config import RecallWeights
from hindsight.models import (
    Exclusion,
    Experience,
    ExperienceKind,
    ExperienceStatus,
    RecallHit,
    ScoreBreakdown,
)
from hindsight.ports import PAYLOAD_VERSION, from_epoch_us

__all__ = [
    "EPISODIC_KINDS",
    "Candidate",
    "RecallMode",
    "ScoreRow",
    "ScoredRow",
    "evidence",
    "one_per_subject",
    "recency_weight",
    "score_candidates",
    "score_rows",
    "select_hits",
]

RecallMode = Literal["vector", "task_type"]
EPISODIC_KINDS = frozenset(
    {ExperienceKind.OUTCOME, ExperienceKind.KEY_STEP, ExperienceKind.TASK_SCOPE}
)
"""Kinds that restate one run rather than state a reusable rule, written by earlier reviewers
(the run's episode holds them now); ranked after the other lessons of a namespace."""
TAG_BOOST = 0.05
TAG_BOOST_MAX = 0.15


def recency_weight(age_days: float, half_life_days: float) -> float:
    """``0.5 ** (age_days / half_life_days)``, in (0, 1]; negative ages count as 0."""
    return math.pow(0.5, max(0.0, age_days) / half_life_days)


@dataclass(frozen=True, slots=True)
class ScoreRow:
    """What scoring and selection read of an experience, from its vector payload (the
    candidates are scored from the index; SQL rows are read for the final hits only). The
    attributes have the names and types of :class:`Experience`'s, so scoring, selection and
    the SQL checks of the candidates read either."""

    id: str
    tenant_id: str
    namespace: str
    task_type: str | None
    status: ExperienceStatus
    kind: ExperienceKind
    tags: list[str]
    tools: list[str]
    confidence: float
    trust: float
    updated_at: datetime
    source_trajectory_ids: list[str]

    @classmethod
    def from_payload(cls, point_id: str, payload: Mapping[str, Any] | None) -> ScoreRow | None:
        """The row of a point's payload, or ``None`` when the payload does not carry what
        scoring reads in this version (:data:`hindsight.store.codec.PAYLOAD_VERSION`: a point
        written by an older hindsight, or an index that returns no payload)."""
        if not payload or payload.get("score_v") != PAYLOAD_VERSION:
            return None
        try:
            return cls(
                point_id,
                payload["tenant_id"],
                payload["namespace"],
                payload["task_type"],
                ExperienceStatus(payload["status"]),
                ExperienceKind(payload["kind"]),
                list(payload["tags"]),
                list(payload["tools"]),
                float(payload["confidence"]),
                float(payload["trust"]),
                from_epoch_us(int(payload["updated_us"])),
                list(payload["sources"]),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class Candidate:
    """An experience found by the vector index or the task_type query, before scoring.

    ``experience`` is the SQL row, or the :class:`ScoreRow` of the point's payload.
    ``tier`` is the namespace's position (0: the private namespace, 1: the shared one).
    ``similarity`` is the one the score uses; ``situation`` the query's cosine with the
    episode ``episode_id`` of a run the lesson was learned from, when the situation match
    found one (``similarity`` is then at least ``situation``).
    """

    experience: Experience | ScoreRow
    similarity: float
    tier: int
    situation: float | None = None
    episode_id: str | None = None


@dataclass(frozen=True, slots=True)
class ScoredRow:
    """A candidate scored from its payload (:func:`score_rows`): ``score`` as the hit of
    :func:`score_candidates` would have it; what :func:`select_hits` reads of a hit."""

    experience: ScoreRow | Experience
    score: float
    candidate: Candidate


class _Hit(Protocol):
    """What :func:`select_hits` and :func:`hindsight.recall.explain.confidence_floor` read of
    a scored candidate (a :class:`RecallHit` or a :class:`ScoredRow`)."""

    @property
    def experience(self) -> Any: ...

    @property
    def score(self) -> float: ...


H = TypeVar("H", bound=_Hit)
P = TypeVar("P", ScoredRow, RecallHit)


@dataclass(frozen=True, slots=True)
class _Parts:
    score: float
    recency: float
    age_days: float
    boost: float
    bonus: float
    matched: list[str]
    matched_tools: list[str]


@dataclass(frozen=True, slots=True)
class _Scorer:
    """The score of the module docstring for one recall's arguments (those of
    :func:`score_candidates`)."""

    weights: RecallWeights
    half_life_days: float
    now: datetime
    wanted: frozenset[str]
    wanted_tools: frozenset[str]
    bonuses: Mapping[str, float]

    @classmethod
    def of(
        cls,
        *,
        weights: RecallWeights,
        half_life_days: float,
        now: datetime,
        tags: Sequence[str] = (),
        tools: Sequence[str] = (),
        kind_bonus: Mapping[str, float] | None = None,
        mode: RecallMode = "vector",
    ) -> _Scorer:
        del mode  # only the breakdown's reasons read it
        return cls(
            weights,
            half_life_days,
            now,
            frozenset(t.lower() for t in tags),
            frozenset(t.lower() for t in tools),
            kind_bonus or {},
        )

    def parts(self, cand: Candidate) -> _Parts:
        """The score of one candidate and its parts."""
        exp, weights = cand.experience, self.weights
        age_days = (self.now - exp.updated_at).total_seconds() / 86400.0
        rec = recency_weight(age_days, self.half_life_days)
        matched = sorted(self.wanted & {t.lower() for t in exp.tags})
        matched_tools = sorted(self.wanted_tools & {t.lower() for t in exp.tools})
        boost = min(TAG_BOOST_MAX, TAG_BOOST * (len(matched) + len(matched_tools)))
        base = (
            weights.similarity * cand.similarity
            + weights.confidence * exp.confidence
            + weights.recency * rec
        )
        bonus = float(self.bonuses.get(ExperienceKind(exp.kind).value, 0.0))
        score = base * exp.trust + boost + bonus
        return _Parts(round(score, 6), rec, age_days, boost, bonus, matched, matched_tools)


def score_rows(
    candidates: Sequence[Candidate], **scoring: Any
) -> list[tuple[Candidate, ScoredRow]]:
    """:func:`score_candidates` (``scoring``: its keyword arguments) without the breakdowns:
    ``(candidate, ScoredRow)`` pairs in candidate order, each with the score its
    :class:`RecallHit` would have (the same computation); for selection before the hits'
    rows are read."""
    scorer = _Scorer.of(**scoring)
    return [(c, ScoredRow(c.experience, scorer.parts(c).score, c)) for c in candidates]


def _finite(value: Any, what: str) -> float:
    """``value`` as a float; a one-line :class:`UsageError` naming ``what`` when it is not a
    finite number (what validating the hit's fields refused before they were built without
    it)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{what} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise UsageError(f"{what} must be finite, got {value!r}")
    return float(value)


def _check_candidate(cand: Candidate) -> None:
    """The values :func:`score_candidates` copies from a candidate into its hit unvalidated
    (a caller may build candidates of its own)."""
    what = f"candidate {cand.experience.id}"
    _finite(cand.similarity, f"the similarity of {what}")
    if cand.situation is not None:
        _finite(cand.situation, f"the situation of {what}")
    if cand.episode_id is not None and not isinstance(cand.episode_id, str):
        raise UsageError(
            f"the episode_id of {what} must be a str, got {type(cand.episode_id).__name__}"
        )


def score_candidates(
    candidates: Sequence[Candidate],
    *,
    weights: RecallWeights,
    half_life_days: float,
    now: datetime,
    tags: Sequence[str] = (),
    tools: Sequence[str] = (),
    mode: RecallMode = "vector",
    kind_bonus: Mapping[str, float] | None = None,
) -> list[tuple[Candidate, RecallHit]]:
    """Score each candidate; returns ``(candidate, hit)`` pairs in candidate order.
    ``kind_bonus``: per kind value (default none; the engine passes
    ``MemoryConfig.kind_bonus``). Every candidate's ``experience`` must be its SQL row
    (:class:`Experience`).

    Raises:
        TypeError: a candidate's ``experience`` is not an :class:`Experience`.
        UsageError: ``mode`` is not ``"vector"`` or ``"task_type"``; ``half_life_days`` is
            not a finite number > 0; a weight, a ``kind_bonus`` value, or a candidate's
            ``similarity`` or ``situation`` is not a finite number; an ``episode_id`` is not a
            string.
    """
    scorer = _Scorer.of(
        weights=weights,
        half_life_days=half_life_days,
        now=now,
        tags=tags,
        tools=tools,
        kind_bonus=kind_bonus,
    )
    out: list[tuple[Candidate, RecallHit]] = []
    w = {
        "similarity": weights.similarity,
        "confidence": weights.confidence,
        "recency": weights.recency,
    }
    if mode not in ("vector", "task_type"):
        raise UsageError(f"mode must be 'vector' or 'task_type', got {mode!r:.40}")
    if _finite(half_life_days, "half_life_days") <= 0:
        raise UsageError(f"half_life_days must be > 0, got {half_life_days!r}")
    for name in ("similarity", "confidence", "recency"):
        _finite(getattr(weights, name), f"the {name} weight")
    for kind, bonus in (kind_bonus or {}).items():
        _finite(bonus, f"the kind_bonus of {kind}")
    for cand in candidates:
        exp = cand.experience
        if not isinstance(exp, Experience):
            raise TypeError(f"score_candidates needs SQL rows, got {type(exp).__name__}")
        _check_candidate(cand)
        parts = scorer.parts(cand)
        reasons = [f"tag match: {t}" for t in parts.matched]
        reasons += [f"tool match: {t}" for t in parts.matched_tools]
        if mode == "task_type":
            reasons.append(f"exact task_type match: {exp.task_type}")
        if cand.situation is not None and cand.situation >= cand.similarity:
            reasons.append(
                f"learned from a run like this one: {cand.episode_id} (cosine {cand.situation:.3f})"
            )
        # Built without validation (pydantic's model_construct): every value is computed here
        # as its field's type from a row validated when it was read, and recall builds one
        # per hit (a validated pair costs ~5x as much); tests/test_recall_scoring_models.py
        # checks the pair equals the validated one
        breakdown = ScoreBreakdown.model_construct(
            similarity=round(float(cand.similarity), 6),
            confidence=float(exp.confidence),
            recency=round(float(parts.recency), 6),
            trust=float(exp.trust),
            boost=float(parts.boost),
            weights=dict(w),
            age_days=round(max(0.0, float(parts.age_days)), 4),
            namespace=exp.namespace,
            mode=mode,
            reasons=reasons,
            situation=None if cand.situation is None else round(float(cand.situation), 6),
            situation_episode=cand.episode_id,
            kind_bonus=float(parts.bonus),
        )
        hit = RecallHit.model_construct(
            experience=exp, score=float(parts.score), breakdown=breakdown
        )
        out.append((cand, hit))
    return out


def select_hits(
    scored: Sequence[tuple[Candidate, H]],
    *,
    top_k: int,
    similarity_floor: float | None,
    max_per_source: float,
    spare: int = 0,
) -> tuple[list[H], list[Exclusion]]:
    """Apply the floor, the namespace order and the per-source cap; keep ``top_k``.
    ``scored``: the pairs of :func:`score_candidates` (or of :func:`score_rows`).
    ``spare``: up to that many more hits are returned after the first ``top_k``, in order, for
    a caller that may still leave some out (:func:`one_per_subject`); the cap stays that of
    ``top_k``.

    The per-source cap: at most ``floor(top_k * max_per_source)`` (at least 1) hits' worth per
    source run, a hit learned from n runs counting 1/n for each; a hit is left out when more
    than half of its runs already supply that many (a lesson of one run: when its run does).

    Returns:
        ``(hits, excluded)``; ``excluded`` names each dropped candidate and the reason.
    """
    excluded: list[Exclusion] = []
    passing: list[tuple[Candidate, H]] = []
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
    per_source: dict[str, float] = {}  # hits so far per run, 1/n for a hit of n runs
    hits: list[H] = []
    for cand, hit in passing:
        if len(hits) >= top_k + spare:
            excluded.append(
                Exclusion(
                    experience_id=hit.experience.id,
                    reason=f"below the top {top_k}",
                    similarity=cand.similarity,
                    score=hit.score,
                )
            )
            continue
        sources = list(dict.fromkeys(hit.experience.source_trajectory_ids))
        crowded = [s for s in sources if per_source.get(s, 0.0) >= cap]
        # a lesson of n runs is 1/n each run's: it is left out when most of it belongs to runs
        # that already supply their share, not because one of its many runs does
        if 2 * len(crowded) > len(sources):
            excluded.append(
                Exclusion(
                    experience_id=hit.experience.id,
                    reason=f"source trajectory {crowded[0]} already supplies {cap} of top {top_k}",
                    similarity=cand.similarity,
                    score=hit.score,
                )
            )
            continue
        for source in sources:
            per_source[source] = per_source.get(source, 0.0) + 1.0 / len(sources)
        hits.append(hit)
    return hits, excluded


_SPECIFIC: dict[str, int] = {"improvement": 2, "anti_pattern": 1}
"""On equal evidence, what stands for a subject: the fix that worked, then the repeated call
that failed again (when as many runs stand on it as on the failure, every run that saw the
error repeated the call in vain: the failure's advice and that fact), then anything else (the
failure with its advice, whose "retry once" for a timeout those runs contradict)."""


def evidence(sources: Sequence[str], kind: Any) -> tuple[int, int]:
    """The weight of a lesson among those about one subject (:func:`one_per_subject`), higher
    first: how many runs it stands on (its distinct source runs; a fix's count twice: the
    failure is seen by every run that met the error, the fix only by those that got through,
    so a fix half of them found says more than the failure's general advice, one of thirteen
    does not), then how specific its kind is (:data:`_SPECIFIC`: on equal weight the fix, then
    the repeated call, then the failure)."""
    name = str(getattr(kind, "value", kind))
    runs = len(set(sources))
    return (2 * runs if name == "improvement" else runs), _SPECIFIC.get(name, 0)


def one_per_subject(
    picked: Sequence[P],
    top_k: int,
    read: Callable[[Sequence[P]], list[RecallHit]],
) -> tuple[list[RecallHit], list[Exclusion]]:
    """The first ``top_k`` of ``picked`` (in order) with at most one lesson per
    :attr:`~hindsight.models.Experience.subject`: the lessons about one thing (a tool error
    seen as a failure, as a repeated call and as a fix) are shown as one, so that a block's few
    places hold different advice (docs/concepts.md#recall). The one shown is the one of the
    subject's lessons in ``picked`` that the most runs stand on (:func:`evidence`; the
    failure of a tool error is seen by every run that fixed or repeated it; on equal runs the
    fix, then the repeated call, then the failure; then the better ranked), in the place of the
    first.

    Args:
        picked: the selected hits in order, ``top_k`` and up to ``top_k`` spares
            (:func:`select_hits`), as :class:`ScoredRow` s or :class:`RecallHit` s.
        top_k: how many to keep.
        read: the :class:`RecallHit` s of some of ``picked`` (their rows: a subject is in the
            row, not in the vector payload). The first ``top_k`` are read; the spares only
            when one of those has a subject, so that a store without subjects reads no more
            rows than before, and the answer is the same from payloads or from rows.

    Returns:
        ``(kept, excluded)``; ``excluded`` names each hit left out and why.
    """
    hits = read(picked[:top_k])
    if len(picked) > top_k and any(h.experience.subject is not None for h in hits):
        hits += read(picked[top_k:])
    kept, excluded = _distinct(hits, top_k)
    for p in picked[len(hits) :]:
        similarity = (  # as the breakdown has it
            round(p.candidate.similarity, 6) if isinstance(p, ScoredRow) else p.breakdown.similarity
        )
        excluded.append(
            Exclusion(
                experience_id=p.experience.id,
                reason=f"below the top {top_k}",
                similarity=similarity,
                score=p.score,
            )
        )
    return kept, excluded


def _distinct(hits: Sequence[RecallHit], top_k: int) -> tuple[list[RecallHit], list[Exclusion]]:
    """:func:`one_per_subject` of hits already read."""
    best: dict[str, RecallHit] = {}
    for hit in hits:
        subject = hit.experience.subject
        if subject is not None and (
            subject not in best
            or evidence(hit.experience.source_trajectory_ids, hit.experience.kind)
            > evidence(
                best[subject].experience.source_trajectory_ids, best[subject].experience.kind
            )
        ):
            best[subject] = hit
    kept: list[RecallHit] = []
    excluded: list[Exclusion] = []
    placed: set[str] = set()
    for hit in hits:
        subject = hit.experience.subject
        shown = hit if subject is None else best[subject]
        if shown is not hit:
            excluded.append(_left_out(hit, f"about the same subject as {shown.experience.id}"))
        if subject is not None:
            if subject in placed:
                continue  # shown (or left out) in the place of the subject's first hit
            placed.add(subject)
        if len(kept) >= top_k:
            excluded.append(_left_out(shown, f"below the top {top_k}"))
        else:
            kept.append(shown)
    return kept, excluded


def _left_out(hit: RecallHit, reason: str) -> Exclusion:
    return Exclusion(
        experience_id=hit.experience.id,
        reason=reason,
        similarity=hit.breakdown.similarity,
        score=hit.score,
    )
