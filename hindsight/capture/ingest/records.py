"""One in-memory record (a request body, an MCP tool argument) -> trajectories.

The same formats ``hindsight ingest`` reads from files (:mod:`hindsight.capture.ingest`), plus the
hindsight :class:`~hindsight.models.Trajectory` JSON itself:

* ``trajectory``: a Trajectory as JSON (an object with an ``events`` list and trajectory fields);
  its own ``id`` is kept, its ``tenant_id`` may be left out (the caller's is used);
* ``openai``: ``{"messages": [...], ...}`` or a bare list of chat messages;
* ``tau-bench``: one tau-bench result record ``{"task_id", "trial", "reward", "traj"}``;
* ``events``: one event object, or a list of them, grouped by ``trajectory_id`` (ids re-derived,
  as in files).

``auto`` picks the format from the record's shape (:func:`record_format`). A declared format the
record's shape contradicts (a tau-bench record sent as ``openai``), or a non-empty object without
the declared format's key (``{"foo": 1}`` as ``openai``), is refused, so nothing the caller sent is
dropped silently. Ids of the three log formats are deterministic, as in
:func:`hindsight.capture.ingest.iter_trajectories`, so sending the same record twice stores it once.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ValidationError

from hindsight._contract import outcome_conflict, validation_message
from hindsight._errors import InvalidTrajectoryError, UsageError
from hindsight._ids import validate_namespace, validate_tenant
from hindsight._text import clean_json, note
from hindsight.capture.ingest._reader import RawRecord
from hindsight.capture.ingest.events import events_records_to_trajectories
from hindsight.capture.ingest.openai import openai_record_to_trajectory
from hindsight.capture.ingest.tau_bench import tau_bench_record_to_trajectory
from hindsight.models import NAME_FIELDS, Trajectory

__all__ = [
    "RECORD_FORMATS",
    "RecordFormat",
    "record_format",
    "trajectories_from_record",
    "trajectory_from_record",
]

RecordFormat = Literal["auto", "trajectory", "openai", "tau-bench", "events"]
RECORD_FORMATS: tuple[str, ...] = ("auto", "trajectory", "openai", "tau-bench", "events")


def _is_list_of(value: Any, key: str) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) and key in v for v in value)


def _object_shapes(record: dict[str, Any]) -> list[str]:
    """Every format whose key an object has (a well-formed record has exactly one)."""
    shapes = [
        fmt for key, fmt in (("traj", "tau-bench"), ("event_type", "events")) if key in record
    ]
    if isinstance(record.get("events"), list):
        shapes.append("trajectory")
    if "messages" in record:
        shapes.append("openai")
    return shapes


def record_format(record: Any) -> str:
    """The format of one record, from its shape.

    ``traj`` key -> ``tau-bench``; an ``events`` list -> ``trajectory``; ``event_type`` key or
    a list of objects with ``event_type`` -> ``events``; ``messages`` key or a list of objects
    with ``role`` (also an empty list) -> ``openai``.

    Raises:
        InvalidTrajectoryError: none of these shapes, or an object with the keys of two
            formats (e.g. ``traj`` and ``messages``: one of them would be dropped).
    """
    if isinstance(record, dict):
        shapes = _object_shapes(record)
        if len(shapes) > 1:
            raise InvalidTrajectoryError(
                "the record has the keys of several formats ("
                + ", ".join(f"{_SHAPE_OF[f]} of {f}" for f in shapes)
                + "): one record holds one run in one format"
            )
        if shapes:
            return shapes[0]
    elif isinstance(record, list):
        if record and _is_list_of(record, "event_type"):
            return "events"
        if _is_list_of(record, "role"):
            return "openai"
    raise InvalidTrajectoryError(
        "cannot tell the trajectory format: expected a hindsight trajectory (an object with "
        "'events'), OpenAI messages ('messages' or a list of messages with 'role'), a "
        "tau-bench record ('traj') or events ('event_type'); or name the format"
    )


_SHAPE_OF: dict[str, str] = {
    "tau-bench": "'traj'",
    "trajectory": "an 'events' list",
    "events": "'event_type'",
    "openai": "'messages'",
}


def _check_declared(record: Any, declared: str, where: str) -> None:
    """Refuse a record whose shape says another format than the declared one, or a non-empty
    object without the declared format's key (its content would convert to nothing)."""
    if not record:
        return  # an empty object or list has nothing to lose and fits every list format
    if isinstance(record, dict) and len(_object_shapes(record)) > 1:
        record_format(record)  # raises: the keys of several formats
    try:
        shape = record_format(record)
    except InvalidTrajectoryError:
        if declared in ("openai", "tau-bench") and isinstance(record, dict):
            keys = ", ".join(repr(k) for k in list(record)[:5])
            raise InvalidTrajectoryError(
                f"{where} has no {_SHAPE_OF[declared]} (it has {keys}): not a format "
                f"{declared!r} record, its content would be lost"
            ) from None
        return  # the converter names what is wrong
    if shape != declared:
        why = f"it has {_SHAPE_OF[shape]}"
        if isinstance(record, list):
            why = "it is a list of messages"
        raise InvalidTrajectoryError(
            f"{where} looks like format {shape!r} ({why}), not the declared format "
            f"{declared!r}: send format {shape!r} or 'auto'"
        )


