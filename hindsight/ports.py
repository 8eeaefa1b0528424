"""The narrow ports the engine is built on: embedder, vector index, reviewer, clock.

Each port is a :class:`typing.Protocol`; the shipped implementations live in
``hindsight.embedders``, ``hindsight.vectors``, ``hindsight.review`` and ``hindsight.clock``,
and a fake of each in :mod:`hindsight.testing`. The SQL store (the source of truth) is
:class:`hindsight.store.SqlStore`; its fake is the same class on an in-memory SQLite database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight._ids import normalize_id
from hindsight.models import ExperienceKind, Trajectory

__all__ = [
    "PAYLOAD_VERSION",
    "Clock",
    "Embedder",
    "Lesson",
    "Reviewer",
    "VectorHit",
    "VectorIndex",
    "VectorPoint",
    "WritableVectorIndex",
    "embedded",
    "epoch_us",
    "from_epoch_us",
]

FloatMatrix = npt.NDArray[np.float32]


@runtime_checkable
class Clock(Protocol):
    """Source of the current time (timezone-aware UTC)."""

    def now(self) -> datetime: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors.

    Attributes:
        name: stable model identifier recorded in the store, e.g. ``"hash-384"``; opening a
            store with another name or dimension fails (EmbedderMismatchError).
        dimension: vector length.
        similarity_floor: default minimum cosine similarity for vector recall with this model.
    """

    name: str
    dimension: int
    similarity_floor: float

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed ``texts``; returns a float32 array of shape ``(len(texts), dimension)``.

        Raises:
            EmbeddingError: the model or provider failed.
        """
        ...


def embedded(embedder: Any, texts: Sequence[str], what: str) -> FloatMatrix:
    """``embedder.embed(texts)``, checked against the :class:`Embedder` contract: one finite
    row of ``embedder.dimension`` values per text. The engine embeds every write and query
    through it, so a broken embedder is named at once, with what it was embedding, instead of
    failing later inside the vector index.

    Args:
        what: what the texts are, for the message: ``"content"``, ``"query"``, ...

    Raises:
        EmbeddingError: ``embedder 'x' returned NaN or infinite values for the content of
            item 0 of 2: nothing was written; ...``, or an array of the wrong shape; the
            embedder's own errors pass through.
    """
    from hindsight._errors import EmbeddingError

    name = getattr(embedder, "name", type(embedder).__name__)
    vectors = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    width = getattr(embedder, "dimension", vectors.shape[-1] if vectors.ndim == 2 else -1)
    if vectors.shape != (len(texts), width):
        raise EmbeddingError(
            f"embedder {name!r} returned an array of shape {vectors.shape} for the {what} "
            f"(expected {(len(texts), width)}: one row per text); check the embedder"
        )
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if bad.size:
        where = f"the {what}" if len(texts) == 1 else f"the {what} of item {bad[0]}"
        raise EmbeddingError(
            f"embedder {name!r} returned NaN or infinite values for {where}: nothing was "
            "stored or searched; check the embedder (its model or provider answered garbage)"
        )
    return vectors


PAYLOAD_VERSION = 1
"""``payload["score_v"]`` of a point that carries what recall scoring reads
(:func:`hindsight.store.codec.payload_from_values`): a point without it (written by an older
hindsight) is scored from its SQL row instead."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def epoch_us(when: datetime) -> int:
    """``when`` (timezone-aware) as whole microseconds since 1970-01-01 UTC: exact both ways
    (:func:`from_epoch_us`), unlike a float of seconds."""
    return (when - _EPOCH) // _MICROSECOND


