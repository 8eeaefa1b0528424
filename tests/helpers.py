"""Builders shared by the engine tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hindsight import Event, EventStatus, EventType, Lesson, Memory, Trajectory
from hindsight.testing import FakeEmbedder, ManualClock, ScriptedReviewer


def make_memory(data_dir: Path, database_url: str, **kwargs: Any) -> Memory:
    """A Memory on a real SQL backend and the embedded Qdrant Edge index in ``data_dir``."""
    kwargs.setdefault("embedder", FakeEmbedder(64))
    kwargs.setdefault("reviewer", ScriptedReviewer([]))
    kwargs.setdefault("clock", ManualClock())
    return Memory(data_dir=data_dir, database_url=database_url, **kwargs)


def file_memory(data_dir: Path, **kwargs: Any) -> Memory:
    """A Memory on a SQLite file in ``data_dir`` (its unsaved area in ``data_dir/unsaved``),
    fakes for the vector index and the embedder, no lessons from reviews."""
    from hindsight.testing import InMemoryVectorIndex

    kwargs.setdefault("embedder", FakeEmbedder(64))
    kwargs.setdefault("index", InMemoryVectorIndex(64))
    kwargs.setdefault("reviewer", ScriptedReviewer([]))
    return Memory(data_dir=data_dir, **kwargs)


def lesson(content: str, kind: str = "rule", confidence: float = 0.6, **kw: Any) -> Lesson:
    return Lesson(kind=kind, content=content, confidence=confidence, **kw)  # type: ignore[arg-type]


def trajectory(tenant: str, task: str, *, tool: str = "order_query", status: str = "timeout",
               namespace: str = "default", task_type: str | None = None, **kw: Any) -> Trajectory:
    return Trajectory(
        tenant_id=tenant, namespace=namespace, task=task, task_type=task_type,
        events=[
            Event(event_type="user_message", content=task),
            Event(event_type="tool_call", tool_name=tool, tool_args={"id": 1}),
            Event(event_type="tool_result", tool_name=tool, content="timed out", status=status),
        ],
        **kw,
    )


def tool_step(
    tool: str, args: dict[str, Any], status: str = "success", output: str = "{}"
) -> list[Event]:
    """A tool call and its result, as two events."""
    return [
        Event(event_type=EventType.TOOL_CALL, tool_name=tool, tool_args=args),
        Event(
            event_type=EventType.TOOL_RESULT,
            tool_name=tool,
            status=EventStatus(status),
            content=output,
        ),
    ]
