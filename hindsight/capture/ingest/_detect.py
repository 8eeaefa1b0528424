"""Tell the format of a trajectory log from its first record."""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["Format", "ResolvedFormat", "format_of_record", "shape_error"]

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


_EXPECTED = {
    "openai": "an object with 'messages' or a message list",
    "tau-bench": "an object with 'traj'",
    "events": "an event (with 'event_type') or a trajectory object (with 'events')",
}


def shape_error(value: Any, expected: ResolvedFormat) -> str | None:
    """Why a record does not match the ``expected`` format, or ``None`` when it does (a record
    of another shape is an error for that record, never an empty run: docs/cli.md#hindsight-ingest).

    A record matches when :func:`format_of_record` says ``expected``, or (events) when it is
    an event line that names its ``trajectory_id``.
    """
    found = format_of_record(value)
    if found == expected:
        return None
    if expected == "events" and isinstance(value, dict) and "trajectory_id" in value:
        return None
    if found is not None:
        article = "an" if found[:1].lower() in "aeiou" else "a"
        got = f"it looks like {article} {found} record"
    elif isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:5]) or "none"
        got = f"got an object with keys {keys}"
    else:
        got = f"got {type(value).__name__}"
    return f"does not match format {expected}: expected {_EXPECTED[expected]}, {got}"
