"""What the integrations learn from every LangChain run in the process
(docs/integrations/langchain.md#order-with-other-middleware).

**Did the model see the recalled block?** Lessons the model never saw are never credited or
blamed.

Middleware and graph nodes put the block into the prompt, but another middleware or the
application may replace the system message before the model is called. What the model really
received is what LangChain reports in ``on_chat_model_start`` (or ``on_llm_start``). One
process-wide handler, registered with LangChain's configure hook (the mechanism LangSmith
tracing uses, so it is in every callback manager), looks at those prompts while an
:func:`expect` block is active in the calling context (a ``ContextVar``: the model call runs
inside the middleware's ``wrap_model_call``, in the same thread or task), and notes whether the
block was in them. It does nothing outside such a block.

**The end of an agent's run.** The handler knows the parent of every open chain run, so a
middleware can ask, from one of its graph's nodes, which graph run it is in
(:func:`graph_run`) and be called back when that run fails (:func:`on_failure`): an exception
that leaves the agent ends its trajectory, one that another middleware caught (a retry) does
not.

**Pauses and resumes of a thread.** The same handler follows the chain runs that carry a
``thread_id`` (LangGraph copies it into every run's metadata): the root run now running on each
thread, the value of its ``Command(resume=...)`` input, and the values of the interrupts
(``GraphInterrupt``) its runs raised. The middleware reads them (:func:`thread`) to record a
pause and the resume that continued it as events of the one trajectory. Bounded: at most
:data:`MAX_THREADS` threads and :data:`MAX_OPEN_RUNS` open runs are followed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.messages import BaseMessage
from langchain_core.tracers.context import register_configure_hook

__all__ = [
    "NO_RESUME",
    "RECALL_EVENT",
    "Expectation",
    "ThreadRuns",
    "block_in",
    "expect",
    "graph_run",
    "interrupt_values",
    "is_interrupt",
    "on_failure",
    "resume_value",
    "thread",
    "watch",
]

MAX_THREADS = 10_000
MAX_OPEN_RUNS = 100_000

RECALL_EVENT = "hindsight_recall"
"""Name of the custom event :meth:`hindsight_langchain.HindsightRetriever.as_block` dispatches
(``{"block": text, "experience_ids": [...]}``): the callback handler checks the run's model
calls for that block and attributes the run's outcome to those experiences only if one saw it."""

NO_RESUME: Any = object()
"""``ThreadRuns.resume`` of a root run whose input was not a ``Command(resume=...)``."""


def is_interrupt(error: Any) -> bool:
    """LangGraph's control-flow exceptions (``interrupt()``, ``Command(graph=PARENT)``): a run
    that stops on purpose, not a failure."""
    return any(cls.__name__ == "GraphBubbleUp" for cls in type(error).__mro__)


def interrupt_values(error: Any) -> list[Any]:
    """The values passed to ``interrupt(...)`` that a ``GraphInterrupt`` carries."""
    found: list[Any] = []
    for arg in getattr(error, "args", ()) or ():
        items = arg if isinstance(arg, list | tuple) else [arg]
        found.extend(getattr(item, "value", item) for item in items)
    return found


def resume_value(inputs: Any) -> Any:
    """The resume value of a root run's input (``Command(resume=...)``), else
    :data:`NO_RESUME`; ``None`` input (resume without a value) gives ``None``."""
    if inputs is None:
        return None
    try:
        from langgraph.types import Command
    except ImportError:  # pragma: no cover - langgraph is installed with the agents
        return NO_RESUME
    if isinstance(inputs, Command):
        return inputs.resume
    return NO_RESUME


@dataclass(eq=False)
class ThreadRuns:
    """What is known of the runs of one thread: ``root`` (the root run now or last running),
    ``resume`` (its resume value, :data:`NO_RESUME` when it was a fresh input), ``interrupts``
    (values its runs raised) and ``paused_with`` (the previous root's interrupt values)."""

    root: UUID | None = None
    resume: Any = NO_RESUME
    interrupts: list[Any] = field(default_factory=list)
    paused_with: list[Any] = field(default_factory=list)


@dataclass(eq=False)
class Expectation:
    """The model calls made inside one wrapped model call: ``calls`` model starts seen,
    ``seen`` how many of them had ``block`` in their prompt (none is looked for when ``block``
    is empty), ``replies`` the ids of the messages the calls that returned produced,
    ``failed`` the exceptions of those that raised (a retry middleware inside the wrap may
    call the model several times, and return a reply of its own when every call failed)."""

    block: str
    calls: int = 0
    seen: int = 0
    replies: set[str] = field(default_factory=set)
    failed: list[BaseException] = field(default_factory=list)

    @property
    def reached(self) -> bool:
        """True when every model call observed had the block (and there was one)."""
        return self.calls > 0 and self.seen == self.calls


_EXPECTED: ContextVar[Expectation | None] = ContextVar("hindsight_expected_block", default=None)


def _text(message: Any) -> str:
    if isinstance(message, BaseMessage):
        return str(message.text)
    return str(message)


def block_in(block: str, prompt: Sequence[Any]) -> bool:
    """True when the rendered ``block`` is in the text of one of the prompt's messages (or
    prompt strings)."""
    needle = block.strip()
    return bool(needle) and any(needle in _text(m) for m in prompt)


