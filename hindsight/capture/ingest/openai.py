"""OpenAI-format records -> trajectories.

A record is a bare message list or an object
``{"messages": [...], "reward"?: float, "outcome"?: str, "task"?: str, "task_id"?: any,
"task_key"?: str, "task_type"?: str, "tags"?: [str], "id"?: str, "timestamp"?: ISO-8601 | Unix
seconds, "evidence"?: {"reason"?, "expected_actions"?, "final_state"?, "details"?},
"reason"?: str}``. The system / developer messages are the run's system prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hindsight._errors import InvalidTrajectoryError
from hindsight.capture.ingest._common import (
    SYNTHETIC_BASE,
    context_fields,
    outcome_from,
    parse_reward,
    parse_tags,
    parse_timestamp,
    record_task_type,
    trajectory_id,
)
from hindsight.capture.ingest._messages import parse_messages
from hindsight.capture.ingest._reader import RawRecord
from hindsight.models import Provenance, Trajectory

__all__ = ["MAX_TASK_CHARS", "build_trajectory", "openai_record_to_trajectory"]

#: The task text is the first user message, cut to this many characters.
MAX_TASK_CHARS = 2000


def build_trajectory(
    raw: RawRecord,
    messages: Any,
    *,
    kind: str,
    tenant_id: str,
    namespace: str,
    task_type: str | None,
    fields: dict[str, Any],
    tags: Sequence[str] = (),
    metadata: dict[str, Any] | None = None,
    context: dict[str, Any] | None = None,
) -> Trajectory:
    """Build one trajectory from a message list and the record's other ``fields``.

    ``fields`` may hold ``reward``, ``outcome``, ``task``, ``tags``, ``timestamp`` and the
    review context (``task_key`` / ``task_id``, ``evidence``, ``reason``: see
    :func:`~hindsight.capture.ingest._common.context_fields`); ``context`` overrides what
    ``fields`` give for those. The system prompt is the messages' system / developer text.
    The id is :func:`trajectory_id` of ``kind``, tenant, namespace and the whole record; the
    source is :attr:`Provenance.USER`. ``messages`` ``None`` gives an empty trajectory.

    Raises:
        InvalidTrajectoryError: ``messages`` is not a list, or a message or field is malformed
            (a ``timestamp`` that is neither ISO-8601 text nor Unix seconds included).
    """
    if messages is None:
        messages = []
    if not isinstance(messages, list):
        raise InvalidTrajectoryError(f"{raw.where}: messages must be a list")
    traj_id = trajectory_id(kind, tenant_id, namespace, raw.value)
    stamp = fields.get("timestamp")
    base = parse_timestamp(stamp)
    if base is None and stamp is not None:  # refused, as a reward no number is: never dropped
        raise InvalidTrajectoryError(
            f"{raw.where}: timestamp must be ISO-8601 text or Unix seconds, got {stamp!r:.60}"
        )
    base = base or SYNTHETIC_BASE
    parsed = parse_messages(messages, traj_id=traj_id, where=raw.where, base_time=base)
    reward = parse_reward(fields.get("reward"), raw.where)
    task = fields.get("task") if isinstance(fields.get("task"), str) else parsed.task
    all_tags = list(dict.fromkeys([*tags, *parse_tags(fields.get("tags"), raw.where)]))
    events = parsed.events
    review_context = {**context_fields(fields, raw.where), **(context or {})}
    return Trajectory(
        id=traj_id,
        tenant_id=tenant_id,
        namespace=namespace,
        task=(task or "")[:MAX_TASK_CHARS],
        task_type=task_type,
        tags=all_tags,
        outcome=outcome_from(fields.get("outcome"), reward, raw.where),
        reward=reward,
        source=Provenance.USER,
        started_at=events[0].timestamp if events else base,
        ended_at=events[-1].timestamp if events else base,
        events=events,
        metadata={
            "source_format": kind,
            "source_record": raw.number,
            **parsed.metadata,
            **(metadata or {}),
        },
        system_prompt=parsed.system_prompt,
        **review_context,
    )


def openai_record_to_trajectory(
    raw: RawRecord,
    *,
    tenant_id: str,
    namespace: str,
    task_type: str | None,
) -> Trajectory:
    """One OpenAI-format record (see the module docstring) as a trajectory.

    ``task_type``, when given, overrides the record's own ``task_type``. ``task_id`` and ``id``
    are kept in metadata (``task_id``, ``source_id``).

    Raises:
        InvalidTrajectoryError: the record is neither a message list nor an object, or is
            malformed; the message names the file and line or record.
    """
    value = raw.value
    if isinstance(value, list):
        return build_trajectory(
            raw,
            value,
            kind="openai",
            tenant_id=tenant_id,
            namespace=namespace,
            task_type=task_type,
            fields={},
        )
    if not isinstance(value, dict):
        raise InvalidTrajectoryError(
            f"{raw.where}: expected a message list or an object with 'messages', "
            f"got {type(value).__name__}"
        )
    metadata: dict[str, Any] = {}
    if value.get("task_id") is not None:
        metadata["task_id"] = value["task_id"]
    if value.get("id") is not None:
        metadata["source_id"] = str(value["id"])
    return build_trajectory(
        raw,
        value.get("messages"),
        kind="openai",
        tenant_id=tenant_id,
        namespace=namespace,
        task_type=task_type or record_task_type(value.get("task_type"), raw.where),
        fields=value,
        metadata=metadata,
    )