def from_epoch_us(value: int) -> datetime:
    """The UTC datetime of :func:`epoch_us`."""
    return _EPOCH + timedelta(microseconds=value)


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """A vector with the payload the index filters on.

    ``payload`` always holds ``tenant_id``, ``namespace``, ``task_type`` (or ``None``),
    ``status``, ``kind`` and ``tags`` (list of strings); the points hindsight writes also
    carry what recall scoring reads (:func:`hindsight.store.codec.payload_from_values`).
    """

    id: str
    vector: Sequence[float] | FloatMatrix
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One nearest neighbour: the point id, its cosine similarity in [-1, 1] and the point's
    payload (``None`` when the index does not return it)."""

    id: str
    similarity: float
    payload: Mapping[str, Any] | None = None


@runtime_checkable
class VectorIndex(Protocol):
    """Nearest-neighbour search over experience embeddings; every search is scoped to one
    tenant (docs/concepts.md#tenants-and-namespaces). What recall, dedup, the guard and
    the review read.

    Two kinds implement it: an index *in* the SQL store (pgvector: its points are the
    experience rows themselves, written in their transactions; ``hindsight.store.pgvector``)
    and an index kept apart from it (:class:`WritableVectorIndex`), which the store's vector
    outbox writes after each commit (``hindsight.store.outbox``).

    Optional: ``search_many(vectors, *, tenant_id, namespaces, limit, task_type=None,
    statuses=("active",), kinds=None, payload=True) -> list[list[VectorHit]]``, the hits of
    one :meth:`search` per row of ``vectors`` (shape ``(n, dimension)``) as one batch, and
    with ``payload=False`` without payloads (``None``). Dedup and the memory guard use it when
    an index has it (Qdrant Edge, pgvector), with ``payload=False``; otherwise they call
    :meth:`search` once per lesson.
    """

    dimension: int

    def search(
        self,
        vector: Sequence[float] | FloatMatrix,
        *,
        tenant_id: str,
        namespaces: Sequence[str],
        limit: int,
        task_type: str | None = None,
        statuses: Sequence[str] = ("active",),
        kinds: Sequence[str] | None = None,
    ) -> list[VectorHit]:
        """The ``limit`` nearest active points of ``tenant_id`` in ``namespaces`` (and, when
        ``kinds`` is given, whose ``kind`` payload is one of them: recall's lesson and episode
        tiers search apart so neither crowds out the other).

        Raises:
            TenantRequiredError: ``tenant_id`` is empty or missing.
        """
        ...

    def count(self, tenant_id: str | None = None) -> int:
        """Number of points, of one tenant or (``None``, maintenance only) of all tenants."""
        ...

    def close(self) -> None:
        """Flush and release files, connections and locks."""
        ...


@runtime_checkable
class WritableVectorIndex(VectorIndex, Protocol):
    """A :class:`VectorIndex` kept apart from the SQL store (Qdrant Edge, a Qdrant server, an
    in-process index): it holds its own copy of each point (vector and payload), written by
    the store's vector outbox after the SQL commit."""

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id (idempotent)."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids are ignored (idempotent)."""
        ...

    def set_status(self, ids: Sequence[str], status: str) -> None:
        """Set the ``status`` payload of the given points."""
        ...

    def all_ids(self) -> set[str]:
        """Every point id in the index (maintenance: consistency checks and repair)."""
        ...

    def delete_tenant(self, tenant_id: str) -> None:
        """Delete every point of ``tenant_id``; refuses an empty tenant."""
        ...


class Lesson(BaseModel):
    """One lesson a reviewer drew from a trajectory, before it becomes an Experience.

    ``confidence`` in [0,1] is the reviewer's self-assessment
    (docs/concepts.md#experiences-and-confidence). ``sources`` are trajectory ids the
    lesson was also drawn from besides the reviewed run (a contrastive
    lesson names the run it was compared with); write-back stores them after the reviewed
    run in ``Experience.source_trajectory_ids``, without repeats. Each is a trajectory id in
    any UUID spelling, stored canonical (a non-UUID is a validation error).
    """

    model_config = ConfigDict(extra="forbid")

    kind: ExperienceKind
    content: str = Field(min_length=1)
    confidence: float = Field(ge=0.0, le=1.0)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    tools: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list)

    @field_validator("sources")
    @classmethod
    def _canonical_sources(cls, value: list[str]) -> list[str]:
        return [normalize_id(s, "lesson source (a trajectory id)") for s in value]


@runtime_checkable
class Reviewer(Protocol):
    """Post-hoc review (docs/concepts.md#review): a finished trajectory in, lessons out.

    ``name`` is recorded on each experience (e.g. ``"heuristic"``). An empty or content-free
    trajectory must yield ``[]`` without calling any model.
    """

    name: str

    async def review(self, trajectory: Trajectory) -> list[Lesson]:
        """Review ``trajectory``.

        Raises:
            ReviewError: the review failed; the job keeps the error.
        """
        ...
