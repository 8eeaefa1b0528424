"""The heuristic reviewer: deterministic lessons from a run's structured events, no LLM.

It answers the review questions a run's events can answer in general terms
(docs/review.md#what-a-review-learns): which tools failed or timed out and under which
conditions (``tool_reliability``), identical failing calls repeated (``anti_pattern``),
failures followed by a call that went through and what changed (``improvement``). What a
failed run did differently from a success or from its expected actions is not a rule on its
own: one run cannot say *when* it applies, so it stays evidence for condition mining across
runs (:mod:`hindsight.review.mining`, docs/review.md#condition-mining), which writes the rules
whose condition separates outcomes. How the run went (outcome, steps, turning point) is its
episode, not a lesson (:mod:`hindsight.review.episodes`).
Confidences and the lesson metadata are documented in :mod:`hindsight.review.heuristic._lessons`.
"""

from __future__ import annotations

from hindsight.models import EventType, Trajectory
from hindsight.ports import Lesson
from hindsight.review._calls import collect_calls
from hindsight.review._text import is_mostly_cjk, one_line
from hindsight.review.gate import LessonGate
from hindsight.review.heuristic._lessons import (
    Context,
    anti_patterns,
    fixes,
    tool_reliability,
)
from hindsight.review.heuristic._templates import Lang

__all__ = ["HeuristicReviewer", "has_reviewable_content"]

_TOOL_EVENTS = (EventType.TOOL_CALL, EventType.TOOL_RESULT, EventType.ERROR)
_BLANK = {"", "none", "null", "n/a"}


def has_reviewable_content(trajectory: Trajectory) -> bool:
    """True when a run has a non-blank user message or a tool call or result.

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


def _context(trajectory: Trajectory, gate: LessonGate) -> Context:
    return Context(
        lang=run_language(trajectory),
        trajectory_id=trajectory.id,
        calls=collect_calls(trajectory.events),
        outcome=trajectory.outcome,
        masker=gate.masker,
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
    failure that a later call got through (``improvement``). Each content is one sentence of
    at most 320 characters with every run-specific value masked
    (:mod:`hindsight.review.masking`), in Chinese when the run is mostly CJK text, and the
    provenance of its words in ``metadata["provenance"]``
    (:class:`hindsight.review.gate.LessonGate`, the gate the LLM reviewer's lessons pass too).
    Lessons are unique within a review; empty or content-free runs give ``[]``. It never
    raises on well-formed trajectories.
    """

    name = "heuristic"

    def review_sync(self, trajectory: Trajectory) -> list[Lesson]:
        """Review ``trajectory`` synchronously; see the class docstring for the lessons."""
        if not has_reviewable_content(trajectory):
            return []
        gate = LessonGate(trajectory)
        ctx = _context(trajectory, gate)
        return gate.seal(_unique([*tool_reliability(ctx), *anti_patterns(ctx), *fixes(ctx)]))

    async def review(self, trajectory: Trajectory) -> list[Lesson]:
        """Review ``trajectory``; the async form of :meth:`review_sync` (CPU-only, quick)."""
        return self.review_sync(trajectory)
