"""hindsight: experience memory for LLM agents.

Capture each run as a structured trajectory, review it after it ends, write the lessons back as
experiences whose confidence outcomes adjust, and recall the relevant ones into the tail of the
next run's system prompt.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hindsight._errors import (
        AuthenticationError,
        EmbedderMismatchError,
        EmbeddingError,
        HindsightError,
        InvalidTrajectoryError,
        MemoryClosedError,
        NotFoundError,
        ReviewError,
        ServiceError,
        StoreError,
        StoreLockedError,
        TenantRequiredError,
        UsageError,
    )
    from hindsight._paging import Page
    from hindsight._text import InvalidTextWarning
    from hindsight.capture import RunRecorder
    from hindsight.config import MemoryConfig, RecallWeights
    from hindsight.engine import AsyncMemory, EpisodeReceipt, Memory
    from hindsight.models import (
        AddResult,
        Event,
        EventStatus,
        EventType,
        ExpectedAction,
        Experience,
        ExperienceKind,
        ExperienceStatus,
        Outcome,
        OutcomeEvidence,
        Provenance,
        RecallHit,
        ScoreBreakdown,
        Trajectory,
    )
    from hindsight.ports import Lesson
    from hindsight.recall import Exclusion, RecallResult
    from hindsight.recall.render import BLOCK_END, BLOCK_START

_LAZY: dict[str, str] = {
    "AuthenticationError": "hindsight._errors",
    "EmbedderMismatchError": "hindsight._errors",
    "EmbeddingError": "hindsight._errors",
    "HindsightError": "hindsight._errors",
    "InvalidTrajectoryError": "hindsight._errors",
    "MemoryClosedError": "hindsight._errors",
    "NotFoundError": "hindsight._errors",
    "ReviewError": "hindsight._errors",
    "ServiceError": "hindsight._errors",
    "StoreError": "hindsight._errors",
    "StoreLockedError": "hindsight._errors",
    "TenantRequiredError": "hindsight._errors",
    "UsageError": "hindsight._errors",
    "Page": "hindsight._paging",
    "InvalidTextWarning": "hindsight._text",
    "RunRecorder": "hindsight.capture",
    "MemoryConfig": "hindsight.config",
    "RecallWeights": "hindsight.config",
    "AsyncMemory": "hindsight.engine",
    "EpisodeReceipt": "hindsight.engine",
    "Memory": "hindsight.engine",
    "AddResult": "hindsight.models",
    "Event": "hindsight.models",
    "EventStatus": "hindsight.models",
    "EventType": "hindsight.models",
    "ExpectedAction": "hindsight.models",
    "Experience": "hindsight.models",
    "ExperienceKind": "hindsight.models",
    "ExperienceStatus": "hindsight.models",
    "Outcome": "hindsight.models",
    "OutcomeEvidence": "hindsight.models",
    "Provenance": "hindsight.models",
    "RecallHit": "hindsight.models",
    "ScoreBreakdown": "hindsight.models",
    "Trajectory": "hindsight.models",
    "Lesson": "hindsight.ports",
    "Exclusion": "hindsight.recall",
    "RecallResult": "hindsight.recall",
    "BLOCK_END": "hindsight.recall.render",
    "BLOCK_START": "hindsight.recall.render",
}
"""Public name -> the module that defines it, imported on first use (PEP 562), so that
``import hindsight`` (and ``hindsight --help``) loads only what the first call needs."""

__version__ = "0.1.0"

__all__ = [
    "BLOCK_END",
    "BLOCK_START",
    "AddResult",
    "AsyncMemory",
    "AuthenticationError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "EpisodeReceipt",
    "Event",
    "EventStatus",
    "EventType",
    "Exclusion",
    "ExpectedAction",
    "Experience",
    "ExperienceKind",
    "ExperienceStatus",
    "HindsightError",
    "InvalidTextWarning",
    "InvalidTrajectoryError",
    "Lesson",
    "Memory",
    "MemoryClosedError",
    "MemoryConfig",
    "NotFoundError",
    "Outcome",
    "OutcomeEvidence",
    "Page",
    "Provenance",
    "RecallHit",
    "RecallResult",
    "RecallWeights",
    "ReviewError",
    "RunRecorder",
    "ScoreBreakdown",
    "ServiceError",
    "StoreError",
    "StoreLockedError",
    "TenantRequiredError",
    "Trajectory",
    "UsageError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hindsight' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
