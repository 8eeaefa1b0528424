"""LangChain objects -> the fields of structured events (docs/concepts.md#trajectories-and-events).

Pure functions, no state: messages, model results, tool outputs and exceptions become text,
tool calls, token usage and a status (``success`` / ``failure`` / ``timeout``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from types import MappingProxyType
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from hindsight._status import classify_tool_result
from hindsight.models import EventStatus, content_to_text

__all__ = [
    "DEFAULT_MAX_CHARS",
    "ModelOutput",
    "clip",
    "error_status",
    "error_text",
    "final_text",
    "jsonable",
    "latest_user_texts",
    "messages_in",
    "model_output",
    "system_text",
    "tool_names",
    "tool_output",
    "user_texts_from_inputs",
]

DEFAULT_MAX_CHARS = 8000
"""Event content is cut to this many characters (a tool may return megabytes); the review
compresses long trajectories further (docs/review.md#compression)."""

_TIMEOUT_TEXT = re.compile(
    r"timed[\s_-]?out\b|deadline exceeded|read timeout|connect timeout|took too long",
    re.IGNORECASE,
)
_INPUT_KEYS = ("input", "question", "query", "prompt", "task", "text", "message")
_HANDLED_DEFAULTS = frozenset({"Tool input validation error", "Tool execution error"})
_HANDLED = MappingProxyType({"is_error": True})  # a tool error the tool or the ToolNode handled
"""What a tool returns for an error it handled itself when it was called without a tool call
id (so no ToolMessage carries ``status="error"``): langchain-core's default texts."""


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more characters cut]"


class _NotPlain(Exception):
    """Raised by :func:`_plain_copy` for anything JSON would change."""


_PLAIN_DEPTH = 50


