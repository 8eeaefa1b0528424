"""Output shapes of the MCP tools (docs/mcp.md).

Each tool's return annotation is one of these pydantic models, so the SDK publishes it as the
tool's ``outputSchema`` and returns it as ``structuredContent`` (plus the same JSON as text for
clients that only read text). They carry what an agent needs, never another tenant's data:
every value comes from the caller's own experiences.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from hindsight._contract import Confidence, Content, Importance, Kind, Source, Tags, Tools
from hindsight.checks import CheckMatch
from hindsight.models import AddResult, Experience, ExperienceKind, Provenance, RecallHit
from hindsight.store import TrajectorySummary

__all__ = [
    "AddedList",
    "AddedOut",
    "CheckOut",
    "ChecksOut",
    "EpisodeStored",
    "ExperienceOut",
    "ForgetResult",
    "HitOut",
    "LessonIn",
    "OutcomeResult",
    "QuarantineList",
    "QuarantinedOut",
    "RecallOut",
    "RescanResult",
    "ReviewResult",
    "ScoreOut",
    "TrajectoryList",
    "TrajectoryOut",
]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExperienceOut(_Out):
    """One experience (a lesson, or the summary of one run when ``kind`` is ``episode``).

    ``confidence`` is in [0, 1]; ``status`` is ``active``, ``quarantined`` (held back by the
    memory guard, never recalled), ``archived``, ``superseded`` or ``deleted``.
    """

    id: str = Field(description="Experience id (UUID).")
    content: str = Field(description="The lesson, one sentence or a short rule.")
    kind: str = Field(description="rule, failure_cause, tool_reliability, improvement, ...")
    task_type: str | None = Field(description="Class of task it applies to, if known.")
    namespace: str
    confidence: float = Field(ge=0.0, le=1.0)
    status: str
    tools: list[str] = Field(description="Tools the lesson is about.")
    tags: list[str]
    source_trajectory_ids: list[str] = Field(description="Runs it was learned from.")
    version: int = Field(ge=1)

    @classmethod
    def of(cls, exp: Experience) -> ExperienceOut:
        """The output shape of an :class:`~hindsight.models.Experience`."""
        return cls.model_validate(exp.model_dump(mode="json", include=set(cls.model_fields)))


class QuarantinedOut(ExperienceOut):
    """A lesson with the memory guard's reasons, one line each (``"<rule or layer>: <why>"``;
    empty when the guard never flagged it). A ``quarantined`` one is never recalled until a
    human approves it."""

    reasons: list[str] = Field(description="Why the memory guard quarantined it.")
    quarantined_at: str | None
    provenance: str = Field(description="system, user, tool or unknown.")
    trust: float = Field(ge=0.0, le=1.0)

    @classmethod
    def of(cls, exp: Experience) -> QuarantinedOut:
        """The output shape of a quarantined :class:`~hindsight.models.Experience`."""
        meta = exp.metadata
        return cls(
            **ExperienceOut.of(exp).model_dump(),
            reasons=[str(r) for r in meta.get("quarantine_reasons", [])],
            quarantined_at=meta.get("quarantined_at"),
            provenance=exp.provenance.value,
            trust=exp.trust,
        )


class QuarantineList(_Out):
    """The tenant's quarantined lessons, most confident first."""

    items: list[QuarantinedOut]
    next_cursor: str | None = Field(
        default=None,
        description="Pass as cursor for the next page; null on the last page.",
    )


class RescanResult(_Out):
    """What a rescan changed: with an ``experience_id``, that lesson as stored; without, the
    lessons newly quarantined or given new reasons."""

    items: list[QuarantinedOut]


class ScoreOut(_Out):
    """Why an experience was recalled (docs/concepts.md): ``score = (0.6*similarity +
    0.3*confidence + 0.1*recency) * trust + boost + kind_bonus`` with the configured weights;
    ``similarity`` is at least ``situation`` (the situation match, docs/concepts.md)."""

    similarity: float
    confidence: float
    recency: float = Field(description="0.5 ** (age_days / half_life_days), in (0, 1].")
    trust: float
    boost: float = Field(description="Tag / task_type match bonus.")
    kind_bonus: float = Field(default=0.0, description="Per experience kind bonus.")
    situation: float | None = Field(
        default=None,
        description="Cosine of the query and the episode of a run the lesson was learned from.",
    )
    situation_episode: str | None = Field(default=None, description="That episode's id.")
    reasons: list[str]


