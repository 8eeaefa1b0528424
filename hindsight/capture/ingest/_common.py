"""Helpers shared by the log parsers: deterministic ids, outcomes, timestamps."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from hindsight._contract import (
    TaskType,
    check,
    outcome_conflict,
    reward_outcome,
)
from hindsight._errors import InvalidTrajectoryError, UsageError
from hindsight._ids import stable_id
from hindsight._text import note
from hindsight.models import (
    ExpectedAction,
    Outcome,
    OutcomeEvidence,
    validate_reward,
    validate_task_key,
)

__all__ = [
    "SYNTHETIC_BASE",
    "SYNTHETIC_STEP",
    "canonical_json",
    "context_fields",
    "event_id",
    "expected_action",
    "json_arguments",
    "outcome_from",
    "outcome_word",
    "parse_reward",
    "parse_tags",
    "parse_timestamp",
    "record_task_type",
    "system_prompt_metadata",
    "trajectory_id",
]

#: Start of the synthetic clock for logs without timestamps: event ``i`` of a record gets
#: ``SYNTHETIC_BASE + i * SYNTHETIC_STEP``, so re-parsing a file gives identical trajectories.
SYNTHETIC_BASE = datetime(2024, 1, 1, tzinfo=UTC)
SYNTHETIC_STEP = timedelta(seconds=1)

_SUCCESS_WORDS = {"success", "succeeded", "successful", "pass", "passed", "ok", "done", "true"}
_FAILURE_WORDS = {"failure", "failed", "fail", "error", "false"}
_PARTIAL_WORDS = {"partial", "partially"}


def canonical_json(value: Any) -> str:
    """``value`` as compact JSON with sorted keys (the content that ids are derived from)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def trajectory_id(kind: str, tenant_id: str, namespace: str, record: Any) -> str:
    """The deterministic id of a parsed record.

    A UUID5 of the source kind (``"openai"``, ``"tau-bench"``, ``"events"``), the tenant, the
    namespace and the canonical JSON of the record: re-ingesting the same file gives the same
    ids; the same file ingested for another tenant or namespace gives other ids.
    """
    digest = hashlib.sha256(canonical_json(record).encode("utf-8")).hexdigest()
    return stable_id("trajectory", kind, tenant_id, namespace, digest)


def event_id(traj_id: str, index: int) -> str:
    """The deterministic id of the ``index``-th (0-based) event of trajectory ``traj_id``."""
    return stable_id("event", traj_id, str(index))


def outcome_word(value: Any) -> Outcome | None:
    """The outcome a word names, in any case: ``success`` / ``failure`` / ``partial`` /
    ``unknown`` and their common synonyms in logs (``passed``, ``succeeded``, ``ok``, ``done``,
    ``failed``, ``fail``, ``error``, ``partially``; a boolean or ``"true"`` / ``"false"``), an
    :class:`Outcome` itself; ``None`` for anything else. The recorder's ``set_outcome`` and
    every log format read outcomes by it."""
    if isinstance(value, Outcome):
        return value
    if not isinstance(value, str | bool):
        return None
    word = str(value).strip().lower()
    if word in _SUCCESS_WORDS:
        return Outcome.SUCCESS
    if word in _FAILURE_WORDS:
        return Outcome.FAILURE
    if word in _PARTIAL_WORDS:
        return Outcome.PARTIAL
    if word in {"unknown", ""}:
        return Outcome.UNKNOWN
    return None


