"""Recall as a LlamaIndex memory block (docs/concepts.md#recall).

``Memory.from_defaults(memory_blocks=[HindsightMemoryBlock(memory=mem, tenant_id="acme")])``
makes every ``agent.run(user_msg, memory=memory)`` recall the experiences relevant to the
latest user message. The block returns :meth:`hindsight.RecallResult.render`'s text: the same
``--- Past experience (reference only) ---`` delimiter and token budget (2000 by default) as
every other path. LlamaIndex's ``Memory`` puts block texts in a system message of their own
inside ``<memory><past_experience>...`` tags; workflow agents place it right after the agent's
``system_prompt`` (the tail of the system prompt, docs/concepts.md#injection-at-the-tail).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import Any

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import BaseMemoryBlock
from pydantic import ConfigDict, Field, PrivateAttr

from hindsight import RecallResult
from hindsight._ids import validate_namespace, validate_tenant

from ._convert import message_text, role_of
from ._store import as_async_memory
from .capture import current_run

__all__ = ["HindsightMemoryBlock"]

log = logging.getLogger("hindsight.llamaindex")

_CACHE_SIZE = 64

RECALL_TIMEOUT = 5.0
"""Seconds a recall may take before the agent runs without it."""

RECALL_COOLDOWN = 30.0
"""Seconds recall is skipped after it failed or timed out (one warning, not one per model
call: LlamaIndex asks the memory before every model call)."""


class HindsightMemoryBlock(BaseMemoryBlock[str]):
    """A ``BaseMemoryBlock`` that recalls past experiences for the latest user message.

    Inside a captured run (see :class:`~hindsight_llamaindex.HindsightCapture`) the recall is
    attributed to the run's trajectory (so ``record_outcome`` credits or blames what was
    recalled) and the agent's tool names are passed as ``tools=``. LlamaIndex asks the memory
    again after every tool result; within one run the first recall is reused, so an experience
    is counted as recalled once per run.

    Args:
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            ``HindsightClient`` / ``AsyncHindsightClient`` of a ``hindsight serve``
            (docs/integrations/llamaindex.md#point-at-a-server).
        tenant_id: required; recall is always scoped to one tenant
            (docs/concepts.md#tenants-and-namespaces).
        namespace: private namespace searched first (the shared one follows,
            docs/concepts.md#tenants-and-namespaces).
        task_type, tags: passed to :meth:`hindsight.AsyncMemory.recall`.
        tools: tool names to pass to recall; default the captured run's agent tools.
        top_k: 1..1000, default the memory's ``top_k`` (5, docs/concepts.md#recall).
        token_budget: tokens of the rendered block (default 2000: five recalled items should
            cost less, docs/concepts.md#injection-at-the-tail).
        name: the block's tag inside LlamaIndex's ``<memory>`` template.
        priority: 0 (LlamaIndex never truncates it; the budget above already bounds it).

    Raises:
        TenantRequiredError: ``tenant_id`` missing, empty or not a string.
        UsageError: ``memory`` is not a hindsight memory; invalid namespace.

    Recall errors and recalls slower than ``recall_timeout`` seconds (5) are counted in
    ``errors`` and logged once (logger ``hindsight.llamaindex``); recall is then skipped for
    :data:`RECALL_COOLDOWN` seconds (30): the block contributes nothing and the agent runs on.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "past_experience"
    description: str | None = "Lessons from earlier runs (hindsight), reference only."
    priority: int = 0
    accept_short_term_memory: bool = False
    memory: Any = Field(exclude=True)
    tenant_id: str
    namespace: str = "default"
    task_type: str | None = None
    tags: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    top_k: int | None = None
    token_budget: int | None = None
    recall_timeout: float = RECALL_TIMEOUT
    errors: int = 0

    _cache: OrderedDict[tuple[str, str], RecallResult] = PrivateAttr(default_factory=OrderedDict)
    _last: RecallResult | None = PrivateAttr(default=None)
    _off_until: float = PrivateAttr(default=0.0)

    def __init__(self, **data: Any) -> None:
        # Checked here, not in pydantic validators, so callers get hindsight's own
        # TenantRequiredError / UsageError rather than a pydantic ValidationError.
        data["memory"] = as_async_memory(data.get("memory"))
        data["tenant_id"] = validate_tenant(data.get("tenant_id"))
        data["namespace"] = validate_namespace(data.get("namespace", "default"))
        super().__init__(**data)

    @property
    def last_recall(self) -> RecallResult | None:
        """The most recent :class:`hindsight.RecallResult` (hits with score breakdowns)."""
        return self._last

    def recall_for(self, trajectory_id: str) -> RecallResult | None:
        """The recall made for the run ``trajectory_id`` (if still cached)."""
        return next((r for (tid, _), r in self._cache.items() if tid == trajectory_id), None)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = ""
        for msg in reversed(messages or []):
            if role_of(msg) == "user":
                query = message_text(msg).strip()
                if query:
                    break
        if not query:
            return ""
        run = current_run()
        key = (run.trajectory_id, query) if run else None
        if key is not None and key in self._cache:
            return self._render(self._cache[key])
        if time.monotonic() < self._off_until:
            return ""  # cooling down after a failure (logged once)
        try:
            result = await asyncio.wait_for(self._recall(query, run), self.recall_timeout or None)
        except Exception as exc:
            self.errors += 1
            self._off_until = time.monotonic() + RECALL_COOLDOWN
            what = "timed out" if isinstance(exc, TimeoutError) else "failed"
            log.warning(
                "hindsight: recall %s (%s: %s); the agent runs without it, recall skipped for "
                "%.0f s",
                what,
                type(exc).__name__,
                exc,
                RECALL_COOLDOWN,
            )
            return ""
        self._last = result
        if key is not None:
            self._cache[key] = result
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return self._render(result)

    async def _recall(self, query: str, run: Any) -> RecallResult:
        result: RecallResult = await self.memory.recall(
            query,
            tenant_id=self.tenant_id,
            namespace=self.namespace,
            task_type=self.task_type,
            tags=self.tags,
            tools=self.tools or (list(run.tools) if run else []),
            top_k=self.top_k,
            trajectory_id=run.trajectory_id if run else None,
            token_budget=self.token_budget,
        )
        return result

    def _render(self, result: RecallResult) -> str:
        try:
            return result.render(self.token_budget)
        except ValueError:  # budget too small for any item
            self.errors += 1
            log.warning("hindsight: token_budget too small to render recall", exc_info=True)
            return ""

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Nothing to do: runs reach hindsight through the capture, not through chat memory."""
        return None
