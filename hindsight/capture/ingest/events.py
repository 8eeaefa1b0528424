"""Our own events logs -> trajectories.

Each record (a JSON Lines line or an item of a JSON array) is either

* one :class:`~hindsight.models.Event` as JSON with a ``trajectory_id``; events are grouped by
  it, in the order the ids first appear (so the whole file is held in memory). Event lines may
  also carry the trajectory-level keys ``task``, ``task_type``, ``outcome``, ``reward``,
  ``tags``, ``system_prompt``, ``task_key`` (or ``task_id``), ``evidence`` and ``reason``; the
  first value seen for each wins; or
* one whole :class:`~hindsight.models.Trajectory` as JSON (an object with an ``events`` list).

Ids are re-derived (see :func:`~hindsight.capture.ingest._common.trajectory_id`) so that ingest is
idempotent and tenants never share ids; the file's own ids are kept in metadata
(``source_trajectory_id``, and ``source_event_id`` on events). The tenant and namespace always
come from the caller, and the source is always :attr:`Provenance.USER`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from hindsight._contract import long_tool_name, validation_message
from hindsight._errors import HindsightError, InvalidTrajectoryError
from hindsight._status import classify_tool_result
from hindsight._text import withdrawn_on_error
from hindsight.capture.ingest._common import (
    SYNTHETIC_BASE,
    SYNTHETIC_STEP,
    context_fields,
    event_id,
    outcome_from,
    parse_reward,
    parse_tags,
    record_task_type,
    trajectory_id,
)
from hindsight.capture.ingest._detect import shape_error
from hindsight.capture.ingest._reader import RawRecord, RecordError, record_error, valid_record
from hindsight.models import Event, EventType, Provenance, Trajectory, content_to_text

__all__ = ["events_records_to_trajectories"]

_TRAJECTORY_KEYS = (
    "task",
    "task_type",
    "outcome",
    "reward",
    "tags",
    "system_prompt",
    "task_key",
    "task_id",
    "evidence",
    "reason",
)


@dataclass
class _Group:
    where: str
    number: int
    lines: list[dict[str, Any]] = field(default_factory=list)
    wheres: list[str] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)  # the line of each event
    hints: dict[str, Any] = field(default_factory=dict)
    hinted_at: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> its line


def _bad_line(group: _Group, exc: Exception) -> tuple[str, int]:
    """Where the error of a grouped run is: the event line it names, else (said of the run,
    at its first line, or with no line) the line that gave the run-level field it is about
    (``reward must be a number``), else the run's first line."""
    text, spot = str(exc), (group.where, group.number)
    for where, number in zip(group.wheres, group.numbers, strict=True):
        if text.startswith(f"{where}: "):
            spot, text = (where, number), text[len(where) + 2 :]
            break
    if spot[0] != group.where:
        return spot  # a bad event on a later line
    fields = (
        [str(e["loc"][0]) for e in exc.errors()[:1]] if isinstance(exc, ValidationError) else []
    )
    for key, hinted in group.hinted_at.items():
        if key in fields or any(text.startswith(f"{key}{end}") for end in (" ", ":", ".")):
            return hinted
    return spot


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(part) for part in err.get("loc", ()))
    return f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg", "invalid"))


def _events(
    raw_events: list[Any], traj_id: str, where: str, wheres: list[str] | None = None
) -> list[Event]:
    """Validate and re-id events; missing timestamps come from the synthetic clock, and a tool
    result without a ``status`` gets the one its text says (:func:`classify_tool_result`).

    A bad event is named by its own line (``wheres``: one per event of grouped event lines),
    else as ``<where>: events[<index>]`` (0-based, in a whole trajectory record)."""

    def label(index: int) -> str:
        return wheres[index] if wheres is not None else f"{where}: events[{index}]"

    id_map: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for index, raw in enumerate(raw_events):
        if not isinstance(raw, dict):
            raise InvalidTrajectoryError(f"{label(index)}: an event must be an object")
        row = {k: v for k, v in raw.items() if k not in _TRAJECTORY_KEYS}
        new_id = event_id(traj_id, index)
        original = row.get("event_id")
        if original is not None:
            id_map[str(original)] = new_id
            row["metadata"] = {**(row.get("metadata") or {}), "source_event_id": str(original)}
        row["event_id"] = new_id
        row["trajectory_id"] = traj_id
        if row.get("timestamp") is None:
            row["timestamp"] = SYNTHETIC_BASE + index * SYNTHETIC_STEP
        rows.append(row)
    events: list[Event] = []
    for index, row in enumerate(rows):
        parent = row.get("parent_id")
        if parent is not None:
            row["parent_id"] = id_map.get(str(parent), str(parent))
        try:
            event = Event.model_validate(row)
        except ValidationError as exc:
            raise InvalidTrajectoryError(f"{label(index)}: {_first_error(exc)}") from exc
        refusal = long_tool_name(event.tool_name)
        if refusal is not None:
            raise InvalidTrajectoryError(f"{label(index)}: {refusal}")
        if (
            event.event_type is EventType.TOOL_RESULT
            and event.status is None
            and not event.metadata.get("incomplete")  # the recorder's placeholder: no reply
        ):
            # as the recorder and the other formats do: the reply says it
            event = event.model_copy(update={"status": classify_tool_result(event.content)})
        events.append(event)
    return events


def _task_of(events: list[Event]) -> str:
    return next(
        (
            e.content.strip()
            for e in events
            if e.event_type is EventType.USER_MESSAGE and e.content.strip()
        ),
        "",
    )


