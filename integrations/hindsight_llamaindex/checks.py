"""Decision-time risk checks for LlamaIndex agents (issue 16, docs/checks.md).

``checked_tools(tools, memory, tenant_id=...)`` wraps each tool so that, before it runs, the
risk checks of the proposed call are looked up (:meth:`hindsight.AsyncMemory.check_action`).
Mode ``advise`` (default): when checks match, the first call of that tool is held: the tool
answers with the advice block (reference data) and says the call was not executed; the
model's next call of the tool runs, with the arguments it gives. ``off``: nothing.
(``confirm`` needs a human-in-the-loop step of the workflow and is not offered here.) The
arguments are never changed; a failing or slow memory (``recall_timeout``, 5 s) leaves the
call to run as proposed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from llama_index.core.tools import BaseTool, FunctionTool

from hindsight import UsageError
from hindsight.checks.gate import RiskGate, held_message

from ._store import as_async_memory

__all__ = ["ADVISE_WINDOW", "checked_tools"]

log = logging.getLogger("hindsight.llamaindex")

#: Seconds after which a tool held once (advise) is held again if its checks still match.
ADVISE_WINDOW = 600.0


class _Gate:
    def __init__(self, memory: Any, options: dict[str, Any], gate: RiskGate, timeout: float):
        self.memory = as_async_memory(memory)
        self.options = options
        self.gate = gate
        self.timeout = timeout
        self.held: dict[str, float] = {}  # tool -> when its call was held
        self.lock = threading.Lock()
        self.errors = 0

    async def answer(self, tool: str, args: Mapping[str, Any]) -> str | None:
        """The held call's answer, or None to run the call."""
        if not self.gate.enabled:
            return None
        with self.lock:
            since = self.held.get(tool)
            if since is not None and time.monotonic() - since < ADVISE_WINDOW:
                del self.held[tool]  # the model calls it again after the advice: run it
                return None
        try:
            result = await asyncio.wait_for(
                self.memory.check_action(tool, dict(args), record=False, **self.options),
                self.timeout or None,
            )
            decision = self.gate.decide(result)
        except Exception as exc:  # memory never breaks the agent
            self.errors += 1
            log.warning("hindsight: risk checks of %s skipped: %s", tool, exc)
            return None
        if decision is None:
            return None
        with self.lock:
            self.held[tool] = time.monotonic()
        return held_message(tool, decision.result)


def _wrap(tool: Any, gate: _Gate) -> BaseTool:
    base = tool if isinstance(tool, BaseTool) else FunctionTool.from_defaults(fn=tool)
    meta = base.metadata
    name = meta.get_name()

    async def run(**kwargs: Any) -> Any:
        held = await gate.answer(name, kwargs)
        if held is not None:
            return held
        output = await base.acall(**kwargs)
        return output.raw_output if hasattr(output, "raw_output") else output

    return FunctionTool.from_defaults(
        async_fn=run, name=name, description=meta.description, fn_schema=meta.fn_schema
    )


def checked_tools(
    tools: Iterable[Any],
    memory: Any,
    *,
    tenant_id: str,
    namespace: str = "default",
    task_type: str | None = None,
    checks: str | Mapping[str, str] = "advise",
    recall_timeout: float = 5.0,
) -> list[BaseTool]:
    """``tools`` (functions or LlamaIndex tools), each wrapped with the risk checks of its
    proposed calls; same names, descriptions and argument schemas.

    Raises:
        UsageError: ``confirm`` asked for, or a bad mode.
    """
    gate = RiskGate(checks)
    if "confirm" in gate.modes.values():
        raise UsageError("checks='confirm' is not available for LlamaIndex tools: use 'advise'")
    options = {"tenant_id": tenant_id, "namespace": namespace, "task_type": task_type}
    shared = _Gate(memory, options, gate, recall_timeout)
    return [_wrap(t, shared) for t in tools]
