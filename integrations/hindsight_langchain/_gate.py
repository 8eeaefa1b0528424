"""Decision-time risk checks in front of a tool call (docs/checks.md).

:class:`RiskGate` decides, for a tool call the model proposed, what the matching risk checks
(:meth:`hindsight.AsyncMemory.check_action`) do, by the mode of the most severe one:

* ``advise`` (default): the first proposal of that tool in a run is **held**, not run: the tool
  answers with the advice block (reference data, delimited like the recall block) and says so,
  so the model reads the advice before the call executes; it then proposes the call again
  (the same or corrected) and that proposal runs. The arguments are never changed.
* ``confirm``: a human-in-the-loop interrupt (``langgraph.types.interrupt``) with the call and
  the checks; resuming with ``True`` / ``"approve"`` / ``{"approve": true}`` runs the call
  unchanged, anything else answers the model that a human declined it.
* ``off``: nothing.

A failing, slow or closed memory leaves the call untouched (the engine logs it once).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.types import Command, interrupt

from hindsight.checks import CheckResult
from hindsight.checks.gate import (
    MODES,
    SPECIFIC_MATCHES,
    GateDecision,
    RiskGate,
    approved,
    held_message,
)
from hindsight_langchain._engine import RECALL_TIMEOUT, Engine
from hindsight_langchain._scope import Scope


def run_state(state: Any, limit: int = 200) -> list[dict[str, Any]] | None:
    """The tool results an agent's state holds (``ToolMessage`` s of ``state["messages"]``),
    as ``check_action``'s ``state``: ``[{"tool": name, "result": text}]``, the latest
    ``limit``, oldest first; ``None`` when the state has no message list (unknown)."""
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if not isinstance(messages, list):
        return None
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, ToolMessage) and m.name:
            content = m.content
            if isinstance(content, list):
                content = "".join(
                    p if isinstance(p, str) else str(p.get("text", ""))
                    for p in content
                    if isinstance(p, str | dict)
                )
            out.append({"tool": m.name, "result": content})
    return out[-limit:]


__all__ = [
    "MODES",
    "SPECIFIC_MATCHES",
    "GateDecision",
    "RiskGate",
    "ToolCallChecks",
    "approved",
    "gate_answer",
    "held_message",
    "run_state",
]


def gate_answer(decision: GateDecision, call: Mapping[str, Any]) -> ToolMessage | None:
    """The tool answer that replaces running ``call`` (advise: held once, the advice;
    confirm: the human's decline), or ``None`` to run it. ``confirm`` calls
    ``langgraph.types.interrupt``, which pauses the graph by raising: not caught here."""
    tool = decision.result.tool
    call_id = str(call.get("id") or "")
    if decision.mode == "confirm":
        answer = interrupt(
            {
                "type": "hindsight_risk_check",
                "tool": tool,
                "args": call.get("args"),
                "checks": [m.model_dump(mode="json") for m in decision.result.checks],
                "rendered": decision.result.render(),
                "question": f"Run {tool} with these arguments? (approve / decline)",
            }
        )
        if approved(answer):
            return None
        text = (
            f"{decision.result.render()}\nA human declined this {tool} call after these "
            "checks; it was NOT executed."
        )
        return ToolMessage(content=text, tool_call_id=call_id, name=tool)
    return ToolMessage(content=held_message(tool, decision.result), tool_call_id=call_id, name=tool)


ToolResult = ToolMessage | Command[Any]


class ToolCallChecks:
    """Risk checks in front of a LangGraph ``ToolNode``
    (docs/checks.md#langgraph-add_hindsight-checks): pass it as
    ``ToolNode(tools, wrap_tool_call=checks, awrap_tool_call=checks.acall)``, or let
    ``add_hindsight(..., checks=...)`` wire it into the graph's tool nodes.

    Same modes as ``HindsightMiddleware(checks=...)``. "Once per run" for ``advise`` is per
    latest user message of the state (a new user turn is a new run), and so is "no risk
    check exists for this tool": found once, the tool is not checked again in that run
    (docs/checks.md#cost-on-the-agents-path).

    Args:
        memory: a Memory, AsyncMemory or a client of ``hindsight serve``.
        tenant_id, namespace, task_type: the scope of the checks.
        checks: ``"advise"``, ``"confirm"``, ``"off"`` or a mode per severity.
        recall_timeout: seconds a check may take (5) before the call runs without it.
    """

    def __init__(
        self,
        memory: Any,
        *,
        tenant_id: str,
        namespace: str = "default",
        task_type: str | None = None,
        checks: str | Mapping[str, str] = "advise",
        recall_timeout: float = RECALL_TIMEOUT,
    ) -> None:
        self.scope = Scope.build(tenant_id, namespace, task_type, ())
        self.gate = RiskGate(checks)
        self.engine = Engine(memory, review=False, recall_timeout=recall_timeout)
        self._advised: OrderedDict[str, set[str]] = OrderedDict()
        self._unchecked: OrderedDict[str, set[str]] = OrderedDict()  # run key -> tools
        self._lock = threading.Lock()

    @property
    def errors(self) -> int:
        """Failures logged (never raised)."""
        return self.engine.errors

    def _options(self) -> dict[str, Any]:
        return {
            "tenant_id": self.scope.tenant_id,
            "namespace": self.scope.namespace,
            "task_type": self.scope.task_type,
        }

    def _run_key(self, state: Any) -> str:
        messages = state.get("messages", []) if isinstance(state, Mapping) else []
        users = [m for m in messages if isinstance(m, BaseMessage) and isinstance(m, HumanMessage)]
        return str(users[-1].id or id(users[-1])) if users else ""

    def _decide(self, request: Any, result: CheckResult | None) -> ToolMessage | None:
        try:
            if result is not None and result.tested == 0:
                self._note_unchecked(self._run_key(request.state), result.tool)
            decision = self.gate.decide(result)
            if decision is None:
                return None
            key = self._run_key(request.state)
            if decision.mode == "advise":
                with self._lock:
                    seen = self._advised.setdefault(key, set())
                    if decision.result.tool in seen:
                        return None
                    seen.add(decision.result.tool)
                    while len(self._advised) > 1000:
                        self._advised.popitem(last=False)
        except Exception as exc:
            self.engine.fail("could not decide the risk checks of a tool call", exc)
            return None
        return gate_answer(decision, request.tool_call)

    def _note_unchecked(self, key: str, tool: str) -> None:
        with self._lock:
            self._unchecked.setdefault(key, set()).add(tool)
            self._unchecked.move_to_end(key)
            while len(self._unchecked) > 1000:
                self._unchecked.popitem(last=False)

    def _asked(self, request: Any) -> tuple[str, dict[str, Any]] | None:
        call = request.tool_call
        tool, args = call.get("name"), call.get("args")
        if not self.gate.enabled or not tool:
            return None
        skip = self._unchecked.get(self._run_key(request.state))
        if skip is not None and str(tool) in skip:  # no risk check exists for it this run
            return None
        return str(tool), dict(args) if isinstance(args, Mapping) else {}

    def __call__(self, request: Any, handler: Callable[[Any], ToolResult]) -> ToolResult:
        asked = self._asked(request)
        if asked is not None:
            options = {**self._options(), "state": run_state(request.state)}
            held = self._decide(request, self.engine.check(*asked, **options))
            if held is not None:
                return held
        return handler(request)

    async def acall(
        self, request: Any, handler: Callable[[Any], Awaitable[ToolResult]]
    ) -> ToolResult:
        """Async twin of calling the object."""
        asked = self._asked(request)
        if asked is not None:
            options = {**self._options(), "state": run_state(request.state)}
            found = await self.engine.acheck(*asked, **options)
            held = self._decide(request, found)
            if held is not None:
                return held
        return await handler(request)
