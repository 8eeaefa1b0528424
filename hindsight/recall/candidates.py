"""Recall candidates: what the index (or the task_type query) offers one recall, per tier.

Lessons and episodes are separate tiers (docs/concepts.md#memory-layers): the index filters
on the ``kind`` payload, so episodes never crowd lessons out of a recall, nor the reverse.
Episodes are recalled only when asked (``include_episodes=True``) and scored like lessons.

The situation match (:func:`with_situation`, docs/concepts.md#recall) links the tiers: the
lessons taught by the runs whose episodes are closest to the query become candidates too,
with the episode's cosine as their similarity when it is higher than their own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from hindsight.config import RecallWeights
from hindsight.models import Experience, ExperienceKind, ExperienceStatus
from hindsight.ports import VectorIndex
from hindsight.recall.scoring import (
    Candidate,
    RecallMode,
    ScoreRow,
    score_candidates,
    select_hits,
)

__all__ = [
    "EPISODE_TOP_K",
    "SITUATION_EPISODES",
    "EpisodeQuery",
    "episode_limit",
    "recall_episodes",
    "tier_candidates",
    "with_situation",
]

EPISODE_TOP_K = 3
"""Most episodes one recall returns (``include_episodes=True``), and never more than top_k."""
SITUATION_EPISODES = 5
"""Closest episodes whose runs' lessons the situation match adds (at least top_k of them)."""

_SEARCH_GROWTH = 4
_SEARCH_MAX = 4000


@dataclass(frozen=True, slots=True)
class EpisodeQuery:
    """Where one recall looks: index, store, the query vector (``None`` in ``task_type``
    mode), tenant, namespaces in priority order and the task_type filter."""

    index: VectorIndex
    store: Any
    vector: Any
    tenant_id: str
    namespaces: list[str]
    task_type: str | None
    payload: bool = False
    """Score the candidates from their vector payloads (:class:`ScoreRow`) where they carry
    it; ``False``: from their SQL rows."""


def _wanted(exp: Experience | ScoreRow, where: EpisodeQuery, episodes: bool) -> bool:
    # Defence in depth: the SQL row decides tenant, status and namespace, not the index.
    return (
        exp.tenant_id == where.tenant_id
        and exp.status is ExperienceStatus.ACTIVE
        and exp.namespace in where.namespaces
        and (exp.kind is ExperienceKind.EPISODE) is episodes
    )


_EPISODE_KINDS = [ExperienceKind.EPISODE.value]
_LESSON_KINDS = [k.value for k in ExperienceKind if k is not ExperienceKind.EPISODE]


def tier_candidates(where: EpisodeQuery, *, limit: int, episodes: bool) -> list[Candidate]:
    """Up to ``limit`` recall candidates of one tier: episodes (``episodes=True``) or lessons.

    Vector mode: the nearest active experiences of the tier's kinds (the index filters on the
    ``kind`` payload, so episodes never crowd lessons out of recall, nor the reverse); while
    fewer than ``limit`` of them survive the SQL check (tenant, status, namespace, kind) and
    the index had more to give, it asks again for 4x as many (at most 4000). ``task_type`` mode
    (``where.vector is None``): the tier's rows with that task_type, most confident first,
    similarity 1.0 (docs/concepts.md#exact-task_type-mode), paged the same way. With
    ``where.payload`` a candidate's ``experience`` is the :class:`ScoreRow` of its point's
    payload, and only the points without a usable one are read from SQL (the caller checks
    the payload was current, :mod:`hindsight.recall.pipeline`).

    Returns:
        candidates, nearest (or most confident) first; ``tier`` is the namespace's position.
    """
    tier = {ns: i for i, ns in enumerate(where.namespaces)}
    want = limit
    while True:
        kept: list[Candidate] = []
        if where.vector is not None:
            found = where.index.search(
                where.vector,
                tenant_id=where.tenant_id,
                namespaces=where.namespaces,
                limit=want,
                task_type=where.task_type,
                kinds=_EPISODE_KINDS if episodes else _LESSON_KINDS,
            )
            rows: dict[str, Experience | ScoreRow] = {}
            if where.payload:
                for hit in found:
                    row = ScoreRow.from_payload(hit.id, hit.payload)
                    if row is not None:
                        rows[hit.id] = row
            missing = [h.id for h in found if h.id not in rows]
            if missing:
                rows.update(where.store.get_experiences(where.tenant_id, missing))
            got = len(found)
            for hit in found:
                exp = rows.get(hit.id)
                if exp is not None and _wanted(exp, where, episodes):
                    kept.append(Candidate(exp, float(hit.similarity), tier[exp.namespace]))
        else:
            listed = where.store.list_experiences(
                where.tenant_id,
                namespaces=where.namespaces,
                task_type=where.task_type,
                limit=want,
            )
            got = len(listed)
            kept = [
                Candidate(e, 1.0, tier[e.namespace]) for e in listed if _wanted(e, where, episodes)
            ]
        if len(kept) >= limit or got < want or want >= _SEARCH_MAX:
            return kept[:limit]
        want = min(want * _SEARCH_GROWTH, _SEARCH_MAX)


