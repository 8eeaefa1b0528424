"""Recall for LCEL chains and legacy agents, which have no agent middleware
(docs/integrations/langchain.md#lcel-chains-and-legacy-agents).

* :class:`HindsightRetriever`: a LangChain ``BaseRetriever``; ``invoke(query)`` returns one
  ``Document`` per recalled experience (its text as ``page_content``, id, kind, confidence,
  score and score breakdown in ``metadata``), for any chain that takes a retriever.
  :meth:`HindsightRetriever.as_block` is the runnable that gives the rendered, delimited block
  (``--- Past experience (reference only) ---``) instead, ready for a prompt variable.
* :func:`with_experience`: a ``ChatPromptTemplate`` whose system message ends with that variable:
  the block lands at the **tail** of the system prompt, behind the original instructions
  (docs/concepts.md#injection-at-the-tail), and a prompt without a system message gets one.

Recall never breaks the chain: a failing, closed or slow memory (``recall_timeout``) gives no
documents / an empty block, logged once on ``hindsight.langchain``, then recall is skipped for
30 s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate, SystemMessagePromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from pydantic import ConfigDict, Field, PrivateAttr

from hindsight import RecallResult, UsageError
from hindsight._ids import validate_namespace, validate_tenant
from hindsight_langchain._engine import RECALL_TIMEOUT, Engine
from hindsight_langchain._seen import RECALL_EVENT

__all__ = ["BLOCK_VARIABLE", "HindsightRetriever", "documents_text", "with_experience"]

BLOCK_VARIABLE = "hindsight_experience"
"""Default prompt variable of the block (:func:`with_experience`)."""


class HindsightRetriever(BaseRetriever):
    """Recalled experiences as LangChain documents.

    Args:
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            ``HindsightClient`` / ``AsyncHindsightClient`` of a ``hindsight serve``.
        tenant_id: required (recall is always scoped to one tenant).
        namespace: searched first, then the shared one (docs/concepts.md#tenants-and-namespaces);
            default ``default``.
        task_type, tags, tools: recall filter and boosts (``tools``: the chain's tool names).
        top_k: experiences recalled (default: the memory's, 5).
        token_budget: estimated tokens of the rendered block (default 2000).
        recall_timeout: seconds a recall may take (5; 0: no limit).

    Raises:
        TenantRequiredError: ``tenant_id`` missing or empty.
        UsageError: ``memory`` is not a hindsight memory; an invalid namespace or timeout.

    Document metadata: ``id``, ``kind``, ``confidence``, ``score``, ``breakdown``,
    ``task_type``, ``namespace``, ``source_trajectory_ids`` (the recall hit shape of
    :meth:`hindsight.RecallResult.to_json`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(exclude=True)
    tenant_id: str
    namespace: str = "default"
    task_type: str | None = None
    tags: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    top_k: int | None = None
    token_budget: int | None = None
    recall_timeout: float = RECALL_TIMEOUT

    _engine: Engine = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        data["tenant_id"] = validate_tenant(data.get("tenant_id"))
        data["namespace"] = validate_namespace(data.get("namespace", "default"))
        super().__init__(**data)
        self._engine = Engine(self.memory, recall_timeout=self.recall_timeout)

    def _options(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "namespace": self.namespace,
            "task_type": self.task_type,
            "tags": list(self.tags),
            "tools": list(self.tools),
            "top_k": self.top_k,
            "token_budget": self.token_budget,
        }

    def recall(self, query: str) -> RecallResult | None:
        """The :class:`hindsight.RecallResult` for ``query`` (``None``: recall failed, timed
        out or is cooling down; logged once)."""
        if not isinstance(query, str):
            raise UsageError(f"the query must be a string, got {type(query).__name__}")
        return self._engine.recall(query, **self._options()) if query.strip() else None

    async def arecall(self, query: str) -> RecallResult | None:
        """Async :meth:`recall`."""
        if not isinstance(query, str):
            raise UsageError(f"the query must be a string, got {type(query).__name__}")
        return await self._engine.arecall(query, **self._options()) if query.strip() else None

    @staticmethod
    def _documents(result: RecallResult | None) -> list[Document]:
        if result is None:
            return []
        hits = result.hits_json()
        return [Document(page_content=hit["content"], metadata=hit) for hit in hits]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._documents(self.recall(query))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._documents(await self.arecall(query))

    def as_block(self, *, key: str | None = None) -> Runnable[Any, str]:
        """A runnable: input -> the rendered block, with a leading blank line (``""`` when
        nothing was recalled), for the variable :func:`with_experience` adds. The input is
        the query string, or a mapping whose ``key`` entry is (default: its only string
        value, e.g. ``{"question": ...}``).

        It reports the block and its experience ids to the run (a custom event,
        :data:`~hindsight_langchain._seen.RECALL_EVENT`): a
        :class:`~hindsight_langchain.HindsightCallbackHandler` on the run checks its model
        calls for the block and credits or blames those experiences with the run's outcome
        only when a model call received it.

        Raises (when it runs):
            UsageError: the input holds no query string.
        """

        def query_of(value: Any) -> str:
            if isinstance(value, str):
                return value
            if isinstance(value, dict):
                if key is not None and isinstance(value.get(key), str):
                    return str(value[key])
                texts = [v for v in value.values() if isinstance(v, str)]
                if key is None and len(texts) == 1:
                    return texts[0]
            raise UsageError(
                "as_block() needs the query: a string, or a mapping with one string value "
                f"(or pass key=); got {type(value).__name__}"
            )

        def block(result: RecallResult | None) -> tuple[str, dict[str, Any] | None]:
            text = result.render() if result is not None else ""
            if not text or result is None:
                return "", None
            ids = [h.experience.id for h in result.hits]
            return f"\n\n{text}", {"block": text, "experience_ids": ids}

        def sync(value: Any, config: RunnableConfig) -> str:
            text, event = block(self.recall(query_of(value)))
            if event is not None:
                try:
                    dispatch_custom_event(RECALL_EVENT, event, config=config)
                except Exception as exc:  # no run to report to: nothing to attribute
                    self._engine.fail("could not report the recalled block", exc)
            return text

        async def aio(value: Any, config: RunnableConfig) -> str:
            text, event = block(await self.arecall(query_of(value)))
            if event is not None:
                try:
                    await adispatch_custom_event(RECALL_EVENT, event, config=config)
                except Exception as exc:
                    self._engine.fail("could not report the recalled block", exc)
            return text

        return RunnableLambda(sync, afunc=aio, name="hindsight_block")


def with_experience(
    prompt: ChatPromptTemplate, variable: str = BLOCK_VARIABLE
) -> ChatPromptTemplate:
    """``prompt`` with ``{variable}`` at the tail of its (first) system message: the recalled block
    goes behind the original instructions (docs/concepts.md#injection-at-the-tail). A prompt without
    a system message gets one at the head holding only the block.

    Raises:
        UsageError: ``prompt`` is not a ``ChatPromptTemplate``, its system message is not a
            plain f-string template, or it already uses ``variable``.
    """
    if not isinstance(prompt, ChatPromptTemplate):
        raise UsageError(f"prompt must be a ChatPromptTemplate, got {type(prompt).__name__}")
    if variable in prompt.input_variables:
        raise UsageError(f"the prompt already has a {variable!r} variable")
    messages: list[Any] = list(prompt.messages)
    tail = "{" + variable + "}"
    for i, message in enumerate(messages):
        if isinstance(message, SystemMessagePromptTemplate):
            template = getattr(message.prompt, "template", None)
            fmt = getattr(message.prompt, "template_format", "f-string")
            if not isinstance(template, str) or fmt != "f-string":
                raise UsageError(
                    "with_experience needs a system message that is a plain f-string template"
                )
            messages[i] = SystemMessagePromptTemplate.from_template(template + tail)
            break
    else:
        messages.insert(0, SystemMessagePromptTemplate.from_template(tail))
    return ChatPromptTemplate.from_messages(messages)


def documents_text(documents: Sequence[Document]) -> str:
    """The experiences of :class:`HindsightRetriever` documents, one per line (for prompts
    that want plain text rather than the delimited block)."""
    return "\n".join(f"- {d.page_content}" for d in documents)
