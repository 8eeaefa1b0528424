"""Turn LlamaIndex objects (messages, chat responses, tool outputs) into plain event fields.

Everything here is defensive: a field LlamaIndex leaves out or a value of an unexpected type
gives an empty string or ``None``, never an exception (the host app must not break).
"""

from __future__ import annotations

from typing import Any

from hindsight import BLOCK_START, EventStatus

__all__ = [
    "exception_text",
    "is_timeout",
    "message_text",
    "response_message",
    "role_of",
    "system_text",
    "tool_calls_of",
    "tool_status",
    "user_text",
]

MAX_CONTENT_CHARS = 20_000
"""Longer contents are cut (with a marker); review compresses trajectories further anyway."""


def _cap(text: str) -> str:
    if len(text) <= MAX_CONTENT_CHARS:
        return text
    return text[:MAX_CONTENT_CHARS] + f" [... {len(text) - MAX_CONTENT_CHARS} chars cut]"


def role_of(message: Any) -> str:
    """A message's role as a plain string (``"user"``, ``"assistant"``, ...)."""
    role = getattr(message, "role", "")
    return str(getattr(role, "value", role))


def system_text(messages: Any) -> str:
    """The run's system prompt as a model call saw it: the text of its system messages, in full,
    joined by a blank line, leaving out the ones holding hindsight's recalled block (the
    memory block's own system message); ``""`` when there is none."""
    parts: list[str] = []
    for message in messages if isinstance(messages, list) else []:
        if role_of(message) != "system":
            continue
        content = getattr(message, "content", None)
        if isinstance(content, str) and content.strip() and BLOCK_START not in content:
            parts.append(content)
    return "\n\n".join(parts)


def message_text(message: Any) -> str:
    """The text of a ``ChatMessage`` (its text blocks joined), a string, or ``""``."""
    if message is None:
        return ""
    if isinstance(message, str):
        return _cap(message)
    blocks = getattr(message, "blocks", None)
    if isinstance(blocks, list):
        parts = [getattr(b, "text", None) for b in blocks]
        text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
        return _cap(text)
    content = getattr(message, "content", None)
    return _cap(content) if isinstance(content, str) else ""


def user_text(start_event: Any) -> str:
    """The user's message of an agent run: ``user_msg``, else the last user message of
    ``chat_history`` (the two ways ``agent.run`` accepts input)."""
    if start_event is None:
        return ""
    getter = getattr(start_event, "get", None)
    user_msg = getter("user_msg", None) if callable(getter) else None
    if user_msg:
        return message_text(user_msg)
    history = getter("chat_history", None) if callable(getter) else None
    for msg in reversed(history or []):
        if role_of(msg) == "user":
            return message_text(msg)
    return ""


def response_message(response: Any) -> Any:
    """The ``ChatMessage`` of a ``ChatResponse`` (or ``None``)."""
    return getattr(response, "message", None)


def tool_calls_of(message: Any) -> list[dict[str, Any]]:
    """Tool calls the model asked for in ``message``: ``[{"name", "args", "id"}]``.

    Reads ``ToolCallBlock`` blocks (llama-index-core 0.14) and the OpenAI-style
    ``additional_kwargs["tool_calls"]`` some LLM classes still fill.
    """
    calls: list[dict[str, Any]] = []
    for block in getattr(message, "blocks", None) or []:
        name = getattr(block, "tool_name", None)
        if isinstance(name, str) and name:
            args = getattr(block, "tool_kwargs", None)
            calls.append(
                {
                    "name": name,
                    "args": args if isinstance(args, dict | str) else None,
                    "id": getattr(block, "tool_call_id", None),
                }
            )
    if calls:
        return calls
    extra = getattr(message, "additional_kwargs", None) or {}
    for raw in extra.get("tool_calls") or []:
        fn = raw.get("function") if isinstance(raw, dict) else getattr(raw, "function", None)
        name = fn.get("name") if isinstance(fn, dict) else getattr(fn, "name", None)
        if isinstance(name, str) and name:
            args = fn.get("arguments") if isinstance(fn, dict) else getattr(fn, "arguments", None)
            rid = raw.get("id") if isinstance(raw, dict) else getattr(raw, "id", None)
            calls.append({"name": name, "args": args, "id": rid})
    return calls


def is_timeout(error: BaseException | None, text: str = "") -> bool:
    """True for ``TimeoutError`` (``asyncio.TimeoutError`` is the same class) and for errors
    whose type name or message says timeout (``httpx.ReadTimeout``, "timed out")."""
    if isinstance(error, TimeoutError):
        return True
    name = type(error).__name__.lower() if error is not None else ""
    low = text.lower()
    return "timeout" in name or "timed out" in low or "timeout" in low


def tool_status(tool_output: Any) -> tuple[EventStatus, str | None]:
    """``(status, error_type)`` of a ``ToolOutput``: success unless ``is_error``; timeout when
    the error is a timeout (see :func:`is_timeout`)."""
    if not getattr(tool_output, "is_error", False):
        return EventStatus.SUCCESS, None
    error = getattr(tool_output, "exception", None)
    text = str(getattr(tool_output, "content", "") or "")
    error_type = type(error).__name__ if error is not None else None
    if is_timeout(error, text):
        return EventStatus.TIMEOUT, error_type
    return EventStatus.FAILURE, error_type


def exception_text(error: BaseException) -> str:
    """``"TypeName: message"`` (or just the type name when the message is empty)."""
    msg = str(error)
    return f"{type(error).__name__}: {msg}" if msg else type(error).__name__
