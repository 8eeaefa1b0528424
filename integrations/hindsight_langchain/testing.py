"""A scripted chat model for tests and offline examples (built on langchain-core's fakes).

:class:`ScriptedChatModel` is langchain-core's ``GenericFakeChatModel`` with tool binding and
with replies decided by a *script* that reads the whole prompt, system prompt included, so an
offline agent can react to the experiences recalled into its system prompt. It records every
prompt it received in :attr:`ScriptedChatModel.prompts`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field, PrivateAttr

__all__ = ["Reply", "ScriptedChatModel", "ai", "call", "system_prompt_of"]

Reply = AIMessage | str | BaseException
"""A scripted reply: a message, a text, or an exception the model raises."""


def call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:
    """A tool call dict for :func:`ai` (``id`` defaults to ``call_<name>``)."""
    return {"name": name, "args": args or {}, "id": id or f"call_{name}", "type": "tool_call"}


def ai(text: str = "", *calls: dict[str, Any]) -> AIMessage:
    """An AI message with ``text`` and tool ``calls`` (see :func:`call`)."""
    return AIMessage(content=text, tool_calls=list(calls))


def system_prompt_of(messages: Sequence[BaseMessage]) -> str:
    """The system prompt text of a prompt (``""`` when there is none)."""
    return "\n".join(str(m.text) for m in messages if isinstance(m, SystemMessage))


class ScriptedChatModel(GenericFakeChatModel):
    """A fake chat model whose replies come from ``script`` or, without it, from ``replies``.

    Args:
        script: ``messages -> reply`` (a :data:`Reply`); it sees the system prompt first.
        replies: replies used in order when there is no script (the last one repeats).
        name: model name reported to callbacks (``ls_model_name``).

    Raises (from a call):
        whatever exception the script returns or raises (a model that fails).
    """

    messages: Iterator[AIMessage | str] = Field(default_factory=lambda: iter(()))
    script: Callable[[list[BaseMessage]], Reply] | None = None
    replies: list[Any] = Field(default_factory=list)  # Reply items (kept as given)
    model_name: str = "scripted"
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    _turn: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, Any]:
        """Tools are accepted and ignored: the script decides which to call."""
        return self

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        with self._lock:
            self.prompts.append(list(messages))
            turn, self._turn = self._turn, self._turn + 1
        if self.script is not None:
            reply = self.script(list(messages))
        elif self.replies:
            reply = self.replies[min(turn, len(self.replies) - 1)]
        else:
            reply = "ok"
        if isinstance(reply, BaseException):
            raise reply
        if not isinstance(reply, AIMessage | str):
            raise TypeError(f"a scripted reply must be an AIMessage, str or exception: {reply!r}")
        message = AIMessage(content=reply) if isinstance(reply, str) else reply
        return message.model_copy(update={"response_metadata": {"model_name": self.model_name}})

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # One chunk carrying the text and the tool calls (the parent's _stream drops them).
        message = self._reply(messages)
        chunk = AIMessageChunk(
            content=message.content,
            id=message.id,
            response_metadata=message.response_metadata,
            tool_call_chunks=[
                {
                    "name": c["name"],
                    "args": json.dumps(c["args"]),
                    "id": c.get("id"),
                    "index": i,
                    "type": "tool_call_chunk",
                }
                for i, c in enumerate(message.tool_calls)
            ],
            chunk_position="last",
        )
        generation = ChatGenerationChunk(message=chunk)
        if run_manager:
            run_manager.on_llm_new_token(str(message.text), chunk=generation)
        yield generation

    @property
    def _llm_type(self) -> str:
        return "hindsight-scripted-chat-model"
