"""OpenAI-style chat messages -> structured events (docs/concepts.md#trajectories-and-events).

Roles: ``system`` / ``developer`` (the run's system prompt, plus its head and hash in metadata),
``user`` ->
``user_message``, ``assistant`` -> ``model_thought`` (text beside tool calls, and
``reasoning_content``), ``tool_call`` (one per call), ``model_call`` (text replies; the last one
becomes ``final_answer``), ``tool`` / ``function`` / ``ipython`` -> ``tool_result`` with a
status from :func:`classify_tool_result`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hindsight._contract import long_tool_name
from hindsight._errors import InvalidTrajectoryError
from hindsight._status import classify_tool_result
from hindsight._text import note
from hindsight.capture.ingest._common import (
    SYNTHETIC_STEP,
    canonical_json,
    event_id,
    json_arguments,
    parse_timestamp,
    system_prompt_metadata,
)
from hindsight.models import Event, EventType, content_to_text

__all__ = ["ParsedMessages", "parse_arguments", "parse_messages"]

_SYSTEM_ROLES = {"system", "developer"}
_TOOL_ROLES = {"tool", "function", "ipython"}
_TIMESTAMP_KEYS = ("timestamp", "created_at", "created", "time")


@dataclass
class ParsedMessages:
    """The events of one message list and what was learned on the way.

    Attributes:
        events: ordered events, ids ``event_id(traj_id, i)``, timestamps strictly increasing
            on the synthetic clock (or the messages' own timestamps).
        task: text of the first non-blank user message (``""`` if none).
        metadata: ``system_prompt_head`` / ``system_prompt_sha256`` (of the first system
            message) when there was a system prompt.
        system_prompts: the text of every non-blank system / developer message, in order.
    """

    events: list[Event] = field(default_factory=list)
    task: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    system_prompts: list[str] = field(default_factory=list)

    @property
    def system_prompt(self) -> str | None:
        """The run's system prompt: its system messages joined by a blank line (``None``:
        none)."""
        return "\n\n".join(self.system_prompts) if self.system_prompts else None


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if value is None:
        return "null"
    return "a string" if isinstance(value, str) else f"a {type(value).__name__}"


def parse_arguments(raw: Any, what: str = "the arguments") -> dict[str, Any]:
    """A tool call's arguments as an object.

    A JSON-object string is parsed; an empty string or ``None`` gives ``{}``; invalid JSON is
    kept as ``{"_raw": <text>}``, exactly, and reported (:func:`hindsight._text.note`:
    ``<what> are not valid JSON; kept as text in tool_args._raw``); any other value, or valid
    JSON of one (``"[1, 2]"``, ``"42"``), as ``{"_value": <value>}``, reported too (``<what>
    are an array, not an object; kept in tool_args._value``).
    """
    if raw is None or isinstance(raw, dict):
        return raw or {}
    value = json_arguments(raw, what, "tool_args") if isinstance(raw, str) else raw
    if isinstance(value, dict):
        return value
    note(f"{what} are {_json_kind(value)}, not an object; kept in tool_args._value")
    return {"_value": value}


class _Builder:
    """Accumulates event fields; ids and timestamps are assigned in order."""

    def __init__(self, traj_id: str, base_time: datetime) -> None:
        self.traj_id = traj_id
        self.base_time = base_time
        self.rows: list[dict[str, Any]] = []
        self.last_time: datetime | None = None

    def add(self, message: dict[str, Any], **fields: Any) -> str:
        own = next(
            (t for k in _TIMESTAMP_KEYS if (t := parse_timestamp(message.get(k))) is not None),
            None,
        )
        if own is not None and (self.last_time is None or own >= self.last_time):
            when = own
        elif self.last_time is None:
            when = self.base_time
        else:
            when = self.last_time + SYNTHETIC_STEP
        self.last_time = when
        eid = event_id(self.traj_id, len(self.rows))
        self.rows.append(
            {"event_id": eid, "trajectory_id": self.traj_id, "timestamp": when, **fields}
        )
        return eid


def _check_tool_name(name: str | None, where: str) -> None:
    refusal = long_tool_name(name)
    if refusal is not None:
        raise InvalidTrajectoryError(f"{where}: {refusal}")


def _calls_of(message: dict[str, Any], where: str) -> list[tuple[str | None, str, Any]]:
    """(call id, tool name, raw arguments) of an assistant message's tool calls."""
    calls: list[tuple[str | None, str, Any]] = []
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise InvalidTrajectoryError(f"{where}: tool_calls must be a list")
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        raw_calls = [*raw_calls, {"function": legacy}]
    for call in raw_calls:
        if not isinstance(call, dict):
            raise InvalidTrajectoryError(f"{where}: a tool call is not an object")
        raw_function = call.get("function")
        function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
        name = function.get("name") or call.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InvalidTrajectoryError(f"{where}: a tool call has no function name")
        _check_tool_name(name.strip(), where)
        arguments = function.get("arguments", call.get("args", call.get("arguments")))
        call_id = call.get("id")
        calls.append((str(call_id) if call_id else None, name.strip(), arguments))
    return calls


