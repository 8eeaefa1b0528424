"""A finished run as the caller hands it over: a :class:`~hindsight.models.Trajectory`, or a dict
of its fields (what ``store_episode`` takes from Python, HTTP and MCP alike)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from hindsight._contract import TenantId, check, validation_message
from hindsight._errors import InvalidTrajectoryError
from hindsight.models import Trajectory

__all__ = ["coerce_trajectory"]


def coerce_trajectory(trajectory: Trajectory | Mapping[str, Any]) -> Trajectory:
    """``trajectory`` itself, or the Trajectory its fields describe.

    Raises:
        InvalidTrajectoryError: not a Trajectory nor a dict, or the fields do not validate
            (``invalid trajectory: field: reason``, one line).
        TenantRequiredError: the dict has no (or an empty) ``tenant_id``.
    """
    if isinstance(trajectory, Trajectory):
        return trajectory
    if not isinstance(trajectory, Mapping):
        raise InvalidTrajectoryError(
            f"trajectory must be a Trajectory or a dict, got {type(trajectory).__name__}"
        )
    if not trajectory.get("tenant_id"):
        check(TenantId, trajectory.get("tenant_id"))
    try:
        return Trajectory.model_validate(dict(trajectory))
    except ValidationError as err:
        raise InvalidTrajectoryError(f"invalid trajectory: {validation_message(err)}") from None
