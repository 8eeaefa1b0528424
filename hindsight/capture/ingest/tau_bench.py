"""tau-bench result records -> trajectories.

A record is ``{"task_id": int, "trial": int, "reward": float, "info": {...}, "traj": [OpenAI
chat messages]}`` (the ``historical_trajectories`` files of sierra-research/tau-bench).
``info`` holds the task (``task.actions``: the ground-truth calls) and ``reward_info``
(``reward``, ``info``: the reward's components, ``actions``).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from hindsight._errors import InvalidTrajectoryError
from hindsight.capture.ingest._common import expected_action
from hindsight.capture.ingest._reader import RawRecord
from hindsight.capture.ingest.openai import build_trajectory
from hindsight.models import OutcomeEvidence, Trajectory

__all__ = [
    "TAU_BENCH_TAG",
    "TAU_BENCH_TASK_TYPE",
    "tau_bench_evidence",
    "tau_bench_record_to_trajectory",
]

#: task_type of tau-bench trajectories unless the caller gives one.
TAU_BENCH_TASK_TYPE = "tau-bench"
#: Tag put on every tau-bench trajectory.
TAU_BENCH_TAG = "tau-bench"


def _number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _object(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _reason(reward_info: dict[str, Any], details: dict[str, Any]) -> str | None:
    """``"reward 0.0; r_actions 0.0"``: the reward, then every numeric component of
    ``reward_info.info`` in the record's order, under the record's own keys."""
    parts = [f"reward {reward_info['reward']}"] if _number(reward_info.get("reward")) else []
    parts += [f"{key} {value}" for key, value in details.items() if _number(value)]
    return "; ".join(parts) or None


def tau_bench_evidence(info: Any, where: str) -> OutcomeEvidence | None:
    """The outcome evidence of a tau-bench record's ``info``.

    ``expected_actions`` from ``info.task.actions`` (else ``info.reward_info.actions``), each
    ``{"name", "kwargs"}``; ``details`` is ``info.reward_info.info`` as it is; ``reason`` is the
    reward and the numeric components of ``details`` (``"reward 0.0; r_actions 0.0"``).
    ``None`` when ``info`` holds none of these.

    Raises:
        InvalidTrajectoryError: an action is malformed (names ``where``).
    """
    if not isinstance(info, dict):
        return None
    task, reward_info = _object(info.get("task")), _object(info.get("reward_info"))
    actions = task.get("actions")
    if not isinstance(actions, list):
        actions = reward_info.get("actions")
    details = _object(reward_info.get("info"))
    evidence = OutcomeEvidence(
        reason=_reason(reward_info, details),
        expected_actions=[
            expected_action(item, f"{where}: info actions[{i}]")
            for i, item in enumerate(actions if isinstance(actions, list) else [])
        ],
        details=details,
    )
    return None if evidence.is_empty() else evidence


def tau_bench_record_to_trajectory(
    raw: RawRecord,
    *,
    tenant_id: str,
    namespace: str,
    task_type: str | None,
) -> Trajectory:
    """One tau-bench record as a trajectory.

    Task: the first user message. task_type: ``task_type`` or ``"tau-bench"``. Tags:
    ``["tau-bench"]``. Metadata: ``task_id`` and ``trial``. Outcome from ``reward`` (1
    success, 0 failure). System prompt: the system message (the domain's policy). Task key:
    ``"<task_id>@<first 8 hex digits of the policy's SHA-256>"`` (``str(task_id)`` without a
    policy): tau-bench numbers tasks per domain, so two domains ingested into one tenant and
    task_type never share a group. Evidence: :func:`tau_bench_evidence` of ``info`` (the rest
    of ``info``, e.g. the simulated user's instruction, is not kept).

    Raises:
        InvalidTrajectoryError: the record is not an object or ``traj`` is malformed.
    """
    value = raw.value
    if not isinstance(value, dict):
        raise InvalidTrajectoryError(
            f"{raw.where}: a tau-bench record must be an object, got {type(value).__name__}"
        )
    metadata = {key: value[key] for key in ("task_id", "trial") if value.get(key) is not None}
    context: dict[str, Any] = {}
    evidence = tau_bench_evidence(value.get("info"), raw.where)
    if evidence is not None:
        context["evidence"] = evidence
    traj = build_trajectory(
        raw,
        value.get("traj"),
        kind="tau-bench",
        tenant_id=tenant_id,
        namespace=namespace,
        task_type=task_type or TAU_BENCH_TASK_TYPE,
        fields={
            "reward": value.get("reward"),
            "outcome": value.get("outcome"),
            "task_id": value.get("task_id"),
        },
        tags=[TAU_BENCH_TAG],
        metadata=metadata,
        context=context,
    )
    if traj.task_key is not None and traj.system_prompt:
        digest = hashlib.sha256(traj.system_prompt.encode("utf-8", "surrogatepass")).hexdigest()
        traj = traj.model_copy(update={"task_key": f"{traj.task_key}@{digest[:8]}"})
    return traj
