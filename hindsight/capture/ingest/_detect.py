"""Tell the format of a trajectory log from its first record."""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["Format", "ResolvedFormat", "format_of_record"]

#: Formats :func:`hindsight.capture.ingest.iter_trajectories` accepts.
Format = Literal["auto", "openai", "tau-bench", "events"]
#: A concrete format (what ``"auto"`` resolves to).
ResolvedFormat = Literal["openai", "tau-bench", "events"]


def format_of_record(value: Any) -> ResolvedFormat | None:
    """The format a single record belongs to, or ``None`` when it says nothing.

    ``traj`` key -> tau-bench; ``event_type`` or an ``events`` list -> events; ``messages`` or a
    list (of messages) -> openai.
    """
    if isinstance(value, list):
        return "openai"
    if not isinstance(value, dict):
        return None
    if "traj" in value:
        return "tau-bench"
    if "event_type" in value or isinstance(value.get("events"), list):
        return "events"
    if "messages" in value:
        return "openai"
    return None
