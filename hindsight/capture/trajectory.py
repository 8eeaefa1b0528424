"""A finished run as the caller hands it over: a :class:`~hindsight.models.Trajectory`, or a dict
of its fields (what ``store_episode`` takes from Python, HTTP and MCP alike)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from hindsight._contract import (
    TenantId,
    check,
    long_tool_name,
    outcome_conflict,
    validation_message,
)
from hindsight._errors import InvalidTrajectoryError
from hindsight._text import note
from hindsight.models import Trajectory

__all__ = ["checked_run", "coerce_trajectory"]


def coerce_trajectory(
    trajectory: Trajectory | Mapping[str, Any], now: datetime | None = None
) -> Trajectory:
    """``trajectory`` itself, or the Trajectory its fields describe; ``now`` (the memory's
    clock) is the ``started_at`` of a dict without one and the ``timestamp`` of its events
    given as dicts without one.

    A dict whose reward says the opposite of its outcome is stored as given, with a note
    (:func:`hindsight._contract.outcome_conflict`); a Trajectory is taken as it is (the
    recorder and the log formats said so where it was built).

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
    data = dict(trajectory)
    if now is not None:
        data.setdefault("started_at", now)
        events = data.get("events")
        if isinstance(events, list):
            data["events"] = [
                {"timestamp": now, **e} if isinstance(e, Mapping) and "timestamp" not in e else e
                for e in events
            ]
    try:
        traj = Trajectory.model_validate(data)
    except ValidationError as err:
        raise InvalidTrajectoryError(f"invalid trajectory: {validation_message(err)}") from None
    conflict = outcome_conflict(traj.outcome, traj.reward)
    if conflict is not None:
        note(f"trajectory: {conflict}")
    return traj


def checked_run(traj: Trajectory) -> Trajectory:
    """``traj``, when it may be stored: what every write of a run goes through
    (``store_episode`` in Python, HTTP and MCP, the recorder, the integrations' writer).

    Raises:
        InvalidTrajectoryError: an event's tool name is longer than the recorder takes
            (``invalid trajectory: events[3]: tool_name must be a tool name of 1..200
            characters, got '...'``: :func:`hindsight._contract.long_tool_name`).
    """
    for index, event in enumerate(traj.events):
        refusal = long_tool_name(event.tool_name)
        if refusal is not None:
            raise InvalidTrajectoryError(f"invalid trajectory: events[{index}]: {refusal}")
    return traj
