"""Conversions between the pydantic models and SQL rows (embeddings: :class:`.types.Embedding`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import ValidationError

from hindsight._errors import UsageError
from hindsight.models import (
    STORED,
    Event,
    Experience,
    ExperienceKind,
    ExperienceStatus,
    Provenance,
    Trajectory,
)
from hindsight.ports import PAYLOAD_VERSION, epoch_us
from hindsight.store.records import JobState, ReviewJob

__all__ = [
    "EXPERIENCE_FIELDS",
    "PAYLOAD_COLUMNS",
    "TASK_KEY_EXPLICIT",
    "TASK_KEY_INTENT",
    "checked",
    "event_rows",
    "experience_from_row",
    "experience_from_stored",
    "experience_row",
    "job_from_row",
    "lesson_key_hash",
    "payload_from_values",
    "payload_of_row",
    "prompt_sha256",
    "trajectory_from_rows",
    "trajectory_row",
    "vector_payload",
]

#: Experience fields, in model order; each is a column of the ``experiences`` table.
EXPERIENCE_FIELDS: tuple[str, ...] = tuple(Experience.model_fields)


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """Enums -> their values, so every driver binds them as plain strings."""
    return {k: (v.value if isinstance(v, Enum) else v) for k, v in data.items()}


def checked(exp: Experience) -> Experience:
    """``exp`` validated again: ``model_copy(update=...)`` skips validation, so a caller may
    hand over plain strings for enums or out-of-range values; they must not reach the table.

    Raises:
        UsageError: the experience is not valid.
    """
    try:
        return Experience.model_validate(dict(exp))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UsageError(f"invalid experience {exp.id}: {where}: {first['msg']}") from None


def lesson_key_hash(key: Any) -> str | None:
    """The ``lesson_key_hash`` column of a ``metadata["lesson_key"]``: SHA-256 hex of its UTF-8
    text, or ``None`` when ``key`` is not a non-empty string."""
    if not isinstance(key, str) or not key:
        return None
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def experience_row(exp: Experience) -> dict[str, Any]:
    """Column values of ``exp`` (without the embedding), with ``lesson_key_hash`` derived from
    ``metadata["lesson_key"]``."""
    row = _plain(dict(exp))
    row["lesson_key_hash"] = lesson_key_hash(exp.metadata.get("lesson_key"))
    return row


def experience_from_row(row: Mapping[Any, Any]) -> Experience:
    """The experience stored in ``row`` (extra columns such as ``embedding`` are ignored)."""
    return Experience.model_validate(
        {name: row[name] for name in EXPERIENCE_FIELDS}, context=STORED
    )


_FLOATS = ("confidence", "importance", "trust")
_FIELD_SET = frozenset(EXPERIENCE_FIELDS)
_PRIVATE_ATTRS = bool(Experience.__private_attributes__)
_set = object.__setattr__
_LISTS = ("tools", "tags", "source_trajectory_ids")
_ENUMS: tuple[tuple[str, type[Enum]], ...] = (
    ("kind", ExperienceKind),
    ("provenance", Provenance),
    ("status", ExperienceStatus),
)


def experience_from_stored(values: Sequence[Any]) -> Experience:
    """The experience of a row read from the ``experiences`` table, without validating it
    again: ``values`` are the columns of :data:`EXPERIENCE_FIELDS`, in that order, as the
    table's column types return them (timestamps UTC-aware, JSON decoded).

    Every row was validated on its way in (:func:`checked`), so re-running the model's
    validators (UUID parsing, tenant and namespace checks) on the way out only costs time:
    this is the write path's and recall's row reader (~7x faster than
    :func:`experience_from_row`). Enums, numbers and containers are still converted to the
    model's types, so the result equals :func:`experience_from_row`'s field by field; a
    value that does not convert (a row edited by hand) falls back to full validation, which
    raises ``pydantic.ValidationError`` as before.
    """
    data = dict(zip(EXPERIENCE_FIELDS, values, strict=True))
    try:
        for name, enum in _ENUMS:
            data[name] = enum(data[name])
        for name in _FLOATS:
            data[name] = float(data[name])
        for name in _LISTS:
            data[name] = list(data[name])
            if not all(isinstance(v, str) for v in data[name]):
                raise TypeError(f"{name} must hold strings")
        data["metadata"] = dict(data["metadata"])
        if not (isinstance(data["id"], str) and isinstance(data["content"], str)):
            raise TypeError("id and content must be strings")
        if not (isinstance(data["created_at"], datetime) and data["created_at"].tzinfo):
            raise TypeError("timestamps must be UTC-aware datetimes")
    except (TypeError, ValueError):
        return experience_from_row(dict(zip(EXPERIENCE_FIELDS, values, strict=True)))
    if _PRIVATE_ATTRS:  # pragma: no cover - the model has none today
        return Experience.model_construct(**data)
    exp = Experience.__new__(Experience)
    # What ``model_construct`` does, minus its per-field default handling (every field is
    # given): 3.5x faster, and tests check the result equals the validated model.
    _set(exp, "__dict__", data)
    _set(exp, "__pydantic_fields_set__", set(_FIELD_SET))
    _set(exp, "__pydantic_extra__", None)
    _set(exp, "__pydantic_private__", None)
    return exp


def vector_payload(exp: Experience) -> dict[str, Any]:
    """The payload a vector point of ``exp`` carries, as documented on ``VectorPoint``."""
    return payload_from_values(
        exp.tenant_id,
        exp.namespace,
        exp.task_type,
        exp.status,
        exp.kind,
        exp.tags,
        scoring=(
            exp.tools,
            exp.confidence,
            exp.trust,
            exp.updated_at,
            exp.source_trajectory_ids,
        ),
    )


PAYLOAD_COLUMNS = (
    "id",
    "tenant_id",
    "namespace",
    "task_type",
    "status",
    "kind",
    "tags",
    "tools",
    "confidence",
    "trust",
    "updated_at",
    "source_trajectory_ids",
)
"""The ``experiences`` columns a vector point's payload is made of (:func:`payload_of_row`)."""


