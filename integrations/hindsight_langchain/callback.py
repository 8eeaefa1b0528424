"""LangChain callback handlers that capture any run as one trajectory per root run
(docs/integrations/langchain.md).

``config={"callbacks": [HindsightCallbackHandler(memory, tenant_id="acme")]}`` on any runnable,
chain, agent or LangGraph graph. Callbacks become structured events
(docs/integrations/langchain.md#what-is-captured); when the root run ends the trajectory is stored
and its review queued by the engine.

Capture is cheap: events are plain dicts appended under a lock, with no I/O. When a root run
ends, its events go to the memory's background writer (:mod:`hindsight.capture.writer`), which
builds the trajectory and stores it (``handler.wait()`` waits for that), so the agent's answer
is not held up by the write; ``Memory.close()`` drains it, and what it could not store waits in
the memory's unsaved area for the next open.

Interrupts (docs/integrations/langchain.md#interrupts-and-human-approval): a root run on a LangGraph
thread that stops at ``interrupt()`` (e.g. ``HumanInTheLoopMiddleware``) is stored at once as a
*paused* part (unreviewed) and kept open on its ``thread_id``; the next root run on that thread with
a ``Command(resume=...)`` input continues the same trajectory (the pause and the resume are
``custom`` events), in this process or, through the stored paused part, in another one. A fresh
input on a paused thread stores the paused run as ``incomplete``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.runnables.config import var_child_runnable_config

from hindsight import AsyncMemory, Memory, Outcome, Provenance, Trajectory
from hindsight.capture.outcome import detect_outcome
from hindsight.capture.unsaved import PendingWrite
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
from hindsight_langchain._seen import (
    NO_RESUME,
    RECALL_EVENT,
    block_in,
    interrupt_values,
    is_interrupt,
    resume_value,
)
from hindsight_langchain._tree import Group, Run, RunTree

__all__ = ["AsyncHindsightCallbackHandler", "HindsightCallbackHandler"]

_MAX_DEPTH = 1000  # parents followed up from a run (a cycle cannot loop forever)

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
    around the call, and its callback manager names the real parent
    (docs/integrations/langchain.md#never-breaking-the-host).
    """
    config = var_child_runnable_config.get()
    if not config:
        return None
    parent = getattr(config.get("callbacks"), "parent_run_id", None)
    return parent if isinstance(parent, UUID) and parent != run_id else None


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
        write_wait: float,
    ) -> None:
        self.engine = Engine(memory, review=review, write_wait=write_wait)
        self.scope = Scope.build(tenant_id, namespace, task_type, tags)
        self.outcome = outcome
        self.source = Provenance(source)
        self.tree = RunTree(max_chars=max_chars, orphan_timeout=orphan_timeout)
        self.paused: dict[str, Group] = {}  # thread id -> its run paused at an interrupt
        self.lock = threading.Lock()

    def _parent(self, run_id: UUID, parent_run_id: UUID | None) -> UUID | None:
        """``parent_run_id``, or for a run reported as a root, the open run of this tree the
        LangChain context places it in (see :func:`_ambient_parent`)."""
        if parent_run_id is not None:
            return parent_run_id
        ambient = _ambient_parent(run_id)
        if ambient is None:
            return None
        run = self.tree.get(ambient)
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
            thread = (metadata or {}).get("thread_id") if parent_run_id is None else None
            resume = resume_value(inputs) if thread is not None else NO_RESUME
            paused = self.paused.pop(str(thread), None) if thread is not None else None
            if paused is not None and resume is not NO_RESUME:
                run = self.tree.reopen(paused, run_id, name=name, metadata=metadata)
                paused.buffer.custom("interrupt", {"values": paused.interrupts}, None)
                paused.buffer.custom("resume", {"value": resume}, None)
                paused.interrupts = []
                return done
            if paused is not None:  # a fresh input: the paused run was abandoned
                paused.abandoned = True
                done.append(paused)
            run = self.tree.start(run_id, parent_run_id, "chain", name=name, metadata=metadata)
            if parent_run_id is None:
                group = run.group
                group.thread_id = str(thread) if thread is not None else None
                group.buffer.user_messages(user_texts_from_inputs(inputs))
                if resume is not NO_RESUME:  # paused in another process (or before a restart)
                    group.resumed_from, group.merge = group.thread_id, True
                    group.buffer.custom("resume", {"value": resume}, None)
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

    def _pause(self, group: Group) -> bool:
        """At the end of a root run that stopped at an interrupt on a thread: keep ``group``
        open for the resume and snapshot it as a paused part (True); False without a thread
        (nothing can resume it: it is stored as it is)."""
        if group.thread_id is None or not group.buffer.metadata.pop("interrupted", False):
            return False
        group.merge = True
        group.paused = self.trajectory(group, paused=True)
        self.paused[group.thread_id] = group
        return True

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
            if is_interrupt(error):
                run.group.buffer.metadata["interrupted"] = True
                for value in interrupt_values(error):
                    if not any(value is seen for seen in run.group.interrupts):
                        run.group.interrupts.append(value)
            else:
                below = functools.partial(self._inside, run.run_id)
                run.group.buffer.error(error, run.anchor, at=run_id, below=below, run=run.name)
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
            _saw_block(run.group, prompt)
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
            _saw_block(run.group, prompts)
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
                at=run_id,
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
            if is_interrupt(error):  # interrupt() inside the tool: it runs again on resume
                buffer = run.group.buffer
                buffer.open_calls.pop(run.event_id, None)
                buffer.events = [e for e in buffer.events if e["event_id"] != run.event_id]
                buffer.metadata["interrupted"] = True
                return self._end(run)
            name = run.name or _name(None, kwargs, "tool")
            run.group.buffer.tool_error(
                run.event_id, error, name=name, at=run_id, **self._unmatched(run)
            )
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
            run.group.buffer.tool_error(
                run.event_id, error, name=run.name, at=run_id, kind="retriever"
            )
            if run.parent is None:
                run.group.error = error
            return self._end(run)

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> list[Group]:
        with self.lock:
            group, anchor = self.tree.group_of(run_id)
            if name == RECALL_EVENT and isinstance(data, Mapping):
                # HindsightRetriever.as_block(): what it put into the prompt, checked against
                # the model calls that follow (only a block the model saw is attributed)
                group.recall_block = str(data.get("block") or "")
                group.recall_ids = [str(i) for i in data.get("experience_ids") or ()]
                data = {"experience_ids": group.recall_ids}
            group.buffer.custom(str(name), data, anchor)
        return []

    # -- helpers ----------------------------------------------------------------------
    @staticmethod
    def _latency(run: Run) -> float:
        return (time.perf_counter() - run.started) * 1000.0

    @staticmethod
    def _unmatched(run: Run) -> dict[str, Any]:
        return {"unmatched_end": True} if run.metadata.get("unmatched_end") else {}

    def _inside(self, outer: UUID, run_id: UUID) -> bool:
        """True when ``run_id`` is ``outer`` or runs inside it (lock held)."""
        for _ in range(_MAX_DEPTH):
            if run_id == outer:
                return True
            run = self.tree.get(run_id)
            if run is None or run.parent is None:
                return False
            run_id = run.parent
        return True  # deeper than any real run tree: taken as inside (the same error)

    def _end(self, run: Run) -> list[Group]:
        group = self.tree.end(run)
        if group is None:
            return []
        self._pause(group)
        return [group]

    # -- finishing --------------------------------------------------------------------
    def trajectory(
        self, group: Group, *, incomplete: bool = False, paused: bool = False
    ) -> Trajectory | None:
        """The trajectory of a finished group (None, logged and counted, when it cannot be
        built, e.g. no tenant); ``paused``: a snapshot of a group that goes on after a resume
        (its buffer is left unchanged)."""
        try:
            scope = self.scope.resolve(group.metadata)
            if scope.tenant_id is None:
                raise ValueError(
                    "no tenant: pass tenant_id= to the handler or "
                    "config={'metadata': {'hindsight_tenant_id': ...}} to the run"
                )
            buffer = group.buffer
            outcome: Outcome | None = Outcome.UNKNOWN
            if group.error is not None:
                outcome = Outcome.FAILURE
            elif group.has_output and not paused:
                answer = final_text(group.output)
                if answer.strip():
                    buffer.add(EventType.FINAL_ANSWER, answer)
                try:
                    if self.outcome is None:
                        outcome = None
                    else:
                        outcome = judge_outcome(self.outcome, group.output)
                except Exception as exc:
                    self.engine.fail("the outcome callable failed", exc)
            meta: dict[str, Any] = {"source": "langchain", **Scope.context(group.metadata)}
            if paused:
                meta["paused"] = True
            if group.root is not None:
                meta["root_run_id"] = str(group.root)
                meta["root_name"] = group.root_name
            else:
                meta["orphan_of_run_id"] = str(group.orphan_of)
            if group.late_for:
                meta["late_for_trajectory"] = group.late_for
            if (incomplete or group.open_runs > 0 or group.abandoned) and not paused:
                meta["incomplete"] = True
            if group.error is not None:
                meta["error"] = f"{type(group.error).__name__}: {group.error}"[:500]
            if len(group.roots) > 1:
                meta["root_run_ids"] = [str(r) for r in group.roots]
            traj = buffer.build(
                scope,
                outcome=outcome or Outcome.UNKNOWN,
                source=self.source,
                metadata=meta,
                close_open=not paused,
            )
            if outcome is None and not meta.get("incomplete"):
                traj = traj.model_copy(update={"outcome": detect_outcome(traj)})
            return traj
        except Exception as exc:
            self.engine.fail(f"could not build trajectory {group.buffer.trajectory_id}", exc)
            return None

    def resolve_resumed(self, group: Group) -> str | None:
        """For a run resumed from another process: the id of the paused part it continues
        (looked up in the memory, on the writer thread), which becomes the group's id."""
        thread_id = group.resumed_from
        if thread_id is None:
            return None
        scope = self.scope.resolve(group.metadata)
        found = None
        if scope.tenant_id is not None:
            found = self.engine.paused_trajectory(thread_id, scope.tenant_id, scope.namespace)
        with self.lock:
            if group.resumed_from is None:  # resolved meanwhile
                return group.buffer.trajectory_id
            group.resumed_from = None
            if found is not None:
                group.buffer.trajectory_id = found
            return found

    def write_of(
        self, group: Group, *, incomplete: bool = False
    ) -> tuple[Trajectory, Any, PendingWrite] | None:
        """What to store for a finished group (called on the writer thread)."""
        self.resolve_resumed(group)
        traj = self.trajectory(group, incomplete=incomplete)
        if traj is None:
            return None
        key = group.roots[0] if group.roots else None
        recalled = tuple(group.recall_ids) if group.recall_seen else ()
        missed = group.recall_calls - group.recall_seen
        if group.recall_block and missed:
            meta = {**traj.metadata, "recall_not_seen_calls": missed}
            traj = traj.model_copy(update={"metadata": meta})
        return traj, key, self.engine.write(traj, merge=group.merge, recalled=recalled)

    def pause_build(self, group: Group) -> Any:
        """A builder (for the writer thread) of the paused part snapshot at the pause."""
        snapshot, group.paused = group.paused, None

        def build() -> tuple[Trajectory, Any, PendingWrite] | None:
            if snapshot is None:
                return None
            traj = snapshot
            found = self.resolve_resumed(group)
            if found is not None and found != traj.id:
                events = [e.model_copy(update={"trajectory_id": found}) for e in traj.events]
                traj = traj.model_copy(update={"id": found, "events": events})
            key = group.roots[0] if group.roots else None
            return traj, key, self.engine.write(traj, merge=True)

        return build

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