class _Watcher(BaseCallbackHandler):
    """Looks at model prompts while an :class:`Expectation` is active, and follows the chain
    runs of threads and the parent of every open chain run (cheap: a dict entry each)."""

    run_inline = True
    raise_error = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: OrderedDict[UUID, str] = OrderedDict()
        self.threads: OrderedDict[str, ThreadRuns] = OrderedDict()
        # every open chain run -> its parent run (None: a root)
        self.parents: OrderedDict[UUID, UUID | None] = OrderedDict()
        # graph runs -> what to call if they fail (registered by on_failure)
        self.failures: dict[UUID, Callable[[BaseException], None]] = {}

    def _opened(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        self.parents[run_id] = parent_run_id
        if len(self.parents) > MAX_OPEN_RUNS:
            with self._lock:
                while len(self.parents) > MAX_OPEN_RUNS:
                    self.parents.popitem(last=False)

    def _closed(self, run_id: UUID, error: BaseException | None) -> None:
        self.parents.pop(run_id, None)
        if self.failures:
            with self._lock:
                call = self.failures.pop(run_id, None)
            if call is not None and error is not None and not is_interrupt(error):
                call(error)

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._opened(run_id, parent_run_id)
        thread_id = (metadata or {}).get("thread_id")
        if thread_id is None:
            return
        key = str(thread_id)
        with self._lock:
            self._open[run_id] = key
            while len(self._open) > MAX_OPEN_RUNS:
                self._open.popitem(last=False)
            if parent_run_id is not None:
                return
            runs = self.threads.pop(key, None) or ThreadRuns()
            self.threads[key] = runs
            while len(self.threads) > MAX_THREADS:
                self.threads.popitem(last=False)
            runs.paused_with, runs.interrupts = runs.interrupts, []
            runs.root, runs.resume = run_id, resume_value(inputs)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._closed(run_id, None)
        if self._open:
            with self._lock:
                self._open.pop(run_id, None)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._closed(run_id, error)
        if not self._open:
            return
        with self._lock:
            key = self._open.pop(run_id, None)
            runs = self.threads.get(key) if key is not None else None
            if runs is not None and is_interrupt(error):
                for value in interrupt_values(error):
                    if not any(value is seen for seen in runs.interrupts):
                        runs.interrupts.append(value)

    def on_chat_model_start(
        self, serialized: Any, messages: list[list[Any]], **kwargs: Any
    ) -> None:
        exp = _EXPECTED.get()
        if exp is not None:
            exp.calls += 1
            if exp.block:
                exp.seen += block_in(exp.block, [m for batch in messages for m in batch])

    def on_llm_start(self, serialized: Any, prompts: list[str], **kwargs: Any) -> None:
        exp = _EXPECTED.get()
        if exp is not None:
            exp.calls += 1
            if exp.block:
                exp.seen += block_in(exp.block, prompts)

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        exp = _EXPECTED.get()
        if exp is not None:
            for generations in getattr(response, "generations", None) or ():
                for gen in generations:
                    message_id = getattr(getattr(gen, "message", None), "id", None)
                    if message_id:
                        exp.replies.add(str(message_id))

    def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        exp = _EXPECTED.get()
        if exp is not None:
            exp.failed.append(error)


_WATCHER = _Watcher()
_HOOK: ContextVar[_Watcher | None] = ContextVar("hindsight_seen_hook", default=_WATCHER)
_registered = False
_lock = threading.Lock()


def _register() -> None:
    global _registered
    if not _registered:
        with _lock:
            if not _registered:
                register_configure_hook(_HOOK, True)
                _registered = True


def watch() -> None:
    """Start following runs (idempotent; the middleware calls it when it is created, before
    any run it must follow configures its callbacks)."""
    _register()


def graph_run(config: Mapping[str, Any]) -> UUID | None:
    """The run of the graph whose node runs with ``config`` (LangGraph's config of the node:
    ``langgraph.config.get_config()``), when the watcher follows it; else ``None`` (the
    watcher is switched off for this run, or ``config`` is not a node's)."""
    manager = config.get("callbacks")
    if not isinstance(manager, BaseCallbackManager) or manager.parent_run_id is None:
        return None
    if not any(h is _WATCHER for h in manager.handlers):
        return None
    return _WATCHER.parents.get(manager.parent_run_id)


MAX_WATCHED_FAILURES = 10_000
"""Graph runs whose failure is waited for at most (as many as a middleware keeps open
invokes); beyond that the oldest is forgotten (its invoke then ends with the middleware's
own bounds: at its thread's next invoke, its close, or as the oldest of too many)."""


def on_failure(run_id: UUID, call: Callable[[BaseException], None]) -> None:
    """Call ``call(error)`` when the chain run ``run_id`` (from :func:`graph_run`) ends on
    an exception that is not an interrupt (in the thread or loop that raised it); forgotten
    when it ends otherwise. Bounded: at most :data:`MAX_WATCHED_FAILURES` runs wait."""
    with _WATCHER._lock:
        failures = _WATCHER.failures
        failures[run_id] = call
        while len(failures) > MAX_WATCHED_FAILURES:
            failures.pop(next(iter(failures)))


def thread(thread_id: str | None) -> ThreadRuns | None:
    """What is known of the runs of ``thread_id`` (``None`` when nothing is)."""
    if thread_id is None:
        return None
    with _WATCHER._lock:
        return _WATCHER.threads.get(str(thread_id))


@contextmanager
def expect(block: str) -> Iterator[Expectation]:
    """Watch the model calls made inside the ``with`` block (for ``block`` in their prompts,
    unless it is empty)."""
    _register()
    exp = Expectation(block)
    token = _EXPECTED.set(exp)
    try:
        yield exp
    finally:
        _EXPECTED.reset(token)
