"""The reflect node: finish the run's trajectory, queue its review, attribute the outcome."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from hindsight import HindsightError, NotFoundError, Outcome, Trajectory, UsageError
from hindsight._ids import new_id
from hindsight.capture.outcome import judge
from hindsight_langgraph._capture import capture_of, router
from hindsight_langgraph._memory import MemoryRef, as_memory_ref
from hindsight_langgraph._prompt import latest_user_text, read_messages
from hindsight_langgraph._scope import resolve_scope
from hindsight_langgraph._state import TRAJECTORY_KEY
from hindsight_langgraph._trajectory import assemble, current_turn, final_answer

__all__ = ["REFLECT_NODE", "OutcomeFn", "create_reflect_node", "judge"]

log = logging.getLogger("hindsight.langgraph")

REFLECT_NODE = "hindsight_reflect"
"""Default name of the reflect node (and of its LangChain run)."""

OutcomeFn = Callable[[Any], "bool | str | Outcome | None"]
"""``state -> True | False | None`` (or an :class:`~hindsight.Outcome` / its name)."""

def _get(state: Any, key: str) -> Any:
    if isinstance(state, Mapping):
        return state.get(key)
    return getattr(state, key, None)


class _ReflectSpec:
    def __init__(self, memory: MemoryRef, **kw: Any) -> None:
        self.memory = memory
        self.messages_key: str = kw["messages_key"]
        self.outcome: OutcomeFn | None = kw["outcome"]
        self.outcome_key: str | None = kw["outcome_key"]
        self.tenant_id: str | None = kw["tenant_id"]
        self.namespace: str | None = kw["namespace"]
        self.task_type: str | None = kw["task_type"]
        self.tags: list[str] = list(kw["tags"])
        self.trajectory_key: str | None = kw["trajectory_key"]
        self.review: bool = kw["review"]

    def verdict(self, state: Any) -> Outcome:
        if self.outcome is not None:
            return judge(self.outcome(state))
        if self.outcome_key is not None:
            return judge(_get(state, self.outcome_key))
        return Outcome.UNKNOWN

    def trajectory(self, state: Any, config: RunnableConfig) -> Trajectory:
        """Take the run's capture (or rebuild it from the state) as the trajectory to store."""
        outcome = self.verdict(state)
        messages: list[BaseMessage] = read_messages(state, self.messages_key)
        extra: dict[str, Any] = {}
        capture = capture_of(config)
        part = None
        if capture is not None and not capture.closed:
            part = router().take(capture)
            info: Any = capture
        else:
            # Nothing captured in this process: the run was resumed here after a restart, or
            # callbacks were disabled. Rebuild the events from the conversation.
            scope = resolve_scope(config, tenant_id=self.tenant_id, namespace=self.namespace)
            tid = _get(state, self.trajectory_key) if self.trajectory_key else None
            if tid and self._stored(tid, scope.tenant_id):
                # Its first part was stored already (at the exit of the process that paused
                # it): this part becomes a trajectory of its own that says what it continues.
                extra["continues_trajectory"] = tid
                tid = None
            tid = tid or new_id()
            thread = ((config or {}).get("configurable") or {}).get("thread_id")
            info = SimpleNamespace(
                trajectory_id=tid,
                scope=scope,
                task=latest_user_text(messages),
                task_type=self.task_type,
                tags=self.tags,
                roots=[],
                thread_id=str(thread) if thread is not None else None,
            )
        return assemble(
            info,
            part,
            outcome=outcome,
            answer=final_answer(messages),
            messages=current_turn(messages) if part is None else (),
            metadata=extra,
        )

    def _stored(self, trajectory_id: str, tenant_id: str) -> bool:
        try:
            self.memory.run(self.memory.aio.get_trajectory(trajectory_id, tenant_id=tenant_id))
        except NotFoundError:
            return False
        except HindsightError:
            return False
        return True


def create_reflect_node(
    memory: Any,
    *,
    outcome: OutcomeFn | None = None,
    outcome_key: str | None = None,
    messages_key: str = "messages",
    tenant_id: str | None = None,
    namespace: str | None = None,
    task_type: str | None = None,
    tags: tuple[str, ...] | list[str] = (),
    trajectory_key: str | None = TRAJECTORY_KEY,
    review: bool = True,
    name: str = REFLECT_NODE,
) -> RunnableLambda[Any, dict[str, Any]]:
    """A LangGraph node that ends the run's trajectory; put it last (before ``END``).

    It takes the events the recall node's capture collected (model calls, tool calls and
    results with their status, errors, across interrupts and resumes), adds the final answer
    (the last AI message without tool calls), stores the trajectory and queues its post-hoc
    review, which runs in the memory's background worker: the graph's end is not held up.
    When the run's outcome is known it is attributed to the experiences the run recalled
    (``memory.record_outcome``: confidence +0.05 each on success, -0.10 on failure,
    MISSION S3).

    Args:
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`.
        outcome: ``state -> True | False | None`` (or an ``Outcome`` name); wins over
            ``outcome_key``.
        outcome_key: a state key holding ``True`` / ``False`` / ``None`` (or an outcome name).
            Without either the outcome is ``unknown`` (stored, not attributed).
        messages_key: the state key of the conversation.
        tenant_id, namespace, task_type, tags, trajectory_key: used only when the run was not
            captured by a recall node in this process (resumed after a restart); the events are
            then rebuilt from the conversation.
        review: queue the post-hoc review (default True).
        name: the node's run name.

    Returns:
        A ``RunnableLambda`` with a sync and an async implementation. It writes no state.

    Raises (when the node runs):
        UsageError: the outcome is not one of the accepted values.
        TenantRequiredError: the run was not captured and no tenant is found.

    A store failure is logged (``hindsight.langgraph`` logger, level ERROR) and does not fail
    the graph, whose answer is already given.
    """
    if outcome is not None and not callable(outcome):
        raise UsageError("outcome must be a callable state -> True | False | None")
    if outcome_key is not None and (not isinstance(outcome_key, str) or not outcome_key):
        raise UsageError("outcome_key must be a non-empty string or None")
    spec = _ReflectSpec(
        as_memory_ref(memory),
        messages_key=messages_key,
        outcome=outcome,
        outcome_key=outcome_key,
        tenant_id=tenant_id,
        namespace=namespace,
        task_type=task_type,
        tags=tags,
        trajectory_key=trajectory_key,
        review=review,
    )

    def reflect(state: Any, config: RunnableConfig) -> dict[str, Any]:
        traj = spec.trajectory(state, config)
        try:
            spec.memory.store_episode(traj, review=spec.review)  # on this thread: one insert
            if traj.outcome in (Outcome.SUCCESS, Outcome.FAILURE):
                spec.memory.run(
                    spec.memory.aio.record_outcome(
                        traj.id, traj.outcome is Outcome.SUCCESS, tenant_id=traj.tenant_id
                    )
                )
        except HindsightError:
            log.exception("hindsight: could not store trajectory %s", traj.id)
        return {}

    async def areflect(state: Any, config: RunnableConfig) -> dict[str, Any]:
        traj = spec.trajectory(state, config)
        aio = spec.memory.aio
        try:
            await aio.store_episode(traj, review=spec.review)
            if traj.outcome in (Outcome.SUCCESS, Outcome.FAILURE):
                await aio.record_outcome(
                    traj.id, traj.outcome is Outcome.SUCCESS, tenant_id=traj.tenant_id
                )
        except HindsightError:
            log.exception("hindsight: could not store trajectory %s", traj.id)
        return {}

    return RunnableLambda(reflect, afunc=areflect, name=name)