def _saw_block(group: Group, prompt: Sequence[Any]) -> None:
    """Count a model call of ``group`` against the recalled block it should carry."""
    if group.recall_block:
        group.recall_calls += 1
        group.recall_seen += block_in(group.recall_block, prompt)


_DOC_ARGS = """
    Args:
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            :class:`hindsight.client.HindsightClient` / ``AsyncHindsightClient`` of a
            ``hindsight serve`` (the API key decides the tenant;
            docs/integrations/langchain.md#point-at-a-server).
        tenant_id: the tenant of every run, unless a run's ``config["metadata"]`` has
            ``hindsight_tenant_id`` (or ``tenant_id``); one of the two is required to store.
        namespace, task_type, tags: defaults, overridden per run by ``hindsight_namespace``,
            ``hindsight_task_type`` and ``hindsight_tags`` in ``config["metadata"]``.
        outcome: ``final_output -> True | False | Outcome | None`` (None: unknown); without
            it the default detector decides (:func:`hindsight.capture.outcome.detect_outcome`:
            an exception that left the run, or an error or a tool error the run never got
            past, is a failure, a final answer a success).
            Known outcomes are attributed to what the run recalled (``record_outcome``).
        review: queue the post-hoc review of each stored trajectory (default True).
        source: provenance of the runs (default ``user``,
            docs/security.md#layer-2-provenance-trust).
        max_chars: event content is clipped to this many characters (8000).
        orphan_timeout: seconds before runs whose parent never appeared are stored on their
            own (30); ``flush()`` stores them at once.
        write_wait: seconds the end of a root run waits for its write (default 0: never; the
            memory's background writer stores it, ``wait()`` waits for it).

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
        write_wait: float = 0.0,
        _attach: bool = True,
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
            write_wait=write_wait,
        )
        if _attach:  # not for the per-run handlers hindsight_langgraph drives itself
            self._capture.engine.attach(self)
            _LIVE.add(self)

    def _submit(self, groups: list[Group], *, incomplete: bool = False) -> None:
        capture = self._capture
        engine = capture.engine
        for group in groups:
            if group.paused is not None:
                future = engine.submit_later(capture.pause_build(group))
            else:
                future = engine.submit_later(
                    lambda g=group: capture.write_of(g, incomplete=incomplete)  # type: ignore[misc]
                )
            if engine.write_wait > 0:
                engine.end(future)

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
        stored again before the next write (and kept in the memory's unsaved area when the
        memory closes first)."""
        return self._capture.engine.unsaved

    @property
    def last_trajectory_id(self) -> str | None:
        """Id of the trajectory handed to the writer last (for ``memory.record_outcome(id,
        success, tenant_id=...)``); None before the first root run ended. It is written in the
        background: :meth:`wait` before reading it back."""
        return self._capture.engine.last_trajectory_id

    @property
    def trajectory_ids(self) -> Mapping[str, str]:
        """Root run id (str) -> trajectory id, for the last 1000 root runs. The trajectory
        id of a root run is its run id, so ``config={"run_id": uuid}`` fixes it upfront."""
        return self._capture.engine.trajectory_ids

    def wait(self, timeout: float | None = 30.0) -> bool:
        """Block until the trajectories of finished root runs are stored (they are written
        by the memory's background writer, off the agent's path); False when ``timeout``
        seconds passed first (writing goes on)."""
        return self._capture.engine.wait(timeout)

    def memory_closing(self) -> None:
        """Called by ``Memory.close()``: hand over the orphan groups now (runs still open
        are handed over when they end; a closed memory keeps them in its unsaved area)."""
        self._submit(self._capture.take(everything=False))

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

    def snapshot(self, run_id: UUID, *, trajectory_id: str) -> Trajectory | None:
        """What the open root run ``run_id`` captured so far, as a paused trajectory
        (``metadata.paused``), without taking it out of the handler (it goes on after a
        resume); ``None`` when it is not an open root run of this handler."""
        capture = self._capture
        with capture.lock:
            run = capture.tree.get(run_id)
            if run is None or run.parent is not None or run.group.root != run_id:
                return None
            group = run.group
            saved, group.buffer.trajectory_id = group.buffer.trajectory_id, trajectory_id
            try:
                return capture.trajectory(group, paused=True)
            finally:
                group.buffer.trajectory_id = saved

    def custom(self, run_id: UUID, name: str, data: Any) -> None:
        """Add a ``custom`` event (``metadata.name``) to the run ``run_id`` belongs to."""
        capture = self._capture
        with capture.lock:
            group, anchor = capture.tree.group_of(run_id)
            group.buffer.custom(name, data, anchor)

    def detach(self, run_id: UUID, *, trajectory_id: str | None = None) -> Trajectory | None:
        """Take the root run ``run_id`` out of the handler now, *without* storing it, and
        return what was captured so far as a trajectory: its events in capture order (tool
        calls still open get an ``incomplete`` failed result), outcome ``unknown``, no final
        answer (the run has not ended). For callers that finish runs themselves: the reflect
        node of hindsight_langgraph relies on it. ``trajectory_id``: the id the
        trajectory and its events get (default: the root run id). ``None`` when ``run_id`` is
        not an open root run of this handler, or the trajectory cannot be built (logged,
        counted)."""
        group = self.detach_group(run_id, trajectory_id=trajectory_id)
        return None if group is None else self.trajectory_of(group)

    def detach_group(self, run_id: UUID, *, trajectory_id: str | None = None) -> Group | None:
        """The first half of :meth:`detach`: the root run ``run_id``'s captured group, taken
        out of the handler (the caller owns it; no later callback reaches it), its open tool
        calls closed now; :meth:`trajectory_of` builds it later (off the agent's path)."""
        capture = self._capture
        with capture.lock:
            group = capture.tree.detach(run_id)
            if group is None:
                return None
            if trajectory_id is not None:
                group.buffer.trajectory_id = trajectory_id
            group.buffer.close_open()
        return group

    def trajectory_of(self, group: Group) -> Trajectory | None:
        """The second half of :meth:`detach`: the trajectory of a group :meth:`detach_group`
        took (``None``, logged and counted, when it cannot be built)."""
        return self._capture.trajectory(group)


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


def dispatch(handler: _HandlerBase, event: str, args: Any, kwargs: Any) -> None:
    """Call ``handler``'s callback ``event`` with ``args`` and ``kwargs`` (what its method
    does, without the method's frame: the LangGraph capture router forwards every callback of
    a claimed run this way). Failures are logged and counted, never raised."""
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
        dispatch(self, event, args, kwargs)

    method.__name__ = method.__qualname__ = event
    return method


def _async_method(event: str) -> Any:
    async def method(self: AsyncHindsightCallbackHandler, *args: Any, **kwargs: Any) -> None:
        dispatch(self, event, args, kwargs)

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
