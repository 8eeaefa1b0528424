"""One trajectory per run under LangGraph's features: checkpointers and threads, interrupts
and resume, parallel branches, subgraphs, streaming, retries, errors."""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any

import pytest
from hindsight_langgraph import HindsightState
from hindsight_langgraph._capture import router
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.types import Command, RetryPolicy, Send, interrupt
from langgraph_support import (
    END,
    START,
    TENANT,
    agent_graph,
    ai,
    call,
    closing,  # noqa: F401  (autouse: closes the memories a test opened)
    memory,
    order_query,
    order_query_cached,
    react_model,
    read,
    steps,
    tool_steps,
    trajectories,
    wire,
)

from hindsight import Trajectory


def one(mem: Any) -> Trajectory:
    found = trajectories(mem)
    assert len(found) == 1, [steps(t) for t in found]
    return found[0]


def kinds(traj: Trajectory) -> list[str]:
    return [s[0] for s in steps(traj)]


def lookup_model() -> Any:
    """Asks for order_query, then answers."""
    return react_model(ai("", call("order_query", {"order_id": "8812"})), ai("Order 8812 shipped."))


# -- checkpointers and threads ------------------------------------------------------------------
def test_each_turn_on_a_thread_is_one_trajectory_with_its_own_steps() -> None:
    mem = memory()
    model = react_model(
        ai("", call("order_query", {"order_id": "8812"}, id="c1")),
        ai("Shipped."),
        ai("", call("order_query_cached", {"order_id": "9907"}, id="c2")),
        ai("Also shipped."),
    )
    builder = agent_graph(model, state=HindsightState)
    wire(builder, mem)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "thread-7"}}
    first = graph.invoke({"messages": [HumanMessage("Where is 8812?")]}, config)
    second = graph.invoke({"messages": [HumanMessage("And 9907?")]}, config)
    assert first["trajectory_id"] != second["trajectory_id"]
    t1 = read(mem, first["trajectory_id"], tenant_id=TENANT)
    t2 = read(mem, second["trajectory_id"], tenant_id=TENANT)
    assert len(trajectories(mem)) == 2
    assert [e.content for e in t2.events if e.event_type.value == "user_message"] == ["And 9907?"]
    assert [s[1] for s in tool_steps(t1)] == ["order_query", "order_query"]
    assert [s[1] for s in tool_steps(t2)] == ["order_query_cached", "order_query_cached"]
    assert t1.metadata["thread_id"] == t2.metadata["thread_id"] == "thread-7"


# -- interrupts and resume -------------------------------------------------------------------
def approval_graph(mem: Any, model: Any, *, checkpointer: Any) -> Any:
    """agent -> approve (interrupt) -> tools -> agent; hindsight around it."""
    builder = agent_graph(model, state=HindsightState)
    builder.branches.pop("agent")

    def approve(state: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt({"question": "run these tools?"})
        return {"messages": [] if answer else [SystemMessage("denied")]}

    def route(state: dict[str, Any]) -> str:
        last = state["messages"][-1]
        return "approve" if getattr(last, "tool_calls", None) else END

    builder.add_node("approve", approve)
    builder.add_conditional_edges("agent", route, ["approve", END])
    builder.add_edge("approve", "tools")
    wire(builder, mem, outcome=lambda s: True)
    return builder.compile(checkpointer=checkpointer)


def test_interrupt_and_resume_store_one_trajectory_without_duplicates() -> None:
    mem = memory()
    graph = approval_graph(mem, lookup_model(), checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "approve-1"}}
    paused = graph.invoke({"messages": [HumanMessage("Where is order 8812?")]}, config)
    assert "__interrupt__" in paused
    part = one(mem)  # the paused part is stored at once, not reviewed
    assert part.metadata["paused"] is True and mem.review_jobs(tenant_id=TENANT) == []
    done = graph.invoke(Command(resume=True), config)
    assert done["messages"][-1].content == "Order 8812 shipped."
    traj = one(mem)
    assert "paused" not in traj.metadata
    assert [j.trajectory_id for j in mem.review_jobs(tenant_id=TENANT)] == [traj.id]
    custom = [e for e in traj.events if e.event_type.value == "custom"]
    assert [e.metadata["name"] for e in custom] == ["interrupt", "resume"]
    assert "run these tools?" in custom[0].content and custom[1].content == '{"value": true}'

    assert traj.id == paused["trajectory_id"] == done["trajectory_id"]
    assert kinds(traj).count("user_message") == 1
    assert kinds(traj).count("model_call") == 2
    assert tool_steps(traj) == [
        ("tool_call", "order_query", None),
        ("tool_result", "order_query", "success"),
    ]
    assert kinds(traj)[-1] == "final_answer"
    assert len(traj.metadata["root_run_ids"]) == 2
    assert "incomplete" not in traj.metadata
    assert not any(e.event_type.value == "error" for e in traj.events)  # an interrupt is no error


