"""Request and response bodies of the HTTP API (docs/http.md).

Request bodies forbid unknown fields (a typo is a 422 naming the field, not a silently ignored
option). Strings are kept exactly as sent: a field typed ``str`` never accepts a number or
``null`` in its place. ``top_k``, ``token_budget``, ``limit``, ``offset`` and ``cursor`` are
the engine's own types (:mod:`hindsight._contract`): the same ranges, coercions and messages as
in Python, the CLI and MCP (delta in [-1, 1]).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from hindsight._contract import (
    MAX_BATCH_ITEMS,
    Confidence,
    ConfidenceDelta,
    Content,
    Importance,
    Kind,
    OffByDefault,
    OnByDefault,
    OptionalTopK,
    Query,
    RunState,
    SimilarityFloor,
    Source,
    Tags,
    TokenBudget,
    ToolName,
    Tools,
    batch_size,
)
from hindsight._paging import Page
from hindsight.checks import CheckMatch
from hindsight.models import (
    AddResult,
    Experience,
    ExperienceKind,
    InputModel,
    Provenance,
    RecallHit,
)
from hindsight.recall import Exclusion
from hindsight.store import TrajectorySummary

__all__ = [
    "AddExperienceBody",
    "AddExperiencesBody",
    "AddExperiencesResponse",
    "EditExperienceBody",
    "EpisodeBody",
    "EpisodesResponse",
    "ExperiencePage",
    "ForgetBody",
    "ForgetResponse",
    "NoteBody",
    "OutcomeBody",
    "RecallBody",
    "RecallResponse",
    "RecalledBody",
    "RescanBody",
    "RescanResponse",
    "RetryJobsBody",
    "RollbackBody",
    "TrajectoryPage",
    "page_doc",
]


class _Body(InputModel):
    """A request body: unknown fields refused, and the invalid-value policy of every input
    (:class:`hindsight.models.InputModel`: invalid text replaced and counted, names holding
    it refused, NaN/infinity refused in numbers)."""

    model_config = ConfigDict(extra="forbid")


class EpisodeBody(_Body):
    """``POST /v1/episodes``: a finished run to store (and review in the background)."""

    trajectory: dict[str, Any] | list[Any] = Field(
        description="A hindsight Trajectory (its tenant_id may be left out), an OpenAI record "
        "({'messages': [...]}) or message list, a tau-bench result record, or events."
    )
    format: Literal["auto", "trajectory", "openai", "tau-bench", "events"] = "auto"
    namespace: str = Field(default="default", min_length=1, max_length=200)
    task_type: str | None = Field(default=None, min_length=1, max_length=200)
    review: OnByDefault = Field(default=True, description="Queue the post-hoc review.")
    merge: OffByDefault = Field(
        default=False,
        description="One run stored in parts (paused at an interrupt, resumed later): merge "
        "into the stored run of the same id instead of leaving it unchanged.",
    )


class EpisodeReceiptModel(BaseModel):
    trajectory_id: str
    stored: bool
    review_queued: bool


class EpisodesResponse(BaseModel):
    """The trajectories the body held (one, or several for a list of events)."""

    format: str
    episodes: list[EpisodeReceiptModel]


class RecallBody(_Body):
    """``POST /v1/recall``: the arguments of :meth:`hindsight.AsyncMemory.recall`."""

    query: Query = ""
    namespace: str | list[str] = "default"
    include_shared: OnByDefault = True
    task_type: str | None = None
    tags: Tags = Field(default_factory=list)
    tools: Tools = Field(default_factory=list)
    top_k: OptionalTopK = None
    mode: Literal["vector", "task_type"] | None = None
    similarity_floor: SimilarityFloor = None
    trajectory_id: str | None = None
    token_budget: TokenBudget = None
    include_episodes: OffByDefault = False
    explain: OffByDefault = False
    record: OnByDefault = Field(
        default=True,
        description="Count this recall and attribute it to trajectory_id; false: a dry run "
        "(POST /v1/recalls counts it later).",
    )
    risk_checks: OnByDefault = Field(
        default=True,
        description='With tools: open the block with their risk checks, "before you call X" '
        "lines ranked against the query (docs/checks.md); false: leave them out.",
    )


class CheckBody(_Body):
    """``POST /v1/checks``: the arguments of :meth:`hindsight.AsyncMemory.check_action`."""

    tool: ToolName
    args: dict[str, Any] = Field(default_factory=dict)
    namespace: str | list[str] = "default"
    include_shared: OnByDefault = True
    task_type: str | None = None
    top_k: OptionalTopK = None
    trajectory_id: str | None = None
    record: OnByDefault = Field(
        default=True,
        description="With trajectory_id: count the lessons behind the checks as recalled by "
        "that run (POST /v1/outcomes credits or blames them); false: a dry run.",
    )
    token_budget: TokenBudget = None
    state: RunState = Field(
        default=None,
        description='The tool results the run has seen so far, oldest first: [{"tool": '
        '<name>, "result": <JSON value or text>}]. Rules with a condition are shown when it '
        "holds, ranked lower when it cannot be told, left out when it is false.",
    )


class CheckResponse(BaseModel):
    """A :class:`hindsight.checks.CheckResult` plus ``rendered``, the advice block to place
    next to the proposed call (``""`` when nothing matched)."""

    tool: str
    checks: list[CheckMatch]
    tested: int | None = Field(
        default=None,
        description="Checks of the tool's lessons tested against the call, matching or not; "
        "0: none exists for this tool in this scope (a client may skip it for the rest of "
        "the run).",
    )
    rendered: str


class RecallResponse(BaseModel):
    """A :class:`hindsight.RecallResult` plus its rendered block (``rendered``: the
    system-prompt tail, docs/concepts.md) and whether rendering was cut to the budget."""

    query: str
    tenant_id: str
    namespaces: list[str]
    mode: str
    hits: list[RecallHit]
    excluded: list[Exclusion]
    token_budget: int
    similarity_floor: float | None
    episodes: list[RecallHit]
    rendered: str
    truncated: bool


class AddExperienceBody(_Body):
    """``POST /v1/experiences``: a lesson written directly (no review)."""

    content: Content
    namespace: str = "default"
    kind: Kind = ExperienceKind.RULE
    task_type: str | None = None
    tools: Tools = Field(default_factory=list)
    tags: Tags = Field(default_factory=list)
    confidence: Confidence = 0.5
    importance: Importance = 0.5
    source: Source = Provenance.USER
    metadata: dict[str, Any] | None = None


class AddExperiencesBody(_Body):
    """``POST /v1/experiences:batch``: lessons written directly, as one batch (at most
    :data:`hindsight._contract.MAX_BATCH_ITEMS` items, each as the body of ``POST
    /v1/experiences``; an empty list stores nothing)."""

    items: Annotated[
        list[AddExperienceBody],
        BeforeValidator(batch_size),
        Field(json_schema_extra={"maxItems": MAX_BATCH_ITEMS}),
    ]


class AddExperiencesResponse(BaseModel):
    """What became of each item, in input order (:class:`hindsight.models.AddResult`)."""

    items: list[AddResult]


class EditExperienceBody(_Body):
    """``PATCH /v1/experiences/{id}``: either ``confidence_delta`` (clamped to [0, 1],
    audited) or edits of the other fields (a new version, see history/rollback), not both."""

    confidence_delta: ConfidenceDelta | None = None
    content: Content | None = None
    kind: Kind | None = None
    task_type: str | None = None
    tools: list[str] | None = None
    tags: list[str] | None = None
    importance: Importance | None = None
    metadata: dict[str, Any] | None = None
    reason: str | None = Field(default=None, max_length=2000)


class RescanBody(_Body):
    """``POST /v1/quarantine/rescan``: run the memory guard again on one experience
    (``experience_id``) or on every active and quarantined one of the key's tenant (in
    ``namespace`` when given)."""

    experience_id: str | None = None
    namespace: str | None = Field(default=None, min_length=1, max_length=200)


class RescanResponse(BaseModel):
    """With an ``experience_id``: that experience as stored; without: those that changed."""

    items: list[Experience]


class ExperiencePage(BaseModel):
    """One page of experiences. ``next_cursor``: send it as ``cursor`` for the next page
    (keyset paging: writes and deletes between pages neither repeat nor hide an item);
    ``None`` on the last page. ``offset``/``next_offset``: offset paging (compatibility;
    ``offset`` is ``null`` and ``next_offset`` too when the page was asked by cursor)."""

    items: list[Experience]
    limit: int
    offset: int | None
    next_offset: int | None
    next_cursor: str | None


class TrajectoryPage(BaseModel):
    """One page of stored runs (``GET /v1/trajectories``), oldest stored first, without their
    events (:class:`hindsight.store.TrajectorySummary`); ``next_cursor`` and ``next_offset``
    as in :class:`ExperiencePage`."""

    items: list[TrajectorySummary]
    limit: int
    offset: int | None
    next_offset: int | None
    next_cursor: str | None


class RollbackBody(_Body):
    version: int = Field(ge=1)
    reason: str | None = Field(default=None, max_length=2000)


class NoteBody(_Body):
    note: str | None = Field(default=None, max_length=2000)


class ForgetBody(_Body):
    """``POST /v1/forget``: hard delete; exactly one of the three."""

    experience_id: str | None = None
    trajectory_id: str | None = None
    everything: OffByDefault = False


class ForgetResponse(BaseModel):
    removed: int


class OutcomeBody(_Body):
    trajectory_id: str
    success: bool


class RecalledBody(_Body):
    """``POST /v1/recalls``: count a recall made with ``record: false`` (the model saw it)."""

    trajectory_id: str
    experience_ids: list[str] = Field(max_length=1000)


class RetryJobsBody(_Body):
    job_ids: list[str] = Field(default_factory=list, max_length=10_000)
    all_failed: OffByDefault = False


def page_doc(items: Page[Any], limit: int, offset: int | None, cursor: str | None) -> Any:
    """A page as the routes answer it: ``items``, ``limit``, ``offset`` and ``next_offset``
    (offset paging; ``None`` when the page was asked by cursor) and ``next_cursor``."""
    at = None if cursor is not None else (offset or 0)
    nxt = at + len(items) if at is not None and len(items) == limit else None
    return {
        "items": items,
        "limit": limit,
        "offset": at,
        "next_offset": nxt,
        "next_cursor": items.next_cursor,
    }
