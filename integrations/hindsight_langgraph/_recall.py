"""The recall node: recall with the latest user message, put the block at the system tail."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda

from hindsight import RecallResult, UsageError
from hindsight._ids import new_id
from hindsight_langgraph._capture import TrajectoryCapture, begin_run, router
from hindsight_langgraph._memory import RECALL_TIMEOUT, Engine, engine_for
from hindsight_langgraph._prompt import (
    MessagesMode,
    latest_user_text,
    read_messages,
    system_update,
)
from hindsight_langgraph._scope import Scope, resolve_scope
from hindsight_langgraph._state import RECALLED_KEY, TRAJECTORY_KEY

__all__ = ["RECALL_NODE", "create_recall_node", "tool_names"]

log = logging.getLogger("hindsight.langgraph")

RECALL_NODE = "hindsight_recall"
"""Default name of the recall node (and of its LangChain run)."""


def tool_names(tools: Sequence[Any]) -> list[str]:
    """Names of ``tools``: strings as they are, LangChain tools (anything with ``.name``) by
    name, plain functions by ``__name__``.

    Raises:
        UsageError: an item has no name.
    """
    if isinstance(tools, str):
        tools = [tools]
    names: list[str] = []
    for tool in tools:
        name = tool if isinstance(tool, str) else getattr(tool, "name", None)
        if name is None:
            name = getattr(tool, "__name__", None)
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"tools must be names or tools with a name, got {tool!r:.80}")
        names.append(name)
    return names


class _RecallSpec:
    """The fixed arguments of one recall node."""

    def __init__(self, engine: Engine, **kw: Any) -> None:
        self.engine = engine
        self.messages_key: str = kw["messages_key"]
        self.tenant_id: str | None = kw["tenant_id"]
        self.namespace: str | None = kw["namespace"]
        self.task_type: str | None = kw["task_type"]
        self.tags: list[str] = list(kw["tags"])
        self.tools: list[str] = tool_names(kw["tools"])
        self.top_k: int | None = kw["top_k"]
        self.include_shared: bool = kw["include_shared"]
        self.token_budget: int | None = kw["token_budget"]
        self.recalled_key: str | None = kw["recalled_key"]
        self.trajectory_key: str | None = kw["trajectory_key"]
        self.messages_mode: MessagesMode = kw["messages_mode"]

    def recall_kwargs(self, scope: Scope, trajectory_id: str) -> dict[str, Any]:
        return {
            "tenant_id": scope.tenant_id,
            "namespace": scope.namespace,
            "include_shared": self.include_shared,
            "task_type": self.task_type,
            "tags": self.tags,
            "tools": self.tools,
            "top_k": self.top_k,
            "trajectory_id": trajectory_id,
            "token_budget": self.token_budget,
        }

    def memory_closing(self) -> None:
        """Called by ``Memory.close()``: the paused runs of this memory go to its writer."""
        router().pause_all(self.engine)

    def update(
        self,
        state: Any,
        result: RecallResult | None,
        trajectory_id: str,
        capture: TrajectoryCapture | None,
    ) -> dict[str, Any]:
        messages = read_messages(state, self.messages_key)
        block = result.render() if result is not None else ""
        if capture is not None:
            ids = result.lesson_ids if result is not None else []  # hits and risk checks
            capture.recalled(block if ids else "", ids)
        out: dict[str, Any] = {}
        change = system_update(messages, block, self.messages_mode)
        if change is not None:
            out[self.messages_key] = change
        if self.recalled_key:
            out[self.recalled_key] = result.hits_json() if result is not None else []
        if self.trajectory_key:
            out[self.trajectory_key] = trajectory_id
        return out


def _query(spec: _RecallSpec, state: Any) -> str | None:
    """The recall query, or ``None`` when there is nothing to recall with."""
    text = latest_user_text(read_messages(state, spec.messages_key))
    if text or spec.task_type:
        return text
    return None


def _start(
    spec: _RecallSpec, state: Any, config: RunnableConfig
) -> tuple[Scope, str, str | None, TrajectoryCapture | None]:
    scope = resolve_scope(config, tenant_id=spec.tenant_id, namespace=spec.namespace)
    messages = read_messages(state, spec.messages_key)
    task = latest_user_text(messages)
    capture = None
    try:
        capture = begin_run(
            config,
            spec.engine,
            scope,
            task=task,
            task_type=spec.task_type,
            tags=spec.tags,
            trajectory_id=new_id,
        )
    except Exception as exc:  # capture is an aid: the run goes on without it
        spec.engine.fail("could not start capturing this run", exc)
    trajectory_id = capture.trajectory_id if capture is not None else new_id()
    return scope, trajectory_id, _query(spec, state), capture


def create_recall_node(
    memory: Any,
    *,
    messages_key: str = "messages",
    tenant_id: str | None = None,
    namespace: str | None = None,
    task_type: str | None = None,
    tags: Sequence[str] = (),
    tools: Sequence[Any] = (),
    top_k: int | None = None,
    include_shared: bool = True,
    token_budget: int | None = None,
    recalled_key: str | None = RECALLED_KEY,
    trajectory_key: str | None = TRAJECTORY_KEY,
    messages_mode: MessagesMode = "add_messages",
    recall_timeout: float = RECALL_TIMEOUT,
    name: str = RECALL_NODE,
) -> RunnableLambda[Any, dict[str, Any]]:
    """A LangGraph node that recalls experience into the tail of the system message.

    Use it as the first node of a run (:func:`hindsight_langgraph.add_hindsight` wires it
    after ``START``). On each run it:

    1. starts the run's trajectory (a new UUID, written to ``state[trajectory_key]``) and
       captures the rest of the graph run with hindsight's LangChain callback handler;
    2. recalls with the text of the latest human message (plus ``task_type``, ``tags`` and
       ``tools``); without a non-blank human message it recalls by ``task_type`` only, or not
       at all;
    3. appends the rendered block (delimited by :data:`hindsight.BLOCK_START`) to the **tail**
       of the first system message, creating one at the head when there is none, and replacing
       an earlier hindsight block instead of stacking another
       (docs/concepts.md#injection-at-the-tail);
    4. writes the hits to ``state[recalled_key]`` (JSON-safe dicts with their score breakdown).

    Which model calls of the run received the block is checked in what LangChain reports the
    model was called with: only a run whose model saw the lessons credits or blames them
    (another node replacing the system message loses them; a warning says so).

    Args:
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            ``HindsightClient`` / ``AsyncHindsightClient`` of a ``hindsight serve``.
        messages_key: the state key of the conversation.
        tenant_id, namespace: fixed scope; else taken from the runtime context, then from
            ``config["configurable"]`` (see :func:`~hindsight_langgraph._scope.resolve_scope`).
        task_type: exact task_type filter of the recall and task_type of the trajectory.
        tags: context tags (recall boost +0.05 each, docs/concepts.md#recall) and trajectory tags.
        tools: the agent's tools (names or tool objects); their names steer recall.
        top_k: hits to recall (1..1000; default the memory's ``top_k``, 5).
        include_shared: also recall from the shared namespace
            (docs/concepts.md#tenants-and-namespaces).
        token_budget: budget of the rendered block in estimated tokens (default 2000).
        recalled_key, trajectory_key: state keys written (``None``: not written).
        messages_mode: ``"add_messages"`` (the channel has LangGraph's reducer, as in
            ``MessagesState``) or ``"replace"`` (a plain list channel).
        recall_timeout: seconds a recall may take (5; 0: no limit) before the run goes on
            without it; after a failure recall is skipped for 30 s (one warning).
        name: the node's run name.

    Returns:
        A ``RunnableLambda`` with a sync and an async implementation; add it with
        ``builder.add_node("hindsight_recall", node)``.

    Raises:
        UsageError: (at once) invalid ``top_k`` (1..1000), ``task_type``, ``tags``, ``tools``,
            ``messages_mode`` or ``memory``.
        TenantRequiredError: (when the node runs) no tenant from any source, or an empty one.
        KeyError: (when the node runs) the state has no ``messages_key``.

    A store or embedder failure during recall, a closed memory or a recall slower than
    ``recall_timeout`` is logged (``hindsight.langgraph``) and the run goes on without
    experience: memory never raises into the graph.
    """
    if messages_mode not in ("add_messages", "replace"):
        raise UsageError(
            f"messages_mode must be 'add_messages' or 'replace', got {messages_mode!r}"
        )
    if not isinstance(messages_key, str) or not messages_key:
        raise UsageError("messages_key must be a non-empty string")
    if top_k is not None and (
        isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000
    ):
        raise UsageError(f"top_k must be an integer from 1 to 1000, got {top_k!r}")
    if task_type is not None and (not isinstance(task_type, str) or not task_type.strip()):
        raise UsageError(
            f"task_type must be a non-empty string or None, got {task_type!r:.60}",
            field="task_type",
        )
    if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
        raise UsageError(f"tags must be a list of strings, got {tags!r:.60}", field="tags")
    router()  # attach the capture hook now: graph runs configure their callbacks at start
    spec = _RecallSpec(
        engine_for(memory, recall_timeout=recall_timeout),
        messages_key=messages_key,
        tenant_id=tenant_id,
        namespace=namespace,
        task_type=task_type,
        tags=tags,
        tools=tools,
        top_k=top_k,
        include_shared=include_shared,
        token_budget=token_budget,
        recalled_key=recalled_key,
        trajectory_key=trajectory_key,
        messages_mode=messages_mode,
    )

    spec.engine.attach(spec)

    def recall(state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, trajectory_id, query, capture = _start(spec, state, config)
        result = None
        if query is not None:
            result = spec.engine.recall(query, **spec.recall_kwargs(scope, trajectory_id))
        return spec.update(state, result, trajectory_id, capture)

    async def arecall(state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, trajectory_id, query, capture = _start(spec, state, config)
        result = None
        if query is not None:
            result = await spec.engine.arecall(query, **spec.recall_kwargs(scope, trajectory_id))
        return spec.update(state, result, trajectory_id, capture)

    return RunnableLambda(recall, afunc=arecall, name=name)
