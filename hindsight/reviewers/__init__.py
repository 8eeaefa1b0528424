"""Reviewers turn a finished trajectory into lessons (MISSION S2).

* :class:`HeuristicReviewer`: deterministic, no model (config ``reviewer=heuristic``, default).
* :class:`LLMReviewer`: a language model through litellm (``reviewer=llm``; configured by
  ``REFLECTION_MODEL``, ``LLM_BASE_URL``, ``LLM_API_KEY``); it raises
  :class:`ReviewTimeoutError` when the model does not answer in time and
  :class:`ReportParseError` when its reply holds no usable report (cases C06, C21, C22).
* :class:`CombinedReviewer`: several reviewers, lessons deduplicated (``reviewer=both``).
* :func:`make_reviewer`: the reviewer a :class:`~hindsight.MemoryConfig` names.

All implement the :class:`hindsight.ports.Reviewer` port. The LLM names are imported on first
use (they pull in httpx), so ``import hindsight`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hindsight.reviewers._parse import ReportParseError
from hindsight.reviewers.combined import (
    REVIEWER_CHOICES,
    CombinedReviewer,
    content_key,
    make_reviewer,
)
from hindsight.reviewers.heuristic import HeuristicReviewer, has_reviewable_content
from hindsight.reviewers.prompts import PROMPT_VERSION, ReviewReport

if TYPE_CHECKING:
    from hindsight.reviewers.llm import LLMReviewer, ReviewTimeoutError

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


def __getattr__(name: str) -> Any:
    if name in ("LLMReviewer", "ReviewTimeoutError"):
        from hindsight.reviewers import llm

        return getattr(llm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