def with_situation(
    where: EpisodeQuery, lessons: Sequence[Candidate], episodes: Sequence[Candidate]
) -> list[Candidate]:
    """The situation match: ``lessons`` (lesson-tier candidates) with, for every lesson learned
    from a run of one of ``episodes`` (episode-tier candidates, nearest first),
    ``similarity = max(own cosine, the episode's cosine)`` and ``situation`` /
    ``episode_id`` set; lessons those runs taught that are not among ``lessons`` are added
    (their own cosine from the stored embedding).

    The runs' lessons come from the store's ``experience_sources`` index
    (:meth:`hindsight.store.SqlStore.experiences_of_runs`, active ones of the tenant); each
    added row is checked like any candidate (tenant, status, namespace, kind, task_type).

    Returns:
        candidates in no particular order (scoring sorts them).
    """
    best_run: dict[str, tuple[float, str]] = {}
    for ep in episodes:
        for run in ep.experience.source_trajectory_ids:
            if run not in best_run or ep.similarity > best_run[run][0]:
                best_run[run] = (ep.similarity, ep.experience.id)
    if not best_run:
        return list(lessons)
    taught = where.store.experiences_of_runs(where.tenant_id, list(best_run))
    situation: dict[str, tuple[float, str]] = {}
    for run, ids in taught.items():
        for lesson_id in ids:
            if lesson_id not in situation or best_run[run][0] > situation[lesson_id][0]:
                situation[lesson_id] = best_run[run]
    out: list[Candidate] = []
    for cand in lessons:
        found = situation.pop(cand.experience.id, None)
        if found is None:
            out.append(cand)
            continue
        sim, episode = found
        best = max(cand.similarity, sim)
        out.append(Candidate(cand.experience, best, cand.tier, sim, episode))
    if not situation:
        return out
    rows = where.store.get_experiences(where.tenant_id, list(situation))
    vectors = where.store.get_vectors(list(rows))
    query = np.asarray(where.vector, dtype=np.float32)
    tier = {ns: i for i, ns in enumerate(where.namespaces)}
    for lesson_id, (sim, episode) in situation.items():
        exp = rows.get(lesson_id)
        if exp is None or not _wanted(exp, where, False):
            continue
        if where.task_type is not None and exp.task_type != where.task_type:
            continue
        vec = vectors.get(lesson_id)
        own = float(np.dot(query, vec)) if vec is not None and vec.shape == query.shape else -1.0
        out.append(Candidate(exp, max(own, sim), tier[exp.namespace], sim, episode))
    return out


def episode_limit(top_k: int) -> int:
    """Episode-tier candidates :func:`recall_episodes` scores for one recall of ``top_k``."""
    return max(4 * min(top_k, EPISODE_TOP_K), 20)


def recall_episodes(
    where: EpisodeQuery,
    *,
    top_k: int,
    floor: float | None,
    weights: RecallWeights,
    half_life_days: float,
    now: datetime,
    tags: Sequence[str] = (),
    tools: Sequence[str] = (),
    mode: RecallMode = "vector",
    kind_bonus: Mapping[str, float] | None = None,
    candidates: Sequence[Candidate] | None = None,
    score: Callable[..., Sequence[tuple[Candidate, Any]]] = score_candidates,
    read: Callable[[Sequence[Any]], list[Any]] = list,
) -> list[Any]:
    """The most similar past episodes: at most ``min(top_k, EPISODE_TOP_K)``, scored like
    lessons (:func:`hindsight.recall.score_candidates`, with ``kind_bonus``), under the same
    similarity floor, private namespace first. One episode per run, so no per-source cap
    applies; two runs that went the same way have the same episode text, and it is shown
    once (the better ranked; the next episode takes the other's place). ``candidates``: the
    episode tier's candidates when the caller already searched it (at least
    :func:`episode_limit` of them, nearest first); else searched here. ``score``:
    :func:`hindsight.recall.score_candidates` (the hits are :class:`RecallHit` s) or
    :func:`hindsight.recall.scoring.score_rows` (payload candidates: ``read`` gives their
    :class:`RecallHit` s from their rows)."""
    k = min(top_k, EPISODE_TOP_K)
    if candidates is None:
        candidates = tier_candidates(where, limit=episode_limit(top_k), episodes=True)
    scored = score(
        candidates,
        weights=weights,
        half_life_days=half_life_days,
        now=now,
        tags=tags,
        tools=tools,
        mode=mode,
        kind_bonus=kind_bonus,
    )
    picked, _ = select_hits(scored, top_k=k, similarity_floor=floor, max_per_source=1.0, spare=k)
    seen: set[str] = set()
    hits = []
    for hit in read(picked):
        text = " ".join(hit.experience.content.split()).casefold()
        if text not in seen:
            seen.add(text)
            hits.append(hit)
    return hits[:k]
