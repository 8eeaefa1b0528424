"""LangChain callback handlers that capture any run as one trajectory per root run (issue 6).

``config={"callbacks": [HindsightCallbackHandler(memory, tenant_id="acme")]}`` on any
runnable, chain, agent or LangGraph graph. Callbacks become structured events (MISSION S1);
when the root run ends the trajectory is stored and its review queued by the engine.

Capture is cheap: events are plain dicts appended under a lock, with no I/O. When a root run
ends, its events go to a background writer thread that builds the trajectory and stores it
(``handler.wait()`` waits for that), so the agent's answer is not held up by the write.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.runnables.config import var_child_runnable_config

from hindsight import AsyncMemory, Memory, Outcome, Provenance, Trajectory
from hindsight.models import EventStatus, EventType
from hindsight.service.client import AsyncHindsightClient, HindsightClient
from hindsight_langchain._buffer import OutcomeFn, judge_outcome
from hindsight_langchain._convert import (
    DEFAULT_MAX_CHARS,
    final_text,
    latest_user_texts,
    messages_in,
    model_output,
    system_text,
    user_texts_from_inputs,
)
from hindsight_langchain._engine import Engine
from hindsight_langchain._scope import Scope
from hindsight_langchain._tree import Group, Run, RunTree
from hindsight_langchain._writer import Writer

__all__ = ["AsyncHindsightCallbackHandler", "HindsightCallbackHandler"]

ORPHAN_TIMEOUT = 30.0
"""Seconds an orphan group (runs whose parent was never reported) may stay idle before it is
stored on its own; :meth:`HindsightCallbackHandler.flush` stores it at once."""


def _name(serialized: Mapping[str, Any] | None, kwargs: Mapping[str, Any], default: str) -> str:
    name = kwargs.get("name")
    if isinstance(name, str) and name:
        return name
    if serialized:
        if isinstance(serialized.get("name"), str) and serialized["name"]:
            return str(serialized["name"])
        ident = serialized.get("id")
        if isinstance(ident, list) and ident:
            return str(ident[-1])
    return default


def _ambient_parent(run_id: UUID) -> UUID | None:
    """The run LangChain's context says we are inside of, if any.

    Some runnables start a child with the caller's config instead of the child config
    (``RunnableWithFallbacks`` in langchain-core 1.8 does), so the child reports
    ``parent_run_id=None``; the child config is still in the context variable LangChain sets
    around the call, and its callback manager names the real parent (case C13).
    """
    config = var_child_runnable_config.get()
    if not config:
        return None
    parent = getattr(config.get("callbacks"), "parent_run_id", None)
    return parent if isinstance(parent, UUID) and parent != run_id else None


def _is_interrupt(exc: BaseException) -> bool:
    # LangGraph's interrupt()/GraphBubbleUp ends a run on purpose: not a failure.
    return any(cls.__name__ == "GraphBubbleUp" for cls in type(exc).__mro__)


class _Capture:
    """What both handlers share: the run tree, the scope and the engine (thread-safe)."""

    def __init__(
        self,
        memory: Memory | AsyncMemory | HindsightClient | AsyncHindsightClient,
        *,
        tenant_id: str | None,
        namespace: str,
        task_type: str | None,
        tags: Sequence[str],
        outcome: OutcomeFn | None,
        review: bool,
        source: Provenance | str,
        max_chars: int,
        orphan_timeout: float,
    ) -> None:
        self.engine = Engine(memory, review=review)
        self.scope = Scope.build(tenant_id, namespace, task_type, tags)
        self.outcome = outcome
        self.source = Provenance(source)
        self.tree = RunTree(max_chars=max_chars, orphan_timeout=orphan_timeout)
        self.lock = threading.Lock()

    def _parent(self, run_id: UUID, parent_run_id: UUID | None) -> UUID | None:
        """``parent_run_id``, or for a run reported as a root, the open run of this tree the
        LangChain context places it in (see :func:`_ambient_parent`)."""
        if parent_run_id is not None:
            return parent_run_id
        ambient = _ambient_parent(run_id)
        if ambient is None:
            return None
        run = self.tree.runs.get(ambient)
        return ambient if run is not None and run.open and run.kind != "placeholder" else None

    # -- one method per callback; each returns the groups that are finished ---------------
    def on_chain_start(
        self,
        serialized: Mapping[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Group]:
        with self.lock:
            parent_run_id = self._parent(run_id, parent_run_id)
            done = self.tree.sweep() if parent_run_id is None else []
            name = _name(serialized, kwargs, "chain")
            run = self.tree.start(run_id, parent_run_id, "chain", name=name, metadata=metadata)
            if parent_run_id is None:
                run.group.buffer.user_messages(user_texts_from_inputs(inputs))
        return done

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> list[Group]:
        with self.lock:
            run = self.tree.run_for(run_id, parent_run_id, "chain")
            buffer = run.group.buffer
            if buffer.awaiting_replies:
                buffer.unexecuted_replies(messages_in(outputs))
            if run.parent is None:
                run.group.output, run.group.has_output = outputs, True
            return self._end(run)

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> list[Group]:
        with self.lock:
            run = self.tree.run_for(run_id, parent_run_id, "chain")
            if _is_interrupt(error):
                run.group.buffer.metadata["interrupted"] = True
            else:
                run.group.buffer.error(error, run.anchor, run=run.name)
                if run.parent is None:
                    run.group.error = error
            return self._end(run)

    def on_chat_model_start(
        self,
        serialized: Mapping[str, Any] | None,
        messages: list[list[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Group]:
        prompt = [m for batch in messages for m in batch]
        with self.lock:
            parent_run_id = self._parent(run_id, parent_run_id)
            done = self.tree.sweep() if parent_run_id is None else []
            name = str((metadata or {}).get("ls_model_name") or _name(serialized, kwargs, "model"))
            run = self.tree.start(run_id, parent_run_id, "llm", name=name, metadata=metadata)
            buffer = run.group.buffer
            buffer.user_messages(latest_user_texts(prompt), run.parent_anchor)
            run.extra = buffer.system_prompt(system_text(prompt))
            run.extra["input_messages"] = len(prompt)
        return done

    def on_llm_start(
        self,
        serialized: Mapping[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Group]:
        with self.lock:
            parent_run_id = self._parent(run_id, parent_run_id)
            done = self.tree.sweep() if parent_run_id is None else []
            name = str((metadata or {}).get("ls_model_name") or _name(serialized, kwargs, "llm"))
            run = self.tree.start(run_id, parent_run_id, "llm", name=name, metadata=metadata)
            if parent_run_id is None:
                run.group.buffer.user_messages(p for p in prompts[:1] if p.strip())
        return done

    def on_llm_end(
        self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> list[Group]:
        out = model_output(response)
        with self.lock:
            run = self.tree.run_for(run_id, parent_run_id, "llm")
            run.group.buffer.model_end(
                out,
                event_id=run.event_id,
                parent_id=run.parent_anchor,
                latency_ms=self._latency(run),
                metadata={"model": run.name, **run.extra},
            )
            if run.parent is None:
                run.group.output, run.group.has_output = response, True
            return self._end(run)

    def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> list[Group]:
        with self.lock:
            run = self.tree.run_for(run_id, parent_run_id, "llm")
            run.group.buffer.model_error(
                error,
                event_id=run.event_id,
                parent_id=run.parent_anchor,
                latency_ms=self._latency(run),
                metadata={"model": run.name, **run.extra},
            )
            if run.parent is None:
                run.group.error = error
            return self._end(run)

    def on_tool_start(
        self,
        serialized: Mapping[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        inputs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Group]:
        call_id = kwargs.get("tool_call_id")
        call_id = str(call_id) if call_id else None
        with self.lock:
            parent_run_id = self._parent(run_id, parent_run_id)
            done = self.tree.sweep() if parent_run_id is None else []
            name = _name(serialized, kwargs, "tool")
            run = self.tree.start(
                run_id, parent_run_id, "tool", name=name, metadata=metadata, tool_call_id=call_id
            )
            run.group.buffer.tool_start(
                name,
                inputs if inputs is not None else input_str,
                event_id=run.event_id,
                parent_id=run.parent_anchor,
                tool_call_id=call_id,
            )
            if not run.open:  # its end was reported first: the call is not pending
                run.group.buffer.open_calls.pop(run.event_id, None)
        return done

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> list[Group]:
        with self.lock:
            run = self.tree.run_for(run_id, parent_run_id, "tool")
            name = run.name or _name(None, kwargs, "tool")
            run.group.buffer.tool_end(run.event_id, output, name=name, **self._unmatched(run))
            if run.parent is None:
                run.group.output, run.group.has_output = output, True
            return self._end(run)

    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> list[Group]:
        with self.lock:
            run = self.tree.run_for(run_id, parent_run_id, "tool")
            name = run.name or _name(None, kwargs, "tool")
            run.group.buffer.tool_error(run.event_id, error, name=name, **self._unmatched(run))
            if run.parent is None:
                run.group.error = error
            return self._end(run)

    def on_retriever_start(
        self,
        serialized: Mapping[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Group]:
        with self.lock:
            parent_run_id = self._parent(run_id, parent_run_id)
            done = self.tree.sweep() if parent_run_id is None else []
            name = _name(serialized, kwargs, "retriever")
            run = self.tree.start(run_id, parent_run_id, "retriever", name=name, metadata=metadata)
            run.group.buffer.tool_start(
                name,
                {"query": query},
                event_id=run.event_id,
                parent_id=run.parent_anchor,
                tool_call_id=None,
                metadata={"kind": "retriever"},
            )
            if not run.open:
                run.group.buffer.open_calls.pop(run.event_id, None)
        return done

    def on_retriever_end(
        self, documents: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> list[Group]:
        with self.lock:
            run = self.tree.run_for(run_id, parent_run_id, "retriever")
            run.group.buffer.tool_end(
                run.event_id,
                list(documents),
                name=run.name,
                status=EventStatus.SUCCESS,
                kind="retriever",
            )
            if run.parent is None:
                run.group.output, run.group.has_output = documents, True
            return self._end(run)

    def on_retriever_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> list[Group]:
        with self.lock:
            run = self.tree.run_for(run_id, parent_run_id, "retriever")
            run.group.buffer.tool_error(run.event_id, error, name=run.name, kind="retriever")
            if run.parent is None:
                run.group.error = error
            return self._end(run)

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> list[Group]:
        with self.lock:
            group, anchor = self.tree.group_of(run_id)
            group.buffer.custom(str(name), data, anchor)
        return []

    # -- helpers ----------------------------------------------------------------------
    @staticmethod
    def _latency(run: Run) -> float:
        return (time.perf_counter() - run.started) * 1000.0

    @staticmethod
    def _unmatched(run: Run) -> dict[str, Any]:
        return {"unmatched_end": True} if run.metadata.get("unmatched_end") else {}

    def _end(self, run: Run) -> list[Group]:
        group = self.tree.end(run)
        return [group] if group is not None else []

    # -- finishing --------------------------------------------------------------------
    def trajectory(self, group: Group, *, incomplete: bool = False) -> Trajectory | None:
        """The trajectory of a finished group (None, logged and counted, when it cannot be
        built, e.g. no tenant)."""
        try:
            scope = self.scope.resolve(group.metadata)
            if scope.tenant_id is None:
                raise ValueError(
                    "no tenant: pass tenant_id= to the handler or "
                    "config={'metadata': {'hindsight_tenant_id': ...}} to the run"
                )
            buffer = group.buffer
            outcome = Outcome.UNKNOWN
            if group.error is not None:
                outcome = Outcome.FAILURE
            elif group.has_output:
                answer = final_text(group.output)
                if answer.strip():
                    buffer.add(EventType.FINAL_ANSWER, answer)
                try:
                    outcome = judge_outcome(self.outcome, group.output)
                except Exception as exc:
                    self.engine.fail("the outcome callable failed", exc)
            meta: dict[str, Any] = {"source": "langchain", **Scope.context(group.metadata)}
            if group.root is not None:
                meta["root_run_id"] = str(group.root)
                meta["root_name"] = group.root_name
            else:
                meta["orphan_of_run_id"] = str(group.orphan_of)
            if group.late_for:
                meta["late_for_trajectory"] = group.late_for
            if incomplete or group.open_runs > 0:
                meta["incomplete"] = True
            if group.error is not None:
                meta["error"] = f"{type(group.error).__name__}: {group.error}"[:500]
            return buffer.build(scope, outcome=outcome, source=self.source, metadata=meta)
        except Exception as exc:
            self.engine.fail(f"could not build trajectory {group.buffer.trajectory_id}", exc)
            return None

    def store(self, groups: list[Group], *, incomplete: bool = False) -> None:
        for group in groups:
            traj = self.trajectory(group, incomplete=incomplete)
            if traj is not None:
                self.engine.store(traj, group.root)

    def take(self, *, everything: bool) -> list[Group]:
        with self.lock:
            if everything:
                return self.tree.drain()
            timeout, self.tree.orphan_timeout = self.tree.orphan_timeout, 0.0
            try:
                return self.tree.sweep()
            finally:
                self.tree.orphan_timeout = timeout


_EVENTS = (
    "on_chain_start",
    "on_chain_end",
    "on_chain_error",
    "on_chat_model_start",
    "on_llm_start",
    "on_llm_end",
    "on_llm_error",
    "on_tool_start",
    "on_tool_end",
    "on_tool_error",
    "on_retriever_start",
    "on_retriever_end",
    "on_retriever_error",
    "on_custom_event",
)


_DOC_ARGS = """
    Args:
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            :class:`hindsight.client.HindsightClient` / ``AsyncHindsightClient`` of a
            ``hindsight serve`` (issue 9; the API key decides the tenant).
        tenant_id: the tenant of every run, unless a run's ``config["metadata"]`` has
            ``hindsight_tenant_id`` (or ``tenant_id``); one of the two is required to store.
        namespace, task_type, tags: defaults, overridden per run by ``hindsight_namespace``,
            ``hindsight_task_type`` and ``hindsight_tags`` in ``config["metadata"]``.
        outcome: ``final_output -> True | False | Outcome | None``; without it (or when it
            returns None) a run that raised is a failure and any other run ``unknown``.
            Known outcomes are attributed to what the run recalled (``record_outcome``).
        review: queue the post-hoc review of each stored trajectory (default True).
        source: provenance of the runs (default ``user``, MISSION S8).
        max_chars: event content is clipped to this many characters (8000).
        orphan_timeout: seconds before runs whose parent never appeared are stored on their
            own (30); ``flush()`` stores them at once.

    Raises:
        UsageError: ``memory`` is not one of those, or an argument is invalid.
        TenantRequiredError: ``tenant_id`` is given but empty.

    The handler never raises into the host application (``raise_error = False``): its own
    failures are logged on the ``hindsight.langchain`` logger and counted in ``errors``.
