"""Assemble the stored trajectory of a graph run from what the handler captured."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    convert_to_openai_messages,
)

from hindsight import Event, EventType, Outcome, Trajectory
from hindsight.capture.ingest._messages import parse_messages
from hindsight.models import content_to_text, utcnow

__all__ = ["assemble", "current_turn", "events_from_messages", "final_answer"]


def current_turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages from the last human message on (the request this run answered)."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0)
    return list(messages[last:])


def final_answer(messages: Sequence[BaseMessage]) -> str:
    """Text of the last message when it is an AI reply without tool calls (else ``""``)."""
    if not messages:
        return ""
    last = messages[-1]
    if isinstance(last, AIMessage) and not last.tool_calls:
        return content_to_text(last.content).strip()
    return ""


def events_from_messages(messages: Sequence[BaseMessage], trajectory_id: str) -> list[Event]:
    """Events rebuilt from the conversation in the graph state, for a run whose callbacks were
    not captured in this process (resumed elsewhere, or callbacks disabled): user messages,
    tool calls and results (status from the tool message), replies."""
    plain = [m for m in convert_to_openai_messages(list(messages)) if isinstance(m, dict)]
    parsed = parse_messages(plain, traj_id=trajectory_id, where="graph state", base_time=utcnow())
    return parsed.events


def assemble(
    capture: Any,
    part: Trajectory | None,
    *,
    outcome: Outcome,
    incomplete: bool = False,
    reason: str | None = None,
    answer: str = "",
    messages: Sequence[BaseMessage] = (),
    metadata: Mapping[str, Any] | None = None,
    ended_at: datetime | None = None,
) -> Trajectory:
    """The trajectory of ``capture`` (a :class:`~hindsight_langgraph._capture.TrajectoryCapture`)
    from the handler's ``part``.

    Its events get the capture's trajectory id; the user's request is added first when the
    handler saw none, the final ``answer`` last when given and missing; without any captured
    part the events come from ``messages`` (:func:`events_from_messages`). ``ended_at``:
    when the run ended (default: now), also the time of the request and answer events added
    here.
    """
    tid = capture.trajectory_id
    # Events added here are stamped when the run ended (now, unless built later).
    at: dict[str, Any] = {"timestamp": ended_at} if ended_at is not None else {}
    if part is not None:
        events = [
            e if e.trajectory_id == tid else e.model_copy(update={"trajectory_id": tid})
            for e in part.events
        ]
    elif messages:
        events = events_from_messages(messages, tid)
    else:
        events = []
    continuation = getattr(capture, "continuation", False)  # its request is in the paused part
    if (
        capture.task
        and not continuation
        and not any(e.event_type is EventType.USER_MESSAGE for e in events)
    ):
        events.insert(
            0,
            Event(trajectory_id=tid, event_type=EventType.USER_MESSAGE, content=capture.task, **at),
        )
    if answer and not any(e.event_type is EventType.FINAL_ANSWER for e in events):
        events.append(
            Event(trajectory_id=tid, event_type=EventType.FINAL_ANSWER, content=answer, **at)
        )
    meta: dict[str, Any] = dict(part.metadata) if part is not None else {}
    meta.pop("root_run_id", None)
    meta.update(
        source="langgraph",
        root_run_ids=[str(r) for r in capture.roots],
        **({"thread_id": capture.thread_id} if capture.thread_id else {}),
    )
    if part is None:
        meta["captured"] = "graph state" if messages else "nothing"
    if incomplete:
        meta["incomplete"] = True
    else:
        meta.pop("incomplete", None)
    if reason:
        meta["ended"] = reason
    meta.update(metadata or {})
    task = capture.task or (part.task if part is not None else "")
    if part is not None:
        system_prompt = part.system_prompt
    else:
        system = [m for m in messages if isinstance(m, SystemMessage)]
        system_prompt = "\n\n".join(content_to_text(m.content) for m in system) or None
    return Trajectory(
        id=tid,
        tenant_id=capture.scope.tenant_id,
        namespace=capture.scope.namespace,
        task=task,
        task_type=capture.task_type,
        tags=capture.tags,
        outcome=outcome,
        started_at=part.started_at if part is not None else utcnow(),
        ended_at=ended_at or utcnow(),
        events=events,
        metadata=meta,
        system_prompt=system_prompt,
    )