def outcome_from(outcome: Any, reward: float | None, where: str) -> Outcome:
    """The run's outcome from an explicit ``outcome`` value, else from ``reward``.

    ``outcome`` may be an :class:`Outcome` value or a common synonym (``"passed"``,
    ``"failed"``, a bool, ...). Reward: ``>= 1`` success, ``<= 0`` failure, in between partial.
    Neither: unknown.

    An explicit outcome the reward disagrees with is kept, and said in one line naming
    ``where`` (:func:`hindsight._contract.outcome_conflict`, a note of :mod:`hindsight._text`).

    Raises:
        InvalidTrajectoryError: ``outcome`` is present but not recognised (names ``where``).
    """
    if outcome is not None:
        found = outcome_word(outcome)
        if found is None:
            raise InvalidTrajectoryError(
                f"{where}: outcome must be success, failure, partial or unknown, "
                f"got {outcome!r:.60}"
            )
        conflict = outcome_conflict(found, reward)
        if conflict is not None:
            note(f"{where}: {conflict}")
        return found
    if reward is None:
        return Outcome.UNKNOWN
    return reward_outcome(reward)


def parse_tags(value: Any, where: str) -> list[str]:
    """A record's ``tags``: absent (``None``) is none; one string is a list of one (as
    everywhere else, docs/concepts.md#the-input-contract); a list keeps its strings in order,
    blank ones dropped.

    Raises:
        InvalidTrajectoryError: ``tags`` is neither a string nor a list of strings.
    """
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
        raise InvalidTrajectoryError(
            f"{where}: tags must be a string or a list of strings, got {value!r:.60}"
        )
    return [t for t in items if t.strip()]


def parse_reward(value: Any, where: str) -> float | None:
    """A record's ``reward`` as a finite float, or ``None`` when absent.

    Raises:
        InvalidTrajectoryError: the reward is not a finite number.
    """
    try:
        return validate_reward(value)
    except ValueError:
        raise InvalidTrajectoryError(
            f"{where}: reward must be a number, got {value!r:.60}"
        ) from None


_UNIX_TEXT = re.compile(r"\d{9,13}(?:\.\d+)?")
"""Unix seconds or milliseconds written as text (``"1741000000"``)."""


def parse_timestamp(value: Any) -> datetime | None:
    """A timestamp from ISO-8601 text or Unix seconds (milliseconds when > 1e11), as a number
    or as the text of one; UTC-aware. Naive values are taken as UTC.

    Returns ``None`` for a missing or unreadable value: a record's own ``timestamp`` that is
    unreadable refuses the record (:mod:`hindsight.capture.ingest.openai`); a message's is
    passed over (the message then gets the synthetic clock's next step, as one without).
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str) and _UNIX_TEXT.fullmatch(value.strip()):
        value = float(value.strip())
    parsed: datetime | None = None
    if isinstance(value, int | float) and math.isfinite(value):
        seconds = value / 1000.0 if value > 1e11 else float(value)
        try:
            parsed = datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    elif isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
    if parsed is None:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def system_prompt_metadata(text: str) -> dict[str, Any]:
    """What a trajectory keeps of a (usually huge) system prompt: its head and a hash.

    Returns ``{"system_prompt_head": <first 200 chars>, "system_prompt_sha256": <hex[:16]>}``.
    """
    return {
        "system_prompt_head": text[:200],
        "system_prompt_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()[:16],
    }


def json_arguments(text: str, what: str, kept_in: str) -> Any:
    """Arguments sent as JSON text, parsed (blank text is ``{}``). Text that is not JSON is
    kept exactly, as ``{"_raw": text}``, and said in one line (:func:`hindsight._text.note`):
    ``<what> are not valid JSON (<why>); kept as text in <kept_in>._raw``. A tool call's
    arguments and an expected action's read JSON text this way."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        why = f"{exc.msg} at character {exc.pos}"
        note(f"{what} are not valid JSON ({why}); kept as text in {kept_in}._raw")
        return {"_raw": text}