def _own_trajectory(
    record: Any, tenant: str, namespace: str, task_type: str | None, where: str
) -> Trajectory:
    if not isinstance(record, dict):
        raise InvalidTrajectoryError(
            f"a trajectory must be a JSON object, got {type(record).__name__}"
        )
    given = record.get("tenant_id")
    if given is not None and (not isinstance(given, str) or given.strip() != tenant):
        raise UsageError(
            f"the trajectory's tenant_id {given!r:.60} is not the caller's tenant {tenant!r}"
        )
    data = {**record, "tenant_id": tenant}
    data.setdefault("namespace", namespace)
    if task_type is not None:
        data["task_type"] = task_type
    try:
        traj = Trajectory.model_validate(data)
    except ValidationError as err:
        raise InvalidTrajectoryError(f"invalid trajectory: {validation_message(err)}") from None
    conflict = outcome_conflict(traj.outcome, traj.reward)
    if conflict is not None:
        note(f"{where}: {conflict}")
    return traj


def trajectories_from_record(
    record: Any,
    *,
    tenant_id: str,
    format: str = "auto",
    namespace: str = "default",
    task_type: str | None = None,
    where: str = "record",
) -> list[Trajectory]:
    """Parse one in-memory record into trajectories (one, or several for a list of events).

    Args:
        record: a parsed JSON value (dict or list).
        tenant_id: the tenant the trajectories belong to (always the caller's, never the
            record's; a ``trajectory`` record naming another tenant is refused).
        format: one of :data:`RECORD_FORMATS` (default ``auto``: :func:`record_format`).
        namespace: namespace for log formats, and for a trajectory record without one.
        task_type: overrides the record's own task_type (tau-bench default ``"tau-bench"``).
        where: how error messages name the record (e.g. ``"request body"``).

    Returns:
        The trajectories, in record order (events: by first appearance of each id).

    Raises:
        TenantRequiredError: empty tenant.
        UsageError: unknown format, bad namespace, a trajectory of another tenant, or a name
            in the record (namespace, task_type...) holding a lone surrogate or NUL.
        InvalidTrajectoryError: the record is malformed, its shape contradicts the declared
            ``format`` (e.g. a tau-bench record sent as ``openai``), or a non-empty object
            lacks the declared format's key (one-line reason).
    """
    tenant = validate_tenant(tenant_id)
    namespace = validate_namespace(namespace)
    if format not in RECORD_FORMATS:
        raise UsageError(f"format must be one of {', '.join(RECORD_FORMATS)}, got {format!r:.40}")
    # invalid text replaced and counted, names holding it refused (hindsight._text); numbers
    # are checked by the converters and the models
    record = clean_json(record, where, names=NAME_FIELDS, floats=False)
    if format == "auto":
        resolved = record_format(record)
    else:
        resolved = format
        _check_declared(record, resolved, where)
    if resolved == "trajectory":
        return [_own_trajectory(record, tenant, namespace, task_type, where)]
    kw: dict[str, Any] = {"tenant_id": tenant, "namespace": namespace, "task_type": task_type}
    if resolved == "events":
        items = record if isinstance(record, list) else [record]
        raws = [RawRecord(i, f"{where} event {i}", v) for i, v in enumerate(items, start=1)]
        trajs = events_records_to_trajectories(raws, **kw)
        return [t for t in trajs if isinstance(t, Trajectory)]  # not tolerant: errors raise
    raw = RawRecord(1, where, record)
    if resolved == "tau-bench":
        return [tau_bench_record_to_trajectory(raw, **kw)]
    return [openai_record_to_trajectory(raw, **kw)]


def trajectory_from_record(
    record: Any,
    *,
    tenant_id: str,
    namespace: str = "default",
    task_type: str | None = None,
    format: str = "auto",
) -> Trajectory:
    """Exactly one trajectory from one record; see :func:`trajectories_from_record`.

    Raises:
        InvalidTrajectoryError: the record holds no trajectory or several (events of more
            than one ``trajectory_id``), or is malformed.
        UsageError, TenantRequiredError: as :func:`trajectories_from_record`.
    """
    found = trajectories_from_record(
        record, tenant_id=tenant_id, format=format, namespace=namespace, task_type=task_type
    )
    if len(found) != 1:
        raise InvalidTrajectoryError(f"expected one trajectory in the record, found {len(found)}")
    return found[0]
