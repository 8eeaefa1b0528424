"""Agent middleware for ``langchain.agents.create_agent``: recall into the system-prompt tail,
capture the run, store it for review and attribute its outcome (issue 6, MISSION S1-S6).

``create_agent(model, tools, system_prompt=..., middleware=[HindsightMiddleware(memory,
tenant_id="acme")])``. Per invoke of the agent:

1. ``before_agent``: a new trajectory id (kept in the agent state, so a checkpointed thread
   resumed after an interrupt continues the same trajectory) and the new user message(s).
2. First model call: recall with the latest user message, the task_type, the tags and the
   agent's tool names; the rendered, delimited block is **appended** to the system prompt
   (the original prompt stays first, MISSION S6) on every model call of the invoke.
3. Every model call and tool call is captured as events (no callback handler needed).
4. ``after_agent``: the trajectory is stored (its review queued by the engine) and the outcome
   (the ``outcome`` callable on the final state) is attributed to the recalled experiences.
   An exception leaving the middleware ends the trajectory as a failure.

Memory never breaks the agent: the middleware's own failures are logged on the
``hindsight.langchain`` logger and counted in :attr:`HindsightMiddleware.errors`, and the agent
goes on without memory.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import OmitFromInput
from langchain_core.messages import SystemMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from hindsight import AsyncMemory, Memory, Outcome, Provenance, RecallResult, Trajectory
from hindsight._ids import new_id
from hindsight.models import EventType
from hindsight.service.client import AsyncHindsightClient, HindsightClient
from hindsight_langchain._buffer import EventBuffer, OutcomeFn, judge_outcome
from hindsight_langchain._convert import (
    DEFAULT_MAX_CHARS,
    final_text,
    latest_user_texts,
    messages_in,
    model_output,
    tool_names,
)
from hindsight_langchain._engine import Engine, log
from hindsight_langchain._scope import Scope

__all__ = ["STATE_KEY", "HindsightMiddleware", "HindsightState", "append_to_system_prompt"]

STATE_KEY = "hindsight_trajectory_id"
"""Agent-state key holding the current invoke's trajectory id (also in the agent's output)."""

MAX_OPEN_RUNS = 10_000
"""Open invokes kept at most; beyond that the oldest is stored as incomplete."""


class HindsightState(AgentState[Any]):
    """The agent state with the trajectory id of the current invoke."""

    hindsight_trajectory_id: NotRequired[Annotated[str | None, OmitFromInput]]


def append_to_system_prompt(system: SystemMessage | None, block: str) -> SystemMessage:
    """``system`` with ``block`` appended as a last text content block (MISSION S6: the tail,
    behind the original prompt, which stays unchanged in front); a new system message when
    there was none."""
    if system is None:
        return SystemMessage(content=block)
    blocks = [*system.content_blocks, {"type": "text", "text": f"\n\n{block}"}]
    return system.model_copy(update={"content": blocks})


@dataclass(eq=False)
class _Invoke:
    """One invoke of the agent being captured."""

    buffer: EventBuffer
    scope: Scope
    thread_id: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    recalled: bool = False
    block: str = ""
    recalled_ids: list[str] = field(default_factory=list)
    open_calls: int = 0
    error: BaseException | None = None
    outcome: Outcome = Outcome.UNKNOWN
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # model call metadata
    done: bool = False


class HindsightMiddleware(AgentMiddleware[HindsightState, Any, Any]):
    """Memory for a ``create_agent`` agent: recall into the system-prompt tail, capture, store,
    review and outcome attribution. Put it first in ``middleware=[...]`` so that it sees the
    final result of retries and fallbacks done by other middleware.

    Args:
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            :class:`hindsight.client.HindsightClient` / ``AsyncHindsightClient`` of a
            ``hindsight serve`` (issue 9; the API key decides the tenant).
        tenant_id: the tenant, unless ``config["metadata"]`` of the invoke has
            ``hindsight_tenant_id`` (or ``tenant_id``); required for recall and storing.
        namespace, task_type, tags: recall filters/boosts and trajectory labels, overridden
            per invoke by ``hindsight_namespace`` / ``hindsight_task_type`` /
            ``hindsight_tags`` in ``config["metadata"]``.
        top_k: experiences recalled (default: the memory's ``top_k``, 5: MISSION S5).
        token_budget: estimated tokens of the rendered block (default 2000: MISSION S5).
        outcome: ``final_state -> True | False | Outcome | None``; an invoke that raised is a
            failure; otherwise the outcome is unknown unless this says so.
        recall: recall into the prompt (default True); False only captures.
        store: store each invoke's trajectory (default True); False only recalls.
        review: queue the post-hoc review of stored trajectories (default True).
        source: provenance of the runs (default ``user``, MISSION S8).
        max_chars: event content is clipped to this many characters (8000).

    Raises:
        UsageError: ``memory`` is not one of those, or an argument is invalid.
        TenantRequiredError: ``tenant_id`` is given but empty.
    """

    state_schema = HindsightState

    def __init__(
        self,
        memory: Memory | AsyncMemory | HindsightClient | AsyncHindsightClient,
        *,
        tenant_id: str | None = None,
        namespace: str = "default",
        task_type: str | None = None,
        tags: Sequence[str] = (),
        top_k: int | None = None,
        token_budget: int | None = None,
        outcome: OutcomeFn | None = None,
        recall: bool = True,
        store: bool = True,
        review: bool = True,
        source: Provenance | str = Provenance.USER,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        super().__init__()
        self._engine = Engine(memory, review=review)
        self._scope = Scope.build(tenant_id, namespace, task_type, tags)
        self._top_k = top_k
        self._token_budget = token_budget
        self._outcome = outcome
        self._recall = recall
        self._store = store
        self._source = Provenance(source)
        self._max_chars = max_chars
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, _Invoke] = OrderedDict()
        self._by_thread: dict[str, str] = {}
        self._ended: OrderedDict[str, str] = OrderedDict()  # ended id -> continuation id

    # -- public state -----------------------------------------------------------------
    @property
    def errors(self) -> int:
        """How many of the middleware's own failures were logged (never raised)."""
        return self._engine.errors

    @property
    def last_error(self) -> str | None:
        """Text of the last such failure."""
        return self._engine.last_error

    @property
    def unsaved(self) -> list[Trajectory]:
        """Trajectories whose store failed (e.g. the server was down), oldest first; they are
        stored again at the next end of run (at most 1000 kept)."""
        return [traj for traj, _ in list(self._engine.unsaved.values())]

    @property
    def last_trajectory_id(self) -> str | None:
        """Id of the trajectory stored last (``memory.record_outcome(id, success, ...)``)."""
        return self._engine.last_trajectory_id

    @property
    def trajectory_ids(self) -> Mapping[str, str]:
        """Thread id -> id of that thread's last stored trajectory (last 1000 threads)."""
        return self._engine.trajectory_ids

    # -- invokes ------------------------------------------------------------------------
    def _open(
        self, state: Mapping[str, Any], runtime: Runtime[Any]
    ) -> tuple[dict[str, Any] | None, list[_Invoke]]:
        """Open a trajectory for this invoke: (state update, stale invokes to store)."""
        try:
            metadata, thread_id = _run_metadata(runtime)
            invoke = self._new_invoke(new_id(), metadata, thread_id)
            invoke.buffer.user_messages(latest_user_texts(list(state.get("messages") or [])))
            stale = self._register(invoke)
        except Exception as exc:
            self._engine.fail("could not start capturing this invoke", exc)
            return None, []
        return {STATE_KEY: invoke.buffer.trajectory_id}, stale

    def _new_invoke(
        self, trajectory_id: str, metadata: Mapping[str, Any], thread_id: str | None
    ) -> _Invoke:
        invoke = _Invoke(
            EventBuffer(trajectory_id, self._max_chars),
            self._scope.resolve(metadata),
            thread_id=thread_id,
            context=Scope.context(metadata),
        )
        if thread_id:
            invoke.context["thread_id"] = thread_id
        return invoke

    def _register(self, invoke: _Invoke) -> list[_Invoke]:
        """Add ``invoke``; returns invokes to store as incomplete: the thread's previous one
        if it never ended (it died where the middleware could not see), and the oldest ones
        beyond :data:`MAX_OPEN_RUNS`."""
        stale: list[_Invoke] = []
        with self._lock:
            tid = invoke.buffer.trajectory_id
            if invoke.thread_id:
                previous = self._by_thread.get(invoke.thread_id)
                if previous is not None and previous in self._runs:
                    stale.append(self._runs.pop(previous))
                self._by_thread[invoke.thread_id] = tid
            self._runs[tid] = invoke
            while len(self._runs) > MAX_OPEN_RUNS:
                stale.append(self._runs.popitem(last=False)[1])
        return stale

    def _invoke_for(self, state: Any) -> _Invoke | None:
        """The open invoke of ``state`` (by its trajectory id); one is opened for an id not
        seen by this process (a thread resumed after a restart), and a continuation for an
        invoke that already ended on an exception the agent then survived."""
        tid = state.get(STATE_KEY) if isinstance(state, Mapping) else None
        if not isinstance(tid, str):
            return None
        with self._lock:
            current, hops = tid, 0
            while self._ended.get(current, current) != current and hops < 100:
                current, hops = self._ended[current], hops + 1
            invoke = self._runs.get(current)
            if invoke is not None and not invoke.done:
                return invoke
            ended = current in self._ended
        metadata, thread_id = _run_metadata(None)
        fresh = self._new_invoke(new_id() if ended else current, metadata, thread_id)
        if ended:  # the agent went on after an error that ended this trajectory
            fresh.context["continues_trajectory"] = current
            log.info(
                "hindsight: the agent went on after trajectory %s ended on an error; put "
                "HindsightMiddleware first in middleware=[...] to capture it as one run",
                current,
            )
            with self._lock:
                self._ended[current] = fresh.buffer.trajectory_id
        self._register(fresh)
        return fresh

    # -- recall -------------------------------------------------------------------------
    def _recall_args(self, invoke: _Invoke, request: ModelRequest[Any]) -> dict[str, Any] | None:
        invoke.recalled = True
        if not self._recall or invoke.scope.tenant_id is None:
            return None
        texts = latest_user_texts(list(request.messages))
        query = texts[-1] if texts else ""
        if not query.strip() and not invoke.scope.task_type:
            return None
        return {
            "query": query,
            "tenant_id": invoke.scope.tenant_id,
            "namespace": invoke.scope.namespace,
            "task_type": invoke.scope.task_type,
            "tags": list(invoke.scope.tags),
            "tools": tool_names(request.tools),
            "top_k": self._top_k,
            "token_budget": self._token_budget,
            "trajectory_id": invoke.buffer.trajectory_id,
        }

    def _use_recall(self, invoke: _Invoke, result: RecallResult) -> None:
        invoke.block = result.render()
        invoke.recalled_ids = [h.experience.id for h in result.hits]
        invoke.buffer.metadata["recalled_experience_ids"] = invoke.recalled_ids

    def _prepare(self, invoke: _Invoke, request: ModelRequest[Any]) -> ModelRequest[Any]:
        if not invoke.block:
            return request
        try:
            system = append_to_system_prompt(request.system_message, invoke.block)
            return request.override(system_message=system)
        except Exception as exc:
            self._engine.fail("could not add recalled experiences to the prompt", exc)
            return request

    # -- model calls ---------------------------------------------------------------------
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> Any:
        """Recall on the first model call of an invoke, append the block to the system
        prompt, and capture the call."""
        invoke = self._safe_invoke(request.state)
        if invoke is None:
            return handler(request)
        if not invoke.recalled:
            try:
                args = self._recall_args(invoke, request)
                if args is not None:
                    self._use_recall(invoke, self._engine.sync.recall(args.pop("query"), **args))
            except Exception as exc:
                self._engine.fail("recall failed; the agent goes on without memory", exc)
        request = self._prepare(invoke, request)
        started = self._model_started(invoke, request)
        try:
            response = handler(request)
        except GraphBubbleUp:
            self._call_closed(invoke)
            raise
        except BaseException as exc:
            if self._model_failed(invoke, started, exc):
                self._finish(invoke)
            raise
        self._model_done(invoke, started, response)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        invoke = self._safe_invoke(request.state)
        if invoke is None:
            return await handler(request)
        if not invoke.recalled:
            try:
                args = self._recall_args(invoke, request)
                if args is not None:
                    result = await self._engine.aio.recall(args.pop("query"), **args)
                    self._use_recall(invoke, result)
            except Exception as exc:
                self._engine.fail("recall failed; the agent goes on without memory", exc)
        request = self._prepare(invoke, request)
        started = self._model_started(invoke, request)
        try:
            response = await handler(request)
        except GraphBubbleUp:
            self._call_closed(invoke)
            raise
        except BaseException as exc:
            if self._model_failed(invoke, started, exc):
                await self._afinish(invoke)
            raise
        self._model_done(invoke, started, response)
        return response

    def _safe_invoke(self, state: Any) -> _Invoke | None:
        try:
            return self._invoke_for(state)
        except Exception as exc:
            self._engine.fail("could not find this invoke's capture", exc)
            return None

    def _model_started(self, invoke: _Invoke, request: ModelRequest[Any]) -> tuple[str, float]:
        event_id = new_id()
        try:
            with self._lock:
                invoke.open_calls += 1
                invoke.buffer.user_messages(latest_user_texts(list(request.messages)))
                system = request.system_message.text if request.system_message else ""
                meta = invoke.buffer.system_prompt(str(system))
                meta["input_messages"] = len(request.messages) + (1 if system else 0)
                invoke.pending[event_id] = meta
        except Exception as exc:
            self._engine.fail("could not capture a model call", exc)
        return event_id, time.perf_counter()

    def _model_done(self, invoke: _Invoke, started: tuple[str, float], response: Any) -> None:
        event_id, t0 = started
        try:
            out = model_output(response)
            with self._lock:
                invoke.open_calls -= 1
                invoke.buffer.model_end(
                    out,
                    event_id=event_id,
                    parent_id=None,
                    latency_ms=(time.perf_counter() - t0) * 1000.0,
                    metadata=invoke.pending.pop(event_id, {}),
                )
        except Exception as exc:
            self._engine.fail("could not capture a model reply", exc)

    def _model_failed(
        self, invoke: _Invoke, started: tuple[str, float], exc: BaseException
    ) -> bool:
        """Record a failed model call; True when the invoke is to be stored now."""
        event_id, t0 = started
        try:
            with self._lock:
                invoke.open_calls -= 1
                invoke.buffer.model_error(
                    exc,
                    event_id=event_id,
                    parent_id=None,
                    latency_ms=(time.perf_counter() - t0) * 1000.0,
                    metadata=invoke.pending.pop(event_id, {}),
                )
                invoke.error = invoke.error or exc
                return invoke.open_calls <= 0 and not invoke.done
        except Exception as err:
            self._engine.fail("could not capture a model error", err)
            return False

    def _call_closed(self, invoke: _Invoke) -> None:
        with self._lock:
            invoke.open_calls -= 1

    # -- tool calls ----------------------------------------------------------------------
    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Capture one tool call: its arguments, its result or error, status and latency."""
        invoke = self._safe_invoke(request.state)
        if invoke is None:
            return handler(request)
        event_id = self._tool_started(invoke, request)
        try:
            result = handler(request)
        except GraphBubbleUp:
            self._tool_interrupted(invoke, event_id)
            raise
        except BaseException as exc:
            if self._tool_failed(invoke, event_id, exc):
                self._finish(invoke)
            raise
        if self._tool_done(invoke, event_id, result):
            self._finish(invoke)
        return result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async twin of :meth:`wrap_tool_call`."""
        invoke = self._safe_invoke(request.state)
        if invoke is None:
            return await handler(request)
        event_id = self._tool_started(invoke, request)
        try:
            result = await handler(request)
        except GraphBubbleUp:
            self._tool_interrupted(invoke, event_id)
            raise
        except BaseException as exc:
            if self._tool_failed(invoke, event_id, exc):
                await self._afinish(invoke)
            raise
        if self._tool_done(invoke, event_id, result):
            await self._afinish(invoke)
        return result

    def _tool_started(self, invoke: _Invoke, request: ToolCallRequest) -> str:
        event_id = new_id()
        call = request.tool_call
        try:
            with self._lock:
                invoke.open_calls += 1
                invoke.buffer.tool_start(
                    str(call.get("name") or "unknown_tool"),
                    call.get("args"),
                    event_id=event_id,
                    parent_id=None,
                    tool_call_id=call.get("id"),
                    metadata={} if request.tool is not None else {"registered": False},
                )
        except Exception as exc:
            self._engine.fail("could not capture a tool call", exc)
        return event_id

    def _tool_done(self, invoke: _Invoke, event_id: str, result: Any) -> bool:
        try:
            with self._lock:
                invoke.open_calls -= 1
                invoke.buffer.tool_end(event_id, result)
                return invoke.error is not None and invoke.open_calls <= 0 and not invoke.done
        except Exception as exc:
            self._engine.fail("could not capture a tool result", exc)
            return False

    def _tool_failed(self, invoke: _Invoke, event_id: str, exc: BaseException) -> bool:
        try:
            with self._lock:
                invoke.open_calls -= 1
                invoke.buffer.tool_error(event_id, exc)
                invoke.error = invoke.error or exc
                return invoke.open_calls <= 0 and not invoke.done
        except Exception as err:
            self._engine.fail("could not capture a tool error", err)
            return False

    def _tool_interrupted(self, invoke: _Invoke, event_id: str) -> None:
        # An interrupt() inside the tool: the call runs again on resume and is captured then.
        with self._lock:
            invoke.open_calls -= 1
            invoke.buffer.open_calls.pop(event_id, None)
            invoke.buffer.events = [e for e in invoke.buffer.events if e["event_id"] != event_id]

    # -- the end ---------------------------------------------------------------------------
    def before_agent(self, state: HindsightState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Open this invoke's trajectory (its id goes into the agent state)."""
        update, stale = self._open(state, runtime)
        for old in stale:
            self._finish(old, incomplete=True)
        return update

    async def abefore_agent(
        self, state: HindsightState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`before_agent`."""
        update, stale = self._open(state, runtime)
        for old in stale:
            await self._afinish(old, incomplete=True)
        return update

    def after_agent(self, state: HindsightState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Store the trajectory, queue its review and attribute the outcome."""
        invoke = self._closing(state)
        if invoke is not None:
            self._finish(invoke)
        return None

    async def aafter_agent(
        self, state: HindsightState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        invoke = self._closing(state)
        if invoke is not None:
            await self._afinish(invoke)
        return None

    def _closing(self, state: Mapping[str, Any]) -> _Invoke | None:
        invoke = self._safe_invoke(state)
        if invoke is None:
            return None
        try:
            answer = final_text({"messages": messages_in(state)})
            with self._lock:
                if answer.strip():
                    invoke.buffer.add(EventType.FINAL_ANSWER, answer)
            if invoke.error is None:
                invoke.outcome = judge_outcome(self._outcome, state)
        except Exception as exc:
            self._engine.fail("the outcome callable failed", exc)
        return invoke

    def _trajectory(self, invoke: _Invoke, *, incomplete: bool) -> Trajectory | None:
        with self._lock:
            if invoke.done:
                return None
            invoke.done = True
            tid = invoke.buffer.trajectory_id
            self._runs.pop(tid, None)
            if invoke.thread_id and self._by_thread.get(invoke.thread_id) == tid:
                del self._by_thread[invoke.thread_id]
            self._ended.setdefault(tid, tid)
            while len(self._ended) > MAX_OPEN_RUNS:
                self._ended.popitem(last=False)
        if not self._store:
            return None
        try:
            if invoke.scope.tenant_id is None:
                raise ValueError(
                    "no tenant: pass tenant_id= to HindsightMiddleware or "
                    "config={'metadata': {'hindsight_tenant_id': ...}} to the invoke"
                )
            outcome = invoke.outcome
            extra: dict[str, Any] = {"source": "langchain-middleware", **invoke.context}
            if invoke.error is not None:
                outcome = Outcome.FAILURE
                extra["error"] = f"{type(invoke.error).__name__}: {invoke.error}"[:500]
            if incomplete:
                extra["incomplete"] = True
            return invoke.buffer.build(
                invoke.scope, outcome=outcome, source=self._source, metadata=extra
            )
        except Exception as exc:
            self._engine.fail(f"could not build trajectory {invoke.buffer.trajectory_id}", exc)
            return None

    def _finish(self, invoke: _Invoke, *, incomplete: bool = False) -> None:
        traj = self._trajectory(invoke, incomplete=incomplete)
        if traj is not None:
            self._engine.store(traj, invoke.thread_id)

    async def _afinish(self, invoke: _Invoke, *, incomplete: bool = False) -> None:
        traj = self._trajectory(invoke, incomplete=incomplete)
        if traj is not None:
            await self._engine.astore(traj, invoke.thread_id)

    def close(self) -> int:
        """Store every invoke still open (marked ``incomplete``); returns how many."""
        with self._lock:
            open_runs = list(self._runs.values())
        for invoke in open_runs:
            self._finish(invoke, incomplete=True)
        return len(open_runs)


def _run_metadata(runtime: Runtime[Any] | None) -> tuple[Mapping[str, Any], str | None]:
    """The invoke's ``config["metadata"]`` and thread id (LangGraph's ``Runtime`` has no
    config: ``langgraph.config.get_config()`` gives it inside a node)."""
    from langgraph.config import get_config

    try:
        config = get_config()
    except RuntimeError:
        config = {}
    metadata = dict(config.get("metadata") or {})
    configurable = config.get("configurable") or {}
    thread = configurable.get("thread_id") or metadata.get("thread_id")
    if thread is None and runtime is not None:
        info = getattr(runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None)
    return metadata, str(thread) if thread is not None else None
