"""Parse real trajectory logs into :class:`~hindsight.models.Trajectory` objects (no writes).

Formats:

* ``openai``: a JSON array or JSON Lines of records ``{"messages": [...], "reward"?,
  "outcome"?, "task_id"?, "task_type"?, "id"?}`` or bare message lists
  (:mod:`hindsight.capture.ingest.openai`);
* ``tau-bench``: tau-bench result files ``[{"task_id", "trial", "reward", "info", "traj"}]``
  (:mod:`hindsight.capture.ingest.tau_bench`);
* ``events``: our own JSON Lines of events or whole trajectories
  (:mod:`hindsight.capture.ingest.events`).

Trajectory ids are deterministic (format, tenant, namespace, record content), so ingesting a file
twice gives the same ids and the store can skip what it has. A record that is not valid JSON, does
not match the format (docs/cli.md#hindsight-ingest: a tau-bench record read as ``openai``, an object
without ``messages``) or is malformed is an error naming the file and line: :func:`iter_results`
yields it as a :class:`RecordError` and goes on (``hindsight ingest`` keeps every good record),
:func:`iter_trajectories` raises :class:`~hindsight.InvalidTrajectoryError`. A record with
``"messages": null`` or an empty list gives an empty trajectory, which review turns into no lessons
(docs/concepts.md#review).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

from hindsight._contract import TaskType, check, input_file
from hindsight._errors import HindsightError, InvalidTrajectoryError, UsageError
from hindsight._ids import validate_namespace, validate_tenant
from hindsight._text import withdrawn_on_error
from hindsight.capture.ingest._detect import (
    Format,
    ResolvedFormat,
    format_of_record,
    shape_error,
)
from hindsight.capture.ingest._reader import (
    RawRecord,
    RecordError,
    count_raw_records,
    iter_raw_records,
    record_error,
    valid_record,
)
from hindsight.capture.ingest.events import events_records_to_trajectories
from hindsight.capture.ingest.openai import openai_record_to_trajectory
from hindsight.capture.ingest.tau_bench import tau_bench_record_to_trajectory
from hindsight.models import Trajectory

__all__ = [
    "Format",
    "RecordError",
    "ResolvedFormat",
    "count_records",
    "detect_format",
    "iter_results",
    "iter_trajectories",
]

_FORMATS = ("auto", "openai", "tau-bench", "events")
# How many leading records auto-detection looks at before giving up.
_DETECT_WINDOW = 20


def _peek(records: Iterator[RawRecord | RecordError]) -> list[RawRecord | RecordError]:
    """Read records until one tells the format (at most the detection window)."""
    head: list[RawRecord | RecordError] = []
    for raw in records:
        head.append(raw)
        if isinstance(raw, RawRecord) and format_of_record(raw.value) is not None:
            break
        if len(head) >= _DETECT_WINDOW:
            break
    return head


def _resolve(head: list[RawRecord | RecordError]) -> ResolvedFormat:
    records = [raw for raw in head if isinstance(raw, RawRecord)]
    for raw in records:
        found = format_of_record(raw.value)
        if found is not None:
            return found
    if not records:
        return "openai"
    raise InvalidTrajectoryError(
        f"{records[0].where}: cannot tell the log format (expected tau-bench records with "
        "'traj', OpenAI records with 'messages' or message lists, or events with "
        "'event_type'); pass the format explicitly"
    )


def _check_path(path: Path) -> Path:
    try:
        return input_file(path, "trajectory log (JSON or JSONL)")
    except UsageError as exc:  # the one wording of every command that reads a file
        raise InvalidTrajectoryError(str(exc)) from None


def detect_format(path: Path) -> ResolvedFormat:
    """The format of the log at ``path``, from its first records.

    An empty file is ``"openai"`` (it holds no trajectories either way).

    Raises:
        InvalidTrajectoryError: the file is missing, unreadable, not JSON, or of no known
            format.
    """
    path = _check_path(path)
    return _resolve(_peek(iter_raw_records(path, tolerant=True)))


def iter_trajectories(
    path: Path,
    *,
    format: Format = "auto",
    tenant_id: str,
    namespace: str = "default",
    task_type: str | None = None,
) -> Iterator[Trajectory]:
    """Parse the log at ``path`` into trajectories, in file order, lazily.

    Args:
        path: a JSON or JSON Lines file (JSON Lines are streamed line by line).
        format: ``"auto"`` (see :func:`detect_format`), ``"openai"``, ``"tau-bench"`` or
            ``"events"``.
        tenant_id: tenant the trajectories belong to (part of their ids).
        namespace: namespace within the tenant (part of their ids).
        task_type: overrides the records' own task_type (tau-bench default ``"tau-bench"``).

    Yields:
        One :class:`Trajectory` per record (events format: per trajectory id), with
        deterministic ids, ``source=Provenance.USER`` and tool results classified as success,
        failure or timeout.

    Raises:
        TenantRequiredError: ``tenant_id`` is empty or missing (before the file is read).
        UsageError: ``format`` or ``namespace`` is invalid.
        InvalidTrajectoryError: the file is missing or not valid JSON, or a record is
            malformed or of another format; the message names the file and the line or
            record number. (:func:`iter_results` reports such records and goes on.)
    """
    for item in iter_results(
        path, format=format, tenant_id=tenant_id, namespace=namespace, task_type=task_type
    ):
        if isinstance(item, RecordError):
            raise InvalidTrajectoryError(item.message)
        yield item


def iter_results(
    path: Path,
    *,
    format: Format = "auto",
    tenant_id: str,
    namespace: str = "default",
    task_type: str | None = None,
) -> Iterator[Trajectory | RecordError]:
    """:func:`iter_trajectories`, with each bad record yielded as a :class:`RecordError`
    (file, line, reason: not JSON, of another format, malformed) instead of raised, so the
    good records of a file are all read (what ``hindsight ingest`` stores).

    Raises:
        TenantRequiredError, UsageError: as :func:`iter_trajectories`.
        InvalidTrajectoryError: the file is missing or unreadable, a JSON document (not JSON
            Lines) is not valid JSON, or auto-detection cannot tell the format.
    """
    tenant_id = validate_tenant(tenant_id)
    namespace = validate_namespace(namespace)
    task_type = check(TaskType, task_type)
    if format not in _FORMATS:
        raise InvalidTrajectoryError(f"format must be one of {', '.join(_FORMATS)}, got {format!r}")
    path = _check_path(path)
    records: Iterator[RawRecord | RecordError] = iter_raw_records(path, tolerant=True)
    resolved: ResolvedFormat
    if format == "auto":
        head = _peek(records)
        resolved = _resolve(head)
        records = itertools.chain(head, records)
    else:
        resolved = format
    if resolved == "events":
        yield from events_records_to_trajectories(
            records, tenant_id=tenant_id, namespace=namespace, task_type=task_type, tolerant=True
        )
        return
    convert = (
        tau_bench_record_to_trajectory if resolved == "tau-bench" else openai_record_to_trajectory
    )
    for raw in records:
        if isinstance(raw, RecordError):
            yield raw
            continue
        try:
            raw = valid_record(raw)
        except UsageError as exc:
            yield record_error(raw.number, raw.where, exc)
            continue
        wrong = shape_error(raw.value, resolved)
        if wrong is not None:
            yield RecordError(raw.number, raw.where, f"{raw.where}: {wrong}")
            continue
        try:
            with withdrawn_on_error():  # a refused record keeps none of its notes
                traj = convert(raw, tenant_id=tenant_id, namespace=namespace, task_type=task_type)
        except (HindsightError, ValueError) as exc:
            yield record_error(raw.number, raw.where, exc)
            continue
        yield traj


def count_records(path: Path, format: Format = "auto") -> int:
    """How many items :func:`iter_results` will yield, about (a progress-bar total).

    JSON Lines of the openai and tau-bench formats are counted without parsing; events logs
    are parsed to count distinct trajectory ids.

    Raises:
        InvalidTrajectoryError: as :func:`iter_trajectories`.
    """
    path = _check_path(path)
    resolved = detect_format(path) if format == "auto" else format
    if resolved != "events":
        return count_raw_records(path)
    ids: set[str] = set()
    whole = 0
    for raw in iter_raw_records(path, tolerant=True):
        value = raw.value if isinstance(raw, RawRecord) else None
        if isinstance(raw, RecordError) or (isinstance(value, dict) and "events" in value):
            whole += 1
        elif isinstance(value, dict) and value.get("trajectory_id") is not None:
            ids.add(str(value["trajectory_id"]))
    return whole + len(ids)
