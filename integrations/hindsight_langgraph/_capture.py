"""Automatic capture of a graph run: the recall node attaches hindsight's LangChain handler.

A node cannot add a callback handler to the graph run it is part of: LangGraph gives each node
a *copy* of the run's callback manager. What LangChain does offer is a configure hook
(``langchain_core.tracers.context.register_configure_hook``, the mechanism LangSmith tracing
uses): a handler that every callback manager configured in the process picks up. The first
:func:`~hindsight_langgraph.create_recall_node` call registers one :class:`CaptureRouter` that
way. The router only keeps the parent -> root map of the runs in flight (and their start
arguments until they end) and forwards nothing, until a recall node *claims* the root run it is
part of. From then on every callback of that root run (model calls, tool calls, nodes, subgraphs,
retries, custom events) goes to a :class:`~hindsight_langchain.HindsightCallbackHandler` of its
own, which turns them into structured events; the start events of the runs already open at the
claim are replayed first, so nothing is missed.

One trajectory per run, whatever LangGraph does:

* **interrupts**: a root run that stops at ``interrupt()`` leaves its trajectory open on its
  ``thread_id``; the next root run on that thread whose input is a ``Command`` (``resume``) or
  ``None`` continues the *same* trajectory (its runs are re-parented under the first root), so a
  resume adds events, never a second trajectory. A fresh input on a thread with an open
  trajectory means the paused run was abandoned: it is stored as ``incomplete``.
* **the reflect node** takes the events captured so far (see :meth:`TrajectoryCapture.close`),
  after which the root run's remaining callbacks are dropped.
* **errors**: a root run that raises (not an interrupt) stores its trajectory as a failure.
* **a graph that ends without reaching the reflect node** stores its trajectory as
  ``incomplete`` (without a checkpointer), or keeps it open for a resume (with one).
* **process exit** stores every open trajectory as ``incomplete``.

Events captured before an interrupt live in this process: a run resumed in *another* process
gets a new trajectory for the part after the resume (the first part is stored as incomplete at
exit), so nothing captured is lost.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langchain_core.tracers.context import register_configure_hook

from hindsight import Outcome, Trajectory, UsageError
from hindsight_langgraph._memory import MemoryRef
from hindsight_langgraph._scope import Scope

__all__ = [
    "CaptureRouter",
    "TrajectoryCapture",
    "begin_run",
    "capture_of",
    "router",
]

log = logging.getLogger("hindsight.langgraph")

MAX_LIVE_ROOTS = 10_000
"""Root runs the router tracks at once; beyond that the oldest unclaimed one is forgotten (a
root run that never reports its end, e.g. an abandoned stream, must not grow memory forever)."""

MAX_OPEN_TRAJECTORIES = 10_000
"""Paused trajectories kept for a resume; beyond that the oldest is stored as incomplete."""

_START = (
    "on_chain_start",
    "on_chat_model_start",
    "on_llm_start",
    "on_tool_start",
    "on_retriever_start",
)
_END = (
    "on_chain_end",
    "on_chain_error",
    "on_llm_end",
    "on_llm_error",
    "on_tool_end",
    "on_tool_error",
    "on_retriever_end",
    "on_retriever_error",
)
_ERRORS = frozenset({"on_chain_error", "on_llm_error", "on_tool_error", "on_retriever_error"})


def _is_bubble_up(error: Any) -> bool:
    """LangGraph's control-flow exceptions (``interrupt()``, ``Command(graph=PARENT)``)."""
    return any(cls.__name__ == "GraphBubbleUp" for cls in type(error).__mro__)


def _is_resume_input(inputs: Any) -> bool:
    """True for the input of a run that continues a paused one: ``None`` or a ``Command``."""
    if inputs is None:
        return True
    try:
        from langgraph.types import Command
    except ImportError:  # pragma: no cover - langgraph is a dependency of this package
        return False
    return isinstance(inputs, Command)


