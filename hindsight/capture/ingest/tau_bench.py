"""tau-bench result records -> trajectories.

A record is ``{"task_id": int, "trial": int, "reward": float, "info": {...}, "traj": [OpenAI
chat messages]}`` (the ``historical_trajectories`` files of sierra-research/tau-bench).
"""

from __future__ import annotations

from hindsight._errors import InvalidTrajectoryError
from hindsight.capture.ingest._reader import RawRecord
from hindsight.capture.ingest.openai import build_trajectory
from hindsight.models import Trajectory

__all__ = ["TAU_BENCH_TAG", "TAU_BENCH_TASK_TYPE", "tau_bench_record_to_trajectory"]

#: task_type of tau-bench trajectories unless the caller gives one.
TAU_BENCH_TASK_TYPE = "tau-bench"
#: Tag put on every tau-bench trajectory.
TAU_BENCH_TAG = "tau-bench"


def tau_bench_record_to_trajectory(
    raw: RawRecord,
    *,
    tenant_id: str,
    namespace: str,
    task_type: str | None,
) -> Trajectory:
    """One tau-bench record as a trajectory.

    Task: the first user message. task_type: ``task_type`` or ``"tau-bench"``. Tags:
    ``["tau-bench"]``. Metadata: ``task_id`` and ``trial``; the ground-truth ``info`` is not
    kept. Outcome from ``reward`` (1 success, 0 failure).

    Raises:
        InvalidTrajectoryError: the record is not an object or ``traj`` is malformed.
    """
    value = raw.value
    if not isinstance(value, dict):
        raise InvalidTrajectoryError(
            f"{raw.where}: a tau-bench record must be an object, got {type(value).__name__}"
        )
    metadata = {key: value[key] for key in ("task_id", "trial") if value.get(key) is not None}
    return build_trajectory(
        raw,
        value.get("traj"),
        kind="tau-bench",
        tenant_id=tenant_id,
        namespace=namespace,
        task_type=task_type or TAU_BENCH_TASK_TYPE,
        fields={"reward": value.get("reward"), "outcome": value.get("outcome")},
        tags=[TAU_BENCH_TAG],
        metadata=metadata,
    )
