"""The recall pipeline, in order (docs/concepts.md#recall):

1. **candidates** - the query (plus the asking agent's tools) is embedded and the nearest
   active lessons of the tenant's namespaces are fetched (:func:`.candidates.tier_candidates`,
   ``max(CANDIDATE_FACTOR * top_k, 20)`` of them); with the situation match on, the nearest
   ``max(SITUATION_EPISODES, top_k)`` episodes too (one search of the episode tier, shared
   with step 6), and the lessons their runs taught join the candidates
   (:func:`.candidates.with_situation`); ``task_type`` mode reads that task_type's
   rows instead, no vectors;
2. **score** (:func:`.scoring.score_candidates`) and leave out what fell under
   ``min_confidence`` (:func:`.explain.confidence_floor`);
3. **select** ``top_k`` under the similarity floor, private namespace first, at most
   ``max_per_source`` of them from one run (:func:`.scoring.select_hits`), one lesson per
   subject (:func:`.scoring.one_per_subject`);
4. **explain** (``explain=True``): close experiences a filter kept out
   (:func:`.explain.near_misses`);
5. **guard** (memory guard on): drop hits that contradict the rest of the recalled set
   (:func:`hindsight.guard.after_recall.drop_outliers`);
6. **episodes** (``include_episodes=True``): the most similar past runs, their own tier
   (:func:`.candidates.recall_episodes`);
7. **usage**: what was recalled is recorded for the run asking (outcome attribution:
   docs/concepts.md#experiences-and-confidence),
   unless the request is a dry run (``record=False``: the console's recall playground, or an
   integration that records only what its model was seen to receive with
   :meth:`hindsight.AsyncMemory.record_recall`).

:class:`RecallRequest` is one checked request (:meth:`Recall.request` checks the arguments and
fills in the defaults); :meth:`Recall.run` runs it on the components.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hindsight._contract import (
    Namespaces,
    Query,
    Tags,
    TaskType,
    TenantId,
    TokenBudget,
    Tools,
    TopK,
    TrajectoryId,
    check,
    switch,
)
from hindsight._errors import UsageError
from hindsight.config import MemoryConfig
from hindsight.guard.after_recall import drop_outliers
from hindsight.models import Exclusion, Experience, ExperienceStatus, RecallHit
from hindsight.ports import Clock, Embedder, VectorIndex, embedded
from hindsight.recall.candidates import (
    SITUATION_EPISODES,
    EpisodeQuery,
    episode_limit,
    recall_episodes,
    tier_candidates,
    with_situation,
)
from hindsight.recall.explain import confidence_floor, near_misses
from hindsight.recall.result import RecallResult
from hindsight.recall.scoring import (
    Candidate,
    RecallMode,
    ScoredRow,
    one_per_subject,
    score_candidates,
    score_rows,
    select_hits,
)

__all__ = ["CANDIDATE_FACTOR", "Recall", "RecallRequest"]

CANDIDATE_FACTOR = 4
"""Vector recall fetches ``max(CANDIDATE_FACTOR * top_k, 20)`` neighbours before re-ranking."""


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """One recall, every field checked (see :meth:`hindsight.AsyncMemory.recall` for each).

    ``namespaces`` are in priority order and already include the shared namespace when it is
    searched; ``similarity_floor`` is the cosine floor in effect (``None`` in task_type mode);
    ``token_budget`` is in estimated tokens.
    """

    query: str
    tenant_id: str
    namespaces: list[str]
    task_type: str | None
    tags: list[str]
    tools: list[str]
    top_k: int
    mode: RecallMode
    similarity_floor: float | None
    trajectory_id: str | None
    token_budget: int
    include_episodes: bool = False
    explain: bool = False
    record: bool = True


@dataclass(frozen=True, slots=True)
class Recall:
    """Runs :class:`RecallRequest` s on one memory's components (blocking: SQL and vectors).

    Args:
        store: the SQL store (rows decide tenant, status, namespace; recall usage is written).
        index: the vector index.
        embedder: embeds the query.
        clock: "now" for recency.
        config: weights, half-life, ``min_confidence`` and ``max_per_source``.
        consensus: run the memory guard's consensus check on the hits (guard on).
        score_from_payload: score the candidates from their vector payloads (see :meth:`run`);
            ``False``: from their SQL rows (the reference the tests compare with).
    """

    store: Any
    index: VectorIndex
    embedder: Embedder
    clock: Clock
    config: MemoryConfig
    consensus: bool
    score_from_payload: bool = True

    def request(
        self,
        query: Any,
        *,
        tenant_id: Any,
        namespace: str | Sequence[str],
        include_shared: bool,
        task_type: Any,
        tags: Any,
        tools: Any,
        top_k: Any,
        mode: Any,
        similarity_floor: float | None,
        trajectory_id: Any,
        token_budget: Any,
        include_episodes: bool,
        explain: bool,
        record: bool = True,
    ) -> RecallRequest:
        """The checked request of :meth:`hindsight.AsyncMemory.recall` (its docs give every
        argument, default and error), checked in that order."""
        tenant: str = check(TenantId, tenant_id)
        namespaces: list[str] = check(Namespaces, namespace)
        text: str = check(Query, query)
        k: int = check(TopK, self.config.top_k if top_k is None else top_k)
        task_type = check(TaskType, task_type)
        tags, tools = check(Tags, tags), check(Tools, tools)
        mode = _mode(mode, text, task_type)
        if switch(include_shared, "include_shared", True) and (
            self.config.shared_namespace not in namespaces
        ):
            namespaces.append(self.config.shared_namespace)
        floor = similarity_floor
        if floor is None:
            floor = self.config.similarity_floor
        if floor is None and mode == "vector":
            floor = self.embedder.similarity_floor
        tid: str | None = check(TrajectoryId, trajectory_id) if trajectory_id else None
        budget: int | None = check(TokenBudget, token_budget)
        return RecallRequest(
            text,
            tenant,
            namespaces,
            task_type,
            tags,
            tools,
            k,
            mode,
            floor if mode == "vector" else None,
            tid,
            self.config.token_budget if budget is None else budget,
            switch(include_episodes, "include_episodes", False),
            switch(explain, "explain", False),
            switch(record, "record", True),
        )

    def run(self, req: RecallRequest) -> RecallResult:
        """Steps 1-7 of the module docstring; returns the result to render. The reads leave
        pending recall bookkeeping buffered and the usage of step 7 is buffered too
        (:mod:`hindsight.store.recall_buffer`).

        Scoring from the index: the candidates are scored and selected from their points'
        payloads (:class:`hindsight.recall.scoring.ScoreRow`), and SQL rows are read for the
        selected hits only. With pgvector a payload is the row itself, read by the search; an
        index kept apart from SQL gets every change of a scored field through the vector
        outbox right after its commit (:mod:`hindsight.store.outbox`), so a payload lags its
        row only while a write is between its commit and its apply (the recall then answers as
        if it came just before that write). The answer stands when each hit's row still scores
        what its payload did; otherwise the recall runs again from the SQL rows of the same
        candidates.
        """
        return self.run_with_vector(req)[0]

    def run_with_vector(self, req: RecallRequest) -> tuple[RecallResult, Any]:
        """:meth:`run`, and the query's embedding (``None`` in task_type mode) for the caller's
        own ranking (the run-start risk section, docs/checks.md).

        The embedded text is the query alone: the tools the agent has boost their lessons like
        tags, but they are not embedded with the query, since a list of a dozen tool names
        would outweigh a short request and make every recall of that agent alike.
        """
        with self.store.recall_reads():
            vec = None
            if req.mode == "vector":
                vec = embedded(self.embedder, [req.query], "query")[0]
            if vec is not None and self.score_from_payload:
                try:
                    return self._run(req, vec, True), vec
                except _Stale:
                    pass
            return self._run(req, vec, False), vec

    def _run(self, req: RecallRequest, vec: Any, payload: bool) -> RecallResult:
        """``payload``: score from the payloads (raises :class:`_Stale` when a hit's row does not
        match its payload); ``False``: from the rows."""
        where = EpisodeQuery(
            self.index,
            self.store,
            vec,
            req.tenant_id,
            req.namespaces,
            req.task_type,
            payload=payload,
        )
        situation = where.vector is not None and self.config.situation_match
        tier: list[Candidate] = []  # the episode tier, searched once for both uses
        if situation or req.include_episodes:
            limit = max(SITUATION_EPISODES, req.top_k) if situation else 0
            if req.include_episodes:
                limit = max(limit, episode_limit(req.top_k))
            tier = tier_candidates(where, limit=limit, episodes=True)
        near = tier[: max(SITUATION_EPISODES, req.top_k)] if situation else None
        hits, excluded = self._lessons(req, where, near, payload)
        episodes = self._episodes(req, where, tier, payload) if req.include_episodes else []
        if (hits or episodes) and req.record:
            self.store.buffer_recall(
                req.tenant_id,
                [h.experience.id for h in [*hits, *episodes]],
                self.clock.now(),
                req.trajectory_id,
            )
        return RecallResult(
            query=req.query,
            tenant_id=req.tenant_id,
            namespaces=req.namespaces,
            mode=req.mode,
            hits=hits,
            excluded=excluded,
            token_budget=req.token_budget,
            similarity_floor=req.similarity_floor,
            episodes=episodes,
        )

    def _lessons(
        self,
        req: RecallRequest,
        where: EpisodeQuery,
        near: Sequence[Candidate] | None,
        payload: bool,
    ) -> tuple[list[RecallHit], list[Exclusion]]:
        """Steps 1-5 for the lesson tier (episodes are their own tier); ``near``: the closest
        episodes for the situation match (``None``: off); ``payload``: as :meth:`_run`."""
        limit = max(CANDIDATE_FACTOR * req.top_k, 20)
        candidates = tier_candidates(where, limit=limit, episodes=False)
        if near is not None:
            candidates = with_situation(where, candidates, near)
        scoring = self._scoring(req)
        excluded: list[Exclusion]
        select: dict[str, Any] = {
            "top_k": req.top_k,
            "similarity_floor": req.similarity_floor,
            "max_per_source": self.config.max_per_source,
            "spare": req.top_k,  # room for lessons left out as repeats of a subject
        }
        if not payload:
            scored = score_candidates(candidates, **scoring)
            scored, demoted = confidence_floor(scored, self.config.min_confidence)
            wide, excluded = select_hits(scored, **select)
            hits, repeats = one_per_subject(wide, req.top_k, lambda more: list(more))
        else:
            rough, demoted = confidence_floor(
                score_rows(candidates, **scoring), self.config.min_confidence
            )
            picked, excluded = select_hits(rough, **select)
            hits, repeats = one_per_subject(
                picked, req.top_k, lambda more: self._rows_of(req, more, scoring)
            )
        excluded = [*repeats, *excluded, *demoted]
        if req.explain and where.vector is not None:  # close ones a filter kept out
            seen = {h.experience.id for h in hits} | {e.experience_id for e in excluded}
            excluded += near_misses(
                self.store,
                self.index,
                where.vector,
                tenant=req.tenant_id,
                namespaces=req.namespaces,
                task_type=req.task_type,
                seen=seen,
            )
        if self.consensus:  # memory guard, layer 3: consensus across the recalled set
            hits, outliers = drop_outliers(hits, self.store.get_vectors)
            excluded = [*outliers, *excluded]
        return hits, excluded

    def _episodes(
        self,
        req: RecallRequest,
        where: EpisodeQuery,
        tier: Sequence[Candidate],
        payload: bool,
    ) -> list[RecallHit]:
        """Step 6: the most similar past episodes (of ``tier``, the episode tier's
        candidates); ``payload``: as :meth:`_run`."""
        scoring = self._scoring(req)
        return recall_episodes(
            where,
            top_k=req.top_k,
            floor=req.similarity_floor,
            candidates=tier,
            score=score_rows if payload else score_candidates,
            read=(lambda more: self._rows_of(req, more, scoring)) if payload else list,
            **scoring,
        )

    def _rows_of(
        self, req: RecallRequest, picked: Sequence[ScoredRow], scoring: dict[str, Any]
    ) -> list[RecallHit]:
        """The hits of ``picked`` (selected from payload scores) with their SQL rows, scored
        from the rows (:func:`score_candidates`, the breakdowns).

        Raises:
            _Stale: a hit's row is gone, no longer an active lesson of the searched
                namespaces, or scores other than its payload did.
        """
        need = [p.experience.id for p in picked if not isinstance(p.experience, Experience)]
        rows: dict[str, Experience] = self.store.get_experiences(req.tenant_id, need)
        cands: list[Candidate] = []
        for p in picked:
            seen = p.experience
            exp = seen if isinstance(seen, Experience) else rows.get(seen.id)
            if (
                exp is None
                or exp.status is not ExperienceStatus.ACTIVE
                or exp.namespace not in req.namespaces
                or exp.kind is not p.experience.kind
            ):
                raise _Stale
            c = p.candidate
            cands.append(Candidate(exp, c.similarity, c.tier, c.situation, c.episode_id))
        hits = [hit for _, hit in score_candidates(cands, **scoring)]
        if [h.score for h in hits] != [p.score for p in picked]:
            raise _Stale
        return hits

    def _scoring(self, req: RecallRequest) -> dict[str, Any]:
        return {
            "weights": self.config.weights,
            "half_life_days": self.config.half_life_days,
            "now": self.clock.now(),
            "tags": req.tags,
            "tools": req.tools,
            "mode": req.mode,
            "kind_bonus": self.config.kind_bonus,
        }


class _Stale(Exception):
    """The payloads a recall scored from may not equal the rows: run it again from the rows."""


def _mode(mode: Any, query: str, task_type: str | None) -> RecallMode:
    """The recall mode asked for, or the default: ``task_type`` for an empty query with a
    task_type (docs/concepts.md#exact-task_type-mode), else ``vector``.

    Raises:
        UsageError: an unknown mode, an empty query in vector mode, task_type mode without a
            task_type.
    """
    if mode is None:
        mode = "task_type" if (not query.strip() and task_type) else "vector"
    if mode not in ("vector", "task_type"):
        raise UsageError(f"mode must be 'vector' or 'task_type', got {mode!r}")
    if mode == "vector" and not query.strip():
        raise UsageError("query must not be empty (or pass task_type for exact recall)")
    if mode == "task_type" and not task_type:
        raise UsageError("mode 'task_type' needs task_type")
    return "vector" if mode == "vector" else "task_type"
