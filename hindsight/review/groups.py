"""Task groups and the contrastive step of a review (docs/review.md#task-groups).

Runs of the same task form a **task group**, named by a task key:

* an explicit ``task_key`` (the caller's, or the source's: tau-bench's ``task_id``), else
* one assigned **by intent** when the run is reviewed: the run joins the group of the closest
  earlier run of the same tenant, namespace and task_type whose opening request (its task
  text) is as similar as a near-duplicate (cosine >= the embedder's ``dedup_threshold``);
  candidates are found through the episode tier of the vector index, the decision is made on
  the two openers. Otherwise it starts a group of its own, ``intent:<run id>``.

When a group holds a success and a failure, the review compares them (ExpeL's comparison of
attempts, :meth:`TaskGroups.pairs`): a failed run against the most similar successful run of
its group (the one with the most state-changing tools in common), or, when a successful run
is reviewed, every failed run of its group (the most recent :data:`MAX_PAIRS`) against it.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from hindsight._errors import UsageError
from hindsight._ids import normalize_id
from hindsight.models import ExperienceKind, Outcome, Trajectory
from hindsight.ports import Embedder, VectorIndex
from hindsight.review._calls import collect_calls
from hindsight.review.contrast import Action, changing
from hindsight.review.episodes import summarize_episode

__all__ = ["INTENT_CANDIDATES", "MAX_PAIRS", "TaskGroups", "intent_key", "reference_for"]

log = logging.getLogger("hindsight")

INTENT_CANDIDATES = 10
"""Nearest earlier episodes looked at when a run without a task key is grouped by intent."""
MAX_PAIRS = 3
"""Failed runs of its group a successful run is compared with, most recent first."""

_SUCCESS = (Outcome.SUCCESS,)
_FAILED = (Outcome.FAILURE, Outcome.PARTIAL)


def intent_key(trajectory_id: str) -> str:
    """The key of a group started by ``trajectory_id`` when no earlier run matched it."""
    return f"intent:{trajectory_id}"


def _tools(traj: Trajectory) -> Counter[str]:
    return Counter(
        a.tool for a in changing(Action(c.tool, c.args) for c in collect_calls(traj.events))
    )


def reference_for(failed: Trajectory, successes: list[Trajectory]) -> Trajectory | None:
    """The successful run most like ``failed``: most state-changing tools in common (as a
    multiset), then the most recent; ``None`` when there is none."""
    if not successes:
        return None
    mine = _tools(failed)
    return max(
        successes,
        key=lambda s: (sum((mine & _tools(s)).values()), s.started_at),
    )


@dataclass
class TaskGroups:
    """Task keys and group members of one memory (see the module docstring).

    Args:
        store: the SQL store (``set_task_key``, ``trajectory_tasks``, ``runs_of_task``,
            ``get_trajectory``).
        index: the vector index (episode tier search).
        embedder: embeds openers and episode summaries.
        threshold: cosine from which two openers are one intent (the embedder's
            ``dedup_threshold``).
    """

    store: Any
    index: VectorIndex
    embedder: Embedder
    threshold: float

    def key_for(self, traj: Trajectory) -> str:
        """``traj``'s task key: its own, else one assigned by intent and stored now."""
        if traj.task_key:
            return traj.task_key
        key = self._by_intent(traj) or intent_key(traj.id)
        self.store.set_task_key(traj.tenant_id, traj.id, key, "intent")
        return key

    def _by_intent(self, traj: Trajectory) -> str | None:
        opener = traj.task.strip()
        summary = summarize_episode(traj)
        if not opener or not summary:
            return None
        vec = self.embedder.embed([summary])[0]
        hits = self.index.search(
            vec,
            tenant_id=traj.tenant_id,
            namespaces=[traj.namespace],
            limit=INTENT_CANDIDATES,
            task_type=traj.task_type,
            kinds=[ExperienceKind.EPISODE.value],
        )
        episodes = self.store.get_experiences(traj.tenant_id, [h.id for h in hits])
        run_ids: list[str] = []
        for hit in hits:
            exp = episodes.get(hit.id)
            if exp is None or not exp.source_trajectory_ids:
                continue
            try:  # as the store spells it (an episode written by hand may spell it otherwise)
                run_id = normalize_id(exp.source_trajectory_ids[0], "trajectory id")
            except UsageError:
                continue  # not a run's id: no run to compare with
            if run_id != traj.id and run_id not in run_ids:
                run_ids.append(run_id)
        # the earlier runs' opening requests and keys only (one query, not each run with its
        # events); a run forgotten meanwhile is simply absent
        tasks = self.store.trajectory_tasks(traj.tenant_id, run_ids) if run_ids else {}
        runs = [
            (task, key)
            for task, key in (tasks[r] for r in run_ids if r in tasks)
            if task.strip() and key
        ]
        if not runs:
            return None
        vectors = self.embedder.embed([opener, *(task for task, _ in runs)])
        sims = np.asarray(vectors[1:]) @ np.asarray(vectors[0])
        best = int(np.argmax(sims))
        return runs[best][1] if float(sims[best]) >= self.threshold else None

    def _load(self, traj: Trajectory, ids: list[str]) -> list[Trajectory]:
        out = []
        for run_id in ids:
            try:
                out.append(self.store.get_trajectory(traj.tenant_id, run_id))
            except Exception:  # forgotten meanwhile
                continue
        return out

    def settle(self, traj: Trajectory) -> str | None:
        """The task key of a reviewed run that succeeded or failed (:meth:`key_for`: assigned
        by intent and stored when it has none), without reading its group; ``None`` for
        another outcome, or when the key could not be found (logged)."""
        if traj.outcome not in _SUCCESS and traj.outcome not in _FAILED:
            return None
        try:
            return self.key_for(traj)
        except Exception:
            log.warning("hindsight: task group of %s not found", traj.id, exc_info=True)
            return None

    def pairs(self, traj: Trajectory) -> list[tuple[Trajectory, Trajectory]]:
        """``(failed, reference)`` pairs to compare after reviewing ``traj`` (module
        docstring), its task key settled first (:meth:`settle`); ``[]`` when its group has no
        run of the other outcome."""
        key = self.settle(traj)
        if key is None:
            return []
        try:
            members = [m for m in self.store.runs_of_task(traj.tenant_id, key) if m.id != traj.id]
        except Exception:
            log.warning("hindsight: task group of %s not found", traj.id, exc_info=True)
            return []
        if traj.outcome in _FAILED:
            wins = [m.id for m in members if m.outcome in _SUCCESS]
            ref = reference_for(traj, self._load(traj, wins))
            return [(traj, ref)] if ref is not None else []
        losses = [m for m in members if m.outcome in _FAILED]
        losses.sort(key=lambda m: m.stored_at, reverse=True)
        return [(f, traj) for f in self._load(traj, [m.id for m in losses[:MAX_PAIRS]])]