class HitOut(ExperienceOut):
    """A recalled experience with its final score and the breakdown of that score: the hit
    shape of every interface (``experience``, ``score``, ``breakdown``), plus the
    experience's fields flat and ``why`` (= ``breakdown``), the older shape, kept."""

    experience: ExperienceOut = Field(description="The recalled experience.")
    score: float
    breakdown: ScoreOut = Field(description="The terms of the score.")
    why: ScoreOut = Field(description="Same as breakdown (kept for older clients).")

    @classmethod
    def of_hit(cls, hit: RecallHit) -> HitOut:
        """The output shape of a :class:`~hindsight.models.RecallHit`."""
        why = ScoreOut.model_validate(
            hit.breakdown.model_dump(mode="json", include=set(ScoreOut.model_fields))
        )
        exp = ExperienceOut.of(hit.experience)
        return cls(**exp.model_dump(), experience=exp, score=hit.score, breakdown=why, why=why)


class RecallOut(_Out):
    """What ``recall_similar`` returns."""

    query: str = Field(description="The query exactly as received.")
    hits: list[HitOut] = Field(description="Best first; empty when nothing relevant is stored.")
    episodes: list[HitOut] = Field(description="Similar past runs (include_episodes only).")
    rendered: str = Field(
        description="The hits as one delimited block for the tail of a system prompt "
        "(docs/concepts.md); empty when nothing was recalled."
    )
    truncated: bool = Field(description="The block was cut to fit its token budget.")


class CheckOut(_Out):
    """One risk check matching the proposed call (docs/checks.md)."""

    advice: str = Field(description="What to check before the call (the lesson's text).")
    severity: str = Field(description="high (a rule), medium (an observed failure), low.")
    score: float = Field(description="confidence * trust * match weight, in [0, 1].")
    match: str = Field(
        description="call (about every call), class (the class a failed run passed), "
        "argument, other_class, absent (the argument is not passed), instead (about "
        "another tool, which failed runs did not call where they called this one), expected "
        "(the class that worked)."
    )
    argument: str | None = Field(description="The argument the condition is about, if any.")
    argument_class: str | None = Field(description="The class of the argument you passed.")
    lesson_id: str
    confidence: float

    @classmethod
    def of(cls, m: CheckMatch) -> CheckOut:
        """The output shape of a :class:`~hindsight.checks.CheckMatch`."""
        cond = m.check.conditions[0].key if m.check.conditions else None
        return cls(
            advice=m.check.advice, severity=m.check.severity, score=m.score, match=m.match,
            argument=cond, argument_class=m.argument_class, lesson_id=m.check.lesson_id,
            confidence=m.check.confidence,
        )  # fmt: skip


class ChecksOut(_Out):
    """What ``check_action`` returns."""

    tool: str
    checks: list[CheckOut] = Field(description="Best first; empty when nothing matched.")
    rendered: str = Field(
        description="The checks as one delimited block of reference data to read before the "
        "call; empty when nothing matched."
    )


class EpisodeStored(_Out):
    """What ``store_episode`` returns."""

    trajectory_id: str = Field(description="Id of the stored run; pass it to the other tools.")
    stored: bool = Field(description="False when this run was already stored (idempotent).")
    review_queued: bool = Field(
        description="A background review will turn the run into lessons (false for empty "
        "runs and for runs stored before)."
    )
    format: str = Field(description="How the trajectory was read: trajectory, openai, ...")
    task_type: str | None
    events: int = Field(ge=0, description="Number of events parsed.")
    outcome: str = Field(description="success, failure, partial or unknown.")
    task_key: str | None = Field(
        default=None, description="The run's task group key, when the transcript gave one."
    )


