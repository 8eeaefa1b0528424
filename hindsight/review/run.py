"""One review: run the reviewer(s) on one trajectory, write its lessons and its episode.

:class:`ReviewRun` is what the review jobs (:mod:`hindsight.review.runner`, in process, and
:mod:`hindsight.review.workers`) and :meth:`hindsight.AsyncMemory.review_now` run:

1. Each part of the reviewer runs in turn (one part, or the heuristic and the LLM reviewer of
   a :class:`~hindsight.review.CombinedReviewer`), all within ``review_timeout`` seconds.
   A part that runs out of time fails with :class:`~hindsight.review.ReviewTimeoutError`.
2. Each part's lessons are written as soon as it finishes, under that part's name
   (``reviewer`` of the experience), minus lessons an earlier part already gave (same
   normalised content): ``both`` never stores one lesson twice, and the heuristic lessons are
   kept even when the LLM part fails.
3. When every part succeeded, the run's episode is written (:mod:`hindsight.review.episodes`):
   the reviewer's own summary (a lesson of kind ``episode``) or the deterministic one.
4. Then the run's task group is settled and compared (:mod:`hindsight.review.groups`): for
   each (failed run, successful run) pair of its group, every part that can compare runs
   (a ``contrast(failed, reference)`` method: the LLM reviewer's) writes its contrastive rules,
   as lessons of the failed run with both runs as sources; a failed run without a successful
   sibling is compared with its outcome evidence's expected actions. The heuristic reviewer
   writes no contrastive rule: one comparison cannot say when a rule applies, so rules come
   from condition mining across runs (docs/review.md#condition-mining).
5. If a part failed, its error is raised after the writes, so the job records it and is
   retried (or fails visibly); a retry rewrites nothing already stored (stable ids).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hindsight.guard.provenance import PROVENANCE_KEY, RunSpans
from hindsight.guard.screening import seal_episode
from hindsight.models import Experience, ExperienceKind, Outcome, Trajectory
from hindsight.ports import Clock, Lesson, Reviewer
from hindsight.review.combined import CombinedReviewer, content_key
from hindsight.review.episodes import (
    answer_start,
    episode_experience,
    episode_id,
    summarize_episode,
)
from hindsight.review.groups import TaskGroups
from hindsight.review.heuristic import HeuristicReviewer, has_reviewable_content
from hindsight.writeback import PROVENANCE_TRUST, WriteBack, lessons_to_experiences

__all__ = ["ReviewRun", "review_parts"]


def review_parts(reviewer: Reviewer) -> list[Reviewer]:
    """The reviewers that run one after the other for ``reviewer`` (itself, or its parts)."""
    if isinstance(reviewer, CombinedReviewer):
        return list(reviewer.parts)
    return [reviewer]


async def _review_part(
    part: Reviewer, traj: Trajectory, deadline: float, timeout: float
) -> list[Lesson]:
    from hindsight.review.llm.reviewer import ReviewTimeoutError  # httpx: only when needed

    left = deadline - asyncio.get_running_loop().time()
    error = ReviewTimeoutError(
        f"review of trajectory {traj.id} by {part.name} timed out after {timeout:g} s "
        "(review_timeout); the job is retried later"
    )
    if left <= 0:
        raise error
    if isinstance(part, HeuristicReviewer):
        # CPU only: run it off the loop, so the loop stays free for the agent's calls.
        work: Any = asyncio.to_thread(part.review_sync, traj)
    else:
        work = part.review(traj)
    try:
        return list(await asyncio.wait_for(work, timeout=left))
    except TimeoutError:
        raise error from None


@dataclass(frozen=True, slots=True)
class ReviewRun:
    """One review, from reviewer to stored lessons and episode (see the module docstring).

    Args:
        reviewer: the memory's reviewer (one part, or a :class:`CombinedReviewer`).
        writeback: the write path the lessons and the episode take.
        store: the SQL store (to read back what the trajectory taught).
        embedding_model: the embedder's name, recorded on each experience.
        clock: creation times.
        timeout: ``review_timeout`` in seconds, for all parts together.
        groups: task groups for the contrastive step (``None``: single-run review only).
    """

    reviewer: Reviewer
    writeback: WriteBack
    store: Any
    embedding_model: str
    clock: Clock
    timeout: float
    groups: TaskGroups | None = None

    async def __call__(self, traj: Trajectory) -> list[Experience]:
        """Review ``traj`` and store what it taught.

        Returns:
            The trajectory's lessons and episode as stored now (including those an earlier
            review of it stored: reviews are idempotent per trajectory).

        Raises:
            ReviewTimeoutError: a part ran out of ``review_timeout`` (its last_error says so).
            ReviewError: a part failed (e.g. ``ReportParseError``: no usable reply); lessons of
                the parts that succeeded are stored first.
        """
        deadline = asyncio.get_running_loop().time() + self.timeout
        seen: set[str] = set()
        written: list[str] = []
        episode: tuple[Lesson, str] | None = None
        errors: list[BaseException] = []
        parts = review_parts(self.reviewer)
        # One part and no LLM judge: its lessons and the episode go in one write (one guard
        # pass, one transaction, one vector sync; the same decisions: the episode is of its
        # own dedup scope, never folded and never a conflict neighbour, and it comes last).
        together = len(parts) == 1 and getattr(self.writeback.screen, "judge", None) is None
        for part in parts:
            try:
                lessons = await _review_part(part, traj, deadline, self.timeout)
            except Exception as exc:
                errors.append(exc)
                continue
            kept: list[Lesson] = []
            for lesson in lessons:
                if lesson.kind is ExperienceKind.EPISODE:
                    episode = episode or (lesson, part.name)
                    continue
                key = content_key(lesson.content)
                if key and key not in seen:
                    seen.add(key)
                    kept.append(lesson)
            if together:
                ids = await asyncio.to_thread(self._write_all, traj, kept, part.name, episode)
                written.extend(ids)
            elif kept:
                stored, wanted = await asyncio.to_thread(self._write_lessons, traj, kept, part.name)
                written.extend(e.id for e in stored)
                written.extend(e.id for e in wanted)
        if not errors:
            if not together:
                eid = await asyncio.to_thread(self._write_episode, traj, episode)
                if eid is not None:
                    written.append(eid)
            try:
                await self._contrast(traj, deadline)
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
        found = await asyncio.to_thread(self.store.get_experiences, traj.tenant_id, written)
        return [found[i] for i in dict.fromkeys(written) if i in found]

    async def _contrast(self, traj: Trajectory, deadline: float) -> None:
        """Step 4 of the module docstring: compare ``traj`` with its group and store the
        rules (under the failed run of each pair)."""
        if self.groups is None or not has_reviewable_content(traj):
            return
        comparing = [
            p for p in review_parts(self.reviewer) if getattr(p, "contrast", None) is not None
        ]
        if not comparing:  # the heuristic reviewer: the run's task key only, no group read
            await asyncio.to_thread(self.groups.settle, traj)
            return
        pairs: list[tuple[Trajectory, Any]] = await asyncio.to_thread(self.groups.pairs, traj)
        evidence = traj.evidence
        expected_only = (
            not pairs
            and traj.outcome in (Outcome.FAILURE, Outcome.PARTIAL)
            and evidence is not None
            and bool(evidence.expected_actions)
        )
        for part in comparing:
            contrast = part.contrast  # type: ignore[attr-defined]
            todo = list(pairs)
            if expected_only:
                todo.append((traj, list(evidence.expected_actions)))  # type: ignore[union-attr]
            for failed, reference in todo:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    return
                lessons = list(await asyncio.wait_for(contrast(failed, reference), timeout=left))
                if lessons:
                    await asyncio.to_thread(self.write_lessons, failed, lessons, part.name)

    def write_lessons(
        self, traj: Trajectory, lessons: Sequence[Lesson], reviewer: str | None = None
    ) -> list[Experience]:
        """Turn lessons into experiences and store them (idempotent per trajectory).
        ``reviewer``: the name recorded on them (default: the memory's reviewer)."""
        return self._write_lessons(traj, lessons, reviewer or self.reviewer.name)[0]

    def _write_lessons(
        self, traj: Trajectory, lessons: Sequence[Lesson], reviewer: str
    ) -> tuple[list[Experience], list[Experience]]:
        """:meth:`write_lessons`, returning ``(stored now, every experience of the lessons)``:
        the second list has the stable ids of those an earlier review stored (one conversion
        of the lessons, not one for the write and one for the ids)."""
        exps = self._experiences(traj, lessons, reviewer)
        return (self.writeback.write(exps, trajectory=traj) if exps else []), exps

    def _experiences(
        self, traj: Trajectory, lessons: Sequence[Lesson], reviewer: str
    ) -> list[Experience]:
        """The lessons as experiences, with the ids they have whether written now or by an
        earlier review (stable ids)."""
        return lessons_to_experiences(
            traj,
            lessons,
            reviewer=reviewer,
            embedding_model=self.embedding_model,
            now=self.clock.now(),
        )

    def _write_all(
        self,
        traj: Trajectory,
        lessons: Sequence[Lesson],
        reviewer: str,
        given: tuple[Lesson, str] | None,
    ) -> list[str]:
        """The lessons of a one-part review and the run's episode in one write: returns the
        ids :meth:`__call__` collects, in the order the two writes would give (the lessons
        stored now, every lesson's stable id, then the episode's). Which of them an earlier
        review stored is read once, for the lessons and the episode together."""
        exps = self._experiences(traj, lessons, reviewer) if lessons else []
        eid = episode_id(traj.id) if has_reviewable_content(traj) else None
        wanted = [e.id for e in exps] + ([eid] if eid is not None else [])
        stored_ids = self.store.get_experiences(traj.tenant_id, wanted) if wanted else {}
        episode = None
        if eid is not None and eid not in stored_ids:
            episode = self._new_episode(traj, given)
            eid = eid if episode is not None else None
        todo = [e for e in exps if e.id not in stored_ids] + ([episode] if episode else [])
        stored = self.writeback.write_new(todo, trajectory=traj)
        # A lesson is never stored as (or folded into) an episode: the episode's scope is its
        # own kind.
        ids = [e.id for e in stored if e.kind is not ExperienceKind.EPISODE]
        ids.extend(e.id for e in exps)
        return ids if eid is None else [*ids, eid]

    def _write_episode(self, traj: Trajectory, given: tuple[Lesson, str] | None) -> str | None:
        """Write the episode of ``traj`` unless it is stored already: ``given`` is the
        reviewer's own summary and that reviewer's name, else the summary is
        :func:`summarize_episode`. Returns its id, or ``None`` for a run without reviewable
        content."""
        eid, exp = self._episode(traj, given)
        if exp is not None:
            self.writeback.write([exp], trajectory=traj)  # trajectory: the guard's taint check
        return eid

    def _episode(
        self, traj: Trajectory, given: tuple[Lesson, str] | None
    ) -> tuple[str | None, Experience | None]:
        """``(id, experience)`` of ``traj``'s episode for :meth:`_write_episode`: ``(id,
        None)`` when it is stored already, ``(None, None)`` when there is none to write."""
        if not has_reviewable_content(traj):
            return None, None
        eid = episode_id(traj.id)
        if self.store.get_experiences(traj.tenant_id, [eid]):
            return eid, None
        exp = self._new_episode(traj, given)
        return (eid, exp) if exp is not None else (None, None)

    def _new_episode(self, traj: Trajectory, given: tuple[Lesson, str] | None) -> Experience | None:
        """The episode experience of ``traj`` (not stored yet), or ``None`` when its summary is
        empty."""
        if given is not None:
            content, source, meta = given[0].content, given[1], dict(given[0].metadata)
        else:
            content, source, meta = summarize_episode(traj), "trajectory", {}
        if not content.strip():
            return None
        # an episode is judged by where its words came from, not by its wording
        # (docs/security.md#episodes): values it took from tool output alone are shown as
        # their class, a passage copied from one stays tainted
        spans = RunSpans.of(traj)
        content, record = spans.mask_data(content)
        # the words that are not the run's record (the agent's answer; an LLM's summary) are
        # read by the text layers as well, less what the user asked for: the seal keeps that
        # true only for this text
        recorded = [] if given is not None else [(0, answer_start(traj, content))]
        meta[PROVENANCE_KEY] = seal_episode(
            record.to_dict(), content, recorded, spans.user_words(content)
        )
        return episode_experience(
            traj,
            content,
            source=source,
            trust=round(traj.trust * PROVENANCE_TRUST.get(traj.source, 0.5), 4),
            embedding_model=self.embedding_model,
            now=self.clock.now(),
            metadata=meta,
        )
