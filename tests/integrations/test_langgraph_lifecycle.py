"""The lifecycle of hindsight_langgraph with real LangGraph graphs (docs/integrations/langgraph.md):
a memory closed right after the run loses nothing, a locked store or a closed memory never holds up
or breaks the graph, a run paused and resumed in another process is one trajectory, lessons another
node kept from the model are neither credited nor blamed, and outcomes are detected without an
``outcome=``."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

from tests.integrations import langgraph_support  # noqa: F401  (skips without LangGraph)

# isort: split

import pytest
from hindsight_langchain.testing import ScriptedChatModel, system_prompt_of
from hindsight_langgraph import HindsightState
from langchain_core.messages import HumanMessage, RemoveMessage, SystemMessage
from langgraph.graph import MessagesState, StateGraph
from langgraph.types import RetryPolicy
from langgraph_support import (
    END,
    START,
    TENANT,
    agent_graph,
    ai,
    call,
    closing,  # noqa: F401  (autouse: closes the memories a test opened)
    memory,
    react_model,
    steps,
    trajectories,
    wire,
)

from hindsight import BLOCK_START, Memory, Outcome
from hindsight.capture.unsaved import UnsavedArea
from hindsight.testing import ScriptedReviewer
from tests.helpers import file_memory
from tests.integrations.langchain_support import resume_phase

LESSON = "order_query times out at peak hours: use order_query_cached"


def lookup() -> Any:
    return react_model(ai("", call("order_query", {"order_id": "8812"})), ai("Order 8812 shipped."))


# -- lifecycle ---------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_run_ended_just_before_the_memory_closes_is_stored(
    how: str, tmp_path: Path, opened: list[Memory]
) -> None:
    import asyncio

    with file_memory(tmp_path) as mem:  # the docs' pattern: `with Memory() as memory:`
        graph = wire(agent_graph(lookup(), state=HindsightState), mem).compile()
        ask = {"messages": [HumanMessage("Where is order 8812?")]}
        out = graph.invoke(ask) if how == "invoke" else asyncio.run(graph.ainvoke(ask))
        assert len(mem.integrations) >= 1  # the memory knows its graph nodes
    again = file_memory(tmp_path)
    opened.append(again)
    [traj] = trajectories(again)
    assert traj.id == out["trajectory_id"] and traj.outcome is Outcome.SUCCESS
    assert [s[0] for s in steps(traj)][-1] == "final_answer"


def test_a_paused_run_is_handed_over_when_its_memory_closes(
    tmp_path: Path, opened: list[Memory]
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import interrupt

    def ask_human(state: MessagesState) -> dict[str, Any]:
        interrupt({"question": "go on?"})
        return {}

    with file_memory(tmp_path) as mem:
        builder = StateGraph(MessagesState)
        builder.add_node("ask", ask_human)
        builder.add_edge(START, "ask")
        builder.add_edge("ask", END)
        graph = wire(builder, mem).compile(checkpointer=InMemorySaver())
        out = graph.invoke(
            {"messages": [HumanMessage("Cancel order 9.")]},
            {"configurable": {"thread_id": "t-close"}},
        )
        assert "__interrupt__" in out
    again = file_memory(tmp_path)
    opened.append(again)
    [traj] = trajectories(again)
    assert traj.task == "Cancel order 9." and traj.metadata["paused"] is True
    assert traj.metadata["thread_id"] == "t-close"


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream"])
def test_a_closed_memory_never_raises_into_the_graph(
    how: str, tmp_path: Path, opened: list[Memory]
) -> None:
    import asyncio

    mem = file_memory(tmp_path)
    graph = wire(agent_graph(lookup(), state=HindsightState), mem).compile()
    mem.close()
    ask = {"messages": [HumanMessage("Where is order 8812?")]}
    if how == "invoke":
        out = graph.invoke(ask)
    elif how == "ainvoke":
        out = asyncio.run(graph.ainvoke(ask))
    else:
        out = list(graph.stream(ask, stream_mode="values"))[-1]
    assert out["messages"][-1].content == "Order 8812 shipped."
    assert len(UnsavedArea(tmp_path / "unsaved")) == 1
    again = file_memory(tmp_path)
    opened.append(again)
    [traj] = trajectories(again)
    assert traj.id == out["trajectory_id"] and traj.outcome is Outcome.SUCCESS


def test_a_locked_store_does_not_hold_the_graph_run(tmp_path: Path, opened: list[Memory]) -> None:
    mem = file_memory(tmp_path)
    opened.append(mem)
    mem.add_experience(LESSON, tenant_id=TENANT)
    model = lookup()
    graph = wire(agent_graph(model, state=HindsightState), mem).compile()
    blocker = sqlite3.connect(tmp_path / "hindsight.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
    try:
        out = graph.invoke({"messages": [HumanMessage("Where is order 8812? order_query")]})
        assert out["messages"][-1].content == "Order 8812 shipped."
        assert BLOCK_START in system_prompt_of(model.prompts[0])  # recall (a read) worked
        assert not mem.writer.wait(0)  # the write waits for the lock; the graph did not
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    [traj] = trajectories(mem)
    assert traj.id == out["trajectory_id"] and traj.outcome is Outcome.SUCCESS


# -- interrupts across processes ------------------------------------------------------------------
def test_paused_in_one_process_resumed_in_another_is_one_trajectory(
    tmp_path: Path, opened: list[Memory]
) -> None:
    data, ckpt = tmp_path / "data", tmp_path / "checkpoints.pickle"

    def phase(name: str) -> str:
        return resume_phase("graph", name, data, ckpt)

    assert phase("pause") == "PAUSED"
    assert phase("resume") == "DONE Order 7 is refunded."
    mem = Memory(data_dir=data, reviewer=ScriptedReviewer([]))
    opened.append(mem)
    [traj] = trajectories(mem)
    assert traj.task == "Please refund order 7." and traj.outcome is Outcome.SUCCESS
    assert "paused" not in traj.metadata
    kinds = [s[0] for s in steps(traj)]
    assert kinds.count("user_message") == 1 and kinds[-1] == "final_answer"
    assert kinds.count("model_call") == 2  # one before the pause, one after
    names = [e.metadata.get("name") for e in traj.events if e.event_type.value == "custom"]
    assert names == ["interrupt", "resume"]
    assert [j.trajectory_id for j in mem.review_jobs(tenant_id=TENANT)] == [traj.id]


# -- what the model saw ---------------------------------------------------------------------------
def failing_graph(mem: Memory, *, replace_prompt: bool) -> tuple[ScriptedChatModel, Any]:
    """recall -> prepare -> agent (its model fails) -> reflect; ``prepare`` rebuilds the system
    message when ``replace_prompt`` (the hindsight block is lost), else leaves it."""
    model = ScriptedChatModel(replies=[RuntimeError("provider down")])

    def prepare(state: MessagesState) -> dict[str, Any]:
        if not replace_prompt:
            return {}
        drop = [RemoveMessage(id=m.id) for m in state["messages"] if isinstance(m, SystemMessage)]
        return {"messages": drop, "prompt": "You are the night-shift order agent."}

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        messages = list(state["messages"])
        if state.get("prompt"):
            messages = [SystemMessage(state["prompt"]), *messages]
        return {"messages": [model.invoke(messages)]}

    class State(MessagesState):
        prompt: str

    builder = StateGraph(State)
    builder.add_node("prepare", prepare)
    builder.add_node("agent", agent)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "agent")
    builder.add_edge("agent", END)
    return model, wire(builder, mem).compile()


@pytest.mark.parametrize("replaced", [False, True])
def test_only_lessons_the_model_saw_are_blamed(
    replaced: bool, caplog: pytest.LogCaptureFixture
) -> None:
    mem = memory()
    lesson = mem.add_experience(LESSON, tenant_id=TENANT)
    model, graph = failing_graph(mem, replace_prompt=replaced)
    ask = {"messages": [HumanMessage("Where is order 8812? order_query")]}
    with (
        caplog.at_level(logging.WARNING, logger="hindsight.langgraph"),
        pytest.raises(RuntimeError),
    ):
        graph.invoke(ask)
    [traj] = trajectories(mem)
    assert traj.outcome is Outcome.FAILURE
    after = mem.get_experience(lesson.id, tenant_id=TENANT)
    if replaced:
        assert BLOCK_START not in system_prompt_of(model.prompts[0])
        assert traj.metadata["recall_not_seen_calls"] == 1
        assert (after.misled_count, after.recall_count) == (0, 0)
        assert "did not reach the model" in caplog.text
        assert after.confidence == lesson.confidence
    else:
        assert BLOCK_START in system_prompt_of(model.prompts[0])
        assert after.misled_count == 1 and after.confidence < lesson.confidence


# -- a step retried inside the run ------------------------------------------------------------
def retried_graph(mem: Memory, failures: int, attempts: dict[str, int]) -> Any:
    """recall -> agent (raises ``failures`` times before its model answers; the node's
    retry policy runs it up to 3 times) -> reflect."""
    model = react_model(ai("Synced order 7."))

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        attempts["n"] += 1
        if attempts["n"] <= failures:
            raise TimeoutError("warehouse sync timed out")
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(HindsightState)
    policy = RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False, retry_on=TimeoutError)
    builder.add_node("agent", agent, retry_policy=policy)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return wire(builder, mem).compile()


@pytest.mark.parametrize("run_async", [False, True])
def test_a_node_that_raised_and_was_retried_is_not_a_failure(run_async: bool) -> None:
    """The retry policy caught the exception: it never left the graph, so the default
    detector judges the run by what came after it, and the lesson its model saw is credited,
    not blamed, for a run that answered."""
    import asyncio

    mem = memory()
    lesson = mem.add_experience(LESSON, tenant_id=TENANT)
    attempts = {"n": 0}
    graph = retried_graph(mem, 1, attempts)
    ask = {"messages": [HumanMessage("Sync order 7 with order_query")]}
    out = asyncio.run(graph.ainvoke(ask)) if run_async else graph.invoke(ask)
    assert attempts["n"] == 2
    [traj] = trajectories(mem)
    assert traj.id == out["trajectory_id"]
    kinds = [s[0] for s in steps(traj)]
    assert kinds.count("error") == 1  # the failed attempt is kept, as evidence for the review
    assert traj.outcome is Outcome.SUCCESS
    after = mem.get_experience(lesson.id, tenant_id=TENANT)
    assert (after.helped_count, after.misled_count) == (1, 0)


def test_a_node_whose_retries_ran_out_is_a_failure() -> None:
    mem = memory()
    attempts = {"n": 0}
    with pytest.raises(TimeoutError):
        retried_graph(mem, 5, attempts).invoke({"messages": [HumanMessage("Sync order 7")]})
    assert attempts["n"] == 3
    [traj] = trajectories(mem)
    assert traj.outcome is Outcome.FAILURE
    errors = [e.content for e in traj.events if e.event_type.value == "error"]
    assert errors and "TimeoutError" in errors[0]


# -- outcomes without effort ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("replies", "expected"),
    [
        ([ai("", call("order_query", {"order_id": "8812"})), ai("Shipped.")], "success"),
        ([ai("", call("order_query", {"order_id": "slow-1"})), ai("Sorry.")], "failure"),
        (
            [
                ai("", call("order_query", {"order_id": "slow-1"})),
                ai("", call("order_query_cached", {"order_id": "slow-1"})),
                ai("Shipped (cache)."),
            ],
            "success",
        ),
    ],
    ids=["answered", "tool-error-unresolved", "tool-error-recovered"],
)
def test_the_default_outcome_detector_judges_the_run(replies: list[Any], expected: str) -> None:
    mem = memory()
    graph = wire(agent_graph(react_model(*replies)), mem).compile()
    graph.invoke({"messages": [HumanMessage("Where is order 8812?")]})
    [traj] = trajectories(mem)
    assert traj.outcome.value == expected


def test_an_outcome_callable_overrides_the_detector() -> None:
    mem = memory()
    graph = wire(agent_graph(lookup()), mem, outcome=lambda state: None).compile()
    graph.invoke({"messages": [HumanMessage("Where is order 8812?")]})
    [traj] = trajectories(mem)
    assert traj.outcome is Outcome.UNKNOWN  # the application said it does not know


def test_an_outcome_callable_that_raises_never_fails_the_graph(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mem = memory()

    def broken(state: Any) -> bool:
        raise RuntimeError("the order service is gone")

    graph = wire(agent_graph(lookup(), state=HindsightState), mem, outcome=broken).compile()
    with caplog.at_level(logging.WARNING, logger="hindsight.langgraph"):
        out = graph.invoke({"messages": [HumanMessage("Where is order 8812?")]})
    assert out["messages"][-1].content == "Order 8812 shipped."
    [traj] = trajectories(mem)
    assert traj.id == out["trajectory_id"] and traj.outcome is Outcome.UNKNOWN
    assert "the outcome callable raised" in caplog.text
