"""hindsight: experience memory for LLM agents.

Capture each run as a structured trajectory, review it after it ends, write the lessons back as
experiences whose confidence outcomes adjust, and recall the relevant ones into the tail of the
next run's system prompt.
"""

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
