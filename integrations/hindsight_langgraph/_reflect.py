"""The reflect node: finish the run's trajectory, hand it to the background writer, with its
outcome (the ``outcome`` callable, a state key, or the default detector)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from hindsight import Outcome, Trajectory, UsageError
from hindsight._ids import new_id
from hindsight.capture.outcome import detect_outcome, judge
from hindsight.models import utcnow
from hindsight_langgraph._capture import (
    TrajectoryCapture,
    _hand_over,
    _seen_metadata,
    _warn_unseen,
    begin_run,
    capture_of,
    router,
)
from hindsight_langgraph._memory import Engine, engine_for
from hindsight_langgraph._prompt import block_of, latest_user_text, read_messages
from hindsight_langgraph._scope import resolve_scope
from hindsight_langgraph._state import RECALLED_KEY, TRAJECTORY_KEY
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
    def __init__(self, engine: Engine, **kw: Any) -> None:
        self.engine = engine
        self.messages_key: str = kw["messages_key"]
        self.outcome: OutcomeFn | None = kw["outcome"]
        self.outcome_key: str | None = kw["outcome_key"]
        self.tenant_id: str | None = kw["tenant_id"]
        self.namespace: str | None = kw["namespace"]
        self.task_type: str | None = kw["task_type"]
        self.tags: list[str] = list(kw["tags"])
        self.trajectory_key: str | None = kw["trajectory_key"]
        self.recalled_key: str | None = kw["recalled_key"]

    def verdict(self, state: Any) -> Outcome | None:
        """The outcome the application gives (``None``: the default detector decides)."""
        if self.outcome is not None:
            try:
                verdict = self.outcome(state)
            except Exception as exc:  # the application's callable: the run still counts
                self.engine.fail("the outcome callable raised; the outcome is unknown", exc)
                return Outcome.UNKNOWN
            return judge(verdict)
        if self.outcome_key is not None:
            return judge(_get(state, self.outcome_key))
        return None

    def _resumed_here(
        self, state: Any, config: RunnableConfig, messages: list[BaseMessage]
    ) -> TrajectoryCapture | None:
        """Claim a run resumed in this process after it paused elsewhere (or before a
        restart): same trajectory id (from the state), the block the recall put in the
        prompt then."""
        tid = _get(state, self.trajectory_key) if self.trajectory_key else None
        if not isinstance(tid, str) or not tid:
            return None
        scope = resolve_scope(config, tenant_id=self.tenant_id, namespace=self.namespace)
        hits = _get(state, self.recalled_key) if self.recalled_key else None
        ids = [str(h["id"]) for h in hits or [] if isinstance(h, Mapping) and "id" in h]
        return begin_run(
            config,
            self.engine,
            scope,
            task=latest_user_text(messages),
            task_type=self.task_type,
            tags=self.tags,
            trajectory_id=lambda: tid,
            block=block_of(messages),
            recalled_ids=ids,
        )

    def trajectory(
        self, state: Any, config: RunnableConfig
    ) -> tuple[Trajectory, TrajectoryCapture | None]:
        """Take the run's capture (or rebuild it from the state) as the trajectory to store."""
        verdict = self.verdict(state)
        messages: list[BaseMessage] = read_messages(state, self.messages_key)
        capture = capture_of(config)
        if capture is None or capture.closed:
            capture = self._resumed_here(state, config, messages)
        return self._built(state, config, verdict, messages, capture)

    def _built(
        self,
        state: Any,
        config: RunnableConfig,
        verdict: Outcome | None,
        messages: list[BaseMessage],
        capture: TrajectoryCapture | None,
    ) -> tuple[Trajectory, TrajectoryCapture | None]:
        part = None
        if capture is not None:
            part = router().take(capture)
            info: Any = capture
        else:
            # Nothing captured (callbacks disabled): rebuild the events from the conversation.
            scope = resolve_scope(config, tenant_id=self.tenant_id, namespace=self.namespace)
            tid = _get(state, self.trajectory_key) if self.trajectory_key else None
            thread = ((config or {}).get("configurable") or {}).get("thread_id")
            info = SimpleNamespace(
                trajectory_id=tid if isinstance(tid, str) and tid else new_id(),
                scope=scope,
                task=latest_user_text(messages),
                task_type=self.task_type,
                tags=self.tags,
                roots=[],
                thread_id=str(thread) if thread is not None else None,
            )
        extra = _seen_metadata(capture) if capture is not None else {}
        traj = assemble(
            info,
            part,
            outcome=verdict or Outcome.UNKNOWN,
            answer=final_answer(messages),
            messages=current_turn(messages) if part is None else (),
            metadata=extra,
        )
        if verdict is None:
            traj = traj.model_copy(update={"outcome": detect_outcome(traj)})
        return traj, capture

    def hand_over(self, traj: Trajectory, capture: TrajectoryCapture | None) -> Any:
        if capture is not None:
            return _hand_over(capture, traj)
        return self.engine.submit(traj, traj.metadata.get("thread_id"), merge=True)

    def finish(self, state: Any, config: RunnableConfig) -> Any:
        """Hand the run's trajectory to the writer; returns the write's future (``None``:
        nothing handed). On the agent's path only what depends on the graph's state and
        capture: the verdict, the final answer, the capture closed and its events taken out of
        the handler, the end time, the recalled ids; the writer builds and validates the
        trajectory (:meth:`trajectory`'s, with that end time). A run not captured in this
        process is built here (its tenant is checked at once)."""
        verdict = self.verdict(state)
        messages: list[BaseMessage] = read_messages(state, self.messages_key)
        capture = capture_of(config)
        if capture is None or capture.closed:
            capture = self._resumed_here(state, config, messages)
        if capture is None:
            return self.hand_over(*self._built(state, config, verdict, messages, None))
        take = router().take_later(capture)
        ended_at = utcnow()
        extra = _seen_metadata(capture)
        answer, turn = final_answer(messages), current_turn(messages)
        _warn_unseen(capture)
        recalled = tuple(capture.attributable())
        engine, run = self.engine, capture

        def build() -> tuple[Trajectory, Any, Any] | None:
            try:
                part = take() if take is not None else None
                traj = assemble(
                    run,
                    part,
                    outcome=verdict or Outcome.UNKNOWN,
                    answer=answer,
                    messages=turn if part is None else (),
                    metadata=extra,
                    ended_at=ended_at,
                )
                if verdict is None:
                    traj = traj.model_copy(update={"outcome": detect_outcome(traj)})
            except Exception as exc:
                engine.fail("could not finish this run's trajectory", exc)
                return None
            return traj, run.thread_id, engine.write(traj, merge=True, recalled=recalled)

        return engine.submit_later(build, handed=(run.trajectory_id, run.thread_id))


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
    recalled_key: str | None = RECALLED_KEY,
    review: bool = True,
    write_wait: float = 0.0,
    name: str = REFLECT_NODE,
) -> RunnableLambda[Any, dict[str, Any]]:
    """A LangGraph node that ends the run's trajectory; put it last (before ``END``).

    It takes the events the recall node's capture collected (model calls, tool calls and
    results with their status, errors, pauses and resumes), adds the final answer (the last
    AI message without tool calls) and hands the trajectory to the memory's background writer,
    which stores it, queues its post-hoc review and attributes its outcome to the experiences
    the run's model saw (``record_outcome``: confidence up on success, down on failure,
    docs/concepts.md#experiences-and-confidence). The node does not wait for that unless
    ``write_wait`` says so (``memory.flush()`` does; ``Memory.close()`` drains the writer and
    keeps what it could not write in the unsaved area, stored at the next open).

    A run paused at ``interrupt()`` and resumed, in this process or in another one with a
    checkpointer, is one trajectory: its id is in the graph state (``trajectory_key``) and the
    part stored at the pause is merged with the rest.

    Args:
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            ``HindsightClient`` / ``AsyncHindsightClient`` of a ``hindsight serve``.
        outcome: ``state -> True | False | None`` (or an ``Outcome`` name); wins over
            ``outcome_key``.
        outcome_key: a state key holding ``True`` / ``False`` / ``None`` (or an outcome name).
            Without either, the default detector decides
            (:func:`hindsight.capture.outcome.detect_outcome`: an error or a tool error the run
            never got past is a failure, a final answer a success, else unknown).
        messages_key: the state key of the conversation.
        tenant_id, namespace, task_type, tags: used only when the run was not captured by a
            recall node in this process (resumed after a restart); ``tenant_id`` / ``namespace``
            as in :func:`create_recall_node`.
        trajectory_key, recalled_key: the state keys the recall node wrote.
        review: queue the post-hoc review (default True).
        write_wait: seconds the node waits for the write (default 0: never; a positive bound
            makes a fast store's write done when the node returns).
        name: the node's run name.

    Returns:
        A ``RunnableLambda`` with a sync and an async implementation. It writes no state.

    Raises (when the node runs):
        UsageError: the outcome is not one of the accepted values.
        TenantRequiredError: the run was not captured and no tenant is found.

    Memory never raises into the graph: a store failure or a closed memory is logged
    (``hindsight.langgraph``) and the run waits in the writer or the unsaved area.
    """
    if outcome is not None and not callable(outcome):
        raise UsageError("outcome must be a callable state -> True | False | None")
    if outcome_key is not None and (not isinstance(outcome_key, str) or not outcome_key):
        raise UsageError("outcome_key must be a non-empty string or None")
    spec = _ReflectSpec(
        engine_for(memory, review=review, write_wait=write_wait),
        messages_key=messages_key,
        outcome=outcome,
        outcome_key=outcome_key,
        tenant_id=tenant_id,
        namespace=namespace,
        task_type=task_type,
        tags=tags,
        trajectory_key=trajectory_key,
        recalled_key=recalled_key,
    )

    def build(state: Any, config: RunnableConfig) -> Any:
        try:
            return spec.finish(state, config)
        except (UsageError, KeyError):  # the graph's configuration: say so
            raise
        except Exception as exc:  # memory is an aid: never fail the graph's answer
            spec.engine.fail("could not finish this run's trajectory", exc)
            return None

    def reflect(state: Any, config: RunnableConfig) -> dict[str, Any]:
        future = build(state, config)
        if future is not None:
            spec.engine.end(future)
        return {}

    async def areflect(state: Any, config: RunnableConfig) -> dict[str, Any]:
        future = build(state, config)
        if future is not None:
            await spec.engine.aend(future)
        return {}

    return RunnableLambda(reflect, afunc=areflect, name=name)
