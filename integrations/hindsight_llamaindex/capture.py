"""Capture LlamaIndex agent runs through ``llama_index.core.instrumentation``
(docs/integrations/llamaindex.md#what-is-captured-and-how).

What is dispatched in llama-index-core 0.14.x, and what this module records from it:

* the **run**: the workflow runtime opens one span per ``agent.run(...)`` (id
  ``"FunctionAgent.run-<uuid>"``, ``instance`` = the agent, bound arguments ``init_state``,
  ``start_event``, ``tags``) and exits it with the ``StopEvent``, drops it with the exception,
  or exits it with ``None`` after a ``SpanCancelledEvent`` when the run is cancelled. One run
  span = one trajectory. Every other span names its parent, so each span and each event
  (``event.span_id``) is attributed to the run whose span it descends from; concurrent runs
  never mix.
* **model calls**: ``LLMChatStartEvent`` / ``LLMChatEndEvent`` (streaming adds
  ``LLMChatInProgressEvent`` per chunk, recorded as a count only, so streaming on or off gives
  the same steps); ``ExceptionEvent`` for errors, and for a stream closed early.
* **tool calls**: ``AgentToolCallEvent`` exists but is never dispatched by the workflow agents.
  Each tool call runs in a workflow step whose span is entered with the ``ToolCall`` event as
  its input (``bound_args["ev"]``) and exited with the ``ToolCallResult`` (``tool_output`` with
  ``is_error`` and ``exception``): that pair is the tool step. It is the same pair the workflow
  writes to ``handler.stream_events()``, but it arrives whether or not anyone reads the stream.

The legacy ``callbacks`` manager is not used: workflow agents do not call it.

A run's end builds the trajectory, judges its outcome with the default detector
(:func:`hindsight.capture.outcome.detect_outcome`: an error or a tool error never got past is a
failure, a final answer a success) and hands it to the memory's background writer, which
stores it, queues the review and attributes the outcome (never awaited here; ``Memory.close()``
drains it, the rest waits in the unsaved area for the next open). A run that is cancelled,
whose stream is abandoned, or that is still open at ``close()`` / interpreter exit is stored as
incomplete (outcome ``partial``, ``metadata["incomplete"] = True``).

Handler errors never reach the host app: they are logged (logger ``hindsight.llamaindex``) and
counted in :attr:`HindsightCapture.stats`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import inspect
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from llama_index.core.agent.workflow import (
    AgentWorkflow,
    BaseWorkflowAgent,
    ToolCall,
    ToolCallResult,
)
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.exception import ExceptionEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatInProgressEvent,
    LLMChatStartEvent,
)
from llama_index.core.instrumentation.span import active_span_id

from hindsight import EpisodeReceipt, EventStatus, EventType, Outcome, Provenance, Trajectory
from hindsight._ids import new_id, validate_namespace, validate_tenant
from hindsight.capture.outcome import detect_outcome

from ._convert import (
    exception_text,
    message_text,
    response_message,
    system_text,
    tool_calls_of,
    tool_status,
    user_text,
)
from ._handlers import EventHandler, SpanHandler
from ._runs import RunInfo, RunOptions, RunState, current_options
from ._store import EpisodeWriter, as_async_memory

__all__ = ["CaptureStats", "HindsightCapture", "current_run", "instrument"]

log = logging.getLogger("hindsight.llamaindex")

T = TypeVar("T")

_INTERRUPTS = (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt, SystemExit)
"""Exceptions that mean "cut off", not "failed": the run is stored as incomplete."""


@dataclass
class CaptureStats:
    """Counters of one capture (all ints, since it was created)."""

    runs_started: int = 0
    runs_finished: int = 0
    runs_incomplete: int = 0
    runs_failed: int = 0
    runs_skipped: int = 0
    """Agent runs seen without a tenant (no capture default, no ``run_options``)."""
    events: int = 0
    unattributed_events: int = 0
    """LLM events outside any captured run (a bare ``llm.chat`` call, or after a run ended)."""
    handler_errors: int = 0
    """Errors inside our own handlers: logged and swallowed, never raised to the host."""
    store_errors: int = 0


def _is_agent_run(instance: Any, bound_args: inspect.BoundArguments) -> bool:
    return isinstance(instance, BaseWorkflowAgent | AgentWorkflow) and (
        "start_event" in bound_args.arguments
    )


def _tool_names(instance: Any) -> list[str]:
    agents = (
        list(getattr(instance, "agents", {}).values())
        if isinstance(instance, AgentWorkflow)
        else [instance]
    )
    names: list[str] = []
    for agent in agents:
        for tool in getattr(agent, "tools", None) or []:
            name = getattr(getattr(tool, "metadata", None), "name", None)
            if isinstance(name, str) and name and name not in names:
                names.append(name)
    return names


def _final_answer(result: Any) -> str:
    output = getattr(result, "result", result)  # StopEvent.result -> AgentOutput
    response = getattr(output, "response", None)
    if response is not None:
        return message_text(response)
    return message_text(output) if isinstance(output, str) else ""


_INSTALLED: list[HindsightCapture] = []
_INSTALLED_LOCK = threading.Lock()


class HindsightCapture:
    """Records every LlamaIndex agent run as one trajectory and stores it in hindsight.

    ``capture = HindsightCapture(memory, tenant_id="acme").install()`` (or
    :func:`instrument`) adds an event handler and a span handler to LlamaIndex's root
    dispatcher; every ``FunctionAgent`` / ``ReActAgent`` / ``AgentWorkflow`` run from then on
    is captured. Use it as a context manager to install and close it around a block.

    Args:
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            ``HindsightClient`` / ``AsyncHindsightClient`` of a ``hindsight serve``
            (docs/integrations/llamaindex.md#point-at-a-server).
        tenant_id: the tenant of captured runs. ``None``: only runs started inside
            :func:`~hindsight_llamaindex.run_options` with a tenant are captured (others are
            counted in ``stats.runs_skipped``).
        namespace, task_type, tags: defaults for each run's trajectory.
        source: provenance of the runs (docs/security.md#layer-2-provenance-trust; default
            ``user``).
        review: queue a post-hoc review for each stored run (default True).
        dispatcher: the dispatcher to attach to; default the root dispatcher (sees all).

    Raises:
        TenantRequiredError: ``tenant_id`` given but empty or not a string.
        UsageError: ``memory`` is not a hindsight memory, or the namespace is invalid.
    """

    def __init__(
        self,
        memory: Any,
        *,
        tenant_id: str | None = None,
        namespace: str = "default",
        task_type: str | None = None,
        tags: Sequence[str] = (),
        source: Provenance | str = Provenance.USER,
        review: bool = True,
        dispatcher: Any = None,
    ) -> None:
        self.memory = as_async_memory(memory)
        self.tenant_id = validate_tenant(tenant_id) if tenant_id is not None else None
        self.namespace = validate_namespace(namespace)
        self.task_type = task_type
        self.tags = list(tags)
        self.source = Provenance(source)
        self.stats = CaptureStats()
        self._dispatcher = dispatcher if dispatcher is not None else get_dispatcher()
        self._writer = EpisodeWriter(self.memory, review=review)
        self._writer.attach(self)
        self._lock = threading.RLock()
        self._runs: dict[str, RunState] = {}  # run span id -> run
        self._span_run: dict[str, str] = {}  # span id (any depth) -> run span id
        self._span_parent: dict[str, str] = {}  # span id under a run -> its parent span id
        self._deferred: dict[str, Trajectory] = {}
        self._futures: dict[str, concurrent.futures.Future[EpisodeReceipt | None]] = {}
        self._event_handler = EventHandler(self)
        self._span_handler = SpanHandler(self)
        self.trajectory_ids: deque[str] = deque(maxlen=1000)
        """Ids of the most recent finished runs (oldest first, at most 1000)."""
        self.installed = False

    # -- installing ----------------------------------------------------------------------
    def install(self) -> HindsightCapture:
        """Attach the handlers to the dispatcher (idempotent); returns ``self``."""
        with self._lock:
            if self.installed:
                return self
            self._dispatcher.add_event_handler(self._event_handler)
            self._dispatcher.add_span_handler(self._span_handler)
            self.installed = True
        with _INSTALLED_LOCK:
            _INSTALLED.append(self)
        return self

    def uninstall(self) -> None:
        """Detach the handlers; runs still open are no longer followed (see :meth:`close`)."""
        with self._lock:
            if not self.installed:
                return
            self.installed = False
            d = self._dispatcher
            d.event_handlers = [h for h in d.event_handlers if h is not self._event_handler]
            d.span_handlers = [h for h in d.span_handlers if h is not self._span_handler]
        with _INSTALLED_LOCK, contextlib.suppress(ValueError):
            _INSTALLED.remove(self)

    def close(self, timeout: float | None = 30.0, *, reason: str = "capture closed") -> None:
        """Uninstall, store runs still open as incomplete, wait for queued stores.

        Args:
            timeout: seconds to wait for queued stores (None: no limit).
            reason: recorded as ``metadata["incomplete_reason"]`` of runs still open.
        """
        self.uninstall()
        for traj in self._finalize_open(reason):
            self._submit(traj)
        self.flush(timeout)
        self._writer.shutdown(wait=False)

    def __enter__(self) -> HindsightCapture:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- results -------------------------------------------------------------------------
    @property
    def unsaved(self) -> list[Trajectory]:
        """Trajectories whose store failed (logged); the memory's writer retries them before
        its next write, and keeps them in its unsaved area when the memory closes first."""
        return self._writer.unsaved

    def current_run(self) -> RunInfo | None:
        """The captured run the calling code runs inside (by the active span), or None."""
        span = active_span_id.get()
        with self._lock:
            run = self._span_run.get(span) if span else None
            state = self._runs.get(run) if run else None
            return state.info if state else None

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until every finished run is stored; False when ``timeout`` seconds passed."""
        with self._lock:
            pending = list(self._futures.values())
        _, not_done = concurrent.futures.wait(pending, timeout=timeout)
        return not not_done

    async def wait(self, trajectory_id: str, timeout: float | None = 30.0) -> EpisodeReceipt | None:
        """The receipt of a finished run's store (None when the store failed or the id is
        unknown, e.g. already collected).

        Raises:
            TimeoutError: not stored within ``timeout`` seconds.
        """
        with self._lock:
            fut = self._futures.get(trajectory_id)
        if fut is None:
            return None
        return await asyncio.wait_for(asyncio.wrap_future(fut), timeout)

    # -- the handlers' logic -------------------------------------------------------------
    def _guard(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            with self._lock:
                self.stats.handler_errors += 1
            log.warning("hindsight: error in the LlamaIndex capture (ignored)", exc_info=True)

    def _state_for(self, span_id: str | None) -> RunState | None:
        run = self._span_run.get(span_id) if span_id else None
        return self._runs.get(run) if run else None

    def _on_event(self, event: BaseEvent) -> None:
        handled = (LLMChatStartEvent, LLMChatInProgressEvent, LLMChatEndEvent, ExceptionEvent)
        is_cancel = event.class_name() == "SpanCancelledEvent"
        if not isinstance(event, handled) and not is_cancel:
            return
        with self._lock:
            state = self._state_for(event.span_id)
            if state is None:
                if not is_cancel:
                    self.stats.unattributed_events += 1
                return
            self.stats.events += 1
            span = event.span_id or ""
            if is_cancel:
                if span == state.span_id:
                    state.cancelled = True
            elif span in state.nested_llm:
                return  # the inner half of one model call (e.g. achat calling chat)
            elif isinstance(event, LLMChatStartEvent):
                if self._inside_llm_call(state, span):
                    state.nested_llm.add(span)
                    return
                model = event.model_dict.get("model") or event.model_dict.get("class_name")
                state.llm_start(span, str(model) if model else None)
                if state.system_prompt is None:
                    state.system_prompt = system_text(event.messages) or None
            elif isinstance(event, LLMChatInProgressEvent):
                state.llm_chunk(span, message_text(response_message(event.response)))
            elif isinstance(event, LLMChatEndEvent):
                msg = response_message(event.response)
                calls = tool_calls_of(msg)
                meta: dict[str, Any] = {"tool_calls": calls} if calls else {}
                state.llm_end(span, message_text(msg), **meta)
            elif isinstance(event, ExceptionEvent):
                self._on_exception(state, span, event.exception)

    def _inside_llm_call(self, state: RunState, span: str) -> bool:
        """True when an ancestor span of ``span`` is a model call still open: LLM classes
        often implement ``achat`` with ``chat`` (both instrumented), which is one call."""
        seen = 0
        node = self._span_parent.get(span)
        while node is not None and node != state.span_id and seen < 1000:
            if node in state.llm_calls:
                return True
            node = self._span_parent.get(node)
            seen += 1
        return False

    @staticmethod
    def _on_exception(state: RunState, span: str, error: BaseException) -> None:
        if isinstance(error, _INTERRUPTS):
            if span in state.llm_calls:  # a stream closed before its end (abandoned)
                state.llm_end(
                    span,
                    "",
                    status=EventStatus.FAILURE,
                    incomplete=True,
                    error_type=type(error).__name__,
                )
            return
        if span in state.llm_calls:
            state.llm_end(span, "", status=EventStatus.FAILURE, error_type=type(error).__name__)
        state.error(error, source="llm" if span else "llamaindex")

    def _on_span_enter(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any,
        parent_id: str | None,
    ) -> None:
        with self._lock:
            parent = self._state_for(parent_id)
            if _is_agent_run(instance, bound_args):
                self._start_run(id_, instance, bound_args, parent)
                return
            if parent is None:
                return
            self._span_run[id_] = parent.span_id
            if parent_id is not None:
                self._span_parent[id_] = parent_id
            parent.spans.add(id_)
            ev = bound_args.arguments.get("ev")
            if isinstance(ev, ToolCall):
                parent.tool_start(id_, ev.tool_name, ev.tool_kwargs, ev.tool_id or None)

    def _start_run(
        self,
        id_: str,
        instance: Any,
        bound_args: inspect.BoundArguments,
        parent: RunState | None,
    ) -> None:
        opts: RunOptions | None = current_options()
        if opts is not None and id(self) in opts.claimed_by:
            opts = None  # a nested run (or a second one): the options were for the first
        if opts is not None and opts.owner is not None and opts.owner is not self:
            return  # another capture records this run
        tenant = (opts.tenant_id if opts else None) or self.tenant_id
        if tenant is None:
            self.stats.runs_skipped += 1
            return
        if opts is not None:
            opts.claimed_by.add(id(self))
        metadata = dict(opts.metadata) if opts else {}
        if parent is not None:
            metadata["parent_trajectory_id"] = parent.trajectory_id
        state = RunState(
            span_id=id_,
            trajectory_id=(opts.trajectory_id if opts else None) or new_id(),
            tenant_id=tenant,
            namespace=(opts.namespace if opts else None) or self.namespace,
            task_type=(opts.task_type if opts else None) or self.task_type,
            tags=[*self.tags, *(opts.tags if opts else ())],
            source=self.source,
            tools=_tool_names(instance),
            agent=str(getattr(instance, "name", None) or type(instance).__name__),
            metadata=metadata,
            options=opts,
        )
        state.task = user_text(bound_args.arguments.get("start_event"))
        if state.task:
            state.add(EventType.USER_MESSAGE, state.task)
        self._runs[id_] = state
        self._span_run[id_] = id_
        self.stats.runs_started += 1

    def _on_span_end(self, id_: str, result: Any, error: BaseException | None) -> None:
        with self._lock:
            if id_ in self._runs:
                traj = self._end_run(id_, result, error)
            else:
                self._end_step(id_, result, error)
                return
        self._deliver(traj)

    def _end_step(self, id_: str, result: Any, error: BaseException | None) -> None:
        state = self._state_for(id_)
        if state is None or id_ not in state.tool_calls:
            return
        if isinstance(result, ToolCallResult):
            output = result.tool_output
            status, error_type = tool_status(output)
            content = message_text(getattr(output, "content", ""))
            state.tool_end(id_, content, status, error_type=error_type)
        elif error is not None:
            status = EventStatus.TIMEOUT if isinstance(error, TimeoutError) else EventStatus.FAILURE
            incomplete = True if isinstance(error, _INTERRUPTS) else None
            state.tool_end(
                id_,
                exception_text(error),
                status,
                error_type=type(error).__name__,
                incomplete=incomplete,
            )
        else:  # the step returned nothing: it was cancelled before the tool answered
            state.tool_end(id_, "no result recorded", EventStatus.FAILURE, incomplete=True)

    def _end_run(self, id_: str, result: Any, error: BaseException | None) -> Trajectory:
        state = self._runs.pop(id_)
        for span in state.spans:
            self._span_run.pop(span, None)
            self._span_parent.pop(span, None)
        reason: str | None = None
        if error is not None and isinstance(error, _INTERRUPTS):
            reason = "cancelled" if isinstance(error, asyncio.CancelledError) else "interrupted"
        elif error is not None:
            state.error(error, source="run")
            state.outcome = Outcome.FAILURE
        elif state.cancelled:
            reason = "cancelled by user"
        else:
            answer = _final_answer(result)
            if answer:
                state.add(EventType.FINAL_ANSWER, answer)
        traj = state.finish(incomplete_reason=reason)
        if reason is None and traj.outcome is Outcome.UNKNOWN:
            traj = traj.model_copy(update={"outcome": detect_outcome(traj)})
        self.stats.runs_finished += 1
        if reason is not None:
            self.stats.runs_incomplete += 1
        elif traj.outcome is Outcome.FAILURE:
            self.stats.runs_failed += 1
        self.trajectory_ids.append(traj.id)
        if state.options is not None and state.options.defer_store:
            self._deferred[traj.id] = traj
            return traj
        return traj

    def _deliver(self, traj: Trajectory) -> None:
        with self._lock:
            if traj.id in self._deferred:
                return  # the caller (run_with_memory) stores it
        self._submit(traj)

    def _submit(self, traj: Trajectory) -> None:
        self._track(traj.id, self._writer.submit(traj))

    def _track(self, trajectory_id: str, fut: concurrent.futures.Future[Any]) -> None:
        traj_id = trajectory_id
        with self._lock:
            self._futures[traj_id] = fut
            # keep the most recent futures only (wait() needs them, memory must not grow)
            while len(self._futures) > 1000:
                self._futures.pop(next(iter(self._futures)))
        fut.add_done_callback(self._count_store)

    def _count_store(self, fut: concurrent.futures.Future[EpisodeReceipt | None]) -> None:
        if fut.cancelled() or fut.exception() is not None or fut.result() is None:
            with self._lock:
                self.stats.store_errors += 1

    def _finalize_open(self, reason: str) -> list[Trajectory]:
        with self._lock:
            runs = list(self._runs)
            out = [self._end_run_incomplete(r, reason) for r in runs]
            deferred = list(self._deferred.values())
            self._deferred.clear()
        return out + deferred

    def _end_run_incomplete(self, id_: str, reason: str) -> Trajectory:
        state = self._runs.pop(id_)
        for span in state.spans:
            self._span_run.pop(span, None)
            self._span_parent.pop(span, None)
        self.stats.runs_finished += 1
        self.stats.runs_incomplete += 1
        self.trajectory_ids.append(state.trajectory_id)
        return state.finish(incomplete_reason=reason)

    # -- used by run_with_memory ---------------------------------------------------------
    def _take_deferred(self, trajectory_id: str, options: RunOptions) -> Trajectory | None:
        """Stop deferring: return the finished trajectory (then the caller stores it), or
        None when the run has not finished (it will then be stored when it does)."""
        with self._lock:
            options.defer_store = False
            return self._deferred.pop(trajectory_id, None)


def current_run() -> RunInfo | None:
    """The captured run the calling code is part of, from any installed capture, or None.

    Used by :class:`~hindsight_llamaindex.HindsightMemoryBlock` to attribute its recall to the
    run (for ``record_outcome``) and to learn the agent's tool names.
    """
    with _INSTALLED_LOCK:
        captures = list(_INSTALLED)
    for capture in captures:
        info = capture.current_run()
        if info is not None:
            return info
    return None


def installed_capture(memory: Any) -> HindsightCapture | None:
    """An installed capture writing to ``memory`` (the same AsyncMemory), if any."""
    aio = as_async_memory(memory)
    with _INSTALLED_LOCK:
        return next((c for c in _INSTALLED if c.memory is aio), None)


def instrument(
    memory: Any,
    *,
    tenant_id: str | None = None,
    namespace: str = "default",
    task_type: str | None = None,
    tags: Sequence[str] = (),
    review: bool = True,
) -> HindsightCapture:
    """Capture every LlamaIndex agent run from now on; returns the installed capture.

    Same arguments as :class:`HindsightCapture`. Call ``capture.close()`` to stop (runs still
    open are stored as incomplete).
    """
    return HindsightCapture(
        memory,
        tenant_id=tenant_id,
        namespace=namespace,
        task_type=task_type,
        tags=tags,
        review=review,
    ).install()


def _finalize_at_exit() -> None:  # pragma: no cover - runs at interpreter exit
    with _INSTALLED_LOCK:
        captures = list(_INSTALLED)
    for capture in captures:
        try:
            capture.uninstall()
            for traj in capture._finalize_open("process exit"):
                capture._writer.store_now(traj)
        except Exception:
            log.warning("hindsight: could not store open runs at exit", exc_info=True)


atexit.register(_finalize_at_exit)
