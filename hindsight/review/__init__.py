"""Review (docs/review.md): after a run ends, turn its trajectory into lessons and an episode.

Owns the reviewers (:mod:`.heuristic`: deterministic, no model, the default; :mod:`.llm`: a
language model through litellm, its prompts and the parsing of its replies; :mod:`.combined`:
both, lessons deduplicated, and :func:`make_reviewer`), the compression of long trajectories
before a model sees them (:mod:`.compress`), the episode summary of a run (:mod:`.episodes`),
one review run from reviewer to stored lessons (:mod:`.run`), the gate every reviewer's
lessons pass (:mod:`.gate`: masking, provenance sealed before masking) and the review jobs:
the worker that claims them (:mod:`.worker`, in process) and worker processes
(:mod:`.workers`, ``hindsight worker``). Every reviewer implements the
:class:`hindsight.ports.Reviewer` port.

* :class:`HeuristicReviewer`: config ``reviewer=heuristic`` (default).
* :class:`LLMReviewer`: ``reviewer=llm``, configured by ``REFLECTION_MODEL``, ``LLM_BASE_URL``,
  ``LLM_API_KEY``; it raises :class:`ReviewTimeoutError` when the model does not answer in
  time and :class:`ReportParseError` when its reply holds no usable report.
* :class:`CombinedReviewer`: several reviewers, lessons deduplicated (``reviewer=both``).
* :func:`make_reviewer`: the reviewer a :class:`~hindsight.MemoryConfig` names.

The names here are imported on first use (the LLM reviewer pulls in httpx), so ``import
hindsight`` stays fast.

May import: the foundation, capture (reading trajectories), the store (review jobs) and
write-back (a review writes its lessons through the write path). Never recall, the engine, the
service or the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hindsight._lazy import lazy_attributes

if TYPE_CHECKING:
    from hindsight.review.combined import (
        REVIEWER_CHOICES,
        CombinedReviewer,
        content_key,
        make_reviewer,
    )
    from hindsight.review.heuristic.reviewer import HeuristicReviewer, has_reviewable_content
    from hindsight.review.llm._parse import ReportParseError
    from hindsight.review.llm.prompts import PROMPT_VERSION, ReviewReport
    from hindsight.review.llm.reviewer import LLMReviewer, ReviewTimeoutError

__all__ = [
    "PROMPT_VERSION",
    "REVIEWER_CHOICES",
    "CombinedReviewer",
    "HeuristicReviewer",
    "LLMReviewer",
    "ReportParseError",
    "ReviewReport",
    "ReviewTimeoutError",
    "content_key",
    "has_reviewable_content",
    "make_reviewer",
]

_WHERE = {
    "PROMPT_VERSION": "hindsight.review.llm.prompts",
    "ReviewReport": "hindsight.review.llm.prompts",
    "ReportParseError": "hindsight.review.llm._parse",
    "LLMReviewer": "hindsight.review.llm.reviewer",
    "ReviewTimeoutError": "hindsight.review.llm.reviewer",
    "HeuristicReviewer": "hindsight.review.heuristic.reviewer",
    "has_reviewable_content": "hindsight.review.heuristic.reviewer",
    "REVIEWER_CHOICES": "hindsight.review.combined",
    "CombinedReviewer": "hindsight.review.combined",
    "content_key": "hindsight.review.combined",
    "make_reviewer": "hindsight.review.combined",
}


__getattr__, __dir__ = lazy_attributes(__name__, _WHERE, globals())
