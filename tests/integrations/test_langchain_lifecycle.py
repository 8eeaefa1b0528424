"""With real LangChain objects (docs/integrations/langchain.md): lifecycle (a memory closed right
after the run loses nothing), interrupts and resumes (one trajectory, in one process or two), never
on the host's path (a locked store, a closed memory), and the recalled block reaching the model
whatever the middleware order, with only what the model saw credited or blamed."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)

# isort: split

import pytest
from hindsight_langchain import HindsightCallbackHandler, HindsightMiddleware
from hindsight_langchain.testing import ScriptedChatModel, ai, call, system_prompt_of
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    ModelRequest,
    dynamic_prompt,
)
from langchain_core.messages import SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from hindsight import BLOCK_START, Memory, Outcome, Trajectory
from hindsight.capture.unsaved import UnsavedArea
from hindsight.testing import ScriptedReviewer
from tests.helpers import file_memory
from tests.integrations.langchain_support import (
    TENANT,
    closing,  # noqa: F401  (autouse fixture)
    get_order,
    memory,
    resume_phase,
    steps,
    stored,
    tracking_cache,
)


def everything(mem: Memory) -> list[Trajectory]:
    ids = mem.aio.store.list_trajectory_ids(TENANT)
    return [mem.get_trajectory(t, tenant_id=TENANT) for t in ids]


def approval_script(messages: list[Any]) -> Any:
    if isinstance(messages[-1], ToolMessage):
        return ai("A1 is paid.")
    return ai("", call("get_order", {"order_id": "A1"}, "c1"))


# -- lifecycle: the memory closes right after the run ------------------------------------------
@pytest.mark.parametrize("kind", ["handler", "middleware"])
def test_a_run_ended_just_before_the_memory_closes_is_stored(
    kind: str, tmp_path: Path, opened: list[Memory]
) -> None:
    model = ScriptedChatModel(replies=[ai("", call("get_order", {"order_id": "A1"})), "Paid."])
    with file_memory(tmp_path) as mem:  # the docs' first example: `with Memory() as memory:`
        if kind == "handler":
            handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
            agent = create_agent(model, [get_order])
            agent.invoke({"messages": [("user", "Is A1 paid?")]}, {"callbacks": [handler]})
        else:
            middleware = HindsightMiddleware(mem, tenant_id=TENANT)
            agent = create_agent(model, [get_order], middleware=[middleware])
            agent.invoke({"messages": [("user", "Is A1 paid?")]})
        assert len(mem.integrations) >= 1  # the memory knows who writes into it
    again = file_memory(tmp_path)
    opened.append(again)
    [traj] = everything(again)
    assert traj.task == "Is A1 paid?" and traj.outcome is Outcome.SUCCESS
    assert [s[0] for s in steps(traj)][-1] == "final_answer"


@pytest.mark.parametrize("kind", ["handler", "middleware"])
def test_a_run_ending_after_the_memory_closed_waits_in_the_unsaved_area(
    kind: str, tmp_path: Path, opened: list[Memory]
) -> None:
    mem = file_memory(tmp_path)
    model = ScriptedChatModel(replies=["Hello."])
    if kind == "handler":
        handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
        mem.close()
        create_agent(model, []).invoke({"messages": [("user", "hi")]}, {"callbacks": [handler]})
    else:
        middleware = HindsightMiddleware(mem, tenant_id=TENANT)
        mem.close()
        create_agent(model, [], middleware=[middleware]).invoke({"messages": [("user", "hi")]})
    assert len(UnsavedArea(tmp_path / "unsaved")) == 1  # never raised, never lost
    again = file_memory(tmp_path)
    opened.append(again)
    assert again.writer.wait(30)
    assert [t.task for t in everything(again)] == ["hi"]


# -- never on the host's path --------------------------------------------------------------------
def test_a_locked_store_does_not_hold_the_middleware_run(
    tmp_path: Path, opened: list[Memory]
) -> None:
    mem = file_memory(tmp_path)
    opened.append(mem)
    mem.add_experience("get_order is reliable", tenant_id=TENANT)
    middleware = HindsightMiddleware(mem, tenant_id=TENANT)
    model = ScriptedChatModel(replies=[ai("", call("get_order", {"order_id": "A1"})), "Paid."])
    agent = create_agent(model, [get_order], middleware=[middleware])
    blocker = sqlite3.connect(tmp_path / "hindsight.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
    try:
        out = agent.invoke({"messages": [("user", "Is get_order reliable for A1?")]})
        assert out["messages"][-1].content == "Paid."  # recall (a read) worked, the run ended
        assert BLOCK_START in system_prompt_of(model.prompts[0])
        assert not middleware.wait(0)  # its write waits for the lock, the agent did not
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert middleware.wait(60)
    assert stored(mem, out["hindsight_trajectory_id"]).outcome is Outcome.SUCCESS


# -- interrupts: one logical run is one trajectory -------------------------------------------------
def hitl_agent(mem: Memory, kind: str) -> tuple[Any, dict[str, Any], Any]:
    model = ScriptedChatModel(script=approval_script)
    approval = HumanInTheLoopMiddleware(interrupt_on={"get_order": True})
    config: dict[str, Any] = {"configurable": {"thread_id": f"t-{kind}"}}
    if kind == "handler":
        owner: Any = HindsightCallbackHandler(mem, tenant_id=TENANT)
        config["callbacks"] = [owner]
        agent = create_agent(
            model, [get_order], middleware=[approval], checkpointer=InMemorySaver()
        )
    else:
        owner = HindsightMiddleware(mem, tenant_id=TENANT)
        agent = create_agent(
            model, [get_order], middleware=[owner, approval], checkpointer=InMemorySaver()
        )
    return agent, config, owner


@pytest.mark.parametrize("kind", ["handler", "middleware"])
def test_approval_interrupt_and_resume_is_one_trajectory(kind: str) -> None:
    mem = memory()
    agent, config, owner = hitl_agent(mem, kind)
    paused = agent.invoke({"messages": [("user", "Is A1 paid?")]}, config)
    assert "__interrupt__" in paused
    done = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert done["messages"][-1].content == "A1 is paid."
    assert owner.wait(30)
    [traj] = everything(mem)
    assert traj.task == "Is A1 paid?"
    assert "paused" not in traj.metadata and traj.outcome is Outcome.SUCCESS
    kinds = [s[0] for s in steps(traj)]
    assert kinds.count("user_message") == 1 and kinds[-1] == "final_answer"
    names = [e.metadata["name"] for e in traj.events if e.event_type.value == "custom"]
    assert names == ["interrupt", "resume"]
    pause = next(e for e in traj.events if e.metadata.get("name") == "interrupt")
    assert "get_order" in pause.content  # what the human was asked
    assert [s for s in steps(traj) if s[1] == "get_order"] == [
        ("tool_call", "get_order", None),
        ("tool_result", "get_order", "success"),
    ]
    assert [j.trajectory_id for j in mem.review_jobs(tenant_id=TENANT)] == [traj.id]


def test_a_paused_run_is_stored_at_once_and_abandoned_by_a_fresh_input() -> None:
    mem = memory()
    agent, config, handler = hitl_agent(mem, "handler")
    agent.invoke({"messages": [("user", "Is A1 paid?")]}, config)
    assert handler.wait(30)
    [paused] = everything(mem)
    assert paused.metadata["paused"] is True and paused.metadata["thread_id"] == "t-handler"
    assert mem.review_jobs(tenant_id=TENANT) == []  # not reviewed while paused
    agent.invoke({"messages": [("user", "Never mind, thanks.")]}, config)
    assert handler.wait(30)
    by_task = {t.task: t for t in everything(mem)}
    assert set(by_task) == {"Is A1 paid?", "Never mind, thanks."}
    first = by_task["Is A1 paid?"]
    assert first.metadata.get("incomplete") is True and "paused" not in first.metadata


@pytest.mark.parametrize("kind", ["handler", "middleware"])
def test_paused_in_one_process_resumed_in_another_is_one_trajectory(
    kind: str, tmp_path: Path, opened: list[Memory]
) -> None:
    data, ckpt = tmp_path / "data", tmp_path / "checkpoints.pickle"

    def phase(name: str) -> str:
        return resume_phase(kind, name, data, ckpt)

    assert phase("pause") == "PAUSED"
    assert phase("resume") == "DONE Order 7 is refunded."
    mem = Memory(data_dir=data, reviewer=ScriptedReviewer([]))  # as the script opened it
    opened.append(mem)
    [traj] = everything(mem)
    assert traj.task == "Please refund order 7." and traj.outcome is Outcome.SUCCESS
    assert "paused" not in traj.metadata
    kinds = [s[0] for s in steps(traj)]
    assert kinds.count("user_message") == 1 and kinds[-1] == "final_answer"
    assert ("tool_result", "refund", "success") in steps(traj)
    assert "resume" in [e.metadata.get("name") for e in traj.events]
    assert [j.trajectory_id for j in mem.review_jobs(tenant_id=TENANT)] == [traj.id]


# -- prompt order: the block reaches the model, only what it saw is attributed -------------------
LESSON = "carrier_status times out at peak hours: use tracking_cache"


@dynamic_prompt
def replace_prompt(request: ModelRequest[Any]) -> str:
    """An application's dynamic prompt: it replaces the whole system message."""
    return "You are the night-shift parcel agent."


