"""The data model: events, trajectories, experiences and recall hits (docs/concepts.md).

All timestamps are timezone-aware UTC. A naive ``datetime`` given to any model is taken to be
UTC already (it is not converted from local time); an aware one is converted to UTC.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationInfo,
    field_validator,
    model_validator,
)

from hindsight._errors import UsageError
from hindsight._ids import new_id, normalize_id, validate_namespace, validate_tenant
from hindsight._text import (
    FREE_JSON_KEYS,
    STRICT_JSON_KEYS,
    clean_json,
    json_text,
    refuse_invalid,
    warning_scope,
)

__all__ = [
    "NAME_FIELDS",
    "PROVENANCE_SPELLINGS",
    "AddResult",
    "Event",
    "EventStatus",
    "EventType",
    "Exclusion",
    "ExpectedAction",
    "Experience",
    "ExperienceKind",
    "ExperienceStatus",
    "Outcome",
    "OutcomeEvidence",
    "Provenance",
    "RecallHit",
    "ScoreBreakdown",
    "Trajectory",
    "content_to_text",
    "provenance_of",
    "source_error",
    "utcnow",
]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def _to_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_to_utc)]


def content_to_text(value: Any) -> str:
    """Message content (a message's or a tool's reply) as text.

    ``None`` -> ``""``; a string is kept as is; bytes are decoded as UTF-8; a list of content
    parts (every item a plain string or an OpenAI / LangChain part such as
    ``{"type": "text", "text": ...}``) is its parts' text joined with newlines, skipping parts
    without text; any other value JSON can hold (a dict, a list of data, a number, a boolean)
    is its JSON text, one line (``{"ok": true}``: :func:`hindsight._text.json_text`).

    Raises:
        UsageError: bytes that are not UTF-8, or a value JSON cannot hold (a set, a datetime;
            one line naming ``content`` and the path inside).
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(
                "content is bytes that are not UTF-8 text; send a string", field="content"
            ) from None
    if isinstance(value, list) and all(_is_part(part) for part in value):
        texts = (content_to_text(p if isinstance(p, str) else _part_text(p)) for p in value)
        return "\n".join(text for text in texts if text.strip())
    return json_text(value, "content")


def _is_part(item: Any) -> bool:
    """A content part: a string, or an object with a ``type``, a ``text`` or a ``content``."""
    return isinstance(item, str) or (
        isinstance(item, dict) and bool({"type", "text", "content"} & item.keys())
    )


def _part_text(part: dict[str, Any]) -> Any:
    """A content part's text (``None`` for a part without: an image)."""
    return part.get("text", part.get("content"))


Text = Annotated[str, BeforeValidator(content_to_text)]


class EventType(StrEnum):
    """Kinds of trajectory events (docs/concepts.md#trajectories-and-events)."""

    USER_MESSAGE = "user_message"
    MODEL_THOUGHT = "model_thought"
    MODEL_CALL = "model_call"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    FINAL_ANSWER = "final_answer"
    ERROR = "error"
    CUSTOM = "custom"
    """An application-defined event (e.g. a LangChain custom event); ``metadata["name"]``."""


class EventStatus(StrEnum):
    """Status of a step; set on tool results, model calls and errors."""

    SUCCESS = "success"
    FAILURE = "failure"
    TIMEOUT = "timeout"


class Outcome(StrEnum):
    """How a run ended, as far as anyone knows."""

    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"
    UNKNOWN = "unknown"


PROVENANCE_SPELLINGS: Mapping[str, str] = MappingProxyType(
    {
        "operator": "system",
        "admin": "system",
        "developer": "system",
        "human": "user",
        "user_message": "user",
        "tool_output": "tool",
        "tool_result": "tool",
        "tool_call": "tool",
        "observation": "tool",
        "external": "unknown",
        "web": "unknown",
        "import": "unknown",
        "": "unknown",
    }
)
"""The other accepted spellings of a source, mapped to its name (case and surrounding
whitespace ignored; the empty string is ``unknown``): the table of
docs/security.md#layer-2-provenance-trust, the one table the API and the guard
(:data:`hindsight.guard.SOURCE_ALIASES`) accept."""


