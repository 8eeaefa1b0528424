"""The heuristic reviewer: deterministic lessons from a run's structured events, no LLM.

It answers the review questions of MISSION S2 from what the events show: outcome and key
step or direct cause (``outcome``, ``key_step``, ``failure_cause``), tools that failed or timed
out and under which arguments (``tool_reliability``), identical failing calls repeated
(``anti_pattern``), failures followed by a call that worked and what changed
(``improvement``), and the class of task (``task_scope``). Confidences are documented in
:mod:`hindsight.review.heuristic._lessons`.
"""

from __future__ import annotations

import re

from hindsight.models import EventType, Trajectory
from hindsight.ports import Lesson
from hindsight.review._calls import collect_calls
from hindsight.review._text import is_mostly_cjk, one_line, task_summary
from hindsight.review.heuristic._lessons import (
    Context,
    anti_patterns,
    improvements,
    outcome_and_key_step,
    task_scope,
    tool_reliability,
)
from hindsight.review.heuristic._templates import Lang, render

__all__ = ["HeuristicReviewer", "has_reviewable_content"]

_TOOL_EVENTS = (EventType.TOOL_CALL, EventType.TOOL_RESULT, EventType.ERROR)
_BLANK = {"", "none", "null", "n/a"}
# Closing pleasantries are not the answer that decided a run; the reply before them is.
_CLOSING = re.compile(
    r"^\W*(?:you'?re welcome|you are welcome|thank|glad|happy to help|have a (?:great|nice|good)"
    r"|goodbye|bye|take care|不客气|谢谢|再见)",
    re.IGNORECASE,
)
_ANSWER_TYPES = (EventType.FINAL_ANSWER, EventType.MODEL_CALL)


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


def _task_text(trajectory: Trajectory) -> str:
    if trajectory.task.strip():
        return trajectory.task
    return next(
        (
            e.content
            for e in trajectory.events
            if e.event_type is EventType.USER_MESSAGE and e.content.strip()
        ),
        "",
    )


def _context(trajectory: Trajectory) -> Context:
    task_text = _task_text(trajectory)
    user_text = " ".join(
        e.content for e in trajectory.events if e.event_type is EventType.USER_MESSAGE
    )
    lang: Lang = "zh" if is_mostly_cjk(task_text or user_text) else "en"
    summary = task_summary(task_text)
    if summary:
        subject = render("subject_task", lang, task=summary)
    elif trajectory.task_type:
        subject = render("subject_type", lang, task_type=trajectory.task_type)
    else:
        subject = render("subject_none", lang)
    answers = [
        e.content for e in trajectory.events if e.event_type in _ANSWER_TYPES and e.content.strip()
    ]
    final_answer = next(
        (a for a in reversed(answers) if not _CLOSING.match(a.strip())),
        answers[-1] if answers else "",
    )
    return Context(
        lang=lang,
        subject=subject,
        task=summary,
        task_type=trajectory.task_type,
        calls=collect_calls(trajectory.events),
        outcome=trajectory.outcome,
        reward=trajectory.reward,
        final_answer=final_answer,
    )


class HeuristicReviewer:
    """Deterministic post-hoc review without a model (implements :class:`hindsight.ports.Reviewer`).

    ``review_sync(t)`` returns, for a run with content, one lesson per: failing tool and error
    (``tool_reliability``), repeated identical failing call (``anti_pattern``), failure that a
    later call fixed (``improvement``), known outcome (``outcome``), key step or direct cause
    (``key_step`` / ``failure_cause``) and task class (``task_scope``). Each content is one
    sentence of at most 300 characters, in Chinese when the task is mostly CJK text. Lessons
    are unique within a run; empty or content-free runs give ``[]`` (case C05). It never
    raises on well-formed trajectories.
    """

    name = "heuristic"

    def review_sync(self, trajectory: Trajectory) -> list[Lesson]:
        """Review ``trajectory`` synchronously; see the class docstring for the lessons."""
        if not has_reviewable_content(trajectory):
            return []
        ctx = _context(trajectory)
        candidates = [
            *outcome_and_key_step(ctx),
            *tool_reliability(ctx),
            *anti_patterns(ctx),
            *improvements(ctx),
            *task_scope(ctx),
        ]
        lessons: list[Lesson] = []
        seen: set[str] = set()
        for lesson in candidates:
            norm = one_line(lesson.content).lower()
            if norm in _BLANK or norm in seen:
                continue
            seen.add(norm)
            lessons.append(lesson)
        return lessons

    async def review(self, trajectory: Trajectory) -> list[Lesson]:
        """Review ``trajectory``; the async form of :meth:`review_sync` (CPU-only, quick)."""
        return self.review_sync(trajectory)