"""


class _HandlerBase:
    """Construction, counters and close shared by both handlers."""

    raise_error = False

    def __init__(
        self,
        memory: Memory | AsyncMemory | HindsightClient | AsyncHindsightClient,
        *,
        tenant_id: str | None = None,
        namespace: str = "default",
        task_type: str | None = None,
        tags: Sequence[str] = (),
        outcome: OutcomeFn | None = None,
        review: bool = True,
        source: Provenance | str = Provenance.USER,
        max_chars: int = DEFAULT_MAX_CHARS,
        orphan_timeout: float = ORPHAN_TIMEOUT,
    ) -> None:
        self._capture = _Capture(
            memory,
            tenant_id=tenant_id,
            namespace=namespace,
            task_type=task_type,
            tags=tags,
            outcome=outcome,
            review=review,
            source=source,
            max_chars=max_chars,
            orphan_timeout=orphan_timeout,
        )
        self._writer = Writer()
        _LIVE.add(self)

    def _submit(self, groups: list[Group], *, incomplete: bool = False) -> None:
        if not groups:
            return
        capture = self._capture
        self._writer.submit(lambda: capture.store(groups, incomplete=incomplete))

    @property
    def errors(self) -> int:
        """How many of the handler's own failures were logged (never raised)."""
        return self._capture.engine.errors

    @property
    def last_error(self) -> str | None:
        """The text of the last such failure (None when there was none)."""
        return self._capture.engine.last_error

    @property
    def stored(self) -> int:
        """How many trajectories this handler stored."""
        return self._capture.engine.stored

    @property
    def unsaved(self) -> list[Trajectory]:
        """Trajectories whose store failed (e.g. the server was down), oldest first; they are
        stored again at the next end of run (at most 1000 kept)."""
        return [traj for traj, _ in list(self._capture.engine.unsaved.values())]

    @property
    def last_trajectory_id(self) -> str | None:
        """Id of the trajectory stored last (for ``memory.record_outcome(id, success,
        tenant_id=...)``); None before the first root run ended."""
        return self._capture.engine.last_trajectory_id

    @property
    def trajectory_ids(self) -> Mapping[str, str]:
        """Root run id (str) -> trajectory id, for the last 1000 root runs. The trajectory
        id of a root run is its run id, so ``config={"run_id": uuid}`` fixes it upfront."""
        return self._capture.engine.trajectory_ids

    def wait(self, timeout: float | None = 30.0) -> bool:
        """Block until the trajectories of finished root runs are stored (they are written
        by a background thread, off the agent's path); False when ``timeout`` seconds passed
        first (writing goes on)."""
        return self._writer.wait(timeout)

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Store the orphan groups that have no open run now (without waiting for
        ``orphan_timeout``), then :meth:`wait`."""
        self._submit(self._capture.take(everything=False))
        return self.wait(timeout)

    def close(self, timeout: float | None = 30.0) -> bool:
        """Store everything still captured, open runs included (marked ``incomplete``),
        then :meth:`wait`. Called at interpreter exit too."""
        self._submit(self._capture.take(everything=True), incomplete=True)
        return self.wait(timeout)

    def detach(self, run_id: UUID, *, trajectory_id: str | None = None) -> Trajectory | None:
        """Take the root run ``run_id`` out of the handler now, *without* storing it, and
        return what was captured so far as a trajectory: its events in capture order (tool
        calls still open get an ``incomplete`` failed result), outcome ``unknown``, no final
        answer (the run has not ended). For callers that finish runs themselves: the reflect
        node of hindsight_langgraph (issue 7) relies on it. ``trajectory_id``: the id the
        trajectory and its events get (default: the root run id). ``None`` when ``run_id`` is
        not an open root run of this handler, or the trajectory cannot be built (logged,
        counted)."""
        capture = self._capture
        with capture.lock:
            group = capture.tree.detach(run_id)
        if group is None:
            return None
        if trajectory_id is not None:
            group.buffer.trajectory_id = trajectory_id
        return capture.trajectory(group)


class HindsightCallbackHandler(_HandlerBase, BaseCallbackHandler):
    __doc__ = (
        "Captures every run it sees as one trajectory per root run (sync handler; safe in "
        "executor threads, which is where LangChain runs it under async runs).\n" + _DOC_ARGS
    )


class AsyncHindsightCallbackHandler(_HandlerBase, AsyncCallbackHandler):
    __doc__ = (
        "Captures every run it sees as one trajectory per root run (async handler: its "
        "methods run on the event loop and never block it).\n" + _DOC_ARGS
    )

    async def aflush(self, timeout: float | None = 30.0) -> bool:
        """:meth:`flush` without blocking the event loop."""
        return await asyncio.to_thread(self.flush, timeout)

    async def aclose(self, timeout: float | None = 30.0) -> bool:
        """:meth:`close` without blocking the event loop."""
        return await asyncio.to_thread(self.close, timeout)


def _dispatch(handler: _HandlerBase, event: str, args: Any, kwargs: Any) -> None:
    capture = handler._capture
    try:
        groups = getattr(capture, event)(*args, **kwargs)
    except Exception as exc:
        capture.engine.fail(f"{event} failed", exc)
        return
    if groups:
        handler._submit(groups)


def _sync_method(event: str) -> Any:
    def method(self: HindsightCallbackHandler, *args: Any, **kwargs: Any) -> None:
        _dispatch(self, event, args, kwargs)

    method.__name__ = method.__qualname__ = event
    return method


def _async_method(event: str) -> Any:
    async def method(self: AsyncHindsightCallbackHandler, *args: Any, **kwargs: Any) -> None:
        _dispatch(self, event, args, kwargs)

    method.__name__ = method.__qualname__ = event
    return method


for _event in _EVENTS:
    setattr(HindsightCallbackHandler, _event, _sync_method(_event))
    setattr(AsyncHindsightCallbackHandler, _event, _async_method(_event))


_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()


def _close_all_at_exit() -> None:  # pragma: no cover - exercised at interpreter exit
    for handler in list(_LIVE):
        with contextlib.suppress(Exception):
            handler.close(timeout=10.0)


atexit.register(_close_all_at_exit)