class FreshRequest(AgentMiddleware[Any, Any, Any]):
    """A middleware that builds a new request from scratch (not with ``override``)."""

    def wrap_model_call(self, request: ModelRequest[Any], handler: Any) -> Any:
        fields = {
            "model": request.model,
            "messages": request.messages,
            "system_message": SystemMessage("Plain prompt."),
            "tools": request.tools,
            "state": request.state,
            "runtime": request.runtime,
        }
        return handler(ModelRequest(**fields))


def _order_run(mem: Memory, middleware: list[Any]) -> tuple[ScriptedChatModel, Any]:
    model = ScriptedChatModel(replies=[RuntimeError("provider down")])
    agent = create_agent(
        model, [tracking_cache], system_prompt="You track parcels.", middleware=middleware
    )
    with pytest.raises(RuntimeError):
        agent.invoke({"messages": [("user", "Where is parcel A1? carrier_status timed out")]})
    return model, agent


@pytest.mark.parametrize("order", ["hindsight-first", "hindsight-last"])
def test_the_block_reaches_the_model_whatever_the_dynamic_prompt_order(order: str) -> None:
    mem = memory()
    lesson = mem.add_experience(LESSON, tenant_id=TENANT)
    hindsight = HindsightMiddleware(mem, tenant_id=TENANT)
    stack = (
        [hindsight, replace_prompt] if order == "hindsight-first" else [replace_prompt, hindsight]
    )
    model, _ = _order_run(mem, stack)
    system = system_prompt_of(model.prompts[0])
    assert system.startswith("You are the night-shift parcel agent.")  # the app's prompt first
    assert (
        BLOCK_START in system
        and LESSON in system
        and system.rstrip().endswith("--- End of past experience ---")
    )
    assert hindsight.wait(30)
    after = mem.get_experience(lesson.id, tenant_id=TENANT)
    assert after.misled_count == 1 and after.confidence < lesson.confidence  # it saw it: blamed


def test_lessons_the_model_never_saw_are_not_blamed_and_a_warning_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mem = memory()
    lesson = mem.add_experience(LESSON, tenant_id=TENANT)
    hindsight = HindsightMiddleware(mem, tenant_id=TENANT)
    with caplog.at_level(logging.WARNING, logger="hindsight.langchain"):
        model, _ = _order_run(mem, [hindsight, FreshRequest()])
    assert system_prompt_of(model.prompts[0]) == "Plain prompt."  # the block was lost
    assert "did not reach the model" in caplog.text
    assert hindsight.wait(30)
    [traj] = everything(mem)
    assert traj.outcome is Outcome.FAILURE and traj.metadata["recall_not_seen_calls"] == 1
    after = mem.get_experience(lesson.id, tenant_id=TENANT)
    assert (after.misled_count, after.recall_count) == (0, 0)
    assert after.confidence == lesson.confidence