def payload_of_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The payload of a vector point from a row with :data:`PAYLOAD_COLUMNS`."""
    return payload_from_values(
        row["tenant_id"],
        row["namespace"],
        row["task_type"],
        row["status"],
        row["kind"],
        row["tags"],
        scoring=(
            row["tools"],
            row["confidence"],
            row["trust"],
            row["updated_at"],
            row["source_trajectory_ids"],
        ),
    )


def payload_from_values(
    tenant_id: str,
    namespace: str,
    task_type: str | None,
    status: Any,
    kind: Any,
    tags: Any,
    *,
    scoring: tuple[Any, float, float, datetime, Any] | None = None,
) -> dict[str, Any]:
    """The payload of a vector point from an experience's column values (see
    :func:`vector_payload`): the filter fields, and with ``scoring`` = ``(tools, confidence,
    trust, updated_at, source_trajectory_ids)`` what recall scoring reads too - ``tools``,
    ``confidence``, ``trust``, ``updated_us`` (:func:`epoch_us`), ``sources`` and
    ``score_v`` (:data:`PAYLOAD_VERSION`)."""
    payload: dict[str, Any] = {
        "tenant_id": tenant_id,
        "namespace": namespace,
        "task_type": task_type,
        "status": ExperienceStatus(status).value,
        "kind": ExperienceKind(kind).value,
        "tags": list(tags or ()),
    }
    if scoring is not None:
        tools, confidence, trust, updated_at, sources = scoring
        payload.update(
            tools=list(tools or ()),
            confidence=float(confidence),
            trust=float(trust),
            updated_us=epoch_us(updated_at),
            sources=list(sources or ()),
            score_v=PAYLOAD_VERSION,
        )
    return payload


#: Trajectory fields that are not plain columns of the ``trajectories`` table: the events
#: have their own table, the system prompt lives in ``prompts`` (the row keeps its SHA-256).
_NOT_COLUMNS = frozenset({"events", "system_prompt", "evidence"})

#: ``trajectories.task_key_source`` of a key the caller or the source gave.
TASK_KEY_EXPLICIT = "explicit"
#: ``trajectories.task_key_source`` of a key the review assigned by intent.
TASK_KEY_INTENT = "intent"


def prompt_sha256(text: str) -> str:
    """The SHA-256 hex digest (64 characters) of ``text`` encoded as UTF-8: a prompt's key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def trajectory_row(traj: Trajectory, stored_at: datetime) -> dict[str, Any]:
    """Column values of ``traj`` (without its events; the system prompt as its SHA-256)."""
    row = _plain(traj.model_dump(exclude=set(_NOT_COLUMNS)))
    row["event_count"] = len(traj.events)
    row["stored_at"] = stored_at
    row["system_prompt_sha256"] = (
        prompt_sha256(traj.system_prompt) if traj.system_prompt is not None else None
    )
    row["evidence"] = traj.evidence.model_dump(mode="json") if traj.evidence is not None else None
    row["task_key_source"] = TASK_KEY_EXPLICIT if traj.task_key is not None else None
    return row


def event_rows(traj: Trajectory) -> list[dict[str, Any]]:
    """One row per event of ``traj``, with its position and the trajectory's id and tenant."""
    rows = []
    for position, ev in enumerate(traj.events):
        row = _plain(ev.model_dump())
        row["trajectory_id"] = traj.id
        row["tenant_id"] = traj.tenant_id
        row["position"] = position
        rows.append(row)
    return rows


_EVENT_FIELDS = tuple(Event.model_fields)
_TRAJECTORY_FIELDS = tuple(name for name in Trajectory.model_fields if name not in _NOT_COLUMNS)


def trajectory_from_rows(
    row: Mapping[Any, Any],
    events: Sequence[Mapping[Any, Any]],
    system_prompt: str | None = None,
) -> Trajectory:
    """Rebuild a trajectory from its row, its event rows (already in position order) and the
    text of its system prompt (read from ``prompts``)."""
    data: dict[str, Any] = {name: row[name] for name in _TRAJECTORY_FIELDS}
    data["events"] = [{name: ev[name] for name in _EVENT_FIELDS} for ev in events]
    data["system_prompt"] = system_prompt
    data["evidence"] = row["evidence"]
    return Trajectory.model_validate(data, context=STORED)


def job_from_row(row: Mapping[Any, Any]) -> ReviewJob:
    """A :class:`ReviewJob` from a ``review_jobs`` row."""
    return ReviewJob(
        id=row["id"],
        tenant_id=row["tenant_id"],
        trajectory_id=row["trajectory_id"],
        state=JobState(row["state"]),
        attempts=row["attempts"],
        last_error=row["last_error"],
        lease_owner=row["lease_owner"],
        lease_expires_at=row["lease_expires_at"],
        run_after=row["run_after"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        lost_leases=int(row.get("lost_leases") or 0),
    )
