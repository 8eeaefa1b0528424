"""Per-run state: options set by the caller, and the events of one agent run.

:class:`RunOptions` travel in a context variable from the code that calls ``agent.run(...)``
into the workflow's task (asyncio copies the context when it creates the task), so a
multi-tenant app can say which tenant a run belongs to without a capture per tenant.
:class:`RunState` collects the structured events (docs/concepts.md#trajectories-and-events) of one
run and builds the :class:`~hindsight.Trajectory` when the run ends.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from hindsight import Event, EventStatus, EventType, Outcome, Provenance, Trajectory
from hindsight._ids import new_id, normalize_id, validate_namespace, validate_tenant
from hindsight.models import utcnow

__all__ = ["RunInfo", "RunOptions", "RunState", "current_options", "run_options"]


@dataclass
class RunOptions:
    """What the caller says about the next agent run started in this context.

    Only the first agent run that starts in the context takes them; a nested run (an agent
    called from a tool) or a second run gets the capture's defaults and its own trajectory.
    """

    tenant_id: str | None = None
    namespace: str | None = None
    task_type: str | None = None
    tags: Sequence[str] = ()
    trajectory_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    defer_store: bool = False
    """Keep the finished trajectory for the caller (``run_with_memory`` sets the outcome
    first) instead of storing it at once."""
    owner: Any = None
    """The capture that records this run; other installed captures leave it alone."""
    claimed_by: set[int] = field(default_factory=set)
    """ids of the captures that took these options for a run already."""


_OPTIONS: ContextVar[RunOptions | None] = ContextVar("hindsight_llamaindex_run", default=None)


def current_options() -> RunOptions | None:
    """The :class:`RunOptions` of the current context, if any."""
    return _OPTIONS.get()


@contextlib.contextmanager
def run_options(
    *,
    tenant_id: str | None = None,
    namespace: str | None = None,
    task_type: str | None = None,
    tags: Sequence[str] = (),
    trajectory_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Iterator[RunOptions]:
    """Options for the agent run started inside the block (``agent.run(...)`` inside it).

    ``with run_options(tenant_id="acme", task_type="orders"): handler = agent.run(msg)``

    Args:
        tenant_id, namespace, task_type, tags: override the capture's defaults for this run.
        trajectory_id: the id the stored trajectory gets (any UUID form); default a new one.
        metadata: extra trajectory metadata (JSON-able values).

    Raises:
        TenantRequiredError: ``tenant_id`` given but empty or not a string.
        UsageError: invalid namespace or trajectory id.
    """
    opts = RunOptions(
        tenant_id=validate_tenant(tenant_id) if tenant_id is not None else None,
        namespace=validate_namespace(namespace) if namespace is not None else None,
        task_type=task_type,
        tags=list(tags),
        trajectory_id=normalize_id(trajectory_id, "trajectory_id") if trajectory_id else None,
        metadata=dict(metadata or {}),
    )
    token = _OPTIONS.set(opts)
    try:
        yield opts
    finally:
        _OPTIONS.reset(token)


@dataclass(frozen=True)
class RunInfo:
    """What the memory block and the helper can learn about the run they are part of."""

    trajectory_id: str
    tenant_id: str
    namespace: str
    task_type: str | None
    tools: tuple[str, ...]
    task: str


@dataclass
class _PendingCall:
    started: float
    model: str | None = None
    streamed: int = 0
    partial: str = ""


class RunState:
    """The events of one agent run, in order; not thread-safe (the capture holds a lock)."""

    def __init__(
        self,
        *,
        span_id: str,
        trajectory_id: str,
        tenant_id: str,
        namespace: str,
        task_type: str | None,
        tags: Sequence[str],
        source: Provenance,
        tools: Sequence[str],
        agent: str,
        metadata: dict[str, Any],
        options: RunOptions | None,
    ) -> None:
        self.span_id = span_id
        self.trajectory_id = trajectory_id
        self.tenant_id = tenant_id
        self.namespace = namespace
        self.task_type = task_type
        self.tags = list(tags)
        self.source = source
        self.tools = tuple(tools)
        self.metadata = {"framework": "llama-index", "agent": agent, **metadata}
        self.options = options
        self.task = ""
        self.started_at = utcnow()
        self.events: list[Event] = []
        self.outcome = Outcome.UNKNOWN
        self.cancelled = False
        self.spans: set[str] = {span_id}
        self.llm_calls: dict[str, _PendingCall] = {}
        self.nested_llm: set[str] = set()
        """LLM spans inside another open LLM call of this run (their events are ignored)."""
        self.tool_calls: dict[str, tuple[str, str, float]] = {}
        """tool step span id -> (tool_call_id, tool_name, perf_counter at start)"""
        self.seen_errors: set[int] = set()
        self.system_prompt: str | None = None
        """The system prompt of the run's first model call (the agent's policy)."""

    @property
    def info(self) -> RunInfo:
        return RunInfo(
            trajectory_id=self.trajectory_id,
            tenant_id=self.tenant_id,
            namespace=self.namespace,
            task_type=self.task_type,
            tools=self.tools,
            task=self.task,
        )

    def add(self, event_type: EventType, content: Any = "", **fields: Any) -> Event:
        event = Event(
            trajectory_id=self.trajectory_id, event_type=event_type, content=content, **fields
        )
        self.events.append(event)
        return event

    # -- model calls ---------------------------------------------------------------------
    def llm_start(self, span_id: str, model: str | None = None) -> None:
        self.llm_calls[span_id] = _PendingCall(started=time.perf_counter(), model=model)

    def llm_chunk(self, span_id: str, text: str) -> None:
        call = self.llm_calls.get(span_id)
        if call is not None:
            call.streamed += 1
            call.partial = text

    def llm_end(
        self,
        span_id: str,
        content: str,
        *,
        status: EventStatus = EventStatus.SUCCESS,
        **metadata: Any,
    ) -> None:
        call = self.llm_calls.pop(span_id, None)
        latency = (time.perf_counter() - call.started) * 1000.0 if call else None
        if call is not None and call.model:
            metadata.setdefault("model", call.model)
        if call is not None and call.streamed:
            metadata["streamed_chunks"] = call.streamed
        if call is not None and not content and status is not EventStatus.SUCCESS:
            content = call.partial
        self.add(
            EventType.MODEL_CALL, content, status=status, latency_ms=latency, metadata=metadata
        )

    # -- tool calls ----------------------------------------------------------------------
    def tool_start(self, span_id: str, name: str, args: Any, call_id: str | None) -> None:
        cid = call_id or new_id()
        self.tool_calls[span_id] = (cid, name, time.perf_counter())
        self.add(
            EventType.TOOL_CALL,
            "",
            tool_name=name,
            tool_call_id=cid,
            tool_args=args if isinstance(args, dict) else {"input": args},
        )

    def tool_end(
        self,
        span_id: str,
        content: str,
        status: EventStatus,
        **metadata: Any,
    ) -> bool:
        pending = self.tool_calls.pop(span_id, None)
        if pending is None:
            return False
        cid, name, started = pending
        self.add(
            EventType.TOOL_RESULT,
            content,
            tool_name=name,
            tool_call_id=cid,
            status=status,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            metadata={k: v for k, v in metadata.items() if v is not None},
        )
        return True

    def error(self, error: BaseException | str, **metadata: Any) -> None:
        if isinstance(error, BaseException):
            if id(error) in self.seen_errors:
                return
            self.seen_errors.add(id(error))
            text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            metadata.setdefault("error_type", type(error).__name__)
        else:
            text = error
        self.add(EventType.ERROR, text, status=EventStatus.FAILURE, metadata=metadata)

    # -- the end -------------------------------------------------------------------------
    def finish(self, *, incomplete_reason: str | None = None) -> Trajectory:
        """Close what is still open and build the trajectory.

        ``incomplete_reason`` (e.g. ``"cancelled"``) marks a run that was cut off: its model
        calls and tool calls still open get a failed ``incomplete`` step, the outcome becomes
        ``partial`` (unless already failed) and ``metadata["incomplete"]`` is True.
        """
        for span_id in list(self.llm_calls):
            self.llm_end(span_id, "", status=EventStatus.FAILURE, incomplete=True)
        for span_id in list(self.tool_calls):
            self.tool_end(span_id, "no result recorded", EventStatus.FAILURE, incomplete=True)
        metadata = dict(self.metadata)
        outcome = self.outcome
        if incomplete_reason is not None:
            metadata["incomplete"] = True
            metadata["incomplete_reason"] = incomplete_reason
            if outcome is Outcome.UNKNOWN or outcome is Outcome.SUCCESS:
                outcome = Outcome.PARTIAL
        return Trajectory(
            id=self.trajectory_id,
            tenant_id=self.tenant_id,
            namespace=self.namespace,
            task=self.task,
            task_type=self.task_type,
            tags=self.tags,
            outcome=outcome,
            source=self.source,
            started_at=self.started_at,
            ended_at=utcnow(),
            events=self.events,
            metadata=metadata,
            system_prompt=self.system_prompt,
        )