def test_two_interrupts_and_async_resumes_are_still_one_trajectory() -> None:
    mem = memory()
    model = react_model(
        ai("", call("order_query", {"order_id": "8812"}, id="a")),
        ai("", call("order_query_cached", {"order_id": "8812"}, id="b")),
        ai("Done."),
    )
    graph = approval_graph(mem, model, checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "approve-2"}}

    async def run() -> dict[str, Any]:
        await graph.ainvoke({"messages": [HumanMessage("Where is order 8812?")]}, config)
        await graph.ainvoke(Command(resume=True), config)
        return await graph.ainvoke(Command(resume=True), config)

    done = asyncio.run(run())
    traj = one(mem)
    assert traj.id == done["trajectory_id"]
    assert [s[1] for s in tool_steps(traj)] == ["order_query"] * 2 + ["order_query_cached"] * 2
    assert kinds(traj).count("model_call") == 3
    assert len(traj.metadata["root_run_ids"]) == 3


def test_a_paused_run_abandoned_for_a_new_input_is_stored_as_incomplete() -> None:
    mem = memory()
    graph = approval_graph(
        mem,
        react_model(ai("", call("order_query", {"order_id": "1"})), ai("", call("order_query"))),
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "approve-3"}}
    first = graph.invoke({"messages": [HumanMessage("Where is order 1?")]}, config)
    graph.invoke({"messages": [HumanMessage("Forget it, where is order 2?")]}, config)
    stored = {t.id: t for t in trajectories(mem)}
    assert len(stored) == 2  # the abandoned run, and the new one (paused at its approval)
    abandoned = stored.pop(first["trajectory_id"])
    [second] = stored.values()
    assert second.task == "Forget it, where is order 2?" and second.metadata["paused"] is True
    assert abandoned.metadata["incomplete"] is True
    assert "new input" in abandoned.metadata["ended"]
    assert abandoned.outcome.value == "unknown"
    assert kinds(abandoned)[:2] == ["user_message", "model_call"]


def test_resume_after_the_capture_was_forgotten_continues_the_same_trajectory() -> None:
    mem = memory()
    graph = approval_graph(mem, lookup_model(), checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "approve-4"}}
    paused = graph.invoke({"messages": [HumanMessage("Where is order 8812?")]}, config)
    router()._threads.clear()  # as after a restart: this process holds nothing of the run
    done = graph.invoke(Command(resume=True), config)
    assert done["messages"][-1].content == "Order 8812 shipped."
    traj = one(mem)
    assert traj.id == paused["trajectory_id"] and "paused" not in traj.metadata
    assert kinds(traj).count("user_message") == 1 and kinds(traj)[-1] == "final_answer"
    custom = [e.metadata["name"] for e in traj.events if e.event_type.value == "custom"]
    assert custom == ["interrupt", "resume"]
    assert tool_steps(traj) == [
        ("tool_call", "order_query", None),
        ("tool_result", "order_query", "success"),
    ]
    assert traj.outcome.value == "success"