def parse_messages(
    messages: list[Any], *, traj_id: str, where: str, base_time: datetime
) -> ParsedMessages:
    """Turn a chat message list into events.

    Args:
        messages: OpenAI chat messages (dicts with ``role``); ``content`` may be ``None``, a
            string or a list of content parts.
        traj_id: the trajectory id the events belong to (event ids derive from it).
        where: file/record label used in error messages.
        base_time: timestamp of the first event when messages carry none.

    Raises:
        InvalidTrajectoryError: a message is not an object, has no or an unknown role, or a
            tool call has no name or one longer than the recorder takes. The message names
            ``where`` and the message index.
    """
    out = ParsedMessages()
    build = _Builder(traj_id, base_time)
    calls_by_id: dict[str, tuple[str, str]] = {}
    pending_legacy: list[tuple[str, str]] = []
    last_text_row: int | None = None
    for index, message in enumerate(messages):
        at = f"{where}: messages[{index}]"
        if not isinstance(message, dict):
            raise InvalidTrajectoryError(f"{at}: a message must be an object")
        role = str(message.get("role") or "").strip().lower()
        text = content_to_text(message.get("content"))
        if role in _SYSTEM_ROLES:
            if text.strip():
                if not out.system_prompts:
                    out.metadata.update(system_prompt_metadata(text))
                out.system_prompts.append(text)
        elif role == "user":
            if text.strip() and not out.task:
                out.task = text.strip()
            build.add(message, event_type=EventType.USER_MESSAGE, content=text)
        elif role == "assistant":
            last_text_row = _assistant(
                message, text, at, build, calls_by_id, pending_legacy, last_text_row
            )
        elif role in _TOOL_ROLES:
            _tool_result(message, text, at, build, calls_by_id, pending_legacy)
        else:
            raise InvalidTrajectoryError(
                f"{at}: unknown role {message.get('role')!r:.40} "
                "(expected system, user, assistant or tool)"
            )
    if last_text_row is not None:
        build.rows[last_text_row]["event_type"] = EventType.FINAL_ANSWER
    out.events = [Event(**row) for row in build.rows]
    return out


def _assistant(
    message: dict[str, Any],
    text: str,
    at: str,
    build: _Builder,
    calls_by_id: dict[str, tuple[str, str]],
    pending_legacy: list[tuple[str, str]],
    last_text_row: int | None,
) -> int | None:
    reasoning = content_to_text(message.get("reasoning_content"))
    if reasoning.strip():
        build.add(message, event_type=EventType.MODEL_THOUGHT, content=reasoning)
    if not text.strip():
        text = content_to_text(message.get("refusal"))
    calls = _calls_of(message, at)
    if calls:
        if text.strip():
            build.add(message, event_type=EventType.MODEL_THOUGHT, content=text)
        for call_id, name, raw_args in calls:
            sent = {} if raw_args is None else raw_args  # 0, false, [] are what was sent
            content = sent if isinstance(sent, str) else canonical_json(sent)
            eid = build.add(
                message,
                event_type=EventType.TOOL_CALL,
                tool_name=name,
                tool_call_id=call_id,
                tool_args=parse_arguments(raw_args, f"{at}: the arguments of tool {name!r:.60}"),
                content=content,
            )
            if call_id:
                calls_by_id[call_id] = (name, eid)
            else:
                pending_legacy.append((name, eid))
        return last_text_row
    if text.strip():
        build.add(message, event_type=EventType.MODEL_CALL, content=text)
        return len(build.rows) - 1
    return last_text_row


def _tool_result(
    message: dict[str, Any],
    text: str,
    at: str,
    build: _Builder,
    calls_by_id: dict[str, tuple[str, str]],
    pending_legacy: list[tuple[str, str]],
) -> None:
    call_id = message.get("tool_call_id")
    call_id = str(call_id) if call_id else None
    name = message.get("name") if isinstance(message.get("name"), str) else None
    _check_tool_name(name, at)
    parent: str | None = None
    if call_id and call_id in calls_by_id:
        known_name, parent = calls_by_id[call_id]
        name = name or known_name
    elif pending_legacy:
        match = next((i for i, (n, _) in enumerate(pending_legacy) if n == name or not name), 0)
        legacy_name, parent = pending_legacy.pop(match)
        name = name or legacy_name
    build.add(
        message,
        event_type=EventType.TOOL_RESULT,
        tool_name=name or None,
        tool_call_id=call_id,
        parent_id=parent,
        content=text,
        status=classify_tool_result(text, message),
    )
