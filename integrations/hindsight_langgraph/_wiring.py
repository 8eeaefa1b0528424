"""One call to put the recall and reflect nodes into an existing ``StateGraph``."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypedDict, cast

from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.channels.last_value import LastValue
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from hindsight import UsageError
from hindsight_langgraph._prompt import MessagesMode
from hindsight_langgraph._recall import RECALL_NODE, create_recall_node
from hindsight_langgraph._reflect import REFLECT_NODE, OutcomeFn, create_reflect_node
from hindsight_langgraph._state import RECALLED_KEY, TRAJECTORY_KEY

__all__ = ["add_hindsight"]


def _messages_mode(builder: StateGraph[Any, Any, Any, Any], key: str) -> MessagesMode:
    channel = builder.channels.get(key)
    if channel is None:
        raise UsageError(
            f"the graph state has no {key!r} key: pass messages_key= naming the state key of "
            "the conversation"
        )
    if isinstance(channel, BinaryOperatorAggregate):
        operator = getattr(channel, "operator", None)
        if operator is add_messages or getattr(operator, "__name__", "") == "add_messages":
            return "add_messages"
        raise UsageError(
            f"the state key {key!r} must use LangGraph's add_messages reducer (as in "
            "MessagesState) or no reducer; another reducer cannot replace the system message"
        )
    if isinstance(channel, LastValue):
        return "replace"
    raise UsageError(f"the state key {key!r} has an unsupported channel {type(channel).__name__}")


def _schema(name: str, keys: dict[str, Any]) -> type:
    """A TypedDict declaring ``keys`` (added as channels when the graph lacks them)."""
    return cast(type, TypedDict(name, keys))  # type: ignore[operator]


def _names(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def add_hindsight(
    builder: StateGraph[Any, Any, Any, Any],
    memory: Any,
    *,
    entry: str | None = None,
    exit: str | Sequence[str] | None = None,
    messages_key: str = "messages",
    tenant_id: str | None = None,
    namespace: str | None = None,
    task_type: str | None = None,
    tags: Sequence[str] = (),
    tools: Sequence[Any] = (),
    top_k: int | None = None,
    outcome: OutcomeFn | None = None,
    outcome_key: str | None = None,
    recall_name: str = RECALL_NODE,
    reflect_name: str = REFLECT_NODE,
    review: bool = True,
    write_wait: float = 0.0,
    checks: str | Mapping[str, str] | None = None,
    **recall_options: Any,
) -> StateGraph[Any, Any, Any, Any]:
    """Insert ``START -> recall -> <entry>`` and ``<exit> -> reflect -> END`` into ``builder``.

    Call it after adding your nodes and edges, before ``compile()``:

    * every edge (and conditional branch) leaving ``START`` now leaves the recall node, and
      ``START -> recall`` is added; ``entry`` names the first node when the graph has no
      ``START`` edge yet;
    * every edge into ``END``, and every conditional route to ``END`` (``tools_condition``
      included), now goes to the reflect node, and ``reflect -> END`` is added; ``exit`` names
      nodes that should end the run when they have no route to ``END`` yet.

    The state keys ``recalled_experiences`` and ``trajectory_id`` are added as channels when
    the graph's state lacks them (they stay out of the graph's output unless its state has
    them). A node that ends the run with ``Command(goto=END)`` bypasses the reflect node: route
    it to ``reflect_name`` instead.

    Args:
        builder: the ``StateGraph`` (not compiled). Its state must have ``messages_key`` with
            the ``add_messages`` reducer or without reducer.
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            ``HindsightClient`` / ``AsyncHindsightClient`` of a ``hindsight serve``.
        entry, exit: see above.
        messages_key, tenant_id, namespace, task_type, tags, tools, top_k: for both nodes,
            see :func:`create_recall_node`.
        outcome, outcome_key, review, write_wait: see :func:`create_reflect_node`.
        recall_name, reflect_name: node names.
        checks: decision-time risk checks (docs/checks.md) in every ``ToolNode``
            of the graph that has no tool-call wrapper of its own: ``"advise"``,
            ``"confirm"`` (a human-in-the-loop interrupt), ``"off"`` or a mode per
            severity; ``None`` (default) wires nothing. Needs ``tenant_id``.
        **recall_options: more :func:`create_recall_node` arguments (``include_shared``,
            ``token_budget``, ``recalled_key``, ``trajectory_key``, ``recall_timeout``).

    Returns:
        ``builder`` (for ``add_hindsight(builder, memory).compile(...)``).

    Raises:
        UsageError: a node name is taken, ``entry``/``exit`` names no node, the graph has no
            entry or no way to end, or the messages key is missing or has another reducer.
    """
    if not isinstance(builder, StateGraph):
        raise UsageError(f"builder must be a langgraph StateGraph, got {type(builder).__name__}")
    for name in (recall_name, reflect_name):
        if name in builder.nodes:
            raise UsageError(f"the graph already has a node named {name!r}")
    exits = _names(exit)
    for name in [*([entry] if entry else []), *exits]:
        if name not in builder.nodes:
            raise UsageError(f"add_hindsight: the graph has no node named {name!r}")
    if checks is not None:
        _wire_checks(builder, memory, tenant_id, namespace, task_type, checks)
    mode = _messages_mode(builder, messages_key)
    recalled_key = recall_options.get("recalled_key", RECALLED_KEY)
    trajectory_key = recall_options.get("trajectory_key", TRAJECTORY_KEY)

    recall = create_recall_node(
        memory,
        messages_key=messages_key,
        tenant_id=tenant_id,
        namespace=namespace,
        task_type=task_type,
        tags=tags,
        tools=tools,
        top_k=top_k,
        messages_mode=mode,
        name=recall_name,
        **recall_options,
    )
    reflect = create_reflect_node(
        memory,
        outcome=outcome,
        outcome_key=outcome_key,
        messages_key=messages_key,
        tenant_id=tenant_id,
        namespace=namespace,
        task_type=task_type,
        tags=tuple(tags),
        trajectory_key=trajectory_key,
        recalled_key=recalled_key,
        review=review,
        write_wait=write_wait,
        name=reflect_name,
    )
    recall_keys: dict[str, Any] = {messages_key: list}
    if recalled_key:
        recall_keys[recalled_key] = list
    if trajectory_key:
        recall_keys[trajectory_key] = str | None
    reflect_keys = dict(recall_keys)
    if outcome_key:
        reflect_keys[outcome_key] = Any

    _rewire_entry(builder, recall_name, entry)
    _rewire_exit(builder, reflect_name, exits)
    builder.add_node(recall_name, recall, input_schema=_schema("HindsightRecallInput", recall_keys))
    builder.add_node(
        reflect_name, reflect, input_schema=_schema("HindsightReflectInput", reflect_keys)
    )
    builder.add_edge(START, recall_name)
    builder.add_edge(reflect_name, END)
    return builder


def _rewire_entry(builder: StateGraph[Any, Any, Any, Any], recall: str, entry: str | None) -> None:
    moved = {(recall, end) for start, end in builder.edges if start == START}
    builder.edges = {e for e in builder.edges if e[0] != START} | moved
    if START in builder.branches:
        builder.branches[recall] = builder.branches.pop(START)
    if entry is not None and (recall, entry) not in builder.edges:
        builder.edges.add((recall, entry))
    if not any(start == recall for start, _ in builder.edges) and recall not in builder.branches:
        raise UsageError(
            "add_hindsight: the graph has no entry node; add an edge from START or pass entry="
        )


def _rewire_exit(builder: StateGraph[Any, Any, Any, Any], reflect: str, exits: list[str]) -> None:
    reached = False
    edges = set()
    for start, end in builder.edges:
        if end == END:
            end, reached = reflect, True
        edges.add((start, end))
    builder.edges = edges
    waiting = set()
    for starts, end in builder.waiting_edges:
        if end == END:
            end, reached = reflect, True
        waiting.add((starts, end))
    builder.waiting_edges = waiting
    for source, branches in builder.branches.items():
        for name, spec in list(branches.items()):
            ends: dict[Hashable, str]
            if spec.ends is None:
                # Any node or END may be returned: map each name to itself, END to reflect.
                ends = {n: n for n in builder.nodes if n != source}
                ends[source] = source
                ends[END] = reflect
                reached = True
            else:
                ends = {k: (reflect if v == END else v) for k, v in spec.ends.items()}
                reached = reached or any(v == END for v in spec.ends.values())
            branches[name] = spec._replace(ends=ends)
    for name in exits:
        routes = any(start == name and end == reflect for start, end in builder.edges) or any(
            spec.ends is not None and reflect in spec.ends.values()
            for spec in builder.branches.get(name, {}).values()
        )
        if not routes:
            builder.edges.add((name, reflect))
            reached = True
    if not reached:
        raise UsageError(
            "add_hindsight: no node leads to END; add your exit edges first or pass exit="
        )


def _wire_checks(
    builder: StateGraph[Any, Any, Any, Any],
    memory: Any,
    tenant_id: str | None,
    namespace: str | None,
    task_type: str | None,
    checks: str | Mapping[str, str],
) -> None:
    """Put a :class:`~hindsight_langchain.ToolCallChecks` in front of every ``ToolNode``."""
    from hindsight_langchain._gate import ToolCallChecks

    if tenant_id is None:
        raise UsageError("add_hindsight(checks=...) needs tenant_id")
    gate = ToolCallChecks(
        memory, tenant_id=tenant_id, namespace=namespace or "default", task_type=task_type,
        checks=checks,
    )  # fmt: skip
    for spec in builder.nodes.values():
        node = spec.runnable
        if not isinstance(node, ToolNode):
            continue
        if node._wrap_tool_call is None and node._awrap_tool_call is None:
            node._wrap_tool_call = gate
            node._awrap_tool_call = gate.acall
