"""The runs of a tau-bench file: trajectories (through hindsight's ingest) with what the
benchmark needs beside them (task, trial, outcome, first user message, ground truth)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hindsight._errors import InvalidTrajectoryError, UsageError
from hindsight.bench.learning._truth import Call, expected_actions, run_calls
from hindsight.models import Trajectory

__all__ = ["TENANT", "Run", "Split", "load_runs", "read_records", "split_runs"]

TENANT = "bench-learning"
"""The tenant every store of the benchmark uses (each store is a fresh temporary one)."""


@dataclass(frozen=True)
class Run:
    """One record of the file.

    Attributes:
        trajectory: as :func:`hindsight.capture.ingest.iter_trajectories` parses it.
        task: the record's ``task_id`` as a string; trial: its ``trial``.
        success: ``reward >= 1`` (tau-bench's rewards are 0 or 1; partial credit is a failure).
        first_message: the first user message (the query a new run of the task starts with).
        expected: the ground-truth actions; calls: the run's own tool calls.
    """

    trajectory: Trajectory
    task: str
    trial: int
    success: bool
    first_message: str
    expected: tuple[Call, ...]
    calls: tuple[Call, ...]

    @property
    def id(self) -> str:
        return self.trajectory.id


@dataclass(frozen=True)
class Split:
    """``train`` runs in review order (trial by trial, tasks in file order within a trial, as
    a benchmark produces them) and one ``held`` run per task (the query trial)."""

    train: list[Run]
    held: list[Run]
    tasks: list[str]


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON array or JSON Lines file.

    Raises:
        InvalidTrajectoryError: unreadable, not JSON, or a record is not an object (one line,
            naming the file).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidTrajectoryError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
        records = data if isinstance(data, list) else [data]
    except ValueError:
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError as exc:
                    raise InvalidTrajectoryError(f"{path}:{number}: not JSON: {exc}") from None
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise InvalidTrajectoryError(f"{path}: record {i} is not an object")
    return records


def _first_user_message(record: Mapping[str, Any]) -> str:
    for msg in record.get("traj") or []:
        if isinstance(msg, Mapping) and msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):
                content = " ".join(
                    str(p.get("text", "")) for p in content if isinstance(p, Mapping)
                )
            if isinstance(content, str) and content.strip():
                return content.strip()
    return ""


def _task_order(task: str) -> tuple[int, int | str]:
    return (0, int(task)) if task.lstrip("-").isdigit() else (1, task)


def load_runs(path: Path, *, tasks: int | None = None) -> tuple[list[Run], list[dict[str, Any]]]:
    """The runs of a tau-bench file (the first ``tasks`` task ids only) and all its records.

    Raises:
        InvalidTrajectoryError: the file is unreadable or malformed (one line).
        UsageError: a record lacks ``task_id`` / ``trial``, or two records share both.
    """
    from hindsight.capture.ingest import iter_trajectories

    records = read_records(path)
    by_key: dict[tuple[str, int], dict[str, Any]] = {}
    for i, record in enumerate(records):
        try:
            key = (str(record["task_id"]), int(record["trial"]))
        except (KeyError, TypeError, ValueError):
            raise UsageError(
                f"{path}: record {i} has no task_id/trial (a tau-bench file?)"
            ) from None
        if key in by_key:
            raise UsageError(f"{path}: two records of task {key[0]} trial {key[1]}")
        by_key[key] = record
    runs: list[Run] = []
    for traj in iter_trajectories(Path(path), format="tau-bench", tenant_id=TENANT):
        key = (str(traj.metadata.get("task_id")), int(traj.metadata.get("trial", -1)))
        record = by_key[key]
        reward = record.get("reward")
        runs.append(
            Run(
                trajectory=traj,
                task=key[0],
                trial=key[1],
                success=isinstance(reward, int | float) and reward >= 1.0,
                first_message=_first_user_message(record),
                expected=tuple(expected_actions(record)),
                calls=tuple(run_calls(record)),
            )
        )
    keep = sorted({r.task for r in runs}, key=_task_order)
    if tasks is not None:
        keep = keep[:tasks]
    wanted = set(keep)
    return [r for r in runs if r.task in wanted], records


def split_runs(runs: Sequence[Run], train_trials: Iterable[int], query_trial: int) -> Split:
    """Train runs (``train_trials``) in review order, and the ``query_trial`` run of each task.

    Raises:
        UsageError: the query trial is also a train trial, or no run is left on either side.
    """
    trials = list(dict.fromkeys(train_trials))
    if query_trial in trials:
        raise UsageError(f"trial {query_trial} cannot be both reviewed and held out")
    tasks = sorted({r.task for r in runs}, key=_task_order)
    order = {t: i for i, t in enumerate(tasks)}
    train = sorted(
        (r for r in runs if r.trial in trials),
        key=lambda r: (trials.index(r.trial), order[r.task]),
    )
    held = sorted((r for r in runs if r.trial == query_trial), key=lambda r: order[r.task])
    if not train:
        raise UsageError(f"the file has no run of trials {trials} to review")
    if not held:
        raise UsageError(f"the file has no run of trial {query_trial} to hold out")
    return Split(train=train, held=held, tasks=tasks)