# -- one trajectory ---------------------------------------------------------------------------
class TrajectoryCapture:
    """The capture of one trajectory: its id, scope and the handler its callbacks go to.

    Attributes:
        trajectory_id: the stored trajectory's id (written to the graph state).
        anchor: the root run the trajectory started in; the runs of later root runs (resumes)
            are forwarded as children of it.
        closed: True once the trajectory was taken (by the reflect node or a finalization).
    """

    def __init__(
        self,
        trajectory_id: str,
        memory: MemoryRef,
        scope: Scope,
        *,
        task: str,
        task_type: str | None,
        tags: Sequence[str],
        anchor: UUID,
        thread_id: str | None,
    ) -> None:
        from hindsight_langchain import HindsightCallbackHandler

        self.trajectory_id = trajectory_id
        self.memory = memory
        self.scope = scope
        self.task = task
        self.task_type = task_type
        self.tags = list(tags)
        self.anchor = anchor
        self.thread_id = thread_id
        self.roots: list[UUID] = [anchor]
        self.closed = False
        self.lock = threading.RLock()
        self.handler = HindsightCallbackHandler(
            memory.aio,
            tenant_id=scope.tenant_id,
            namespace=scope.namespace,
            task_type=task_type,
            tags=tags,
        )

    def forward(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Pass one callback to the handler (runs of later roots re-parented to the anchor)."""
        with self.lock:
            if self.closed:
                return
            parent = kwargs.get("parent_run_id")
            if parent is not None and parent != self.anchor and parent in self.roots:
                kwargs = {**kwargs, "parent_run_id": self.anchor}
            getattr(self.handler, method)(*args, **kwargs)

    def close(self) -> Trajectory | None:
        """Take what was captured (``None`` when already taken or nothing was captured); the
        trajectory's later callbacks are dropped."""
        with self.lock:
            if self.closed:
                return None
            self.closed = True
            try:
                return self.handler.detach(self.anchor, trajectory_id=self.trajectory_id)
            except Exception:
                log.exception(
                    "hindsight: could not take the events of trajectory %s", self.trajectory_id
                )
                return None


@dataclass(eq=False, slots=True)
class _Root:
    """A root run in flight."""

    run_id: UUID
    thread_id: str | None
    capture: TrajectoryCapture | None = None
    interrupted: bool = False
    open_runs: OrderedDict[UUID, tuple[str, tuple[Any, ...], dict[str, Any]]] = field(
        default_factory=OrderedDict
    )


# -- the router -------------------------------------------------------------------------------
class CaptureRouter(BaseCallbackHandler):
    """Routes the callbacks of claimed graph runs to their :class:`TrajectoryCapture`.

    Registered once per process through LangChain's configure hook (see the module doc). Runs no
    recall node claimed cost one dict entry while they are open and are never recorded.
    ``run_inline``: called in order on the caller's thread or event loop (cheap, no I/O).
    """

    run_inline = True
    raise_error = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[UUID, UUID] = {}  # run id -> its root run id
        self._roots: OrderedDict[UUID, _Root] = OrderedDict()
        self._threads: OrderedDict[str, TrajectoryCapture] = OrderedDict()
        self.finalize: Callable[[TrajectoryCapture, str], None] = _store

    # -- bookkeeping ----------------------------------------------------------------------
    def _start(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        run_id: UUID = kwargs["run_id"]
        parent: UUID | None = kwargs.get("parent_run_id")
        abandoned = None
        with self._lock:
            if parent is None:
                metadata: Mapping[str, Any] = kwargs.get("metadata") or {}
                thread = metadata.get("thread_id")
                root = _Root(run_id, str(thread) if thread is not None else None)
                inputs = args[1] if len(args) > 1 else kwargs.get("inputs")
                if root.thread_id is not None and root.thread_id in self._threads:
                    paused = self._threads[root.thread_id]
                    if method == "on_chain_start" and _is_resume_input(inputs):
                        root.capture = paused  # a resume continues the paused trajectory
                        paused.roots.append(run_id)
                    else:
                        abandoned = self._threads.pop(root.thread_id)
                self._roots[run_id] = root
                self._evict()
            else:
                root_id = self._runs.get(parent)
                if root_id is None or root_id not in self._roots:
                    return  # a run we never saw the start of (router registered mid-run)
                root = self._roots[root_id]
            self._runs[run_id] = root.run_id
            root.open_runs[run_id] = (method, args, kwargs)
            capture = root.capture
        if abandoned is not None:
            self.finalize(abandoned, "abandoned")
        if capture is not None and run_id != capture.anchor and parent is not None:
            capture.forward(method, args, kwargs)

    def _end(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        run_id: UUID = kwargs["run_id"]
        with self._lock:
            root_id = self._runs.pop(run_id, None)
            root = self._roots.get(root_id) if root_id is not None else None
            if root is None:
                return
            root.open_runs.pop(run_id, None)
            error = args[0] if method in _ERRORS and args else kwargs.get("error")
            if method in _ERRORS and _is_bubble_up(error):
                root.interrupted = True
            is_root = run_id == root.run_id
            if is_root:
                self._roots.pop(run_id, None)
                for child in root.open_runs:
                    self._runs.pop(child, None)
            capture = root.capture
        if capture is None or capture.closed:
            return
        if not is_root:
            capture.forward(method, args, kwargs)
            return
        if method in _ERRORS and not _is_bubble_up(error):
            self._release(capture)
            self.finalize(capture, "error")
        elif capture.thread_id is None:
            self._release(capture)
            self.finalize(capture, "no_reflect")
        # else: paused (interrupt) or ended around the reflect node: kept for a resume.

    def _other(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """A callback that neither starts nor ends a run (``on_custom_event``)."""
        capture = self.capture_for(kwargs["run_id"])
        if capture is not None and not capture.closed:
            capture.forward(method, args, kwargs)

    def _evict(self) -> None:
        """Forget the oldest unclaimed roots beyond :data:`MAX_LIVE_ROOTS` (lock held)."""
        while len(self._roots) > MAX_LIVE_ROOTS:
            victim = next((r for r in self._roots.values() if r.capture is None), None)
            if victim is None:
                break
            self._roots.pop(victim.run_id)
            for child in victim.open_runs:
                self._runs.pop(child, None)

    def _release(self, capture: TrajectoryCapture) -> None:
        """Stop tracking ``capture`` on its thread."""
        with self._lock:
            if capture.thread_id is not None and self._threads.get(capture.thread_id) is capture:
                del self._threads[capture.thread_id]

    # -- what the nodes call --------------------------------------------------------------
    def claim(
        self, run_id: UUID, make: Callable[[UUID, str | None], TrajectoryCapture]
    ) -> TrajectoryCapture | None:
        """The open capture of the root run that ``run_id`` belongs to, or a new one made by
        ``make(root_run_id, thread_id)`` (the runs already open are replayed into it).
        ``None`` when the router never saw ``run_id`` (callbacks disabled for this run)."""
        overflow: list[TrajectoryCapture] = []
        with self._lock:
            root_id = self._runs.get(run_id)
            root = self._roots.get(root_id) if root_id is not None else None
            if root is None:
                return None
            if root.capture is not None and not root.capture.closed:
                return root.capture
            capture = make(root.run_id, root.thread_id)
            root.capture = capture
            if root.thread_id is not None:
                old = self._threads.pop(root.thread_id, None)
                if old is not None and old is not capture and not old.closed:
                    overflow.append(old)
                self._threads[root.thread_id] = capture
                while len(self._threads) > MAX_OPEN_TRAJECTORIES:
                    overflow.append(self._threads.popitem(last=False)[1])
            replay = list(root.open_runs.values())
            capture.lock.acquire()
        try:
            for method, args, kwargs in replay:
                capture.forward(method, args, kwargs)
        finally:
            capture.lock.release()
        for old in overflow:
            self.finalize(old, "abandoned")
        return capture

    def capture_for(self, run_id: UUID) -> TrajectoryCapture | None:
        """The capture of the root run ``run_id`` belongs to (``None`` when unclaimed)."""
        with self._lock:
            root_id = self._runs.get(run_id)
            root = self._roots.get(root_id) if root_id is not None else None
            return root.capture if root is not None else None

    def take(self, capture: TrajectoryCapture) -> Trajectory | None:
        """Close ``capture`` and return what it captured (see :meth:`TrajectoryCapture.close`)."""
        self._release(capture)
        return capture.close()

    def open_captures(self) -> list[TrajectoryCapture]:
        """The paused trajectories waiting for a resume."""
        with self._lock:
            return [c for c in self._threads.values() if not c.closed]

    def close_all(self) -> int:
        """Store every paused trajectory as incomplete (at exit); returns how many."""
        captures = self.open_captures()
        for capture in captures:
            self._release(capture)
            _store(capture, "exit")
        return len(captures)


def _forwarder(method: str, kind: str) -> Any:
    """A callback method that hands ``method``'s arguments to ``CaptureRouter.<kind>``; the
    router's own errors are logged, never raised into the graph."""

    def callback(self: CaptureRouter, *args: Any, **kwargs: Any) -> None:
        try:
            getattr(self, kind)(method, args, kwargs)
        except Exception:
            log.exception("hindsight: capture of %s failed", method)

    callback.__name__ = method
    return callback


for _m in _START:
    setattr(CaptureRouter, _m, _forwarder(_m, "_start"))
for _m in _END:
    setattr(CaptureRouter, _m, _forwarder(_m, "_end"))
CaptureRouter.on_custom_event = _forwarder("on_custom_event", "_other")  # type: ignore[method-assign]


# -- finishing without the reflect node -------------------------------------------------------
_REASONS = {
    "error": "the graph run raised",
    "no_reflect": "the graph run ended without passing the reflect node",
    "abandoned": "a new input came on the thread while this run was paused",
    "exit": "the process exited while this run was paused",
}


def _store(capture: TrajectoryCapture, reason: str) -> None:
    """Store ``capture`` (the run did not reach the reflect node): on the calling thread when
    it is not an event loop, else in the memory's background loop (never blocking a loop)."""
    import asyncio

    from hindsight_langgraph._trajectory import assemble

    part = capture.close()
    outcome = Outcome.FAILURE if reason == "error" else Outcome.UNKNOWN
    traj = assemble(
        capture, part, outcome=outcome, incomplete=reason != "error", reason=_REASONS[reason]
    )
    aio = capture.memory.aio

    async def store() -> None:
        await aio.store_episode(traj)
        if outcome is Outcome.FAILURE:
            await aio.record_outcome(traj.id, False, tenant_id=traj.tenant_id)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        try:
            capture.memory.run(store())
        except UsageError as exc:  # e.g. the memory was closed before this paused run ended
            log.warning("hindsight: trajectory %s (%s) was not stored: %s", traj.id, reason, exc)
        except Exception:
            log.exception("hindsight: could not store trajectory %s", traj.id)
        return
    capture.memory.submit(store(), f"storing trajectory {traj.id}")


# -- the process-wide router ------------------------------------------------------------------
_ROUTER = CaptureRouter()
# The hook adds the ContextVar's value to every callback manager; its default is the router.
_HOOK: ContextVar[CaptureRouter | None] = ContextVar("hindsight_langgraph_capture", default=_ROUTER)
_registered = False
_register_lock = threading.Lock()


def router() -> CaptureRouter:
    """The process-wide router, registered with LangChain's configure hook on first use."""
    global _registered
    if not _registered:
        with _register_lock:
            if not _registered:
                register_configure_hook(_HOOK, True)
                _registered = True
                atexit.register(_ROUTER.close_all)
    return _ROUTER


def _node_run_id(config: RunnableConfig | None) -> UUID | None:
    """The run id of the node that got ``config`` (its callback manager's parent run)."""
    callbacks = (config or {}).get("callbacks")
    run_id = getattr(callbacks, "parent_run_id", None)
    return run_id if isinstance(run_id, UUID) else None


def begin_run(
    config: RunnableConfig | None,
    memory: MemoryRef,
    scope: Scope,
    *,
    task: str,
    task_type: str | None,
    tags: Sequence[str],
    fallback_id: Callable[[], str],
) -> str:
    """Claim the graph run the calling node is part of; returns its trajectory id (the open
    one when the run already has a trajectory: re-entry, resume)."""
    run_id = _node_run_id(config)
    if run_id is None:
        return fallback_id()

    def make(anchor: UUID, thread_id: str | None) -> TrajectoryCapture:
        return TrajectoryCapture(
            fallback_id(),
            memory,
            scope,
            task=task,
            task_type=task_type,
            tags=tags,
            anchor=anchor,
            thread_id=thread_id,
        )

    capture = router().claim(run_id, make)
    return capture.trajectory_id if capture is not None else fallback_id()


def capture_of(config: RunnableConfig | None) -> TrajectoryCapture | None:
    """The capture of the graph run the calling node is part of (``None`` when unclaimed)."""
    run_id = _node_run_id(config)
    return router().capture_for(run_id) if run_id is not None else None