class ReviewResult(_Out):
    """What ``summarize_trajectory`` returns."""

    trajectory_id: str
    lessons: list[ExperienceOut] = Field(description="Lessons written (deduplicated).")
    episode: ExperienceOut | None = Field(description="The one-paragraph summary of the run.")


class OutcomeResult(_Out):
    """What ``record_outcome`` returns."""

    trajectory_id: str
    success: bool
    updated: list[ExperienceOut] = Field(
        description="Experiences that run recalled, with their new confidence (empty when the "
        "run recalled nothing or its outcome was already recorded)."
    )


def json_list(value: Any) -> Any:
    """A list sent as JSON text (``'["a", "b"]'``) as the list: what the MCP SDK does for a
    tool's own list arguments (hosts that send every argument as text), inside a lesson too."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, list) else value
    return value


class LessonIn(_Out):
    """One lesson of ``add_experiences``."""

    content: Content = Field(description="The lesson, as stored.")
    kind: Kind = Field(
        default=ExperienceKind.RULE, description="rule, improvement, anti_pattern, ..."
    )
    task_type: str | None = Field(default=None, description="Class of task it applies to.")
    tools: Annotated[Tools, BeforeValidator(json_list)] = Field(
        default_factory=list, description="Tools it is about."
    )
    tags: Annotated[Tags, BeforeValidator(json_list)] = Field(
        default_factory=list, description="Context tags."
    )
    confidence: Confidence = Field(default=0.5, description="How sure, 0..1.")
    importance: Importance = Field(default=0.5, description="How much it matters, 0..1.")
    source: Source = Field(
        default=Provenance.USER,
        description="Where it comes from: system, user, tool or unknown, or another spelling "
        "of one (tool_output, web, ...; empty for unknown).",
    )


class AddedOut(_Out):
    """What became of one lesson of ``add_experiences``."""

    index: int = Field(ge=0, description="Its position in the input.")
    id: str = Field(description="The lesson that now holds it (new, or the one merged into).")
    result: str = Field(description="created, merged or quarantined.")
    lesson: QuarantinedOut

    @classmethod
    def of(cls, added: AddResult) -> AddedOut:
        """The output shape of an :class:`~hindsight.models.AddResult`."""
        return cls(
            index=added.index,
            id=added.id,
            result=added.result,
            lesson=QuarantinedOut.of(added.experience),
        )


class AddedList(_Out):
    """What ``add_experiences`` returns: one entry per lesson, in input order."""

    items: list[AddedOut]


class ForgetResult(_Out):
    """What ``forget_experience`` returns."""

    experience_id: str
    status: str = Field(description="Always 'deleted'.")


class TrajectoryOut(_Out):
    """One stored run, without its events (``list_trajectories``)."""

    id: str = Field(description="Trajectory id (UUID).")
    task: str = Field(description="The task (the first user message).")
    task_type: str | None
    namespace: str
    outcome: str = Field(description="success, failure, partial or unknown.")
    reward: float | None = Field(description="The environment's reward, if any.")
    task_key: str | None = Field(description="The run's task group, if any.")
    task_key_source: str | None = Field(
        description="explicit (given by the caller or the source) or intent (assigned by the "
        "review from a similar earlier run)."
    )
    reason: str | None = Field(description="Why the run got its outcome, if known.")
    system_prompt_sha256: str | None = Field(description="SHA-256 of its system prompt.")
    events: int = Field(ge=0)
    reviewed: bool = Field(description="Its review has run.")
    stored_at: str = Field(description="When it was stored (ISO 8601, UTC).")

    @classmethod
    def of(cls, run: TrajectorySummary) -> TrajectoryOut:
        """The output shape of a :class:`~hindsight.store.TrajectorySummary`."""
        doc = run.to_json()
        doc["events"] = doc.pop("event_count")
        return cls.model_validate({k: v for k, v in doc.items() if k in cls.model_fields})


class TrajectoryList(_Out):
    """The caller's stored runs, oldest stored first."""

    items: list[TrajectoryOut]
    next_cursor: str | None = Field(
        default=None,
        description="Pass as cursor for the next page; null on the last page.",
    )
