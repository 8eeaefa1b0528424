"""Agent middleware for ``langchain.agents.create_agent``: recall into the system-prompt tail,
capture the run, store it for review and attribute its outcome
(docs/integrations/langchain.md#an-agent-that-learns-the-middleware).

``create_agent(model, tools, system_prompt=..., middleware=[HindsightMiddleware(memory,
tenant_id="acme")])``. Per invoke of the agent:

1. ``before_agent``: a new trajectory id (kept in the agent state, so a checkpointed thread
   resumed after an interrupt, in this process or another, continues the same trajectory) and
   the new user message(s).
2. First model call: recall with the latest user message, the task_type, the tags and the
   agent's tool names; the rendered, delimited block is **appended** to the system prompt
   (the original prompt stays first, docs/concepts.md#injection-at-the-tail) on every model
   call of the invoke, at the innermost point: the request the model is finally called with,
   whatever other middleware did to the system message in between
   (:class:`HindsightModelRequest`). Whether the model really received it is checked in what
   LangChain reports of the call; lessons it never saw are never credited or blamed (and a
   warning says which middleware order lost them).
3. Every model call and tool call is captured as events (no callback handler needed); a pause
   at an interrupt and the resume that continues it are recorded as ``custom`` events
   (``metadata.name`` ``interrupt`` / ``resume``).
4. ``after_agent``: the trajectory goes to the memory's background writer (the agent does not
   wait for it unless ``write_wait`` says so; :meth:`HindsightMiddleware.wait` and
   ``memory.flush()`` do) and its outcome is attributed to the recalled
   experiences it saw: the ``outcome`` callable on the final state, or the default detector
   (:func:`hindsight.capture.outcome.detect_outcome`). An exception leaving the agent ends
   the trajectory as a failure; one that another middleware catches (a retry, a fallback)
   does not (docs/integrations/langchain.md#order-with-other-middleware).

Memory never breaks the agent: the middleware's own failures are logged on the
``hindsight.langchain`` logger and counted in :attr:`HindsightMiddleware.errors`, and the agent
goes on without memory (a closed memory too: the runs then wait in its unsaved area).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import functools
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import OmitFromInput
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from hindsight import AsyncMemory, Memory, Outcome, Provenance, RecallResult, Trajectory
from hindsight._contract import switch
from hindsight._ids import new_id
from hindsight.capture.outcome import detect_outcome
from hindsight.models import EventType, utcnow
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
from hindsight_langchain._engine import RECALL_TIMEOUT, Engine, log
from hindsight_langchain._gate import (
    SPECIFIC_MATCHES,
    GateDecision,
    RiskGate,
    gate_answer,
    run_state,
)
from hindsight_langchain._scope import Scope
from hindsight_langchain._seen import (
    NO_RESUME,
    Expectation,
    expect,
    graph_run,
    on_failure,
    thread,
    watch,
)

__all__ = ["STATE_KEY", "HindsightMiddleware", "HindsightState", "append_to_system_prompt"]

STATE_KEY = "hindsight_trajectory_id"
"""Agent-state key holding the current invoke's trajectory id (also in the agent's output)."""

MAX_OPEN_RUNS = 10_000
"""Open invokes kept at most; beyond that the oldest is stored as incomplete."""


class HindsightState(AgentState[Any]):
    """The agent state with the trajectory id of the current invoke."""

    hindsight_trajectory_id: NotRequired[Annotated[str | None, OmitFromInput]]


def _without(system: SystemMessage, block: str) -> list[Any]:
    """The content blocks of ``system`` with ``block`` taken out wherever it is."""
    out: list[Any] = []
    for part in system.content_blocks:
        text = part.get("text") if isinstance(part, Mapping) else None
        if isinstance(text, str) and block in text:
            rest = text.replace(f"\n\n{block}", "").replace(block, "")
            if rest.strip():
                out.append({**part, "text": rest})
            continue
        out.append(part)
    return out


def append_to_system_prompt(system: SystemMessage | None, block: str) -> SystemMessage:
    """``system`` with ``block`` appended as a last text content block (the tail, behind the
    original prompt, which stays unchanged in front: docs/concepts.md#injection-at-the-tail); a
    new system message when there was none. A copy of ``block`` already in the message (e.g.
    copied into a prompt another middleware built from this one) is moved to the tail, never
    doubled."""
    if system is None:
        return SystemMessage(content=block)
    blocks = [*_without(system, block), {"type": "text", "text": f"\n\n{block}"}]
    return system.model_copy(update={"content": blocks})


def _ends_with(system: SystemMessage | None, block: str) -> bool:
    if system is None:
        return False
    parts = system.content_blocks
    last = parts[-1] if parts else None
    text = last.get("text") if isinstance(last, Mapping) else None
    if not (isinstance(text, str) and text.strip() == block.strip()):
        return False
    return sum(str(p.get("text", "")).count(block) for p in parts if isinstance(p, Mapping)) == 1


_BLOCK: ContextVar[str | None] = ContextVar("hindsight_block", default=None)
_BUILT: ContextVar[SystemMessage | None] = ContextVar("hindsight_built", default=None)
"""The system message :meth:`HindsightMiddleware._prepare` built for this call: it ends with
the block, so a request built on it needs no check."""


class HindsightModelRequest(ModelRequest[Any]):
    """A ``ModelRequest`` that keeps the recalled block at the tail of its system message.

    LangChain's ``request.override(...)`` (``dataclasses.replace``) builds a new request of the
    same class, so every request derived from this one inside :meth:`HindsightMiddleware.\
wrap_model_call` (by any middleware after it, e.g. ``@dynamic_prompt`` replacing the system
    message) gets the block appended again: the model is called with it whatever the order.
    """

    def __init__(self, **fields: Any) -> None:
        super().__init__(**fields)
        block = _BLOCK.get()
        system = self.system_message
        if (
            block
            and (system is None or system is not _BUILT.get())
            and not _ends_with(system, block)
        ):
            object.__setattr__(
                self, "system_message", append_to_system_prompt(self.system_message, block)
            )


_FIELD_NAMES: dict[Any, tuple[str, ...]] = {}


def _field_names(cls: Any) -> tuple[str, ...]:
    """The dataclass field names of a model request class (looked up once per class)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _model_reply(seen: Expectation, response: Any) -> bool:
    """Whether ``response`` is what a model call inside the wrap produced: its AI message is
    one a call reported as its output (LangChain gives each model reply the id of its run, so
    a message without an id was made by something else: a reply of its own when a call failed
    is no model reply). Calls of other models inside the wrap (another middleware's helper
    model) do not make a reply of their own one."""
    if seen.calls == 0:
        return True  # the watcher did not see the calls (switched off): as before
    inner = getattr(response, "model_response", None)  # ExtendedModelResponse
    result = getattr(inner if inner is not None else response, "result", response)
    messages = result if isinstance(result, list) else [result]
    ids = {str(m.id) for m in messages if isinstance(m, AIMessage) and m.id}
    if ids:
        return bool(ids & seen.replies)
    return not seen.failed


@contextlib.contextmanager
def _injecting(block: str) -> Iterator[Expectation]:
    """Watch the model calls of one wrapped call (:func:`~hindsight_langchain._seen.expect`),
    with ``block`` put in the prompt when there is one."""
    if not block:
        with expect("") as seen:
            yield seen
        return
    token = _BLOCK.set(block)
    try:
        with expect(block) as seen:
            yield seen
    finally:
        _BLOCK.reset(token)


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
    outcome: Outcome | None = None  # None: the default detector decides
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # model call metadata
    done: bool = False
    seen: bool = False  # a model call received the recalled block
    missed: int = 0  # model calls that did not
    recorded: bool = False  # the recall was handed to the writer already (a paused part)
    root: Any = None  # the graph run (root run id) the invoke was last seen in
    # the run of the agent's graph when the watcher follows it: an exception that leaves it
    # ends the invoke (one an outer middleware catches, a retry, does not); None: the first
    # exception of a model or tool call ends it
    graph: Any = None
    advised: set[str] = field(default_factory=set)  # tools whose first call was held (advise)
    # tools whose check found no risk check for them: not checked again in this invoke
    unchecked: set[str] = field(default_factory=set)
    # the system message of the last model call (and its content, in case it was replaced)
    # and the same with the block at its tail: the agent passes the same message to each
    # call, so the block is appended once per invoke
    system: tuple[Any, Any, Any] = (None, None, None)  # (message, its content, with the block)
    system_text: tuple[Any, Any, str] = (None, None, "")  # (message, its content, its text)


class HindsightMiddleware(AgentMiddleware[HindsightState, Any, Any]):
    """Memory for a ``create_agent`` agent: recall into the system-prompt tail, capture, store,
    review and outcome attribution. The block reaches the model wherever the middleware is in
    ``middleware=[...]``; put it first so that it also sees the final result of retries and
    fallbacks done by other middleware.

    Args:
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            :class:`hindsight.client.HindsightClient` / ``AsyncHindsightClient`` of a
            ``hindsight serve`` (docs/http.md#python-client; the API key decides the tenant).
        tenant_id: the tenant, unless ``config["metadata"]`` of the invoke has
            ``hindsight_tenant_id`` (or ``tenant_id``); required for recall and storing.
        namespace, task_type, tags: recall filters/boosts and trajectory labels, overridden
            per invoke by ``hindsight_namespace`` / ``hindsight_task_type`` /
            ``hindsight_tags`` in ``config["metadata"]``.
        top_k: experiences recalled (default: the memory's ``top_k``, 5: docs/concepts.md#recall).
        token_budget: estimated tokens of the rendered block (default 2000,
            docs/concepts.md#recall).
        outcome: ``final_state -> True | False | Outcome | None`` (None: unknown); without
            it the default detector decides (:func:`hindsight.capture.outcome.detect_outcome`:
            a final answer and no unresolved tool error is a success). An invoke that raised is
            a failure.
        recall: recall into the prompt (default True); False only captures.
        store: store each invoke's trajectory (default True); False only recalls.
        review: queue the post-hoc review of stored trajectories (default True).
        source: provenance of the runs (default ``user``, docs/security.md).
        max_chars: event content is clipped to this many characters (8000).
        write_wait: seconds the end of an invoke waits for its write (default 0: never, the
            write goes on in the background; :meth:`wait` waits for it). A positive bound
            makes a fast store's write done when the invoke returns; a slow or locked store
            adds at most this to a run.
        recall_timeout: seconds a recall may take (5; 0: no limit) before the model is called
            without it; after a failure recall is skipped for 30 s.
        checks: decision-time risk checks of each proposed tool call (docs/checks.md):
            ``"advise"`` (default: the first call of a tool with matching checks is held once
            and answered with the advice, the model calls it again to run it; a lesson the
            recall block already showed holds a call only when the call's arguments have the
            class a failed run passed), ``"confirm"`` (a human-in-the-loop interrupt; resume
            with ``True`` / ``"approve"`` to run the call), ``"off"``, or a mode per severity
            (``{"high": "confirm", "low": "off"}``).
            The call's arguments are never changed; a failing memory leaves it untouched.
            A tool whose check finds no risk check for it at all is not checked again in
            that invoke (docs/checks.md#cost-on-the-agents-path).

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
        write_wait: float = 0.0,
        recall_timeout: float = RECALL_TIMEOUT,
        checks: str | Mapping[str, str] = "advise",
    ) -> None:
        super().__init__()
        self._gate = RiskGate(checks)
        self._engine = Engine(
            memory, review=review, write_wait=write_wait, recall_timeout=recall_timeout
        )
        self._scope = Scope.build(tenant_id, namespace, task_type, tags)
        self._top_k = top_k
        self._token_budget = token_budget
        self._outcome = outcome
        self._recall = switch(recall, "recall", True)
        self._store = switch(store, "store", True)
        self._source = Provenance(source)
        self._max_chars = max_chars
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, _Invoke] = OrderedDict()
        self._by_thread: dict[str, str] = {}
        self._ended: OrderedDict[str, str] = OrderedDict()  # ended id -> continuation id
        self._warned = False
        watch()  # follow model prompts and thread pauses from now on
        self._engine.attach(self)
        _LIVE.add(self)

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
        stored again before the next write (and kept in the memory's unsaved area when the
        memory closes first)."""
        return self._engine.unsaved

    @property
    def last_trajectory_id(self) -> str | None:
        """Id of the invoke that ended last (``memory.record_outcome(id, success, ...)``); it is
        written in the background: :meth:`wait` before reading it back."""
        return self._engine.last_trajectory_id

    @property
    def trajectory_ids(self) -> Mapping[str, str]:
        """Thread id -> id of that thread's last finished trajectory (last 1000 threads)."""
        return self._engine.trajectory_ids

    @property
    def stored(self) -> int:
        """How many of the middleware's runs were written."""
        return self._engine.stored

    def wait(self, timeout: float | None = 30.0) -> bool:
        """Block until the finished invokes handed to the memory's background writer are
        written (False when ``timeout`` seconds passed first; writing goes on)."""
        return self._engine.wait(timeout)

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
            self._follow(invoke)
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
            ended = current in self._ended
        if invoke is not None and not invoke.done:
            if self._resumed(invoke) and invoke.graph is not None:
                self._follow(invoke)  # a resume runs in a new graph run: its failure ends it
            return invoke
        metadata, thread_id = _run_metadata(None)
        fresh = self._new_invoke(new_id() if ended else current, metadata, thread_id)
        runs = thread(thread_id)
        fresh.root = runs.root if runs is not None else None
        if not ended:  # an invoke paused in another process, resumed here: the same trajectory
            self._note_resume(fresh, runs)
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

    def _resumed(self, invoke: _Invoke) -> bool:
        """Record a pause and its resume when ``invoke`` is now seen in another graph run of
        its thread than before (``agent.invoke(Command(resume=...))``); True when the graph
        run it is seen in is not the one last noted (the first time too: an interrupt may come
        before any call). Only a thread's invoke can be resumed: the others are always in the
        run they started in."""
        runs = thread(invoke.thread_id)
        if runs is None or runs.root is None or runs.root == invoke.root:
            return False
        first = invoke.root is None
        invoke.root = runs.root
        if not first:
            self._note_resume(invoke, runs)
        return True

    def _note_resume(self, invoke: _Invoke, runs: Any) -> None:
        if runs is None or runs.resume is NO_RESUME:
            return
        with self._lock:
            buffer = invoke.buffer
            buffer.custom("interrupt", {"values": runs.paused_with}, None)
            buffer.custom("resume", {"value": runs.resume}, None)

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
        invoke.recalled_ids = result.lesson_ids  # hits and the lessons behind the risk checks
        invoke.buffer.metadata["recalled_experience_ids"] = invoke.recalled_ids

    def _prepare(self, invoke: _Invoke, request: ModelRequest[Any]) -> ModelRequest[Any]:
        if not invoke.block:
            return request
        try:
            values = {name: getattr(request, name) for name in _field_names(type(request))}
            given, content, built = invoke.system
            message = values["system_message"]
            if given is None or message is not given or message.content is not content:
                given, built = message, None
                if not _ends_with(given, invoke.block):
                    built = append_to_system_prompt(given, invoke.block)
                invoke.system = (given, getattr(given, "content", None), built)
            token = _BLOCK.set(invoke.block)
            mark = _BUILT.set(built)
            try:
                if built is not None:
                    values["system_message"] = built
                return HindsightModelRequest(**values)
            finally:
                _BUILT.reset(mark)
                _BLOCK.reset(token)
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
                    result = self._engine.recall(args.pop("query"), **args)
                    if result is not None:
                        self._use_recall(invoke, result)
            except Exception as exc:
                self._engine.fail("recall failed; the agent goes on without memory", exc)
        request = self._prepare(invoke, request)
        started = self._model_started(invoke, request)
        with _injecting(invoke.block) as seen:
            try:
                response = handler(request)
            except GraphBubbleUp as exc:
                self._attempts_failed(invoke, started, seen, exc)
                self._call_closed(invoke, started)
                raise
            except BaseException as exc:
                self._saw(invoke, seen)
                self._attempts_failed(invoke, started, seen, exc)
                if self._model_failed(invoke, started, exc) and invoke.graph is None:
                    self._finish(invoke)
                raise
        self._returned(invoke, started, seen, response)
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
                    result = await self._engine.arecall(args.pop("query"), **args)
                    if result is not None:
                        self._use_recall(invoke, result)
            except Exception as exc:
                self._engine.fail("recall failed; the agent goes on without memory", exc)
        request = self._prepare(invoke, request)
        started = self._model_started(invoke, request)
        with _injecting(invoke.block) as seen:
            try:
                response = await handler(request)
            except GraphBubbleUp as exc:
                self._attempts_failed(invoke, started, seen, exc)
                self._call_closed(invoke, started)
                raise
            except BaseException as exc:
                self._saw(invoke, seen)
                self._attempts_failed(invoke, started, seen, exc)
                if self._model_failed(invoke, started, exc) and invoke.graph is None:
                    await self._afinish(invoke)
                raise
        self._returned(invoke, started, seen, response)
        return response

    def _saw(self, invoke: _Invoke, seen: Expectation) -> None:
        """Note whether the model calls just made received the block."""
        if not seen.block or seen.calls == 0:
            return
        with self._lock:
            invoke.seen = invoke.seen or seen.seen > 0
            invoke.missed += seen.calls - seen.seen
            warn = not self._warned and seen.seen < seen.calls
            self._warned = self._warned or warn
        if warn:
            log.warning(
                "hindsight: the recalled experiences did not reach the model in %d of %d "
                "call(s) of trajectory %s: something after HindsightMiddleware built a new "
                "model request or prompt without them (a middleware listed after it, or the "
                "model itself); those lessons are not credited or blamed for this run. Check "
                "the middleware that sets the system prompt, or put HindsightMiddleware after it",
                seen.calls - seen.seen,
                seen.calls,
                invoke.buffer.trajectory_id,
            )

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
                system = self._system_text(invoke, request.system_message)
                meta = invoke.buffer.system_prompt(str(system))
                meta["input_messages"] = len(request.messages) + (1 if system else 0)
                invoke.pending[event_id] = meta
        except Exception as exc:
            self._engine.fail("could not capture a model call", exc)
        return event_id, time.perf_counter()

    @staticmethod
    def _system_text(invoke: _Invoke, message: SystemMessage | None) -> str:
        """The text of the call's system message (read once per message object: the agent
        passes the same one to every call of an invoke)."""
        if message is None:
            return ""
        given, content, text = invoke.system_text
        if message is not given or message.content is not content:
            text = str(message.text)
            invoke.system_text = (message, message.content, text)
        return text

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
                if invoke.graph is None:  # else the run ends on it only if it leaves the agent
                    invoke.error = invoke.error or exc
                return invoke.open_calls <= 0 and not invoke.done
        except Exception as err:
            self._engine.fail("could not capture a model error", err)
            return False

    def _attempts_failed(
        self,
        invoke: _Invoke,
        started: tuple[str, float],
        seen: Expectation,
        raised: BaseException | None,
    ) -> None:
        """Record the model calls that failed inside this wrapped call (a retry or fallback
        middleware after this one in the list called the model again, or answered itself)
        as failed model calls, before the call's own end; ``raised``: the exception leaving
        the wrap, recorded by the caller. No error of the invoke: the wrap went on."""
        errors = list(seen.failed)
        chain: list[BaseException] = []  # the exception leaving the wrap, and those it wraps
        cause = raised
        while cause is not None and not any(cause is c for c in chain):
            chain.append(cause)
            cause = cause.__cause__ or cause.__context__
        for cause in chain:
            last = next((i for i in reversed(range(len(errors))) if errors[i] is cause), None)
            if last is not None:
                del errors[last]  # recorded by the caller
                break
        if not errors:
            return
        event_id = started[0]
        try:
            with self._lock:
                meta = dict(invoke.pending.get(event_id, {}))
                for exc in errors:
                    invoke.buffer.model_error(
                        exc, event_id=new_id(), parent_id=None, latency_ms=None, metadata=meta
                    )
        except Exception as err:
            self._engine.fail("could not capture a failed model call", err)

    def _returned(
        self, invoke: _Invoke, started: tuple[str, float], seen: Expectation, response: Any
    ) -> None:
        """The wrapped call returned: the block check, the calls that failed inside it, then
        its reply, unless no model call inside it produced that message (a retry middleware
        that ran out and answers for the model): what it returned then reaches the state, and
        the run's answer, as the agent's, not as a model reply."""
        self._saw(invoke, seen)
        self._attempts_failed(invoke, started, seen, None)
        if _model_reply(seen, response):
            self._model_done(invoke, started, response)
        else:
            self._call_closed(invoke, started)

    def _call_closed(self, invoke: _Invoke, started: tuple[str, float]) -> None:
        """A model call that ends without a reply or an error of its own to record (an
        interrupt inside it, or an answer no model produced): no longer open."""
        with self._lock:
            invoke.open_calls -= 1
            invoke.pending.pop(started[0], None)

    # -- tool calls ----------------------------------------------------------------------
    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Capture one tool call: its arguments, its result or error, status and latency; the
        risk checks of the call first (``checks=``)."""
        invoke = self._safe_invoke(request.state)
        if invoke is None:
            return handler(request)
        asked = self._check_args(invoke, request)
        if asked is not None:
            tool, args, options = asked
            decision = self._gate_decision(self._engine.check(tool, args, **options), invoke)
            held = self._apply_gate(invoke, request, decision)
            if held is not None:
                return held
        event_id = self._tool_started(invoke, request)
        try:
            result = handler(request)
        except GraphBubbleUp:
            self._tool_interrupted(invoke, event_id)
            raise
        except BaseException as exc:
            if self._tool_failed(invoke, event_id, exc) and invoke.graph is None:
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
        asked = self._check_args(invoke, request)
        if asked is not None:
            tool, args, options = asked
            found = await self._engine.acheck(tool, args, **options)
            decision = self._gate_decision(found, invoke)
            held = self._apply_gate(invoke, request, decision)
            if held is not None:
                return held
        event_id = self._tool_started(invoke, request)
        try:
            result = await handler(request)
        except GraphBubbleUp:
            self._tool_interrupted(invoke, event_id)
            raise
        except BaseException as exc:
            if self._tool_failed(invoke, event_id, exc) and invoke.graph is None:
                await self._afinish(invoke)
            raise
        if self._tool_done(invoke, event_id, result):
            await self._afinish(invoke)
        return result

    # -- risk checks (docs/checks.md) -----------------------------------------------------
    def _check_args(self, invoke: _Invoke, request: ToolCallRequest) -> Any:
        """``(tool, args, options)`` of the check of this call, or None (off, no tenant)."""
        try:
            call = request.tool_call
            tool, args = call.get("name"), call.get("args")
            if not self._gate.enabled or invoke.scope.tenant_id is None or not tool:
                return None
            if tool in invoke.unchecked:  # no risk check exists for it (checked once)
                return None
            options = {
                "tenant_id": invoke.scope.tenant_id,
                "namespace": invoke.scope.namespace,
                "task_type": invoke.scope.task_type,
                "state": run_state(request.state),
            }
            return str(tool), dict(args) if isinstance(args, Mapping) else {}, options
        except Exception as exc:
            self._engine.fail("could not read the tool call for its risk checks", exc)
            return None

    def _gate_decision(self, result: Any, invoke: _Invoke) -> GateDecision | None:
        try:
            if result is not None and result.tested == 0:
                invoke.unchecked.add(result.tool)
            if result is not None and invoke.recalled_ids:
                # the model saw these lessons in the recall block already: hold a call for
                # them only when its arguments show the risky class (match class/argument)
                shown = set(invoke.recalled_ids)
                kept = [
                    m
                    for m in result.checks
                    if m.check.lesson_id not in shown or m.match in SPECIFIC_MATCHES
                ]
                result = result.model_copy(update={"checks": kept})
            decision = self._gate.decide(result)
        except Exception as exc:
            self._engine.fail("could not decide the risk checks of a tool call", exc)
            return None
        if decision and decision.mode == "advise" and decision.result.tool in invoke.advised:
            return None  # advised once in this run: the model chose to call it again
        return decision

    def _apply_gate(
        self, invoke: _Invoke, request: ToolCallRequest, decision: GateDecision | None
    ) -> ToolMessage | None:
        """The answer that replaces running the call (advise: held once; confirm: declined),
        or None to run it. ``interrupt`` (confirm) raises to pause the graph: not caught."""
        if decision is None:
            return None
        call = request.tool_call
        tool = decision.result.tool
        with self._lock:
            for lesson_id in decision.result.lesson_ids:  # credited or blamed with the run
                if lesson_id not in invoke.recalled_ids:
                    invoke.recalled_ids.append(lesson_id)
        if decision.mode == "advise":
            invoke.advised.add(tool)
        return gate_answer(decision, call)

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
                if invoke.graph is None:  # else the run ends on it only if it leaves the agent
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
            if invoke.error is None and self._outcome is not None:
                invoke.outcome = judge_outcome(self._outcome, state)
        except Exception as exc:
            self._engine.fail("the outcome callable failed", exc)
            invoke.outcome = Outcome.UNKNOWN
        return invoke

    def _end(self, invoke: _Invoke) -> bool:
        """Take ``invoke`` out of the open ones; False when it had ended already."""
        with self._lock:
            if invoke.done:
                return False
            invoke.done = True
            tid = invoke.buffer.trajectory_id
            self._runs.pop(tid, None)
            if invoke.thread_id and self._by_thread.get(invoke.thread_id) == tid:
                del self._by_thread[invoke.thread_id]
            self._ended.setdefault(tid, tid)
            while len(self._ended) > MAX_OPEN_RUNS:
                self._ended.popitem(last=False)
        return True

    def _trajectory(
        self,
        invoke: _Invoke,
        *,
        incomplete: bool = False,
        paused: bool = False,
        ended_at: datetime | None = None,
    ) -> Trajectory | None:
        """The trajectory of ``invoke`` so far (``paused``: a snapshot of an invoke waiting
        for a resume, stored unreviewed; the invoke stays open; ``ended_at``: when it ended,
        default now)."""
        if not self._store:
            return None
        try:
            if invoke.scope.tenant_id is None:
                raise ValueError(
                    "no tenant: pass tenant_id= to HindsightMiddleware or "
                    "config={'metadata': {'hindsight_tenant_id': ...}} to the invoke"
                )
            extra: dict[str, Any] = {"source": "langchain-middleware", **invoke.context}
            outcome = invoke.outcome or Outcome.UNKNOWN
            if invoke.error is not None:
                outcome = Outcome.FAILURE
                extra["error"] = f"{type(invoke.error).__name__}: {invoke.error}"[:500]
            if paused:
                extra["paused"], outcome = True, Outcome.UNKNOWN
            elif incomplete:
                extra["incomplete"] = True
            if invoke.missed:
                extra["recall_not_seen_calls"] = invoke.missed
            with self._lock:
                traj = invoke.buffer.build(
                    invoke.scope,
                    outcome=outcome,
                    source=self._source,
                    metadata=extra,
                    close_open=not paused,
                    ended_at=ended_at,
                )
            if invoke.outcome is None and invoke.error is None and not (paused or incomplete):
                traj = traj.model_copy(update={"outcome": detect_outcome(traj)})
            return traj
        except Exception as exc:
            self._engine.fail(f"could not build trajectory {invoke.buffer.trajectory_id}", exc)
            return None

    def _recalled(self, invoke: _Invoke) -> list[str]:
        """The experience ids to record as seen by ``invoke``'s model (once per invoke)."""
        with self._lock:
            recalled = invoke.recalled_ids if invoke.seen and not invoke.recorded else []
            invoke.recorded = invoke.recorded or bool(recalled)
        return list(recalled)

    def _hand_over(self, invoke: _Invoke, traj: Trajectory) -> Any:
        recalled = self._recalled(invoke)
        return self._engine.submit(traj, invoke.thread_id, merge=True, recalled=recalled)

    def _hand_over_ended(self, invoke: _Invoke, *, incomplete: bool) -> Any:
        """Hand the ended ``invoke`` to the writer, which builds and validates its trajectory
        off the agent's path: on the path only the open tool calls are closed and the end
        time taken (what the trajectory would have held if built now). The future, or
        ``None`` when nothing is stored."""
        if not self._store:
            return None
        if invoke.scope.tenant_id is None:  # cannot be stored: say so now (logged, counted)
            self._trajectory(invoke, incomplete=incomplete)
            return None
        with self._lock:
            invoke.buffer.close_open()
            ended_at = utcnow()
        recalled = self._recalled(invoke)

        def build() -> tuple[Trajectory, Any, Any] | None:
            traj = self._trajectory(invoke, incomplete=incomplete, ended_at=ended_at)
            if traj is None:
                return None
            write = self._engine.write(traj, merge=True, recalled=tuple(recalled))
            return traj, invoke.thread_id, write

        handed = (invoke.buffer.trajectory_id, invoke.thread_id)
        return self._engine.submit_later(build, handed=handed)

    def _follow(self, invoke: _Invoke) -> None:
        """Follow the graph run ``invoke`` is now in (at its start, and after a resume: the run
        it started in ended on its interrupt); where the watcher follows none, the first
        exception of a call ends the invoke."""
        run = _graph_run()
        if run == invoke.graph:
            return
        invoke.graph = run
        if run is not None:
            on_failure(run, functools.partial(self._escaped, invoke))

    def _escaped(self, invoke: _Invoke, error: BaseException) -> None:
        """The agent's graph run ended on ``error`` (the watcher calls this, in the thread or
        loop that raised): the invoke ends as it stands. A stream abandoned or a task
        cancelled (``GeneratorExit``, ``CancelledError``) ends it incomplete, judged by
        nobody; any other exception is its error. Outside an event loop the end waits
        ``write_wait`` for the write, as the end of a run does."""
        stopped = isinstance(error, GeneratorExit | asyncio.CancelledError)
        try:
            with self._lock:
                if not stopped:
                    invoke.error = invoke.error or error
            if not self._end(invoke):
                return
            future = self._hand_over_ended(invoke, incomplete=stopped)
            if future is not None and not _in_event_loop():
                self._engine.end(future)
        except Exception as exc:
            self._engine.fail("could not store a run that ended on an exception", exc)

    def _finish(self, invoke: _Invoke, *, incomplete: bool = False) -> None:
        if not self._end(invoke):
            return
        future = self._hand_over_ended(invoke, incomplete=incomplete)
        if future is not None:
            self._engine.end(future)

    async def _afinish(self, invoke: _Invoke, *, incomplete: bool = False) -> None:
        if not self._end(invoke):
            return
        future = self._hand_over_ended(invoke, incomplete=incomplete)
        if future is not None:
            await self._engine.aend(future)

    def _pause(self, invoke: _Invoke) -> None:
        """Store what ``invoke`` captured so far as a paused part (it waits for a resume, in
        this process or another); an invoke without a thread cannot be resumed: it ends as
        incomplete."""
        if not invoke.thread_id:
            self._finish(invoke, incomplete=True)
            return
        traj = self._trajectory(invoke, paused=True)
        if traj is not None:
            self._hand_over(invoke, traj)

    def memory_closing(self) -> None:
        """Called by ``Memory.close()``: hand over every open invoke (see :meth:`close`)."""
        self.close()

    def close(self) -> int:
        """Hand over every invoke still open: one on a thread is stored as paused (a resume,
        here or in another process, completes the same trajectory), one without a thread as
        incomplete. Called by ``Memory.close()`` and at interpreter exit. Returns how many."""
        with self._lock:
            open_runs = [i for i in self._runs.values() if not i.done]
        for invoke in open_runs:
            self._pause(invoke)
        return len(open_runs)


_LIVE: weakref.WeakSet[HindsightMiddleware] = weakref.WeakSet()


def _close_all_at_exit() -> None:  # pragma: no cover - exercised at interpreter exit
    for middleware in list(_LIVE):
        with contextlib.suppress(Exception):
            middleware.close()


atexit.register(_close_all_at_exit)


def _in_event_loop() -> bool:
    """Whether this thread runs an asyncio event loop now (it must not block)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _graph_run() -> Any:
    """The run of the graph this node runs in, when the watcher follows it
    (:func:`hindsight_langchain._seen.graph_run`), else ``None``."""
    from langgraph.config import get_config

    try:
        return graph_run(get_config())
    except RuntimeError:  # not inside a graph
        return None


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