def _plain_copy(value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` when it is already plain JSON (dicts with ``str`` keys, lists, str,
    int, float, bool, None: exact types, finite floats), else :class:`_NotPlain`."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise _NotPlain
        return value
    if depth >= _PLAIN_DEPTH:
        raise _NotPlain
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            out[key] = _plain_copy(item, depth + 1)
        return out
    if kind is list:
        return [_plain_copy(item, depth + 1) for item in value]
    raise _NotPlain


def jsonable(value: Any) -> Any:
    """``value`` made storable as JSON: a copy holding only dicts, lists, strings, numbers,
    booleans and None; unknown objects become their ``str()``.

    Values that are plain JSON already (metadata, tool arguments: nearly all of them) are
    copied directly; only the others take the ``json.dumps(default=str)`` round trip, which
    costs ~30 times more (it was most of the cost of building a trajectory).
    """
    try:
        return _plain_copy(value)
    except _NotPlain:
        pass
    try:
        return json.loads(json.dumps(value, default=str, ensure_ascii=False))
    except (TypeError, ValueError):
        return str(value)


def _chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def error_status(exc: BaseException) -> EventStatus:
    """``timeout`` for timeouts, else ``failure``.

    A timeout is any exception in the cause chain that is a :class:`TimeoutError` (which
    ``asyncio.TimeoutError`` and ``socket.timeout`` are), whose class or a base class has
    "Timeout" in its name (``httpx.ReadTimeout``, ``httpx.TimeoutException``,
    ``requests.Timeout``, ``openai.APITimeoutError``), or whose message says "timed out" /
    "deadline exceeded".
    """
    for err in _chain(exc):
        if isinstance(err, TimeoutError):
            return EventStatus.TIMEOUT
        if any("timeout" in cls.__name__.lower() for cls in type(err).__mro__):
            return EventStatus.TIMEOUT
        if _TIMEOUT_TEXT.search(str(err)[:500]):
            return EventStatus.TIMEOUT
    return EventStatus.FAILURE


def error_text(exc: BaseException, limit: int = DEFAULT_MAX_CHARS) -> str:
    """``"TypeName: message"`` of an exception, clipped."""
    message = str(exc).strip()
    name = type(exc).__name__
    return clip(f"{name}: {message}" if message else name, limit)


def message_text(message: BaseMessage) -> str:
    """The plain text of a message (text blocks only)."""
    return str(message.text) if message.content else ""


def system_text(messages: Iterable[BaseMessage]) -> str:
    """The text of the system message(s) of a prompt (``""`` when there is none)."""
    return "\n".join(message_text(m) for m in messages if isinstance(m, SystemMessage))


def latest_user_texts(messages: list[BaseMessage]) -> list[str]:
    """Texts of the human messages after the last AI message: the new turn of a prompt.

    Earlier turns of a thread are history, already captured by the runs that saw them.
    """
    out: list[str] = []
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            break
        if isinstance(message, HumanMessage):
            text = message_text(message)
            if text.strip():
                out.append(text)
    out.reverse()
    return out


def messages_in(value: Any) -> list[BaseMessage]:
    """The messages in a run's inputs or outputs: a message, a list of them, a dict with a
    ``messages`` list, or a LangGraph ``Command`` whose ``update`` has them."""
    if isinstance(value, BaseMessage):
        return [value]
    update = getattr(value, "update", None)
    if update is not None and not isinstance(value, Mapping):
        value = update
    if isinstance(value, Mapping):
        value = value.get("messages")
    if isinstance(value, list | tuple):
        return [m for m in value if isinstance(m, BaseMessage)]
    return []


def _pair_text(item: Any) -> str | None:
    # ("user", "hi") / {"role": "user", "content": "hi"} shorthands of LangChain inputs.
    if isinstance(item, tuple | list) and len(item) == 2 and item[0] in ("user", "human"):
        return content_to_text(item[1])
    if isinstance(item, Mapping) and item.get("role") in ("user", "human"):
        return content_to_text(item.get("content"))
    return None


def user_texts_from_inputs(inputs: Any) -> list[str]:
    """The user's words in a root run's inputs.

    ``"text"``; a list of messages or ``("user", text)`` pairs; a dict with ``messages`` (the
    new turn only) or one of the keys ``input``, ``question``, ``query``, ``prompt``, ``task``,
    ``text``, ``message``; a dict with exactly one string value.
    """
    if isinstance(inputs, str):
        return [inputs] if inputs.strip() else []
    if isinstance(inputs, BaseMessage):
        return latest_user_texts([inputs])
    if isinstance(inputs, Mapping):
        if "messages" in inputs:
            return user_texts_from_inputs(inputs["messages"])
        for key in _INPUT_KEYS:
            if isinstance(inputs.get(key), str) and inputs[key].strip():
                return [inputs[key]]
        strings = [v for v in inputs.values() if isinstance(v, str) and v.strip()]
        return strings if len(strings) == 1 else []
    if isinstance(inputs, list | tuple):
        messages = [m for m in inputs if isinstance(m, BaseMessage)]
        if messages:
            return latest_user_texts(messages)
        texts = [_pair_text(item) for item in inputs]
        return [t for t in texts if t and t.strip()]
    return []


def final_text(outputs: Any) -> str:
    """The final answer in a root run's outputs: the last AI message without tool calls, an
    ``output``/``answer`` string, or a plain string (``""`` when there is none)."""
    if isinstance(outputs, str):
        return outputs
    if isinstance(outputs, LLMResult):
        return model_output(outputs).text
    messages = messages_in(outputs)
    if messages:
        last = messages[-1]
        if isinstance(last, AIMessage) and not last.tool_calls:
            return message_text(last)
        return ""
    if isinstance(outputs, Mapping):
        for key in ("output", "answer", "result", "text"):
            if isinstance(outputs.get(key), str):
                return str(outputs[key])
    return ""


class ModelOutput:
    """What a model call produced: ``text``, ``reasoning``, ``tool_calls`` (``[{"name",
    "args", "id"}]``), ``invalid_tool_calls``, ``usage`` (token counts) and ``model``."""

    __slots__ = ("invalid_tool_calls", "model", "reasoning", "text", "tool_calls", "usage")

    def __init__(self) -> None:
        self.text = ""
        self.reasoning = ""
        self.tool_calls: list[dict[str, Any]] = []
        self.invalid_tool_calls: list[dict[str, Any]] = []
        self.usage: dict[str, Any] = {}
        self.model: str | None = None

    def add_message(self, message: BaseMessage) -> None:
        """Add one output message (an :class:`AIMessage` usually)."""
        self.text += message_text(message)
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                self.tool_calls.append(
                    {"name": call["name"], "args": call.get("args") or {}, "id": call.get("id")}
                )
            for bad in message.invalid_tool_calls:
                self.invalid_tool_calls.append(
                    {"name": bad.get("name"), "args": bad.get("args"), "error": bad.get("error")}
                )
            if message.usage_metadata:
                for key in ("input_tokens", "output_tokens", "total_tokens"):
                    value = message.usage_metadata.get(key)
                    if isinstance(value, int):
                        self.usage[key] = self.usage.get(key, 0) + value
            meta = message.response_metadata or {}
            self.model = self.model or meta.get("model_name") or meta.get("model")
        self.reasoning += _reasoning(message)


def _reasoning(message: BaseMessage) -> str:
    parts: list[str] = []
    if isinstance(message.content, list):
        for block in message.content:
            if isinstance(block, dict) and block.get("type") in ("reasoning", "thinking"):
                text = block.get("reasoning") or block.get("thinking") or ""
                if isinstance(text, str) and text.strip():
                    parts.append(text)
    extra = message.additional_kwargs.get("reasoning_content")
    if isinstance(extra, str) and extra.strip():
        parts.append(extra)
    return "\n".join(parts)


def model_output(result: Any) -> ModelOutput:
    """A :class:`ModelOutput` from an ``LLMResult``, an AI message, a list of messages or an
    agent ``ModelResponse`` (anything with a ``result`` list of messages)."""
    out = ModelOutput()
    if isinstance(result, LLMResult):
        for generations in result.generations:
            for gen in generations:
                if isinstance(gen, ChatGeneration):
                    out.add_message(gen.message)
                else:
                    out.text += gen.text
        llm_output = result.llm_output or {}
        usage = llm_output.get("token_usage") or llm_output.get("usage")
        if not out.usage and isinstance(usage, Mapping):
            for key, alias in (
                ("input_tokens", "prompt_tokens"),
                ("output_tokens", "completion_tokens"),
                ("total_tokens", "total_tokens"),
            ):
                value = usage.get(key, usage.get(alias))
                if isinstance(value, int):
                    out.usage[key] = value
        model = llm_output.get("model_name") or llm_output.get("model")
        out.model = out.model or (str(model) if model else None)
        return out
    inner = getattr(result, "model_response", None)  # ExtendedModelResponse
    if inner is not None:
        result = inner
    messages = getattr(result, "result", result)
    for message in messages_in(messages if isinstance(messages, list) else [messages]):
        out.add_message(message)
    return out


def tool_output(
    output: Any, limit: int = DEFAULT_MAX_CHARS
) -> tuple[str, Callable[[], EventStatus], str | None]:
    """``(content, status, tool_call_id)`` of a tool's output; ``status`` is a call that gives
    the :class:`~hindsight.EventStatus` of ``content`` (classifying the text is most of the
    cost, and the capture defers it to when the trajectory is built, off the agent's path; the
    text is read now, so what is stored is what the tool returned, whatever happens to the
    output object later).

    A :class:`ToolMessage` with ``status="error"`` (an error the tool or the ToolNode handled)
    is a ``failure``, or a ``timeout`` when its text says so; other outputs are classified
    from their text (a reply starting with ``Error`` is a failure, as in
    :func:`hindsight._status.classify_tool_result`). A LangGraph ``Command`` is
    described by the tool messages in its update.
    """
    call_id: str | None = None
    if isinstance(output, ToolMessage):
        text = message_text(output) or content_to_text(output.content)
        call_id = output.tool_call_id
        if output.status == "error":
            return clip(text, limit), partial(classify_tool_result, text, _HANDLED), call_id
        return clip(text, limit), partial(classify_tool_result, text), call_id
    messages = messages_in(output) if not isinstance(output, str) else []
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    if tool_messages:
        return tool_output(tool_messages[-1], limit)
    if isinstance(output, str):
        text = output
    elif isinstance(output, list) and output and all(isinstance(d, Document) for d in output):
        text = documents_text(output)
    else:
        try:
            text = content_to_text(output)  # a dict or a list as its JSON text
        except ValueError:  # not JSON (an object of the tool's own): its str()
            text = str(output)
    if text.strip() in _HANDLED_DEFAULTS:
        return text, partial(_failure), call_id
    return clip(text, limit), partial(classify_tool_result, text), call_id


def _failure() -> EventStatus:
    return EventStatus.FAILURE


def documents_text(documents: list[Document], per_doc: int = 300, most: int = 5) -> str:
    """A short description of retrieved documents: count, then the head of each."""
    heads = [" ".join(d.page_content.split())[:per_doc] for d in documents[:most]]
    more = f" (+{len(documents) - most} more)" if len(documents) > most else ""
    body = "\n".join(f"- {h}" for h in heads)
    return f"{len(documents)} document(s){more}" + (f"\n{body}" if body else "")


def tool_names(tools: Iterable[Any]) -> list[str]:
    """Names of an agent's tools (``BaseTool`` objects or provider dicts)."""
    names: list[str] = []
    for tool in tools:
        name = getattr(tool, "name", None)
        if name is None and isinstance(tool, Mapping):
            name = tool.get("name") or (tool.get("function") or {}).get("name")
        if isinstance(name, str) and name:
            names.append(name)
    return names
