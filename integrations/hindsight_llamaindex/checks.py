"""Decision-time risk checks for LlamaIndex agents (docs/checks.md#llamaindex-checked_tools).

``checked_tools(tools, memory, tenant_id=...)`` wraps each tool so that, before it runs, the
risk checks of the proposed call are looked up (:meth:`hindsight.AsyncMemory.check_action`).
Mode ``advise`` (default): when checks match, the first call of that tool is held: the tool
answers with the advice block (reference data) and says the call was not executed; the
model's next call of the tool runs, with the arguments it gives. ``confirm``: LlamaIndex's
human-in-the-loop step (``ctx.wait_for_event``): the workflow writes an
:class:`~llama_index.core.workflow.InputRequiredEvent` to its event stream (``type``
``hindsight_risk_check``, ``tool``, ``args``, ``checks``, ``rendered``, ``question`` and
``hindsight_call``) and waits for a :class:`~llama_index.core.workflow.HumanResponseEvent`
with the same ``hindsight_call``: a ``response`` that approves
(:func:`hindsight.checks.gate.approved`: ``"approve"``, ``"yes"``...) runs the call
unchanged, anything else answers the model that a human declined it (not executed).
``off``: nothing. The arguments are never changed; a failing or slow memory
(``recall_timeout``, 5 s) leaves the call to run as proposed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from llama_index.core.tools import BaseTool, FunctionTool
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent

from hindsight.checks.gate import GateDecision, RiskGate, approved, held_message

from ._store import as_async_memory

__all__ = ["ADVISE_WINDOW", "CONFIRM_TIMEOUT", "checked_tools"]

log = logging.getLogger("hindsight.llamaindex")

#: Seconds after which a tool held once (advise) is held again if its checks still match.
ADVISE_WINDOW = 600.0
#: Seconds a ``confirm`` call waits for the human's answer (LlamaIndex's default, 2000 s); then
#: the tool answers that no one confirmed it and it was not executed.
CONFIRM_TIMEOUT = 2000.0


class _Gate:
    def __init__(self, memory: Any, options: dict[str, Any], gate: RiskGate, timeout: float):
        self.memory = as_async_memory(memory)
        self.options = options
        self.gate = gate
        self.timeout = timeout
        self.held: dict[str, float] = {}  # tool -> when its call was held
        self.lock = threading.Lock()
        self.errors = 0

    async def decision(self, tool: str, args: Mapping[str, Any]) -> GateDecision | None:
        """What the checks of the call ``tool(**args)`` ask for, or None to run the call."""
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
        if decision is not None and decision.mode == "advise":
            with self.lock:
                self.held[tool] = time.monotonic()
        return decision


def call_id(tool: str, args: Mapping[str, Any]) -> str:
    """The ``hindsight_call`` of a confirm request: stable for a tool and its arguments (the
    workflow replays the step when the human answers)."""
    text = json.dumps([tool, dict(args)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


async def _confirm(ctx: Context, decision: GateDecision, args: Mapping[str, Any]) -> str | None:
    """Ask the human (InputRequiredEvent) and wait for the answer (HumanResponseEvent):
    ``None`` to run the call, else the declined call's answer."""
    tool = decision.result.tool
    key = call_id(tool, args)
    question = f"Run {tool} with these arguments? (approve / decline)"
    rendered = decision.result.render()
    request = InputRequiredEvent(
        prefix=f"{rendered}\n{question}",
        type="hindsight_risk_check",
        tool=tool,
        args=dict(args),
        checks=[m.model_dump(mode="json") for m in decision.result.checks],
        rendered=rendered,
        question=question,
        hindsight_call=key,
    )
    try:
        answer = await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_event=request,
            requirements={"hindsight_call": key},
            timeout=CONFIRM_TIMEOUT,
        )
    except TimeoutError:
        return f"{rendered}\nNo one confirmed this {tool} call in time; it was NOT executed."
    if approved(answer.get("response")):
        return None
    return f"{rendered}\nA human declined this {tool} call after these checks; it was NOT executed."


def _wrap(tool: Any, gate: _Gate) -> BaseTool:
    base = tool if isinstance(tool, BaseTool) else FunctionTool.from_defaults(fn=tool)
    meta = base.metadata
    name = meta.get_name()
    passes_ctx = isinstance(base, FunctionTool) and base.requires_context
    wants_ctx = passes_ctx or "confirm" in gate.gate.modes.values()

    async def run(ctx: Context | None = None, **kwargs: Any) -> Any:
        decision = await gate.decision(name, kwargs)
        if decision is not None:
            if decision.mode == "advise":
                return held_message(name, decision.result)
            if ctx is None:  # confirm outside a workflow: no one to ask, never silently run
                return held_message(name, decision.result)
            declined = await _confirm(ctx, decision, kwargs)
            if declined is not None:
                return declined
        if passes_ctx and ctx is not None and base.ctx_param_name:
            kwargs = {**kwargs, base.ctx_param_name: ctx}
        output = await base.acall(**kwargs)
        return output.raw_output if hasattr(output, "raw_output") else output

    if wants_ctx:  # FunctionTool passes the workflow's Context to a parameter annotated
        # with the class itself (not the string ``from __future__`` leaves)
        run.__annotations__ = {"ctx": Context, "kwargs": Any, "return": Any}
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

    ``checks="confirm"`` (or a mode per severity, ``{"high": "confirm"}``) needs the tools to
    run inside a LlamaIndex workflow agent (``FunctionAgent``, ``ReActAgent``,
    ``AgentWorkflow``): it waits for a ``HumanResponseEvent`` (the module docstring).

    Raises:
        UsageError: a bad mode.
    """
    gate = RiskGate(checks)
    options = {"tenant_id": tenant_id, "namespace": namespace, "task_type": task_type}
    shared = _Gate(memory, options, gate, recall_timeout)
    return [_wrap(t, shared) for t in tools]
