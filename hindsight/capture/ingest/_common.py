"""Helpers shared by the log parsers: deterministic ids, outcomes, timestamps."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

from hindsight._errors import InvalidTrajectoryError
from hindsight._ids import stable_id
from hindsight.models import Outcome

__all__ = [
    "SYNTHETIC_BASE",
    "SYNTHETIC_STEP",
    "canonical_json",
    "event_id",
    "outcome_from",
    "parse_reward",
    "parse_timestamp",
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


def outcome_from(outcome: Any, reward: float | None, where: str) -> Outcome:
    """The run's outcome from an explicit ``outcome`` value, else from ``reward``.

    ``outcome`` may be an :class:`Outcome` value or a common synonym (``"passed"``,
    ``"failed"``, a bool, ...). Reward: ``>= 1`` success, ``<= 0`` failure, in between partial.
    Neither: unknown.

    Raises:
        InvalidTrajectoryError: ``outcome`` is present but not recognised (names ``where``).
    """
    if outcome is not None:
        word = str(outcome).strip().lower()
        if word in _SUCCESS_WORDS:
            return Outcome.SUCCESS
        if word in _FAILURE_WORDS:
            return Outcome.FAILURE
        if word in _PARTIAL_WORDS:
            return Outcome.PARTIAL
        if word in {"unknown", ""}:
            return Outcome.UNKNOWN
        raise InvalidTrajectoryError(
            f"{where}: outcome must be success, failure, partial or unknown, got {outcome!r:.60}"
        )
    if reward is None:
        return Outcome.UNKNOWN
    if reward >= 1.0:
        return Outcome.SUCCESS
    if reward <= 0.0:
        return Outcome.FAILURE
    return Outcome.PARTIAL


def parse_reward(value: Any, where: str) -> float | None:
    """A record's ``reward`` as a finite float, or ``None`` when absent.

    Raises:
        InvalidTrajectoryError: the reward is not a finite number.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    try:
        reward = float(value)
    except (TypeError, ValueError):
        reward = math.nan
    if not math.isfinite(reward):
        raise InvalidTrajectoryError(f"{where}: reward must be a number, got {value!r:.60}")
    return reward


def parse_timestamp(value: Any) -> datetime | None:
    """A timestamp from ISO-8601 text or Unix seconds (milliseconds when > 1e11); UTC-aware.

    Returns ``None`` for a missing or unreadable value (the caller then uses the synthetic
    clock). Naive values are taken as UTC.
    """
    if value is None or isinstance(value, bool):
        return None
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
