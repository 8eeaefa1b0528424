"""Shared builders for the LlamaIndex integration tests (real llama-index-core objects).

Skips the importing test module when llama-index-core is missing, except under CI=true,
where a missing optional package is a failure.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

if (
    importlib.util.find_spec("llama_index") is None
    or importlib.util.find_spec("llama_index.core") is None
):  # pragma: no cover - depends on the environment
    if os.environ.get("CI"):
        raise ImportError('llama-index-core is missing: pip install -e ".[dev,llamaindex]"')
    pytest.skip("llama-index-core not installed", allow_module_level=True)

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatResponse, ToolCallBlock
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.llms.callbacks import llm_chat_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "tests") not in sys.path:
    sys.path.insert(0, str(REPO / "tests"))

Decide = Callable[..., ChatMessage]


def call(tool: str, n: int = 1, **args: Any) -> ChatMessage:
    """An assistant message asking for one tool call."""
    block = ToolCallBlock(tool_call_id=f"call-{tool}-{n}", tool_name=tool, tool_kwargs=args)
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])


def say(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.ASSISTANT, content=text)


def tool_messages(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    return [m for m in messages if m.role == MessageRole.TOOL]


def system_text(messages: Sequence[ChatMessage]) -> str:
    return "\n".join(m.content or "" for m in messages if m.role == MessageRole.SYSTEM)


def plan(*steps: ChatMessage) -> Decide:
    """A response generator answering the n-th model call (n = tool results so far) with
    ``steps[n]``; the last step repeats."""

    def decide(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        n = len(tool_messages(messages))
        return steps[min(n, len(steps) - 1)].model_copy(deep=True)

    return decide


class ChunkedLLM(MockFunctionCallingLLM):
    """``MockFunctionCallingLLM`` whose streams really come in chunks (``chunk_size``
    characters, ``delay`` seconds apart), the final chunk carrying the whole message with its
    tool calls, as real providers stream. ``seen`` keeps the messages of every call."""

    chunk_size: int = 4
    delay: float = 0.0
    seen: list[list[ChatMessage]] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def __init__(self, decide: Decide, **kwargs: Any) -> None:
        super().__init__(response_generator=decide, **kwargs)
        self.seen = []

    @llm_chat_callback()
    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        msg = self._get_response_generator()(messages, **kwargs)
        text = msg.content or ""
        pieces = [text[i : i + self.chunk_size] for i in range(0, len(text), self.chunk_size)]
        pieces = pieces or [""]

        async def gen() -> Any:
            acc = ""
            for i, piece in enumerate(pieces):
                if self.delay:
                    await asyncio.sleep(self.delay)
                acc += piece
                last = i == len(pieces) - 1
                message = msg if last else ChatMessage(role=MessageRole.ASSISTANT, content=acc)
                yield ChatResponse(message=message, delta=piece)

        return gen()

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return self.chat(messages, **kwargs)


def order_query(order_id: str) -> str:
    """Look up an order in the live order service."""
    raise TimeoutError(f"order service timed out for order {order_id}")


def order_query_cached(order_id: str) -> str:
    """Look up an order in the cache."""
    return f"order {order_id}: shipped"


def order_agent(decide: Decide | None = None, *, streaming: bool = True, **kw: Any) -> Any:
    """A FunctionAgent with the flaky order tools and a scripted LLM."""
    decide = decide or plan(
        call("order_query", 1, order_id="42"),
        call("order_query_cached", 2, order_id="42"),
        say("Your order 42 has shipped."),
    )
    llm = kw.pop("llm", None) or ChunkedLLM(decide)
    return FunctionAgent(
        name=kw.pop("name", "support"),
        tools=kw.pop("tools", [order_query, order_query_cached]),
        llm=llm,
        system_prompt=kw.pop("system_prompt", "You are a support agent."),
        streaming=streaming,
        **kw,
    )


def steps(trajectory: Any) -> list[tuple[str, str | None, str | None]]:
    """``(event_type, tool_name, status)`` of each event: the captured steps."""
    return [
        (e.event_type.value, e.tool_name, e.status.value if e.status else None)
        for e in trajectory.events
    ]


def run_agent(agent: Any, **kwargs: Any) -> Any:
    """``await agent.run(**kwargs)`` on a fresh event loop (``run`` needs a running loop)."""

    async def go() -> Any:
        return await agent.run(**kwargs)

    return asyncio.run(go())
