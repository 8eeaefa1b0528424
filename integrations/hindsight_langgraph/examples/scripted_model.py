"""An offline support agent that reads its system prompt (the example's chat model).

:func:`scripted_support_model` is hindsight_langchain's ``ScriptedChatModel`` (langchain-core's
``GenericFakeChatModel`` with tool binding) driven by :func:`support_policy`, a policy instead
of a fixed script. Every call reads the messages it is given, and what it does depends on them
as a real model's answer would:

* the latest user message says which order and whether a refund is wanted;
* the tool messages since then say what was already tried (a ``timed out`` error counts as a
  timeout) and what is known;
* the system prompt's past-experience block (behind :data:`hindsight.BLOCK_START`) is *read*:
  a lesson "``<tool>`` can time out: retry once ..." limits the retries of that tool to one,
  and a lesson "When ``<tool>`` times out, calling ``<other>`` instead went through" makes
  ``<other>`` the fallback to switch to. Without lessons it retries the live service twice
  before trying the cache as a last resort.

So a lesson changes the run only if it really is in the prompt the model receives.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hindsight_langchain.testing import ScriptedChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from hindsight import BLOCK_END, BLOCK_START
from hindsight.models import content_to_text

__all__ = ["Advice", "decide", "read_advice", "scripted_support_model", "support_policy"]

NAIVE_RETRIES = 2
"""Retries of a timed-out tool without any lesson (three attempts in all)."""

_ORDER_ID = re.compile(r"\b(\d{4,})\b")
_FALLBACK = re.compile(r"when (\w+) t(?:imed|imes) out, calling (\w+)", re.IGNORECASE)
_RETRY_ONCE = re.compile(r"(\w+) (?:can )?t(?:imed|imes?) out[^.]*?retry once", re.IGNORECASE)


@dataclass
class Advice:
    """What the past-experience block says: tool -> fallback tool, tool -> max retries."""

    fallback: dict[str, str] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    lessons: list[str] = field(default_factory=list)


def read_advice(system_prompt: str) -> Advice:
    """Read the lessons in the past-experience block at the tail of ``system_prompt``."""
    advice = Advice()
    start = system_prompt.rfind(BLOCK_START)
    if start == -1:
        return advice
    end = system_prompt.find(BLOCK_END, start)
    block = system_prompt[start + len(BLOCK_START) : end if end != -1 else None]
    for line in block.splitlines():
        if not re.match(r"\s*\d+\.", line):
            continue
        advice.lessons.append(line.strip())
        for tool, other in _FALLBACK.findall(line):
            advice.fallback.setdefault(tool, other)
        for tool in _RETRY_ONCE.findall(line):
            advice.retries[tool] = 1
    return advice


def _text(message: BaseMessage) -> str:
    return content_to_text(message.content)


def _call(name: str, **args: Any) -> AIMessage:
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def scripted_support_model() -> ScriptedChatModel:
    """The offline support model: hindsight_langchain's ``ScriptedChatModel`` (langchain-core's
    ``GenericFakeChatModel`` with tool binding) driven by :func:`support_policy`. Its
    ``prompts`` attribute keeps every prompt it received, system prompt first."""
    return ScriptedChatModel(script=support_policy, model_name="scripted-support")


def support_policy(messages: Sequence[BaseMessage]) -> AIMessage:
    """The next message of a support agent that has read ``messages`` (system prompt included)."""
    system = "\n".join(_text(m) for m in messages if isinstance(m, SystemMessage))
    return decide(messages, read_advice(system))


def decide(messages: Sequence[BaseMessage], advice: Advice) -> AIMessage:
    """The next message of a support agent that has seen ``messages`` and read ``advice``."""
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    request = _text(messages[last_user]) if last_user >= 0 else ""
    found = _ORDER_ID.search(request)
    if found is None:
        return AIMessage(content="Which order is it about? Please give me the order number.")
    order_id = found.group(1)
    wants_refund = "refund" in request.lower()
    turn = messages[last_user + 1 :]
    results = [m for m in turn if isinstance(m, ToolMessage)]
    order: dict[str, Any] | None = None
    refunded: dict[str, Any] | None = None
    timeouts: dict[str, int] = {}
    for result in results:
        text = _text(result)
        if result.status == "error":
            if "timed out" in text.lower():
                timeouts[result.name or ""] = timeouts.get(result.name or "", 0) + 1
            continue
        data = _json(text)
        if result.name == "refund" and data:
            refunded = data
        elif data and "total" in data:
            order = data
    if refunded is not None:
        return AIMessage(
            content=f"Done: I refunded {refunded['refunded']:.2f} for order {order_id}. "
            "You will see it on your statement in 3-5 days."
        )
    if order is not None:
        if wants_refund:
            return _call("refund", order_id=order_id, amount=order["total"])
        return AIMessage(content=f"Order {order_id} ({order['item']}) is {order['status']}.")
    live = "order_query"
    failed = timeouts.get(live, 0)
    if failed == 0:
        return _call(live, order_id=order_id)
    # Without a lesson the agent still knows its cache tool, as a last resort.
    fallback = advice.fallback.get(live, "order_query_cached")
    # A lesson naming a fallback that worked means: switch to it (after the retries a
    # lesson allows); without lessons, retry the live service a few times first.
    default = 0 if live in advice.fallback else NAIVE_RETRIES
    retries = advice.retries.get(live, default)
    if failed <= retries:
        return _call(live, order_id=order_id)
    if fallback is not None and timeouts.get(fallback, 0) == 0:
        return _call(fallback, order_id=order_id)
    return AIMessage(
        content="Sorry, the order system is not responding right now. Please try again later."
    )


def _json(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
