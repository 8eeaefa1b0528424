"""Reviewer selection (config ``reviewer``) and the ``both`` reviewer.

``heuristic`` (default, offline), ``llm`` (:class:`~hindsight.review.LLMReviewer` from
``REFLECTION_MODEL`` / ``LLM_BASE_URL`` / ``LLM_API_KEY``) or ``both``: the heuristic lessons
plus the LLM's, without duplicates; both compare a failed run with a successful one of the
same task (:meth:`CombinedReviewer.contrast`).
"""

from __future__ import annotations

from collections.abc import Sequence

from hindsight._errors import UsageError
from hindsight.config import MemoryConfig
from hindsight.models import ExpectedAction, Trajectory
from hindsight.ports import Lesson, Reviewer
from hindsight.writeback.text import dedup_key

__all__ = ["REVIEWER_CHOICES", "CombinedReviewer", "content_key", "make_reviewer"]

REVIEWER_CHOICES = ("heuristic", "llm", "both")
"""Values of the ``reviewer`` setting (env ``HINDSIGHT_REVIEWER`` / ``REVIEWER``)."""


def content_key(text: str) -> str:
    """The key two lessons are duplicates by: the text up to case, whitespace and prose
    punctuation (:func:`hindsight.writeback.text.dedup_key`, the write-back's own test of the
    same text: ``"Retry once."`` and ``"retry  once"`` are one lesson, ``"x > 5"`` and
    ``"x < 5"`` or ``"x²"`` and ``"x2"`` are two)."""
    return dedup_key(text)


class CombinedReviewer:
    """Several reviewers on one trajectory, their lessons concatenated without duplicates.

    Two lessons are duplicates when their contents are equal up to case, whitespace and
    prose punctuation (:func:`content_key`); the first one (in ``parts``
    order) is kept. Only the first episode summary is kept.

    The engine runs the parts one by one itself (:mod:`hindsight.review.run`), so that one
    part's lessons are stored even when another part fails, each under its own reviewer name.

    Args:
        parts: the reviewers, in order (config ``both``: heuristic, then LLM).

    Raises:
        UsageError: fewer than two parts.
    """

    def __init__(self, parts: Sequence[Reviewer]) -> None:
        if len(parts) < 2:
            raise UsageError("CombinedReviewer needs at least two reviewers")
        self.parts: tuple[Reviewer, ...] = tuple(parts)
        self.name = "+".join(p.name for p in self.parts)

    def __repr__(self) -> str:
        return f"CombinedReviewer({list(self.parts)!r})"

    async def review(self, trajectory: Trajectory) -> list[Lesson]:
        """Every part's lessons, in part order, duplicates dropped.

        Raises:
            ReviewError: the first part that failed (no partial result is returned here; the
                engine's review path keeps the parts that succeeded).
        """
        out: list[Lesson] = []
        seen: set[str] = set()
        episode = False
        for part in self.parts:
            for lesson in await part.review(trajectory):
                if lesson.kind.value == "episode":
                    if not episode:
                        episode = True
                        out.append(lesson)
                    continue
                key = content_key(lesson.content)
                if key and key not in seen:
                    seen.add(key)
                    out.append(lesson)
        return out

    async def contrast(
        self, failed: Trajectory, reference: Trajectory | list[ExpectedAction]
    ) -> list[Lesson]:
        """Every part's contrastive lessons (docs/review.md), in part order, duplicates
        dropped as in :meth:`review`: each part that has a ``contrast(failed, reference)``
        method compares ``failed`` with ``reference`` (a successful run of the same task, or
        the expected actions); parts without one (the heuristic reviewer) are skipped.

        Raises:
            ReviewError: the first part that failed.
        """
        out: list[Lesson] = []
        seen: set[str] = set()
        for part in self.parts:
            contrast = getattr(part, "contrast", None)
            if contrast is None:
                continue
            for lesson in await contrast(failed, reference):
                key = content_key(lesson.content)
                if key and key not in seen:
                    seen.add(key)
                    out.append(lesson)
        return out


def make_reviewer(config: MemoryConfig) -> Reviewer:
    """The reviewer the ``reviewer`` setting names.

    ``heuristic`` -> :class:`~hindsight.review.HeuristicReviewer`; ``llm`` ->
    :meth:`LLMReviewer.from_config <hindsight.review.LLMReviewer.from_config>`; ``both`` ->
    :class:`CombinedReviewer` of the two. Case and surrounding spaces are ignored.

    Raises:
        UsageError: an unknown name, or ``llm`` / ``both`` without ``REFLECTION_MODEL``.
    """
    from hindsight.review.heuristic.reviewer import HeuristicReviewer

    name = (config.reviewer or "").strip().lower()
    if name not in REVIEWER_CHOICES:
        raise UsageError(
            f"unknown reviewer {config.reviewer!r}; choose one of {', '.join(REVIEWER_CHOICES)}"
        )
    if name == "heuristic":
        return HeuristicReviewer()
    if not config.reflection_model:
        raise UsageError(
            f"reviewer {name!r} needs a model: set REFLECTION_MODEL (or "
            "HINDSIGHT_REFLECTION_MODEL), e.g. 'openai/gpt-4o-mini' or 'ollama/qwen2.5:7b', "
            "and LLM_BASE_URL for a local or OpenAI-compatible server"
        )
    from hindsight.review.llm.reviewer import LLMReviewer

    llm = LLMReviewer.from_config(config)
    return llm if name == "llm" else CombinedReviewer([HeuristicReviewer(), llm])
