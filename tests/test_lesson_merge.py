"""Lessons across runs: extra sources (``Lesson.sources``), merge on ``metadata["lesson_key"]``
and evidence-based confidence through the review path (issue 15 items 5, issue 17 item 3)."""

from __future__ import annotations

import uuid

import pytest

from hindsight import ExperienceKind, Lesson, Trajectory
from hindsight.testing import ScriptedReviewer, test_memory


def _traj(text: str, *, tenant: str = "t", outcome: str = "failure") -> Trajectory:
    return Trajectory.model_validate(
        {
            "tenant_id": tenant,
            "task_type": "booking",
            "outcome": outcome,
            "events": [{"event_type": "user_message", "content": text}],
        }
    )


def test_lesson_sources_become_source_trajectory_ids_in_order_without_repeats() -> None:
    ref, other = str(uuid.uuid4()), str(uuid.uuid4())

    def lessons(traj: Trajectory) -> list[Lesson]:
        return [
            Lesson(
                kind=ExperienceKind.RULE,
                content="Before booking, check that the payment methods cover the total.",
                confidence=0.6,
                sources=[ref.upper(), traj.id, ref, "{" + other + "}"],
            )
        ]

    with test_memory(reviewer=ScriptedReviewer(lessons)) as mem:
        run = mem.store_episode(_traj("book a flight"))
        mem.flush()
        rules = [e for e in mem.list_experiences(tenant_id="t") if e.kind == ExperienceKind.RULE]
        assert [e.source_trajectory_ids for e in rules] == [[run.trajectory_id, ref, other]]


def test_lesson_sources_default_empty() -> None:
    lesson = Lesson(kind=ExperienceKind.RULE, content="x", confidence=0.5)
    assert lesson.sources == []
    with pytest.raises(ValueError):
        Lesson(kind=ExperienceKind.RULE, content="x", confidence=0.5, sources=["run-1"])