# -- parallel branches -----------------------------------------------------------------------
def test_parallel_branches_land_in_one_trajectory() -> None:
    mem = memory()
    model = react_model(ai("Both lookups done."))

    def live(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [("ai", order_query.invoke({"order_id": "slow-9"}, config))]}

    def cached(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [("ai", order_query_cached.invoke({"order_id": "9"}, config))]}

    def guarded_live(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        try:
            return live(state, config)
        except TimeoutError:
            return {"messages": [("ai", "live lookup timed out")]}

    builder = StateGraph(HindsightState)
    builder.add_node("live", guarded_live)
    builder.add_node("cached", cached)
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_edge(START, "live")
    builder.add_edge(START, "cached")
    builder.add_edge(["live", "cached"], "agent")
    builder.add_edge("agent", END)
    wire(builder, mem)
    out = builder.compile().invoke({"messages": [HumanMessage("Where is order 9?")]})
    traj = one(mem)
    assert traj.id == out["trajectory_id"]
    assert sorted(tool_steps(traj)) == sorted(
        [
            ("tool_call", "order_query", None),
            ("tool_result", "order_query", "timeout"),
            ("tool_call", "order_query_cached", None),
            ("tool_result", "order_query_cached", "success"),
        ]
    )


def test_send_fan_out_lands_in_one_trajectory() -> None:
    class State(HindsightState, total=False):
        found: Annotated[list[str], operator.add]

    mem = memory()

    def fan_out(state: dict[str, Any]) -> list[Send]:
        return [Send("lookup", {"order_id": i}) for i in ("1", "2", "3")]

    def lookup(arg: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return {"found": [order_query_cached.invoke({"order_id": arg["order_id"]}, config)]}

    builder = StateGraph(State)
    builder.add_node("plan", lambda s: {})
    builder.add_node("lookup", lookup)
    builder.add_node("answer", lambda s: {"messages": [("ai", "; ".join(sorted(s["found"])))]})
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", fan_out, ["lookup"])
    builder.add_edge("lookup", "answer")
    builder.add_edge("answer", END)
    wire(builder, mem)
    builder.compile().invoke({"messages": [HumanMessage("Orders 1, 2 and 3?")]})
    traj = one(mem)
    assert [s for s in tool_steps(traj) if s[0] == "tool_result"] == [
        ("tool_result", "order_query_cached", "success")
    ] * 3


# -- subgraphs -------------------------------------------------------------------------------
def test_a_subgraphs_model_and_tool_calls_belong_to_the_parent_run() -> None:
    mem = memory()
    inner = agent_graph(lookup_model(), state=HindsightState)
    sub = inner.compile()
    builder = StateGraph(HindsightState)
    builder.add_node("support", sub)
    builder.add_edge(START, "support")
    builder.add_edge("support", END)
    wire(builder, mem, outcome=lambda s: True)
    out = builder.compile(checkpointer=InMemorySaver()).invoke(
        {"messages": [HumanMessage("Where is order 8812?")]},
        {"configurable": {"thread_id": "sub-1"}},
    )
    traj = one(mem)
    assert traj.id == out["trajectory_id"]
    assert kinds(traj).count("model_call") == 2
    assert tool_steps(traj) == [
        ("tool_call", "order_query", None),
        ("tool_result", "order_query", "success"),
    ]


# -- streaming -------------------------------------------------------------------------------
def reference_steps() -> list[tuple[str, str | None, str | None]]:
    mem = memory()
    builder = agent_graph(lookup_model(), state=HindsightState)
    wire(builder, mem)
    builder.compile().invoke({"messages": [HumanMessage("Where is order 8812?")]})
    return steps(one(mem))


@pytest.mark.parametrize(
    "how", ["stream-values", "stream-updates", "stream-messages", "astream", "astream_events"]
)
def test_streaming_captures_the_same_steps_as_invoke(how: str) -> None:
    expected = reference_steps()
    mem = memory()
    builder = agent_graph(lookup_model(), state=HindsightState)
    wire(builder, mem)
    graph = builder.compile()
    inputs = {"messages": [HumanMessage("Where is order 8812?")]}
    chunks: list[Any] = []
    if how.startswith("stream-"):
        chunks = list(graph.stream(inputs, stream_mode=how.split("-")[1]))
    elif how == "astream":

        async def consume() -> list[Any]:
            return [c async for c in graph.astream(inputs)]

        chunks = asyncio.run(consume())
    else:

        async def events() -> list[Any]:
            return [e async for e in graph.astream_events(inputs, version="v2")]

        chunks = asyncio.run(events())
        assert any(e["event"] == "on_chat_model_stream" for e in chunks)
    assert chunks
    assert steps(one(mem)) == expected


# -- retries -----------------------------------------------------------------------------------
def test_retried_node_keeps_the_failed_attempt_in_the_same_trajectory() -> None:
    mem = memory()
    attempts = {"n": 0}

    def lookup(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        attempts["n"] += 1
        order = "slow-1" if attempts["n"] == 1 else "1"
        return {"messages": [("ai", order_query.invoke({"order_id": order}, config))]}

    builder = StateGraph(HindsightState)
    builder.add_node(
        "lookup",
        lookup,
        retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.01, retry_on=TimeoutError),
    )
    builder.add_edge(START, "lookup")
    builder.add_edge("lookup", END)
    wire(builder, mem, outcome=lambda s: True)
    out = builder.compile().invoke({"messages": [HumanMessage("Where is order 1?")]})
    assert attempts["n"] == 2
    traj = one(mem)
    assert traj.id == out["trajectory_id"]
    assert tool_steps(traj) == [
        ("tool_call", "order_query", None),
        ("tool_result", "order_query", "timeout"),
        ("tool_call", "order_query", None),
        ("tool_result", "order_query", "success"),
    ]
    assert traj.outcome.value == "success"


def test_model_retried_by_the_retry_policy_is_one_trajectory() -> None:
    mem = memory()
    model = react_model(TimeoutError("model timed out"), ai("Shipped."))
    builder = StateGraph(HindsightState)
    builder.add_node(
        "agent",
        lambda s: {"messages": [model.invoke(s["messages"])]},
        retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.01, retry_on=TimeoutError),
    )
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    wire(builder, mem)
    builder.compile().invoke({"messages": [HumanMessage("Where is order 1?")]})
    traj = one(mem)
    calls = [
        (e.event_type.value, e.status.value if e.status else None)
        for e in traj.events
        if e.event_type.value == "model_call"
    ]
    assert calls == [("model_call", "timeout"), ("model_call", "success")]


# -- errors ------------------------------------------------------------------------------------
def test_a_run_that_raises_is_stored_as_a_failure() -> None:
    mem = memory()

    def broken(state: dict[str, Any]) -> dict[str, Any]:
        raise ZeroDivisionError("division by zero in the pricing step")

    builder = StateGraph(HindsightState)
    builder.add_node("agent", broken)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    wire(builder, mem)
    with pytest.raises(ZeroDivisionError):
        builder.compile().invoke({"messages": [HumanMessage("price it")]})
    traj = one(mem)
    assert traj.outcome.value == "failure"
    errors = [e for e in traj.events if e.event_type.value == "error"]
    assert errors and "ZeroDivisionError" in errors[0].content


def test_async_run_that_raises_is_stored_in_the_background() -> None:
    mem = memory()

    async def broken(state: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("bad input")

    builder = StateGraph(HindsightState)
    builder.add_node("agent", broken)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    wire(builder, mem)
    with pytest.raises(ValueError):
        asyncio.run(builder.compile().ainvoke({"messages": [HumanMessage("x")]}))
    deadline = time.monotonic() + 30
    while not trajectories(mem) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert one(mem).outcome.value == "failure"


def test_runs_of_graphs_without_hindsight_are_not_recorded() -> None:
    mem = memory()
    wired = agent_graph(lookup_model(), state=HindsightState)
    wire(wired, mem)  # registers the capture hook in this process
    plain = agent_graph(lookup_model()).compile()
    plain.invoke({"messages": [HumanMessage("Where is order 8812?")]})
    assert trajectories(mem) == []
    assert not router().open_captures() or all(
        c.memory.aio is not mem.aio for c in router().open_captures()
    )


def test_a_model_with_fallbacks_inside_a_node_is_captured() -> None:
    # The failed primary and the backup model are both steps of this graph run.
    mem = memory()
    primary = react_model(TimeoutError("primary model timed out"))
    backup = react_model(ai("Shipped (backup model)."))
    model = primary.with_fallbacks([backup])
    builder = StateGraph(HindsightState)
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    wire(builder, mem)
    builder.compile().invoke({"messages": [HumanMessage("Where is order 1?")]})
    traj = one(mem)
    calls = [e.status.value for e in traj.events if e.event_type.value == "model_call"]
    assert calls == ["timeout", "success"]
    assert kinds(traj)[-1] == "final_answer"


def test_custom_events_of_a_node_are_captured() -> None:
    from langchain_core.callbacks import dispatch_custom_event

    mem = memory()

    def lookup(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        dispatch_custom_event("cache_hit", {"order_id": "1", "age_s": 40}, config=config)
        return {"messages": [("ai", "Order 1 shipped.")]}

    builder = StateGraph(HindsightState)
    builder.add_node("lookup", lookup)
    builder.add_edge(START, "lookup")
    builder.add_edge("lookup", END)
    wire(builder, mem)
    builder.compile().invoke({"messages": [HumanMessage("Where is order 1?")]})
    custom = [e for e in one(mem).events if e.event_type.value == "custom"]
    assert [e.metadata["name"] for e in custom] == ["cache_hit"]
    assert '"age_s": 40' in custom[0].content


def test_a_run_resumed_after_its_memory_closed_never_raises_and_is_kept(
    tmp_path: Any,
) -> None:
    from hindsight.capture.unsaved import UnsavedArea
    from tests.helpers import file_memory

    mem = file_memory(tmp_path)
    graph = approval_graph(mem, lookup_model(), checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "approve-closed"}}
    paused = graph.invoke({"messages": [HumanMessage("Where is order 8812?")]}, config)
    mem.close()  # drains the writer: the paused part is stored
    done = graph.invoke(Command(resume=True), config)  # recall/reflect on a closed memory
    assert done["messages"][-1].content == "Order 8812 shipped."
    assert len(UnsavedArea(tmp_path / "unsaved")) == 1  # the rest waits for the next open
    again = file_memory(tmp_path)
    try:
        traj = one(again)
        assert traj.id == paused["trajectory_id"] and "paused" not in traj.metadata
        assert kinds(traj)[-1] == "final_answer"
    finally:
        again.close()


def test_concurrent_runs_in_threads_each_get_their_own_trajectory() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from hindsight_langchain.testing import ScriptedChatModel
    from langchain_core.messages import ToolMessage

    def script(messages: list[Any]) -> Any:
        # Each run asks for its own order once, then answers: a per-conversation policy.
        if any(isinstance(m, ToolMessage) for m in messages):
            return ai("Shipped.")
        order = str(messages[-1].content).split()[-1].rstrip("?")
        return ai("", call("order_query_cached", {"order_id": order}, id=f"c-{order}"))

    mem = memory()
    builder = agent_graph(ScriptedChatModel(script=script), state=HindsightState)
    wire(builder, mem)
    graph = builder.compile(checkpointer=InMemorySaver())

    def run(i: int) -> str:
        out = graph.invoke(
            {"messages": [HumanMessage(f"Where is order {i}?")]},
            {"configurable": {"thread_id": f"parallel-{i}"}},
        )
        return str(out["trajectory_id"])

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(run, range(16)))
    assert len(set(ids)) == 16
    assert mem.writer.wait(60)  # the runs are written in the background
    for i, tid in enumerate(ids):
        traj = read(mem, tid, tenant_id=TENANT)
        users = [e.content for e in traj.events if e.event_type.value == "user_message"]
        assert users == [f"Where is order {i}?"]
        assert traj.metadata["thread_id"] == f"parallel-{i}"
        assert [e.tool_args for e in traj.events if e.event_type.value == "tool_call"] == [
            {"order_id": str(i)}
        ]
        assert [s[0] for s in tool_steps(traj)] == ["tool_call", "tool_result"]
    assert len(trajectories(mem)) == 16