def _trajectory(
    record_for_id: Any,
    raw_events: list[Any],
    hints: dict[str, Any],
    *,
    where: str,
    number: int,
    tenant_id: str,
    namespace: str,
    task_type: str | None,
    metadata: dict[str, Any],
    wheres: list[str] | None = None,
) -> Trajectory:
    traj_id = trajectory_id("events", tenant_id, namespace, record_for_id)
    events = _events(raw_events, traj_id, where, wheres)
    reward = parse_reward(hints.get("reward"), where)
    task = hints.get("task") if isinstance(hints.get("task"), str) else _task_of(events)
    start = events[0].timestamp if events else SYNTHETIC_BASE
    system_prompt = hints.get("system_prompt")
    if system_prompt is not None and not isinstance(system_prompt, str | list):
        raise InvalidTrajectoryError(
            f"{where}: system_prompt must be text, got {type(system_prompt).__name__}"
        )
    return Trajectory(
        id=traj_id,
        tenant_id=tenant_id,
        namespace=namespace,
        task=task or "",
        task_type=task_type or record_task_type(hints.get("task_type"), where),
        tags=parse_tags(hints.get("tags"), where),
        outcome=outcome_from(hints.get("outcome"), reward, where),
        reward=reward,
        source=Provenance.USER,
        started_at=start,
        ended_at=events[-1].timestamp if events else start,
        events=events,
        metadata={"source_format": "events", "source_record": number, **metadata},
        system_prompt=content_to_text(system_prompt) if system_prompt is not None else None,
        **context_fields(hints, where),
    )


def _whole(raw: RawRecord, **kw: Any) -> Trajectory:
    value: dict[str, Any] = raw.value
    if not isinstance(value.get("events"), list):
        raise InvalidTrajectoryError(f"{raw.where}: 'events' must be a list")
    hints = {k: value.get(k) for k in _TRAJECTORY_KEYS}
    metadata = dict(value.get("metadata") or {})
    if value.get("id") is not None:
        metadata["source_trajectory_id"] = str(value["id"])
    return _trajectory(
        value,
        value["events"],
        hints,
        where=raw.where,
        number=raw.number,
        metadata=metadata,
        **kw,
    )


def events_records_to_trajectories(
    records: Iterable[RawRecord | RecordError],
    *,
    tenant_id: str,
    namespace: str,
    task_type: str | None,
    tolerant: bool = False,
) -> Iterator[Trajectory | RecordError]:
    """Trajectories from events-format records (see the module docstring).

    Whole-trajectory records are yielded as they are read; grouped event lines after the last
    record, one trajectory per ``trajectory_id`` in order of first appearance. With
    ``tolerant``, a bad record (or the group of a bad event line) is yielded as a
    :class:`RecordError` and the others are still read.

    Raises:
        InvalidTrajectoryError: (not ``tolerant``) a record is not an object, an event line
            has no ``trajectory_id``, or an event or field is invalid; the message names the
            file and line or record.
    """
    kw: dict[str, Any] = {"tenant_id": tenant_id, "namespace": namespace, "task_type": task_type}
    groups: dict[str, _Group] = {}
    for raw in records:
        if isinstance(raw, RecordError):
            if not tolerant:
                raise InvalidTrajectoryError(raw.message)
            yield raw
            continue
        try:
            raw = valid_record(raw)
            value = raw.value
            if not isinstance(value, dict):
                raise InvalidTrajectoryError(
                    f"{raw.where}: expected an event or trajectory object, "
                    f"got {type(value).__name__}"
                )
            wrong = shape_error(value, "events")
            if wrong is not None:
                raise InvalidTrajectoryError(f"{raw.where}: {wrong}")
            if "events" in value:
                with withdrawn_on_error():  # a refused record keeps none of its notes
                    whole = _whole(raw, **kw)
            else:
                whole = None
                tid = value.get("trajectory_id")
                if tid is None or not str(tid).strip():
                    raise InvalidTrajectoryError(
                        f"{raw.where}: event has no trajectory_id to group by"
                    )
                group = groups.setdefault(str(tid), _Group(raw.where, raw.number))
                group.lines.append(value)
                group.wheres.append(raw.where)
                group.numbers.append(raw.number)
                for key in _TRAJECTORY_KEYS:
                    if value.get(key) is not None and key not in group.hints:
                        group.hints[key] = value[key]
                        group.hinted_at[key] = (raw.where, raw.number)
        except (HindsightError, ValueError) as exc:
            if not tolerant:
                raise
            yield record_error(raw.number, raw.where, exc)
            continue
        if whole is not None:
            yield whole
    for tid, group in groups.items():
        try:
            with withdrawn_on_error():
                traj = _trajectory(
                    {"trajectory_id": tid, "events": group.lines},
                    group.lines,
                    group.hints,
                    where=group.where,
                    number=group.number,
                    metadata={"source_trajectory_id": tid},
                    wheres=group.wheres,
                    **kw,
                )
        except (HindsightError, ValueError) as exc:
            if not tolerant:
                raise
            # Named by the line of the bad event; the whole run waits for its fix (a run
            # without one of its events would teach from steps that did not happen).
            at, number = _bad_line(group, exc)
            lines = f"{len(group.lines)} line{'' if len(group.lines) == 1 else 's'}"
            run = f"; run {tid!r} ({lines}) not ingested"
            text = validation_message(exc) if isinstance(exc, ValidationError) else str(exc)
            if at != group.where:  # named by the line the field came from, not the first
                text = text.removeprefix(f"{group.where}: ")
            yield record_error(number, at, InvalidTrajectoryError(f"{text}{run}"))
            continue
        yield traj
