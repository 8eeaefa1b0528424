"""The events of one run in progress, kept as plain dicts until the run ends.

Appending is cheap (no validation, no I/O: the handler's hot path); :meth:`EventBuffer.build`
makes the validated :class:`~hindsight.Trajectory` once, when the run is over. Callers lock.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from langchain_core.messages import ToolMessage

from hindsight._ids import new_id, validate_tenant
from hindsight.capture.ingest._common import system_prompt_metadata
from hindsight.capture.outcome import judge
from hindsight.models import (
    Event,
    EventStatus,
    EventType,
    Outcome,
    Provenance,
    Trajectory,
    utcnow,
)
from hindsight_langchain._convert import (
    DEFAULT_MAX_CHARS,
    ModelOutput,
    clip,
    error_status,
    error_text,
    jsonable,
    tool_output,
)
from hindsight_langchain._scope import Scope

log = logging.getLogger("hindsight")

__all__ = ["EventBuffer", "OutcomeFn", "judge_outcome"]

_SEQ = itertools.count()

OutcomeFn = Callable[[Any], "bool | str | Outcome | None"]
"""An ``outcome`` callable: final output -> True (success), False (failure), an
:class:`~hindsight.Outcome` or its name, or None (unknown)."""


def judge_outcome(fn: OutcomeFn | None, final: Any) -> Outcome:
    """What ``fn`` says about ``final`` (:data:`Outcome.UNKNOWN` without ``fn``).

    Raises:
        UsageError: ``fn`` returned something that is not an outcome (callers log it).
    """
    if fn is None:
        return Outcome.UNKNOWN
    return judge(fn(final))


class EventBuffer:
    """Events of one trajectory in capture order; every event dict has the fields of
    :class:`~hindsight.Event` plus a private ordering key.

    Args:
        trajectory_id: the id the stored trajectory gets.
        max_chars: event content is clipped to this many characters.
    """

    def __init__(self, trajectory_id: str, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.trajectory_id = trajectory_id
        self.max_chars = max_chars
        self.started_at: datetime = utcnow()
        self.events: list[dict[str, Any]] = []
        self.metadata: dict[str, Any] = {}
        self.users: set[str] = set()
        self.requested: dict[str, str] = {}  # tool_call_id -> id of the model_call asking
        self.executed: set[str] = set()
        self.open_calls: dict[str, dict[str, Any]] = {}  # tool_call event id -> that event
        # each exception recorded, with the run it was recorded at (None: not known)
        self.errors: list[tuple[BaseException, Any]] = []
        self.system_sha: str | None = None
        self._system_text = ""
        #: The system prompt of the run's first model call: the run's ``system_prompt``.
        self.first_system_prompt: str | None = None

    # -- appending ---------------------------------------------------------------------
    def add(self, event_type: EventType, content: str = "", **fields: Any) -> dict[str, Any]:
        """Append an event; ``fields`` are :class:`~hindsight.Event` fields."""
        event = {
            "_seq": next(_SEQ),
            "event_id": fields.pop("event_id", None) or new_id(),  # stable: a paused part and
            # the end of the same run share their events (merged by id)
            "event_type": event_type,
            "timestamp": utcnow(),
            "content": clip(content, self.max_chars) if content else "",
            **fields,
        }
        self.events.append(event)
        return event

    def user_messages(self, texts: Iterable[str], parent_id: str | None = None) -> None:
        """Append the user messages not seen before in this run."""
        for text in texts:
            if text not in self.users:
                self.users.add(text)
                self.add(EventType.USER_MESSAGE, text, parent_id=parent_id)

    def system_prompt(self, text: str) -> dict[str, Any]:
        """Note the system prompt a model call saw; returns event metadata (the prompt's
        head and hash) when it differs from the previous call's, else ``{}``."""
        if not text or text is self._system_text or text == self._system_text:
            return {}
        self._system_text = text
        meta = system_prompt_metadata(text)
        if meta["system_prompt_sha256"] == self.system_sha:
            return {}
        if self.system_sha is None:
            self.metadata.update(meta)
            self.first_system_prompt = text
        self.system_sha = meta["system_prompt_sha256"]
        return meta

    def model_end(
        self,
        out: ModelOutput,
        *,
        event_id: str,
        parent_id: str | None,
        latency_ms: float | None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Append what a model call produced: its reasoning (``model_thought``) and the call
        itself (``model_call``, with tool calls, token usage and model name in metadata)."""
        if out.reasoning:
            self.add(EventType.MODEL_THOUGHT, out.reasoning, parent_id=parent_id)
        meta: dict[str, Any] = dict(metadata or {})
        if out.model:
            meta["model"] = out.model
        if out.usage:
            meta["usage"] = out.usage
        if out.tool_calls:
            meta["tool_calls"] = out.tool_calls
        if out.invalid_tool_calls:
            meta["invalid_tool_calls"] = out.invalid_tool_calls
        status = EventStatus.FAILURE if out.invalid_tool_calls else EventStatus.SUCCESS
        self.add(
            EventType.MODEL_CALL,
            out.text,
            event_id=event_id,
            parent_id=parent_id,
            status=status,
            latency_ms=latency_ms,
            metadata=meta,
        )
        for call in out.tool_calls:
            if call.get("id"):
                self.requested[str(call["id"])] = event_id

    def model_error(
        self,
        exc: BaseException,
        *,
        event_id: str,
        parent_id: str | None,
        latency_ms: float | None,
        metadata: Mapping[str, Any] | None = None,
        at: Any = None,
    ) -> None:
        """Append a failed model call (``timeout`` when the error is one); ``at``: the run
        it failed in (see :meth:`error`)."""
        self.errors.append((exc, at))
        self.add(
            EventType.MODEL_CALL,
            error_text(exc, self.max_chars),
            event_id=event_id,
            parent_id=parent_id,
            status=error_status(exc),
            latency_ms=latency_ms,
            metadata={**(metadata or {}), "error_type": type(exc).__name__},
        )

    def tool_start(
        self,
        name: str,
        args: Any,
        *,
        event_id: str,
        parent_id: str | None,
        tool_call_id: str | None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Append a ``tool_call``; its parent is the model call that asked for it, if any."""
        if tool_call_id:
            self.executed.add(tool_call_id)
            parent_id = self.requested.get(tool_call_id, parent_id)
        event = self.add(
            EventType.TOOL_CALL,
            event_id=event_id,
            parent_id=parent_id,
            tool_name=name,
            tool_call_id=tool_call_id,
            tool_args=_args(args),
            metadata=dict(metadata or {}),
        )
        event["_started"] = time.perf_counter()
        self.open_calls[event_id] = event

    def _result(
        self,
        call_event_id: str,
        name: str | None,
        content: str,
        status: EventStatus | None,
        tool_call_id: str | None,
        metadata: dict[str, Any],
    ) -> dict[str, Any]:
        call = self.open_calls.pop(call_event_id, None)
        latency = None
        if call is not None:
            name = name or call["tool_name"]
            tool_call_id = tool_call_id or call["tool_call_id"]
            latency = (time.perf_counter() - call["_started"]) * 1000.0
        return self.add(
            EventType.TOOL_RESULT,
            content,
            parent_id=call_event_id if call is not None else None,
            tool_name=name or "unknown_tool",
            tool_call_id=tool_call_id,
            status=status,
            latency_ms=latency,
            metadata=metadata,
        )

    def tool_end(
        self,
        call_event_id: str,
        output: Any,
        *,
        name: str | None = None,
        status: EventStatus | None = None,
        **metadata: Any,
    ) -> None:
        """Append the ``tool_result`` of the call ``call_event_id`` from the tool's output
        (its text read now; its status, unless given, classified from that text when the
        trajectory is built, off the agent's path: :func:`~hindsight_langchain._convert.\
tool_output`)."""
        content, found, call_id = tool_output(output, self.max_chars)
        event = self._result(call_event_id, name, content, status, call_id, metadata)
        if status is None:
            event["_status"] = found

    def tool_error(
        self,
        call_event_id: str,
        exc: BaseException,
        *,
        name: str | None = None,
        at: Any = None,
        **metadata: Any,
    ) -> None:
        """Append the failed ``tool_result`` of a call that raised (``timeout`` or
        ``failure``, with the error type and message); ``at``: the run it failed in (see
        :meth:`error`)."""
        self.errors.append((exc, at))
        metadata["error_type"] = type(exc).__name__
        text = error_text(exc, self.max_chars)
        self._result(call_event_id, name, text, error_status(exc), None, metadata)

    def error(
        self,
        exc: BaseException,
        parent_id: str | None = None,
        *,
        at: Any = None,
        below: Callable[[Any], bool] | None = None,
        **metadata: Any,
    ) -> bool:
        """Append an ``error`` event unless this exception was already recorded on its way
        up: an error travels up through every enclosing run, so one recorded at ``at`` (a
        run) is the same error when it was recorded at a run ``below`` says is inside ``at``
        (``below(run) -> bool``; without it, anywhere). Asyncio re-creates a ``TimeoutError``
        that crosses from a worker thread, so an equal type and arguments count as the same
        exception; a second step that raises the same words is a second error. Returns True
        when appended."""
        if any(
            (seen is exc or (type(seen) is type(exc) and seen.args == exc.args))
            and (below is None or where is None or below(where))
            for seen, where in self.errors
        ):
            return False
        self.errors.append((exc, at))
        self.add(
            EventType.ERROR,
            error_text(exc, self.max_chars),
            parent_id=parent_id,
            status=error_status(exc),
            metadata={**metadata, "error_type": type(exc).__name__},
        )
        return True

    def custom(self, name: str, data: Any, parent_id: str | None) -> None:
        """Append an application-defined event (``custom``)."""
        text = data if isinstance(data, str) else json.dumps(jsonable(data), ensure_ascii=False)
        self.add(EventType.CUSTOM, text, parent_id=parent_id, metadata={"name": name})

    @property
    def awaiting_replies(self) -> bool:
        """True while a model asked for a tool call that has not run (yet)."""
        return len(self.executed) < len(self.requested)

    def unexecuted_replies(self, messages: Iterable[Any]) -> None:
        """Record tool replies for calls a model asked for that never ran (an unknown tool
        name, rejected by the ToolNode without any tool callback) as a call and a result."""
        if not self.awaiting_replies:
            return
        for message in messages:
            if not isinstance(message, ToolMessage):
                continue
            call_id = message.tool_call_id
            if call_id not in self.requested or call_id in self.executed:
                continue
            event_id = new_id()
            self.tool_start(
                message.name or "unknown_tool",
                {},
                event_id=event_id,
                parent_id=None,
                tool_call_id=call_id,
                metadata={"executed": False},
            )
            self.tool_end(event_id, message, executed=False)

    def close_open(self) -> None:
        """Give every tool call still open a failed result: the run ended without it."""
        for event_id in list(self.open_calls):
            self._result(
                event_id,
                None,
                "no result recorded: the run ended before this call returned",
                EventStatus.FAILURE,
                None,
                {"incomplete": True},
            )

    def merge(self, other: EventBuffer) -> None:
        """Take in the events and bookkeeping of ``other`` (orphans adopted by a parent)."""
        self.events = sorted([*self.events, *other.events], key=lambda e: e["_seq"])
        self.users |= other.users
        self.requested.update(other.requested)
        self.executed |= other.executed
        self.open_calls.update(other.open_calls)
        self.errors.extend(other.errors)
        self.started_at = min(self.started_at, other.started_at)
        for key, value in other.metadata.items():
            self.metadata.setdefault(key, value)

    # -- result ------------------------------------------------------------------------
    def build(
        self,
        scope: Scope,
        *,
        outcome: Outcome,
        source: Provenance,
        metadata: Mapping[str, Any] | None = None,
        close_open: bool = True,
        ended_at: datetime | None = None,
    ) -> Trajectory:
        """The validated trajectory (events in capture order). ``close_open``: give the tool
        calls still open a failed result first (the run is over); False for a snapshot of a
        run that goes on (a paused part), which leaves the buffer unchanged. ``ended_at``:
        when the run ended (default: now; given when the trajectory is built later, off the
        agent's path).

        Raises:
            TenantRequiredError: the scope has no tenant.
            pydantic.ValidationError: a field is invalid (callers log and count it).
        """
        if close_open:
            self.close_open()
        events = []
        for raw in sorted(self.events, key=lambda e: e["_seq"]):
            if "_status" in raw:
                raw["status"] = _classified(raw.pop("_status"))
            data = {k: v for k, v in raw.items() if not k.startswith("_")}
            data["event_id"] = data["event_id"] or new_id()
            data["metadata"] = _object(data.get("metadata") or {})
            if data.get("tool_args") is not None:
                data["tool_args"] = _object(data["tool_args"])
            events.append(Event(trajectory_id=self.trajectory_id, **data))
        task = next((e.content for e in events if e.event_type is EventType.USER_MESSAGE), "")
        return Trajectory(
            id=self.trajectory_id,
            tenant_id=validate_tenant(scope.tenant_id),
            namespace=scope.namespace,
            task=task,
            task_type=scope.task_type,
            tags=list(scope.tags),
            outcome=outcome,
            source=source,
            started_at=self.started_at,
            ended_at=ended_at or utcnow(),
            events=events,
            metadata=_object({**self.metadata, **(metadata or {})}),
            system_prompt=self.first_system_prompt,
        )


def _classified(status: Callable[[], EventStatus]) -> EventStatus | None:
    """A tool result's status, classified from its text (``None``, unknown, if that fails:
    the rest of the trajectory is stored all the same)."""
    try:
        return status()
    except Exception:
        log.warning("hindsight: could not classify a tool result's status", exc_info=True)
        return None


def _args(args: Any) -> dict[str, Any]:
    if isinstance(args, Mapping):
        return dict(args)
    if args is None or args == "":
        return {}
    return {"input": str(args)}


def _object(value: Any) -> dict[str, Any]:
    plain = jsonable(value)
    return plain if isinstance(plain, dict) else {"_value": plain}