class Provenance(StrEnum):
    """Where the evidence for a run or lesson came from (provenance trust,
    docs/security.md#layer-2-provenance-trust). ``Provenance("tool_output")`` is ``TOOL``:
    every spelling of :data:`PROVENANCE_SPELLINGS` and any case are accepted."""

    SYSTEM = "system"
    USER = "user"
    TOOL = "tool"
    UNKNOWN = "unknown"

    @classmethod
    def _missing_(cls, value: object) -> Provenance | None:
        if not isinstance(value, str):
            return None
        key = value.strip().lower()
        key = PROVENANCE_SPELLINGS.get(key, key)
        return next((member for member in cls if member.value == key), None)


def source_error(value: object) -> str:
    """The one-line error for a ``source`` that is not a provenance, on every interface."""
    names = ", ".join(p.value for p in Provenance)
    spellings = ", ".join(k for k in PROVENANCE_SPELLINGS if k)
    return (
        f"source must be one of {names}, or another spelling of one ({spellings}; empty "
        f"for unknown), got {value!r:.60}"
    )


def provenance_of(value: object) -> Provenance:
    """``value`` as a :class:`Provenance` (any spelling of :data:`PROVENANCE_SPELLINGS`).

    Raises:
        ValueError: :func:`source_error` (not a string, or no spelling of a source).
    """
    if isinstance(value, str):
        try:
            return Provenance(value)
        except ValueError:
            pass
    raise ValueError(source_error(value))


def _source(value: Any) -> Any:
    return Provenance.USER if value is None else provenance_of(value)


SourceField = Annotated[Provenance, BeforeValidator(_source)]
"""A model field holding a :class:`Provenance`: any spelling, ``None`` for ``user``."""


class ExperienceKind(StrEnum):
    """What a lesson is about; one per answer of the review (docs/review.md).

    ``episode`` is not a lesson but the short summary of one run (episodic memory):
    every review writes one per trajectory; recall leaves episodes out unless asked for them
    (``include_episodes``).
    """

    OUTCOME = "outcome"
    KEY_STEP = "key_step"
    FAILURE_CAUSE = "failure_cause"
    TOOL_RELIABILITY = "tool_reliability"
    ANTI_PATTERN = "anti_pattern"
    IMPROVEMENT = "improvement"
    RULE = "rule"
    TASK_SCOPE = "task_scope"
    EPISODE = "episode"


class ExperienceStatus(StrEnum):
    """Lifecycle state; only ``active`` experiences are recalled.

    ``superseded``: a newer lesson replaced this one (``metadata["superseded_by"]``), see
    docs/lifecycle.md; kept for history and rollback, never recalled.
    """

    ACTIVE = "active"
    QUARANTINED = "quarantined"
    ARCHIVED = "archived"
    SUPERSEDED = "superseded"
    DELETED = "deleted"


#: Fields that are names (matched exactly): invalid text in them is refused, never replaced
#: (:mod:`hindsight._text`), also inside a free JSON object (a trajectory sent as a dict).
NAME_FIELDS = frozenset({"id", "tenant_id", "namespace", "task_type", "task_key"})


def _task_type(value: Any) -> Any:
    return refuse_invalid(value, "task_type") if isinstance(value, str) else value


STORED_KEY: Final = "stored"
"""Validation context key (``model_validate(data, context=STORED)``) of values read back from
the store: they were cleaned when written, so the text policy is not run on them again (the
types and constraints still are)."""
STORED: Final = MappingProxyType({STORED_KEY: True})


def _stored(info: ValidationInfo) -> bool:
    """Whether this validation reads values back from the store (context :data:`STORED`)."""
    context = info.context
    if context is None:
        return False
    return context is STORED or (isinstance(context, Mapping) and bool(context.get(STORED_KEY)))


