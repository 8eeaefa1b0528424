"""Put the past-experience block at the tail of a graph's system message
(docs/concepts.md#injection-at-the-tail).

The block is appended to the first system message of the conversation (the one the model reads
as its instructions) behind :data:`hindsight.BLOCK_START`; an earlier hindsight block at that
tail is replaced, never stacked, so re-entering the recall node (a loop, the next turn on the
same thread, a replay from a checkpoint) leaves exactly one block. Updates keep each message's
id, so LangGraph's ``add_messages`` reducer replaces the message in place.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    convert_to_messages,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from hindsight import BLOCK_END, BLOCK_START
from hindsight.models import content_to_text

__all__ = [
    "HINDSIGHT_SYSTEM_NAME",
    "MessagesMode",
    "block_of",
    "latest_user_text",
    "read_messages",
    "strip_block",
    "system_update",
]

MessagesMode = Literal["add_messages", "replace"]
"""How the graph's messages channel merges updates: LangGraph's ``add_messages`` reducer (by
message id), or plain replacement (a channel without reducer)."""

HINDSIGHT_SYSTEM_NAME = "hindsight"
"""``name`` of a system message the recall node had to create (there was none)."""

_SEPARATOR = "\n\n"


def read_messages(state: Any, key: str) -> list[BaseMessage]:
    """The messages under ``key`` of a state (dict, dataclass or pydantic model).

    Raises:
        KeyError: the state has no such key; the message names it.
    """
    if isinstance(state, Mapping):
        if key not in state:
            raise KeyError(f"the graph state has no {key!r} key (messages_key={key!r})")
        raw = state[key]
    elif hasattr(state, key):
        raw = getattr(state, key)
    else:
        raise KeyError(f"the graph state has no {key!r} key (messages_key={key!r})")
    if not raw:
        return []
    return list(convert_to_messages(raw))


def latest_user_text(messages: Sequence[BaseMessage]) -> str:
    """Plain text of the last human message with non-blank text (``""`` when none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            text = content_to_text(message.content).strip()
            if text:
                return text
    return ""


def strip_block(content: str | list[Any]) -> str | list[Any]:
    """``content`` without a hindsight block at its tail (str or list of content parts)."""
    if isinstance(content, str):
        start = content.rfind(BLOCK_START)
        if start == -1 or not content.rstrip().endswith(BLOCK_END):
            return content
        return content[:start].rstrip()
    kept = [part for part in content if BLOCK_START not in content_to_text([part])]
    return kept


def block_of(messages: Sequence[BaseMessage]) -> str:
    """The hindsight block at the tail of the first system message of ``messages`` (what the
    recall node put there), or ``""``."""
    for message in messages:
        if isinstance(message, SystemMessage):
            text = content_to_text(message.content)
            start, end = text.rfind(BLOCK_START), text.rfind(BLOCK_END)
            if start == -1 or end < start:
                return ""
            return text[start : end + len(BLOCK_END)]
    return ""


def _with_block(content: str | list[Any], block: str) -> str | list[Any]:
    base = strip_block(content)
    if isinstance(base, str):
        if not block:
            return base
        return f"{base}{_SEPARATOR}{block}" if base.strip() else block
    return [*base, {"type": "text", "text": block}] if block else base


def _is_ours(message: BaseMessage) -> bool:
    return isinstance(message, SystemMessage) and message.name == HINDSIGHT_SYSTEM_NAME


def system_update(
    messages: Sequence[BaseMessage], block: str, mode: MessagesMode = "add_messages"
) -> list[BaseMessage] | None:
    """The messages update that leaves exactly ``block`` at the system message's tail.

    * A system message exists: it is returned with the old hindsight block (if any) removed and
      ``block`` appended, under the same id (``add_messages`` replaces it in place).
    * None exists and ``block`` is not empty: a new system message holding only ``block`` is
      put first; with ``add_messages`` that takes ``RemoveMessage(REMOVE_ALL_MESSAGES)`` and the
      whole list again, because the reducer appends new ids at the end.
    * ``block`` is empty: an old block is removed (a system message hindsight created is
      deleted); nothing to do gives ``None``.

    With ``mode="replace"`` (a messages channel without reducer) the full new list is returned.
    """
    index = next((i for i, m in enumerate(messages) if isinstance(m, SystemMessage)), None)
    if index is None:
        if not block:
            return None
        created = SystemMessage(content=block, name=HINDSIGHT_SYSTEM_NAME, id=str(uuid.uuid4()))
        rest = list(messages)
        if mode == "replace":
            return [created, *rest]
        return [RemoveMessage(id=REMOVE_ALL_MESSAGES), created, *rest]
    current = messages[index]
    new_content = _with_block(current.content, block)
    if new_content == current.content:
        return None
    updated: BaseMessage | None
    if _is_ours(current) and not content_to_text(new_content).strip():
        updated = None
    else:
        updated = current.model_copy(update={"content": new_content})
    if mode == "replace":
        out = list(messages)
        if updated is None:
            del out[index]
        else:
            out[index] = updated
        return out
    if updated is None:
        if current.id is None:
            rest = [m for i, m in enumerate(messages) if i != index]
            return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *rest]
        return [RemoveMessage(id=current.id)]
    if current.id is None:
        out = list(messages)
        out[index] = updated
        return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *out]
    return [updated]
