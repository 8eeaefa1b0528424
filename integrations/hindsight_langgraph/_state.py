"""The graph state hindsight's nodes read and write.

:class:`HindsightState` is for new graphs; existing graphs keep their own state and
:func:`hindsight_langgraph.add_hindsight` adds the two hindsight keys as extra channels.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import MessagesState

__all__ = ["RECALLED_KEY", "TRAJECTORY_KEY", "HindsightState"]

RECALLED_KEY = "recalled_experiences"
"""Default state key of the recalled hits (a list of dicts, see :class:`HindsightState`)."""

TRAJECTORY_KEY = "trajectory_id"
"""Default state key of the current run's trajectory id (a UUID string)."""


class HindsightState(MessagesState, total=False):
    """``messages`` (with LangGraph's ``add_messages`` reducer) plus what hindsight adds.

    Keys:
        messages: the conversation; the recall node appends the past-experience block to the
            tail of its system message.
        recalled_experiences: the hits of the last recall, best first; each a JSON-safe dict
            ``{"id", "content", "kind", "task_type", "namespace", "confidence", "score",
            "breakdown", "source_trajectory_ids"}`` (the shape of ``hindsight recall --json``),
            so every checkpointer can store it.
        trajectory_id: the id of the run's trajectory (set by the recall node); use it with
            ``memory.record_outcome(trajectory_id, success, tenant_id=...)`` or
            ``memory.get_trajectory(...)``.
    """

    recalled_experiences: list[dict[str, Any]]
    trajectory_id: str | None