class InputModel(BaseModel):
    """The invalid-value policy (:mod:`hindsight._text`) for a model built from input (every
    hindsight model, the HTTP request bodies, the MCP tool arguments): NaN and infinities
    refused in number fields; names (:data:`NAME_FIELDS`) holding a lone surrogate or NUL
    refused with one line naming the field; in every other field (recursively through free
    JSON) lone surrogates and NUL become U+FFFD and NaN/infinity ``null``, counted and
    reported once per validation (:class:`~hindsight.InvalidTextWarning` outside an interface
    that reports them its own way)."""

    model_config = ConfigDict(allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _valid_text(cls, value: Any, info: ValidationInfo) -> Any:
        if _stored(info):
            return value  # read back from the store: cleaned when it was written
        name = info.field_name or "value"
        if name in NAME_FIELDS:
            return refuse_invalid(value, name) if isinstance(value, str) else value
        if isinstance(value, float):
            return value  # a number with a meaning: NaN/infinity refused (allow_inf_nan)
        names = frozenset() if name in FREE_JSON_KEYS else NAME_FIELDS
        # Built in Python: the caller's own JSON (tool arguments, metadata, a final state),
        # here or inside (a trajectory's events given as dicts), must be JSON the store can
        # write; the other fields are the model's to check.
        strict = name in STRICT_JSON_KEYS
        return clean_json(value, name, names=names, strict=strict, strict_below=True)

    @model_validator(mode="wrap")
    @classmethod
    def _report_replacements(
        cls, data: Any, handler: ModelWrapValidatorHandler[Any], info: ValidationInfo
    ) -> Any:
        if _stored(info):
            return handler(data)  # read back from the store: nothing is replaced
        with warning_scope():
            return handler(data)


class _Model(InputModel):
    """Every hindsight model: unknown fields refused, assignments validated, and the
    invalid-value policy of :class:`InputModel`."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, use_enum_values=False, allow_inf_nan=False
    )


class Event(_Model):
    """One structured step of a run (docs/concepts.md#trajectories-and-events).

    ``latency_ms`` is in milliseconds; ``tool_args`` is the parsed argument object of a tool
    call. ``content`` accepts ``None`` (stored as ``""``) and lists of content parts.
    """

    event_id: str = Field(default_factory=new_id)
    trajectory_id: str | None = None
    parent_id: str | None = None
    event_type: EventType
    timestamp: UtcDatetime = Field(default_factory=utcnow)
    content: Text = ""
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_args: dict[str, Any] | None = None
    status: EventStatus | None = None
    latency_ms: float | None = Field(default=None, ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)


class ExpectedAction(_Model):
    """One call the run was expected to make: a tool and its arguments.

    E.g. a benchmark's ground-truth action (tau-bench ``info.task.actions``:
    ``{"name": ..., "kwargs": {...}}`` -> ``ExpectedAction(tool=name, args=kwargs)``) or a
    caller's own expectation. ``tool`` is non-blank; ``args`` is kept as given.
    """

    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("tool")
    @classmethod
    def _tool_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("tool must be a non-blank name")
        return value


class OutcomeEvidence(_Model):
    """Why a run got its outcome, as far as the environment or caller says (docs/review.md).

    ``reason``: a short human-readable reason (e.g. ``"reward 0.0; r_actions 0.0"`` built
    from a benchmark's reward breakdown, or the caller's words); ``expected_actions``: the
    calls a correct run makes, in order, when known; ``final_state``: the environment's final
    state when given (any JSON object); ``details``: any further structured evidence (e.g.
    tau-bench's ``reward_info.info``). Every field is optional; stored exactly as given.
    """

    reason: str | None = None
    expected_actions: list[ExpectedAction] = Field(default_factory=list)
    final_state: dict[str, Any] | None = None
    details: dict[str, Any] = Field(default_factory=dict)

    def is_empty(self) -> bool:
        """True when no field carries anything."""
        return not (
            (self.reason and self.reason.strip())
            or self.expected_actions
            or self.final_state is not None
            or self.details
        )


#: Longest task key, in characters.
def validate_reward(value: Any) -> float | None:
    """``value`` as a run's reward: ``None`` stays ``None``; a boolean is 1.0 / 0.0 (a log's
    pass/fail); a number or a string of one (``"0.5"``) is that float, which must be finite.
    Any range: a reward means what its environment says it means (tau-bench's 0.0/1.0).

    Raises:
        ValueError: ``reward must be a finite number, got <value>``.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    try:
        reward = float(value)
    except (TypeError, ValueError, OverflowError):
        reward = math.nan
    if not math.isfinite(reward):
        raise ValueError(f"reward must be a finite number, got {value!r:.60}")
    return reward


TASK_KEY_MAX_CHARS = 200


def validate_task_key(value: Any) -> str | None:
    """``value`` as a task key: ``None`` stays ``None``; otherwise a non-blank string of at
    most :data:`TASK_KEY_MAX_CHARS` characters (kept exactly as given; an int such as a
    benchmark's task id is turned into its decimal string).

    Raises:
        ValueError: blank, too long, or not a string / int.
    """
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"task_key must be a string, got {type(value).__name__}")
    refuse_invalid(value, "task_key")
    if not value.strip():
        raise ValueError("task_key must not be blank")
    if len(value) > TASK_KEY_MAX_CHARS:
        raise ValueError(
            f"task_key is {len(value)} characters; at most {TASK_KEY_MAX_CHARS} are allowed"
        )
    return value


def _prompt_text(value: Any) -> str | None:
    """A system prompt: ``None`` and blank text -> ``None``; content parts are flattened
    (:func:`content_to_text`); any other text is kept exactly."""
    if value is None:
        return None
    text = content_to_text(value) if isinstance(value, list) else value
    if isinstance(text, str) and not text.strip():
        return None
    return text


class Trajectory(_Model):
    """A whole run: its task, its ordered events and its outcome (episodic memory).

    ``reward`` is the environment's reward when there is one (e.g. tau-bench's 0.0/1.0).
    ``trust`` in [0,1] weighs the lessons learned from it at recall
    (docs/security.md#layer-2-provenance-trust).

    Context for the review (docs/concepts.md): ``system_prompt`` is the run's full system prompt /
    policy (the store keeps each distinct text once per tenant); ``evidence`` says why the run
    got its outcome (:class:`OutcomeEvidence`); ``task_key`` groups runs of the same task (a
    benchmark's task id, the caller's own key; non-blank, at most 200 characters); runs
    without one are grouped by intent at review time.
    """

    id: str = Field(default_factory=new_id)
    tenant_id: str
    namespace: str = "default"
    task: Text = ""
    task_type: Annotated[str | None, AfterValidator(_task_type)] = None
    tags: list[str] = Field(default_factory=list)
    outcome: Outcome = Outcome.UNKNOWN
    reward: Annotated[float | None, BeforeValidator(validate_reward)] = None
    source: SourceField = Provenance.USER
    trust: float = Field(default=1.0, ge=0.0, le=1.0)
    started_at: UtcDatetime = Field(default_factory=utcnow)
    ended_at: UtcDatetime | None = None
    events: list[Event] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    system_prompt: Annotated[str | None, BeforeValidator(_prompt_text)] = None
    evidence: OutcomeEvidence | None = None
    task_key: Annotated[str | None, BeforeValidator(validate_task_key)] = None

    _check_tenant = field_validator("tenant_id")(classmethod(lambda cls, v: validate_tenant(v)))
    _check_ns = field_validator("namespace")(classmethod(lambda cls, v: validate_namespace(v)))

    @field_validator("id", mode="before")
    @classmethod
    def _norm_id(cls, value: Any) -> str:
        return normalize_id(value, "trajectory id")

    def is_empty(self) -> bool:
        """True when no event carries any content, tool name or status (stored, never reviewed)."""
        return not any(
            e.content.strip() or e.tool_name or e.status is not None for e in self.events
        )


class Experience(_Model):
    """A lesson abstracted from one or more runs (semantic memory).

    ``confidence``, ``importance`` and ``trust`` are in [0,1]. ``version`` starts at 1 and
    ``parent_id`` points to the version it replaced. Counters: ``recall_count`` (times
    recalled), ``helped_count`` / ``misled_count`` (recalled by runs that then succeeded /
    failed), ``support_count`` (runs that produced the same lesson).
    """

    id: str = Field(default_factory=new_id)
    tenant_id: str
    namespace: str = "default"
    task_type: Annotated[str | None, AfterValidator(_task_type)] = None
    kind: ExperienceKind
    content: str = Field(min_length=1)
    tools: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    trust: float = Field(default=1.0, ge=0.0, le=1.0)
    provenance: SourceField = Provenance.USER
    source_trajectory_ids: list[str] = Field(default_factory=list)
    status: ExperienceStatus = ExperienceStatus.ACTIVE
    version: int = Field(default=1, ge=1)
    parent_id: str | None = None
    created_at: UtcDatetime = Field(default_factory=utcnow)
    updated_at: UtcDatetime = Field(default_factory=utcnow)
    last_recalled_at: UtcDatetime | None = None
    recall_count: int = Field(default=0, ge=0)
    helped_count: int = Field(default=0, ge=0)
    misled_count: int = Field(default=0, ge=0)
    support_count: int = Field(default=1, ge=1)
    embedding_model: str | None = None
    reviewer: str = "manual"
    metadata: dict[str, Any] = Field(default_factory=dict)

    _check_tenant = field_validator("tenant_id")(classmethod(lambda cls, v: validate_tenant(v)))
    _check_ns = field_validator("namespace")(classmethod(lambda cls, v: validate_namespace(v)))

    @field_validator("id", mode="before")
    @classmethod
    def _norm_id(cls, value: Any) -> str:
        return normalize_id(value, "experience id")

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must be a non-empty string")
        return value  # stored exactly as sent (docs/concepts.md): blank is checked, never trimmed

    @property
    def subject(self) -> str | None:
        """What the lesson is about when several lessons can be about one thing:
        ``metadata["subject"]`` when it is a non-empty string, else ``None``. The heuristic
        reviewer sets it to the tool error ``<tool>:<status>:<masked error>`` that its
        ``tool_reliability``, ``anti_pattern`` and ``improvement`` lessons share; recall shows
        one lesson per subject (docs/concepts.md#recall)."""
        value = self.metadata.get("subject")
        return value if isinstance(value, str) and value else None


class ScoreBreakdown(_Model):
    """Why an experience was recalled (docs/concepts.md#explanations).

    ``score = w_similarity*similarity + w_confidence*confidence + w_recency*recency``,
    multiplied by ``trust``, plus ``boost`` (tag / tool matches) and ``kind_bonus`` (per kind,
    ``MemoryConfig.kind_bonus``). ``similarity`` is a cosine in [-1,1] (1.0 in exact task_type
    mode): the larger of the query's cosine with the lesson and ``situation``, the query's
    cosine with the episode of a run the lesson was learned from (``situation_episode``; both
    ``None`` when no such episode was among the closest ones). ``recency`` is
    ``0.5 ** (age_days / half_life_days)`` in (0,1].
    """

    similarity: float
    confidence: float
    recency: float
    trust: float
    boost: float
    weights: dict[str, float]
    age_days: float
    namespace: str
    mode: str
    reasons: list[str] = Field(default_factory=list)
    situation: float | None = None
    situation_episode: str | None = None
    kind_bonus: float = 0.0


class RecallHit(_Model):
    """One recalled experience, its final score and the breakdown of that score."""

    experience: Experience
    score: float
    breakdown: ScoreBreakdown


class AddResult(BaseModel):
    """What ``add_experiences`` did with one item of a batch (docs/lifecycle.md).

    ``index``: the item's position in the input (0-based); ``id``: the experience that now
    holds it (the new row, or the existing one it was folded into); ``result``:
    ``"created"`` (a new row, possibly superseding or in conflict with an older one),
    ``"merged"`` (folded into an existing experience, or into an earlier item of the same
    batch: same text up to case/space/punctuation, a near-duplicate, or the same lesson key;
    docs/lifecycle.md) or ``"quarantined"`` (stopped by the memory guard, stored quarantined
    with its reasons); ``experience``: that experience as stored after the batch item.
    """

    model_config = ConfigDict(frozen=True)

    index: int
    id: str
    result: Literal["created", "merged", "quarantined"]
    experience: Experience


class Exclusion(BaseModel):
    """An experience that was a candidate but was not recalled, and why (``--explain``)."""

    model_config = ConfigDict(frozen=True)

    experience_id: str
    reason: str
    similarity: float | None = None
    score: float | None = None
