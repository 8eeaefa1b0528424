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
  ``thread_id`` and hands what it captured so far to the memory's background writer as a
  *paused* part (``metadata.paused``, not reviewed yet), with a ``custom`` event
  ``interrupt`` holding the interrupt's values. The next root run on that thread whose input
  is a ``Command`` (``resume``) or ``None`` continues the *same* trajectory (a ``custom``
  event ``resume`` with the resume value; its runs are re-parented under the first root). A
  fresh input on a thread with an open trajectory means the paused run was abandoned: it is
  stored as ``incomplete``.
* **across processes** (a checkpointer): a resumed root run this process has no trajectory
  for is followed until the reflect node claims it with the trajectory id in the graph state;
  its part is merged into the paused part stored by the first process (``merge=True``).
* **the reflect node** takes the events captured so far (see :meth:`TrajectoryCapture.close`),
  after which the root run's remaining callbacks are dropped.
* **errors**: a root run that raises (not an interrupt) stores its trajectory as a failure.
* **a graph that ends without reaching the reflect node** stores its trajectory as
  ``incomplete`` (without a checkpointer), or as a paused part kept for a resume (with one).
* **Memory.close() and process exit** hand every open trajectory to the writer as a paused
  part (a resume, here or in another process, completes it).

**Did the model see the block?** Every model call of a claimed run is checked for the block
the recall node put into the system message (what LangChain reports the model received):
only the lessons of a run whose model saw them are recorded as recalled by it, so credited or
blamed (docs/integrations/langgraph.md#other-nodes-and-the-system-message).

Every store goes through the memory's background writer (:mod:`hindsight.capture.writer`):
nothing here waits on the store.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from hindsight_langchain._seen import block_in, interrupt_values, resume_value
from hindsight_langchain._tree import run_key
from hindsight_langchain.callback import dispatch
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langchain_core.tracers.context import register_configure_hook

from hindsight import Outcome, Trajectory
from hindsight_langgraph._memory import Engine
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

MAX_LOGGED_CALLBACKS = 10_000
"""Callbacks kept of a resumed root run no trajectory of this process owns yet (a run
paused in another process), replayed when the reflect node claims it; beyond that only the
runs still open are replayed."""

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
        engine: Engine,
        scope: Scope,
        *,
        task: str,
        task_type: str | None,
        tags: Sequence[str],
        anchor: UUID,
        thread_id: str | None,
        block: str = "",
        recalled_ids: Sequence[str] = (),
    ) -> None:
        from hindsight_langchain import HindsightCallbackHandler

        self.trajectory_id = trajectory_id
        self.engine = engine
        self.scope = scope
        self.task = task
        self.task_type = task_type
        self.tags = list(tags)
        self.anchor = anchor
        self.anchor_key = run_key(anchor)
        self.thread_id = thread_id
        self.roots: list[UUID] = [anchor]
        self.closed = False
        self.block = block
        self.recalled_ids = list(recalled_ids)
        self.model_calls = 0  # model calls seen while a block was expected
        self.seen_calls = 0  # of those, the ones whose prompt had the block
        self.recorded = False  # the recalled ids were handed to the writer already
        self.continuation = False  # the part after a resume of a run paused elsewhere
        self.lock = threading.RLock()
        self.handler = HindsightCallbackHandler(
            engine.memory,
            tenant_id=scope.tenant_id,
            namespace=scope.namespace,
            task_type=task_type,
            tags=tags,
            _attach=False,
        )

    def recalled(self, block: str, ids: Sequence[str]) -> None:
        """Note the block the recall node put into the prompt and its experience ids."""
        with self.lock:
            self.block, self.recalled_ids = block, list(ids)

    def forward(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Pass one callback to the handler (runs of later roots re-parented to the anchor)."""
        with self.lock:
            if self.closed:
                return
            if self.block and method in ("on_chat_model_start", "on_llm_start") and len(args) > 1:
                prompt = args[1]
                flat = [m for batch in prompt for m in batch] if method[3] == "c" else prompt
                self.model_calls += 1
                self.seen_calls += block_in(self.block, flat)
            if len(self.roots) > 1:  # runs of a resume hang under the first root
                parent = kwargs.get("parent_run_id")
                if parent is not None and parent != self.anchor and parent in self.roots:
                    kwargs = {**kwargs, "parent_run_id": self.anchor}
            dispatch(self.handler, method, args, kwargs)

    def custom(self, name: str, data: Any) -> None:
        """Add a ``custom`` event (``metadata.name``: ``interrupt``, ``resume``)."""
        with self.lock:
            if not self.closed:
                self.handler.custom(self.anchor, name, data)

    @property
    def missed_calls(self) -> int:
        """Model calls that did not receive the recalled block."""
        return self.model_calls - self.seen_calls

    def attributable(self) -> list[str]:
        """The recalled experience ids to record as recalled by this run now: those of a
        block a model call received, once."""
        with self.lock:
            if self.recorded or not self.seen_calls:
                return []
            self.recorded = True
            return list(self.recalled_ids)

    def snapshot(self) -> Trajectory | None:
        """What was captured so far, without taking it (the run goes on after a resume)."""
        with self.lock:
            if self.closed:
                return None
            try:
                return self.handler.snapshot(self.anchor, trajectory_id=self.trajectory_id)
            except Exception as exc:
                self.engine.fail(f"could not snapshot trajectory {self.trajectory_id}", exc)
                return None

    def close_later(self) -> Callable[[], Trajectory | None] | None:
        """:meth:`close` in two steps: now the capture is closed (its later callbacks are
        dropped) and its events taken out of the handler, open tool calls closed; the returned
        callable builds and validates the trajectory (off the agent's path: the background
        writer calls it; ``None`` from it as from :meth:`close`). ``None`` when already
        taken."""
        tid = self.trajectory_id
        with self.lock:
            if self.closed:
                return None
            self.closed = True
            try:
                group = self.handler.detach_group(self.anchor, trajectory_id=tid)
            except Exception as exc:
                self.engine.fail(f"could not take the events of trajectory {tid}", exc)
                group = None

        def build() -> Trajectory | None:
            if group is None:
                return None
            try:
                return self.handler.trajectory_of(group)
            except Exception as exc:
                self.engine.fail(f"could not take the events of trajectory {tid}", exc)
                return None

        return build

    def close(self) -> Trajectory | None:
        """Take what was captured (``None`` when already taken or nothing was captured); the
        trajectory's later callbacks are dropped."""
        with self.lock:
            if self.closed:
                return None
            self.closed = True
            try:
                return self.handler.detach(self.anchor, trajectory_id=self.trajectory_id)
            except Exception as exc:
                tid = self.trajectory_id
                self.engine.fail(f"could not take the events of trajectory {tid}", exc)
                return None


@dataclass(eq=False, slots=True)
class _Root:
    """A root run in flight (``live`` until it ends or is forgotten)."""

    run_id: UUID
    thread_id: str | None
    capture: TrajectoryCapture | None = None
    interrupted: bool = False
    interrupts: list[Any] = field(default_factory=list)
    log: list[tuple[str, tuple[Any, ...], dict[str, Any]]] | None = None
    open_runs: OrderedDict[Any, tuple[str, tuple[Any, ...], dict[str, Any]]] = field(
        default_factory=OrderedDict
    )
    key: Any = None
    live: bool = True

    def __post_init__(self) -> None:
        self.key = run_key(self.run_id)


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
        self._runs: dict[Any, _Root] = {}  # run_key(run id) -> its root run
        self._roots: OrderedDict[Any, _Root] = OrderedDict()  # root run key -> root run
        self._threads: OrderedDict[str, TrajectoryCapture] = OrderedDict()
        self.finalize: Callable[[TrajectoryCapture, str], None] = _store

    # -- bookkeeping ----------------------------------------------------------------------
    @staticmethod
    def _log(root: _Root, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Keep a callback of an unclaimed resumed root (lock held)."""
        if root.capture is None and root.log is not None:
            if len(root.log) < MAX_LOGGED_CALLBACKS:
                root.log.append((method, args, kwargs))
            else:
                root.log = None

    def _start(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        run_id: UUID = kwargs["run_id"]
        parent: UUID | None = kwargs.get("parent_run_id")
        key = run_key(run_id)
        abandoned = None
        resumed: Any = None
        with self._lock:
            if parent is None:
                metadata: Mapping[str, Any] = kwargs.get("metadata") or {}
                thread = metadata.get("thread_id")
                root = _Root(run_id, str(thread) if thread is not None else None)
                inputs = args[1] if len(args) > 1 else kwargs.get("inputs")
                resume = method == "on_chain_start" and _is_resume_input(inputs)
                if root.thread_id is not None and root.thread_id in self._threads:
                    paused = self._threads[root.thread_id]
                    if resume:
                        root.capture = paused  # a resume continues the paused trajectory
                        paused.roots.append(run_id)
                        resumed = paused
                    else:
                        abandoned = self._threads.pop(root.thread_id)
                elif resume and root.thread_id is not None:
                    root.log = []  # paused elsewhere: kept until the reflect node claims it
                self._roots[key] = root
                self._evict()
            else:
                found = self._runs.get(run_key(parent))
                if found is None or not found.live:
                    return  # a run we never saw the start of (router registered mid-run)
                root = found
            self._runs[key] = root
            root.open_runs[key] = (method, args, kwargs)
            self._log(root, method, args, kwargs)
            capture = root.capture
        if abandoned is not None:
            self.finalize(abandoned, "abandoned")
        if resumed is not None:
            resumed.custom("resume", {"value": resume_value(inputs)})
        if capture is not None and parent is not None and key != capture.anchor_key:
            capture.forward(method, args, kwargs)

    def _end(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        run_id = kwargs["run_id"]
        key = run_key(run_id)
        with self._lock:
            root = self._runs.pop(key, None)
            if root is None or not root.live:
                return
            root.open_runs.pop(key, None)
            error = args[0] if method in _ERRORS and args else kwargs.get("error")
            if method in _ERRORS and _is_bubble_up(error):
                root.interrupted = True
                for value in interrupt_values(error):
                    if not any(value is known for known in root.interrupts):
                        root.interrupts.append(value)
            is_root = key == root.key
            if is_root:
                self._roots.pop(key, None)
                root.live = False
                for child in root.open_runs:
                    self._runs.pop(child, None)
            else:
                self._log(root, method, args, kwargs)
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
        else:  # paused at an interrupt (or ended before the reflect node): kept for a resume
            if root.interrupted:
                capture.custom("interrupt", {"values": root.interrupts})
            _pause(capture)

    def _other(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """A callback that neither starts nor ends a run (``on_custom_event``)."""
        with self._lock:
            root = self._runs.get(run_key(kwargs["run_id"]))
            if root is None or not root.live:
                return
            self._log(root, method, args, kwargs)
            capture = root.capture
        if capture is not None and not capture.closed:
            capture.forward(method, args, kwargs)

    def _evict(self) -> None:
        """Forget the oldest unclaimed roots beyond :data:`MAX_LIVE_ROOTS` (lock held)."""
        while len(self._roots) > MAX_LIVE_ROOTS:
            victim = next((r for r in self._roots.values() if r.capture is None), None)
            if victim is None:
                break
            self._roots.pop(victim.key)
            victim.live = False
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
        ``make(root_run_id, thread_id)`` (the runs already open are replayed into it; for a
        resumed root followed since its start, every callback it made). ``None`` when the
        router never saw ``run_id`` (callbacks disabled for this run)."""
        overflow: list[TrajectoryCapture] = []
        with self._lock:
            root = self._runs.get(run_key(run_id))
            if root is None or not root.live:
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
            resumed = root.log is not None
            replay = root.log if resumed else list(root.open_runs.values())
            root.log = None
            capture.continuation = resumed
            capture.lock.acquire()
        try:
            for method, args, kwargs in replay:  # the handler notes a resumed root's resume
                capture.forward(method, args, kwargs)
        finally:
            capture.lock.release()
        for old in overflow:
            self.finalize(old, "abandoned")
        return capture

    def capture_for(self, run_id: UUID) -> TrajectoryCapture | None:
        """The capture of the root run ``run_id`` belongs to (``None`` when unclaimed)."""
        with self._lock:
            root = self._runs.get(run_key(run_id))
            return root.capture if root is not None and root.live else None

    def take(self, capture: TrajectoryCapture) -> Trajectory | None:
        """Close ``capture`` and return what it captured (see :meth:`TrajectoryCapture.close`)."""
        self._release(capture)
        return capture.close()

    def take_later(self, capture: TrajectoryCapture) -> Callable[[], Trajectory | None] | None:
        """Close ``capture`` now, build what it captured later
        (:meth:`TrajectoryCapture.close_later`)."""
        self._release(capture)
        return capture.close_later()

    def open_captures(self) -> list[TrajectoryCapture]:
        """The paused trajectories waiting for a resume."""
        with self._lock:
            return [c for c in self._threads.values() if not c.closed]

    def pause_all(self, engine: Engine | None = None) -> int:
        """Hand every paused trajectory (of ``engine``'s memory; all when ``None``) to the
        writer as a paused part; they stay open for a resume. Returns how many."""
        captures = [
            c for c in self.open_captures() if engine is None or c.engine.writer is engine.writer
        ]
        for capture in captures:
            _pause(capture)
        return len(captures)

    def close_all(self, timeout: float = 5.0) -> int:
        """At process exit: :meth:`pause_all`, then wait at most ``timeout`` seconds for the
        writers (a memory closed later, or at its next open, stores what is left)."""
        captures = self.open_captures()
        self.pause_all()
        for writer in {id(c.engine.writer): c.engine for c in captures}.values():
            writer.wait(timeout)
        return len(captures)


def _forwarder(method: str, kind: str) -> Any:
    """A callback method that hands ``method``'s arguments to ``CaptureRouter.<kind>``; the
    router's own errors are logged, never raised into the graph."""

    step = getattr(CaptureRouter, kind)

    def callback(self: CaptureRouter, *args: Any, **kwargs: Any) -> None:
        try:
            step(self, method, args, kwargs)
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
}


_WARNED: weakref.WeakSet[Engine] = weakref.WeakSet()  # engines that warned already


def _warn_unseen(capture: TrajectoryCapture) -> None:
    """One warning per engine when model calls did not receive the recalled block."""
    if not capture.missed_calls or capture.engine in _WARNED:
        return
    _WARNED.add(capture.engine)
    log.warning(
        "hindsight: the recalled experiences did not reach the model in %d of %d call(s) of "
        "trajectory %s: a node between the recall node and the model replaced the system "
        "message (or its hindsight block); those lessons are not credited or blamed for this "
        "run. Keep the tail of the system message the recall node wrote",
        capture.missed_calls,
        capture.model_calls,
        capture.trajectory_id,
    )


def _hand_over(capture: TrajectoryCapture, traj: Trajectory) -> Any:
    """Give ``traj`` to the memory's background writer (merged into a part stored before;
    the recalled experiences a model call received recorded as recalled by it)."""
    _warn_unseen(capture)
    return capture.engine.submit(
        traj, capture.thread_id, merge=True, recalled=capture.attributable()
    )


def _pause(capture: TrajectoryCapture) -> None:
    """Store what ``capture`` holds so far as a paused part (never blocks)."""
    from hindsight_langgraph._trajectory import assemble

    try:
        part = capture.snapshot()
        if part is None and capture.closed:
            return
        traj = assemble(
            capture, part, outcome=Outcome.UNKNOWN, metadata=_seen_metadata(capture, paused=True)
        )
    except Exception as exc:
        capture.engine.fail(f"could not store paused trajectory {capture.trajectory_id}", exc)
        return
    _hand_over(capture, traj)


def _seen_metadata(capture: TrajectoryCapture, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = dict(extra)
    if capture.missed_calls:
        meta["recall_not_seen_calls"] = capture.missed_calls
    return meta


def _store(capture: TrajectoryCapture, reason: str) -> None:
    """Store ``capture`` (the run did not reach the reflect node) through the background
    writer: a failure ends as ``failure``, the rest as ``incomplete``."""
    from hindsight_langgraph._trajectory import assemble

    try:
        part = capture.close()
        outcome = Outcome.FAILURE if reason == "error" else Outcome.UNKNOWN
        traj = assemble(
            capture,
            part,
            outcome=outcome,
            incomplete=reason != "error",
            reason=_REASONS[reason],
            metadata=_seen_metadata(capture),
        )
    except Exception as exc:
        capture.engine.fail(f"could not store trajectory {capture.trajectory_id}", exc)
        return
    _hand_over(capture, traj)


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
    engine: Engine,
    scope: Scope,
    *,
    task: str,
    task_type: str | None,
    tags: Sequence[str],
    trajectory_id: Callable[[], str],
    block: str = "",
    recalled_ids: Sequence[str] = (),
) -> TrajectoryCapture | None:
    """Claim the graph run the calling node is part of: its capture (the open one when the
    run already has a trajectory: re-entry, resume), or ``None`` when callbacks are off.
    ``trajectory_id()`` gives the id of a new trajectory; ``block`` / ``recalled_ids``: what a
    recall made before (in another process) put into the prompt."""
    run_id = _node_run_id(config)
    if run_id is None:
        return None

    def make(anchor: UUID, thread_id: str | None) -> TrajectoryCapture:
        return TrajectoryCapture(
            trajectory_id(),
            engine,
            scope,
            task=task,
            task_type=task_type,
            tags=tags,
            anchor=anchor,
            thread_id=thread_id,
            block=block,
            recalled_ids=recalled_ids,
        )

    return router().claim(run_id, make)


def capture_of(config: RunnableConfig | None) -> TrajectoryCapture | None:
    """The capture of the graph run the calling node is part of (``None`` when unclaimed)."""
    run_id = _node_run_id(config)
    return router().capture_for(run_id) if run_id is not None else None