def expected_action(item: Any, where: str) -> ExpectedAction:
    """One expected call from the shapes logs use: ``{"tool", "args"}`` (hindsight),
    ``{"name", "kwargs"}`` (tau-bench) or ``{"name", "arguments"}`` (OpenAI; a JSON string is
    parsed; text that is not JSON is kept exactly as ``{"_raw": <text>}`` and said in one line
    naming ``where`` and the tool, :func:`json_arguments`).

    Raises:
        InvalidTrajectoryError: not an object, no tool name, or arguments that are not an object
            (JSON text of another value included).
    """
    if not isinstance(item, dict):
        raise InvalidTrajectoryError(
            f"{where}: an expected action must be an object, got {type(item).__name__}"
        )
    tool = item.get("tool", item.get("name"))
    if not isinstance(tool, str) or not tool.strip():
        raise InvalidTrajectoryError(f"{where}: an expected action has no tool name")
    args = next((item[k] for k in ("args", "kwargs", "arguments") if k in item), None)
    if isinstance(args, str):
        what = f"{where}: the arguments of expected action {tool!r:.60}"
        args = json_arguments(args, what, "args")
    if args is not None and not isinstance(args, dict):
        raise InvalidTrajectoryError(
            f"{where}: the arguments of expected action {tool!r:.60} must be an object"
        )
    return ExpectedAction(tool=tool, args=args or {})


def _evidence(value: Any, reason: Any, where: str) -> OutcomeEvidence | None:
    if value is None and reason is None:
        return None
    if reason is not None and not isinstance(reason, str):
        raise InvalidTrajectoryError(
            f"{where}: reason must be a string, got {type(reason).__name__}"
        )
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidTrajectoryError(
            f"{where}: evidence must be an object, got {type(value).__name__}"
        )
    data = dict(value)
    actions = data.get("expected_actions")
    if isinstance(actions, list):
        data["expected_actions"] = [
            expected_action(item, f"{where}: evidence.expected_actions[{i}]")
            for i, item in enumerate(actions)
        ]
    if reason is not None and data.get("reason") is None:
        data["reason"] = reason
    try:
        evidence = OutcomeEvidence.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(part) for part in err.get("loc", ()))
        raise InvalidTrajectoryError(f"{where}: evidence.{loc}: {err.get('msg')}") from None
    return None if evidence.is_empty() else evidence


def record_task_type(value: Any, where: str) -> str | None:
    """A record's own ``task_type``: ``None`` when absent or null, else checked as the Python
    API checks it (a non-empty string: ``""`` is refused, never read as none).

    Raises:
        InvalidTrajectoryError: ``<where>: task_type must be a non-empty string or None,
            got ''``.
    """
    if value is None:
        return None
    try:
        task_type: str | None = check(TaskType, value)
    except UsageError as exc:
        raise InvalidTrajectoryError(f"{where}: {exc}") from None
    return task_type


def context_fields(value: dict[str, Any], where: str) -> dict[str, Any]:
    """The review context a log record carries, as Trajectory fields
    (docs/concepts.md#context-for-the-review-system-prompt-outcome-evidence-task-key).

    ``task_key`` from the record's ``task_key`` (checked: non-blank, <= 200 characters), else
    from its ``task_id`` when that is a string or number making a valid key (a ``task_id`` that
    does not stays in metadata only, as before); ``evidence`` from an ``evidence`` object
    (:class:`~hindsight.models.OutcomeEvidence` fields; expected actions in any shape
    :func:`expected_action` reads) and / or a ``reason`` string. Absent keys give nothing.

    Raises:
        InvalidTrajectoryError: a malformed ``task_key``, ``evidence`` or ``reason``.
    """
    out: dict[str, Any] = {}
    if value.get("task_key") is not None:
        try:
            out["task_key"] = validate_task_key(value["task_key"])
        except ValueError as exc:
            raise InvalidTrajectoryError(f"{where}: {exc}") from None
    elif isinstance(value.get("task_id"), str | int | float) and not isinstance(
        value.get("task_id"), bool
    ):
        raw = value["task_id"]
        text = str(int(raw)) if isinstance(raw, float) and raw.is_integer() else str(raw)
        with contextlib.suppress(ValueError):  # not a usable key: it stays in metadata only
            out["task_key"] = validate_task_key(text)
    evidence = _evidence(value.get("evidence"), value.get("reason"), where)
    if evidence is not None:
        out["evidence"] = evidence
    return out
