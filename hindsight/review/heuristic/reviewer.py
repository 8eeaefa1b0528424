"""The heuristic reviewer: deterministic lessons from a run's structured events, no LLM.

It answers the review questions of MISSION S2 that a run's events can answer in general terms:
which tools failed or timed out and under which conditions (``tool_reliability``), identical
failing calls repeated (``anti_pattern``), failures followed by a call that went through and
what changed (``improvement``), and - when a reference for the same task is known - what the
failed run did differently from it (``rule``): its outcome evidence's expected actions
(:meth:`HeuristicReviewer.review_sync`) or a successful run of the same task group
(:meth:`HeuristicReviewer.contrast_sync`, ExpeL's comparison). How the run went (outcome,
steps, turning point) is its episode, not a lesson (:mod:`hindsight.review.episodes`).
Confidences and the lesson metadata are documented in :mod:`hindsight.review.heuristic._lessons`.
"""

from __future__ import annotations

from hindsight.models import EventType, Outcome, Trajectory
from hindsight.ports import Lesson
from hindsight.review._calls import collect_calls
from hindsight.review._text import is_mostly_cjk, one_line
from hindsight.review.contrast import Action
from hindsight.review.heuristic._lessons import (
    Context,
    anti_patterns,
    contrast_lessons,
    fixes,
    tool_reliability,
)
from hindsight.review.heuristic._templates import Lang
from hindsight.review.masking import masker_for

__all__ = ["HeuristicReviewer", "has_reviewable_content"]

_TOOL_EVENTS = (EventType.TOOL_CALL, EventType.TOOL_RESULT, EventType.ERROR)
_BLANK = {"", "none", "null", "n/a"}
_FAILED = (Outcome.FAILURE, Outcome.PARTIAL)


def has_reviewable_content(trajectory: Trajectory) -> bool:
    """True when a run has a non-blank user message or a tool call or result (case C05).

    Runs without either (``[]``, blank messages, only empty content parts) have nothing to
    learn from; reviewers return ``[]`` for them without any model call.
    """
    if trajectory.is_empty():
        return False
    for event in trajectory.events:
        if event.event_type is EventType.USER_MESSAGE and event.content.strip():
            return True
        if event.event_type in _TOOL_EVENTS and (event.tool_name or event.content.strip()):
            return True
    return False


def run_language(trajectory: Trajectory) -> Lang:
    """``"zh"`` when the run's task or user messages are mostly CJK text, else ``"en"``."""
    text = trajectory.task or " ".join(
        e.content for e in trajectory.events if e.event_type is EventType.USER_MESSAGE
    )
    return "zh" if is_mostly_cjk(text) else "en"


def _context(trajectory: Trajectory, *others: Trajectory) -> Context:
    return Context(
        lang=run_language(trajectory),
        trajectory_id=trajectory.id,
        calls=collect_calls(trajectory.events),
        outcome=trajectory.outcome,
        masker=masker_for([trajectory, *others]),
    )


def _unique(lessons: list[Lesson]) -> list[Lesson]:
    out: list[Lesson] = []
    seen: set[str] = set()
    for lesson in lessons:
        norm = one_line(lesson.content).lower()
        key = str(lesson.metadata.get("lesson_key", norm))
        if norm in _BLANK or key in seen:
            continue
        seen.add(key)
        out.append(lesson)
    return out


class HeuristicReviewer:
    """Deterministic post-hoc review without a model (implements :class:`hindsight.ports.Reviewer`).

    ``review_sync(t)`` returns, for a run with content: one lesson per failing tool and masked
    error (``tool_reliability``), per repeated identical failing call (``anti_pattern``), per
    failure that a later call got through (``improvement``), and, for a failed run whose
    outcome evidence lists the expected actions, up to three ``rule`` lessons on what it did
    differently. ``contrast_sync(failed, reference)`` compares a failed run with a successful
    run of the same task. Each content is one sentence of at most 320 characters with every
    run-specific value masked (:mod:`hindsight.review.masking`), in Chinese when the run is
    mostly CJK text. Lessons are unique within a review; empty or content-free runs give
    ``[]`` (case C05). It never raises on well-formed trajectories.
    """

    name = "heuristic"

    def review_sync(self, trajectory: Trajectory) -> list[Lesson]:
        """Review ``trajectory`` synchronously; see the class docstring for the lessons."""
        if not has_reviewable_content(trajectory):
            return []
        ctx = _context(trajectory)
        lessons = [*tool_reliability(ctx), *anti_patterns(ctx), *fixes(ctx)]
        evidence = trajectory.evidence
        if trajectory.outcome in _FAILED and evidence is not None and evidence.expected_actions:
            expected = [Action(a.tool, a.args) for a in evidence.expected_actions]
            lessons += contrast_lessons(ctx, expected)
        return _unique(lessons)

    async def review(self, trajectory: Trajectory) -> list[Lesson]:
        """Review ``trajectory``; the async form of :meth:`review_sync` (CPU-only, quick)."""
        return self.review_sync(trajectory)

    def contrast_sync(self, failed: Trajectory, reference: Trajectory) -> list[Lesson]:
        """Rules from comparing ``failed`` with ``reference``, a successful run of the same
        task (ExpeL-style): what ``failed`` did differently at its state-changing calls. Both
        runs are the lessons' sources. ``[]`` when either has no content."""
        if not (has_reviewable_content(failed) and has_reviewable_content(reference)):
            return []
        ctx = _context(failed, reference)
        ref = [Action(c.tool, c.args) for c in collect_calls(reference.events)]
        return _unique(contrast_lessons(ctx, ref, reference_run=reference.id))

    async def contrast(self, failed: Trajectory, reference: Trajectory) -> list[Lesson]:
        """The async form of :meth:`contrast_sync`."""
        return self.contrast_sync(failed, reference)
