"""Reading a chat-completion reply (litellm ``ModelResponse`` or the same shape as a dict).

Shared by every part that asks a model and reads its answer: the LLM reviewer
(:mod:`hindsight.review.llm`), the write-back judge (:mod:`hindsight.writeback.judge`) and the
guard's judge (:mod:`hindsight.guard.llm_judge`).
Foundation: imports nothing of hindsight.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["field", "reply_object", "reply_text"]


def field(obj: Any, name: str) -> Any:
    """``obj[name]`` of a mapping, else ``obj.name``; ``None`` when absent."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping | list):  # arguments already decoded by the client
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def reply_text(response: Any) -> str:
    """The text of the first choice of a chat-completion ``response`` that should hold the report.

    ``response`` is a litellm ``ModelResponse`` or the same shape as a dict. Order: a non-blank
    ``message.content`` (a list of content parts is joined); else the arguments of the first
    tool call; else the legacy ``function_call`` arguments; else ``""``. ``reasoning_content``
    (and ``thinking_blocks``) are never used: reasoning is not the answer.
    """
    choices = field(response, "choices") or []
    if not choices:
        return ""
    message = field(choices[0], "message")
    if message is None:
        return ""
    content = field(message, "content")
    if isinstance(content, list):
        parts = [_as_text(field(p, "text")) if not isinstance(p, str) else p for p in content]
        content = "\n".join(p for p in parts if p)
    text = _as_text(content)
    if text.strip():
        return text
    for call in field(message, "tool_calls") or []:
        arguments = _as_text(field(field(call, "function"), "arguments"))
        if arguments.strip():
            return arguments
    legacy = field(message, "function_call")
    return _as_text(field(legacy, "arguments")) if legacy is not None else ""


def reply_object(text: str) -> Any:
    """The first JSON object of a reply's ``text`` (anything before its ``{`` skipped), repaired
    with ``json_repair`` when it does not parse (a reply cut at ``max_tokens``).

    Raises:
        ValueError: the text holds no ``{``.
    """
    start = text.find("{")
    if start == -1:
        raise ValueError("no JSON object in the reply")
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        import json_repair

        value = json_repair.loads(text[start:])
    return value
