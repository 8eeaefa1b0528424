"""HindsightMiddleware on real ``create_agent`` agents
(docs/integrations/langchain.md#an-agent-that-learns-the-middleware)."""

from __future__ import annotations

import asyncio
import re
import threading
from datetime import UTC, datetime
from typing import Any

from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)

# isort: split

import pytest
from hindsight_langchain import HindsightMiddleware
from hindsight_langchain.middleware import STATE_KEY, append_to_system_prompt
from hindsight_langchain.testing import ScriptedChatModel, ai, call, system_prompt_of
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from hindsight import BLOCK_END, BLOCK_START, Outcome
from hindsight.review import HeuristicReviewer
from tests.integrations.langchain_support import (
    TENANT,
    all_trajectories,
    carrier_status,
    closing,  # noqa: F401  (autouse fixture)
    get_order,
    memory,
    record_build_threads,
    steps,
    stored,
    tool_steps,
    tracking_cache,
)

TIMES_OUT = re.compile(r"carrier_status (?:can time|times|timed) out")  # the lesson's wording

ORIGINAL = "You are a parcel support agent. Answer in one sentence."


def support_script(messages: list[BaseMessage]) -> Any:
    """A model that reads its system prompt: with a lesson about carrier_status timing out
    it uses the tracking cache instead; otherwise it asks the carrier."""
    last = messages[-1]
    if isinstance(last, HumanMessage):
        if TIMES_OUT.search(system_prompt_of(messages)):
            return ai("", call("tracking_cache", {"order_id": "A1"}, "c-cache"))
        return ai("", call("carrier_status", {"order_id": "A1"}, "c-carrier"))
    if isinstance(last, ToolMessage) and last.status == "error":
        return ai("Sorry, the carrier service is not answering right now.")
    return ai(f"Your parcel: {last.content}.")


def delivered(state: dict[str, Any]) -> bool:
    return "delivered" in str(state["messages"][-1].content)


def support_agent(mem: Any, **kw: Any) -> tuple[Any, ScriptedChatModel, HindsightMiddleware]:
    model = ScriptedChatModel(script=support_script)
    kw.setdefault("tenant_id", TENANT)
    kw.setdefault("outcome", delivered)
    middleware = HindsightMiddleware(mem, **kw)
    agent = create_agent(
        model,
        [carrier_status, tracking_cache],
        system_prompt=ORIGINAL,
        middleware=[middleware],
    )
    return agent, model, middleware


def _check_tail(system: str) -> str:
    """The original prompt first, unchanged; then the delimited block, ending the prompt."""
    assert system.startswith(ORIGINAL + "\n\n" + BLOCK_START)
    assert system.endswith(BLOCK_END)
    return system[len(ORIGINAL) :]


# -- done when: the second run's system prompt ends with the lesson of the first's failure -----
def test_second_run_prompt_ends_with_the_lesson_of_the_first_failure() -> None:
    mem = memory(reviewer=HeuristicReviewer())
    agent, model, middleware = support_agent(mem)

    with pytest.raises(TimeoutError, match="carrier API timed out"):
        agent.invoke({"messages": [("user", "Where is my parcel A1?")]})
    first = stored(mem, middleware.last_trajectory_id)
    assert first.outcome is Outcome.FAILURE
    assert tool_steps(first) == [
        ("tool_call", "carrier_status", None),
        ("tool_result", "carrier_status", "timeout"),
    ]
    assert system_prompt_of(model.prompts[0]) == ORIGINAL  # nothing to recall yet
    assert mem.flush(timeout=30)  # the review ran in the background
    assert any("carrier_status" in e.content for e in mem.list_experiences(tenant_id=TENANT))

    result = agent.invoke({"messages": [("user", "Where is my parcel A1?")]})
    assert result["messages"][-1].content == "Your parcel: order A1: delivered yesterday."
    second_prompt = model.prompts[1]
    system = system_prompt_of(second_prompt)
    tail = _check_tail(system)
    assert TIMES_OUT.search(tail)
    assert isinstance(second_prompt[0], SystemMessage)
    # The block stays on every model call of the invoke.
    assert system_prompt_of(model.prompts[2]) == system

    second = stored(mem, middleware.last_trajectory_id)
    assert second.outcome is Outcome.SUCCESS
    assert tool_steps(second) == [
        ("tool_call", "tracking_cache", None),
        ("tool_result", "tracking_cache", "success"),
    ]
    recalled = second.metadata["recalled_experience_ids"]
    assert recalled and second.metadata["system_prompt_head"].startswith(ORIGINAL)
    # The stored policy is the agent's own prompt, without the recalled block: both runs share it.
    assert first.system_prompt == second.system_prompt == ORIGINAL
    assert mem.aio.store.count_prompts(TENANT) == 1
    for exp_id in recalled:  # the success is credited to what was recalled
        assert mem.get_experience(exp_id, tenant_id=TENANT).helped_count == 1
    assert middleware.errors == 0


def test_the_trajectory_is_built_off_the_agents_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The end of a run only closes its open calls and takes the end time; the
    writer builds and validates the trajectory, which holds what a build at the end held."""
    built_on = record_build_threads(monkeypatch)
    mem = memory()
    agent, _, middleware = support_agent(mem, write_wait=0)
    with pytest.raises(TimeoutError, match="carrier API timed out"):
        agent.invoke({"messages": [("user", "Where is my parcel A1?")]})
    returned = datetime.now(UTC)
    tid = middleware.last_trajectory_id  # named as soon as the run ended
    assert tid is not None
    assert middleware.wait(timeout=30)
    traj = stored(mem, tid)
    assert built_on and threading.get_ident() not in built_on
    assert traj.ended_at is not None and traj.ended_at <= returned
    assert traj.ended_at >= max(e.timestamp for e in traj.events)
    assert traj.outcome is Outcome.FAILURE and "TimeoutError" in traj.metadata["error"]
    assert tool_steps(traj) == [
        ("tool_call", "carrier_status", None),
        ("tool_result", "carrier_status", "timeout"),
    ]
    assert middleware.stored == 1 and middleware.errors == 0


def test_async_agent_with_async_memory() -> None:
    mem = memory(reviewer=HeuristicReviewer())
    agent, model, middleware = support_agent(mem.aio)

    async def run() -> Any:
        with pytest.raises(TimeoutError):
            await agent.ainvoke({"messages": [("user", "Where is my parcel A1?")]})
        assert await mem.aio.flush(timeout=30)
        return await agent.ainvoke({"messages": [("user", "Where is my parcel A1?")]})

    result = asyncio.run(run())
    assert "delivered" in result["messages"][-1].content
    assert TIMES_OUT.search(_check_tail(system_prompt_of(model.prompts[1])))
    assert stored(mem, middleware.last_trajectory_id).outcome is Outcome.SUCCESS
    assert middleware.errors == 0


def test_a_run_that_was_misled_lowers_confidence() -> None:
    mem = memory()
    exp = mem.add_experience(
        "carrier_status is reliable for order lookups", tenant_id=TENANT, tools=["carrier_status"]
    )
    agent, model, middleware = support_agent(mem)
    with pytest.raises(TimeoutError):
        agent.invoke({"messages": [("user", "Where is my parcel A1?")]})
    assert middleware.wait(timeout=30)  # the run (and its recall outcome) is written in the
    # background; the agent does not wait for it (write_wait 0)
    assert exp.content in system_prompt_of(model.prompts[0])
    after = mem.get_experience(exp.id, tenant_id=TENANT)
    assert after.misled_count == 1 and after.confidence == pytest.approx(
        2 * exp.confidence / 3, abs=1e-6
    )  # Beta posterior: prior worth 2 runs, one failed recall (writeback.confidence)
    traj = stored(mem, middleware.last_trajectory_id)
    assert traj.metadata["recalled_experience_ids"] == [exp.id]


# -- the system prompt ---------------------------------------------------------------------------
def test_agent_without_a_system_prompt_gets_one_with_the_block() -> None:
    mem = memory()
    mem.add_experience("tracking_cache answers when the carrier is slow", tenant_id=TENANT)
    model = ScriptedChatModel(replies=["ok"])
    agent = create_agent(
        model, [tracking_cache], middleware=[HindsightMiddleware(mem, tenant_id=TENANT)]
    )
    agent.invoke({"messages": [("user", "where is my parcel, the carrier is slow")]})
    system = model.prompts[0][0]
    assert isinstance(system, SystemMessage)
    assert str(system.text).startswith(BLOCK_START) and str(system.text).endswith(BLOCK_END)


def test_system_prompt_given_as_content_blocks_keeps_its_blocks() -> None:
    original = SystemMessage(
        content=[{"type": "text", "text": "Part one."}, {"type": "text", "text": "Part two."}],
        id="sys-1",
    )
    updated = append_to_system_prompt(original, f"{BLOCK_START}\nx\n{BLOCK_END}")
    assert updated.content_blocks[:2] == original.content_blocks
    assert updated.id == "sys-1"
    assert str(updated.text).startswith("Part one.Part two.") and str(updated.text).endswith(
        BLOCK_END
    )
    assert original.content_blocks[-1]["text"] == "Part two."  # not mutated


def test_nothing_recalled_leaves_the_prompt_untouched() -> None:
    mem = memory()
    agent, model, middleware = support_agent(mem)
    with pytest.raises(TimeoutError):
        agent.invoke({"messages": [("user", "Where is my parcel A1?")]})
    assert system_prompt_of(model.prompts[0]) == ORIGINAL
    assert middleware.errors == 0


# -- recall filters: task_type, tags and the agent's tools ---------------------------------------
@tool
def weather_api(city: str) -> str:
    """Weather in a city."""
    return "sunny"


@pytest.mark.parametrize(
    ("agent_tool", "expected"),
    [(tracking_cache, "read the tracking cache"), (weather_api, "check the weather service")],
)
def test_recall_uses_task_type_and_the_agent_tool_names(agent_tool: Any, expected: str) -> None:
    mem = memory()
    mem.add_experience(
        "Refunds above 100 EUR need a manager", tenant_id=TENANT, task_type="refunds"
    )
    mem.add_experience(
        "For late parcels, first read the tracking cache",
        tenant_id=TENANT,
        task_type="parcels",
        tools=["tracking_cache"],
    )
    mem.add_experience(
        "For late parcels, first check the weather service",
        tenant_id=TENANT,
        task_type="parcels",
        tools=["weather_api"],
    )
    model = ScriptedChatModel(replies=["ok"])
    middleware = HindsightMiddleware(mem, tenant_id=TENANT, task_type="parcels", top_k=1)
    create_agent(model, [agent_tool], system_prompt=ORIGINAL, middleware=[middleware]).invoke(
        {"messages": [("user", "My parcel is late, where is it?")]}
    )
    tail = _check_tail(system_prompt_of(model.prompts[0]))
    assert "Refunds" not in tail  # task_type filter
    assert expected in tail  # the lesson about a tool this agent has wins


def test_tenant_and_task_type_per_invoke_from_config_metadata() -> None:
    mem = memory()
    mem.add_experience("beta's lesson about parcels", tenant_id="beta", task_type="parcels")
    mem.add_experience("beta's lesson about refunds", tenant_id="beta", task_type="refunds")
    mem.add_experience("acme's lesson about parcels", tenant_id=TENANT, task_type="parcels")
    model = ScriptedChatModel(replies=["ok"])
    middleware = HindsightMiddleware(mem)  # no default tenant
    agent = create_agent(model, [], system_prompt=ORIGINAL, middleware=[middleware])
    agent.invoke(
        {"messages": [("user", "lesson about parcels?")]},
        {"metadata": {"hindsight_tenant_id": "beta", "hindsight_task_type": "parcels"}},
    )
    tail = _check_tail(system_prompt_of(model.prompts[0]))
    assert "beta's lesson about parcels" in tail
    assert "acme" not in tail and "refunds" not in tail
    traj = stored(mem, middleware.last_trajectory_id, tenant="beta")
    assert traj.task_type == "parcels"


# -- checkpointer, threads, interrupts ------------------------------------------------------------
def test_one_trajectory_per_invoke_on_a_checkpointed_thread() -> None:
    mem = memory()
    model = ScriptedChatModel(
        replies=[
            ai("", call("get_order", {"order_id": "A1"}, "c1")),
            "A1 is paid.",
            "You are welcome.",
        ]
    )
    middleware = HindsightMiddleware(mem, tenant_id=TENANT)
    agent = create_agent(model, [get_order], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "thread-1"}}
    first = agent.invoke({"messages": [("user", "Is A1 paid?")]}, config)
    second = agent.invoke({"messages": [("user", "Thanks!")]}, config)
    assert first[STATE_KEY] != second[STATE_KEY]
    assert all_trajectories(mem) == 2
    t1, t2 = stored(mem, first[STATE_KEY]), stored(mem, second[STATE_KEY])
    assert [e.content for e in t1.events if e.event_type.value == "user_message"] == ["Is A1 paid?"]
    assert [e.content for e in t2.events if e.event_type.value == "user_message"] == ["Thanks!"]
    assert tool_steps(t2) == []  # the first invoke's tool call is history, not captured again
    assert t1.metadata["thread_id"] == t2.metadata["thread_id"] == "thread-1"
    assert middleware.trajectory_ids["thread-1"] == t2.id


def test_interrupt_and_resume_is_one_trajectory() -> None:
    mem = memory()
    model = ScriptedChatModel(
        replies=[ai("", call("get_order", {"order_id": "A1"}, "c1")), "A1 is paid."]
    )
    middleware = HindsightMiddleware(mem, tenant_id=TENANT)
    agent = create_agent(
        model,
        [get_order],
        middleware=[middleware, HumanInTheLoopMiddleware(interrupt_on={"get_order": True})],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t-hitl"}}
    paused = agent.invoke({"messages": [("user", "Is A1 paid?")]}, config)
    assert "__interrupt__" in paused
    assert all_trajectories(mem) == 0  # not over yet
    done = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert done["messages"][-1].content == "A1 is paid."
    assert all_trajectories(mem) == 1
    traj = stored(mem, done[STATE_KEY])
    assert steps(traj) == [
        ("user_message", None, None),
        ("model_call", None, "success"),
        ("custom", None, None),  # the pause ...
        ("custom", None, None),  # ... and the resume that continued it
        ("tool_call", "get_order", None),
        ("tool_result", "get_order", "success"),
        ("model_call", None, "success"),
        ("final_answer", None, None),
    ]
    pause, resume = (e for e in traj.events if e.event_type.value == "custom")
    assert (pause.metadata["name"], resume.metadata["name"]) == ("interrupt", "resume")
    assert "get_order" in pause.content and "approve" in resume.content


def test_a_new_invoke_on_a_thread_whose_last_invoke_never_ended() -> None:
    mem = memory()
    model = ScriptedChatModel(replies=[ai("", call("get_order", {"order_id": "A1"}, "c1")), "ok"])
    middleware = HindsightMiddleware(mem, tenant_id=TENANT)
    agent = create_agent(
        model,
        [get_order],
        middleware=[middleware, HumanInTheLoopMiddleware(interrupt_on={"get_order": True})],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t-abandoned"}}
    agent.invoke({"messages": [("user", "Is A1 paid?")]}, config)  # paused, never resumed
    model.replies = ["Hello again."]
    model._turn = 0
    agent.invoke({"messages": [("user", "Never mind.")]}, config)
    assert all_trajectories(mem) == 2
    abandoned = [stored(mem, t) for t in mem.aio.store.list_trajectory_ids(TENANT)]
    incomplete = [t for t in abandoned if t.metadata.get("incomplete")]
    assert len(incomplete) == 1 and incomplete[0].task == "Is A1 paid?"


# -- never breaks the agent ------------------------------------------------------------------------
def test_closed_memory_the_agent_runs_without_memory(caplog: pytest.LogCaptureFixture) -> None:
    mem = memory()
    agent, model, middleware = support_agent(mem)
    mem.close()
    with pytest.raises(TimeoutError):  # the agent's own error, untouched
        agent.invoke({"messages": [("user", "Where is my parcel A1?")]})
    assert system_prompt_of(model.prompts[0]) == ORIGINAL
    assert middleware.errors >= 1  # recall failed
    assert middleware.wait() and [t.task for t in middleware.unsaved] == ["Where is my parcel A1?"]
    assert "recall failed" in caplog.text


def test_no_tenant_is_counted_and_the_agent_answers() -> None:
    mem = memory()
    model = ScriptedChatModel(replies=["fine"])
    middleware = HindsightMiddleware(mem)
    result = create_agent(model, [], middleware=[middleware]).invoke({"messages": [("user", "hi")]})
    assert result["messages"][-1].content == "fine"
    assert middleware.errors == 1 and "no tenant" in (middleware.last_error or "")


def test_model_error_is_a_failed_trajectory_and_propagates() -> None:
    mem = memory()
    model = ScriptedChatModel(replies=[RuntimeError("provider down")])
    middleware = HindsightMiddleware(mem, tenant_id=TENANT)
    with pytest.raises(RuntimeError, match="provider down"):
        create_agent(model, [], middleware=[middleware]).invoke({"messages": [("user", "hi")]})
    traj = stored(mem, middleware.last_trajectory_id)
    assert steps(traj) == [("user_message", None, None), ("model_call", None, "failure")]
    assert traj.outcome is Outcome.FAILURE


def test_concurrent_invokes_on_separate_threads() -> None:
    mem = memory()
    model = ScriptedChatModel(script=support_script)
    middleware = HindsightMiddleware(mem, tenant_id=TENANT, recall=False)
    agent = create_agent(
        model,
        [carrier_status, tracking_cache],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    failures: list[BaseException] = []

    def run(i: int) -> None:
        try:
            agent.invoke(
                {"messages": [("user", f"parcel {i}?")]}, {"configurable": {"thread_id": f"t{i}"}}
            )
        except TimeoutError:
            pass
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert middleware.wait(timeout=30)  # written in the background (write_wait is a bound)
    assert not failures and middleware.errors == 0
    assert all_trajectories(mem) == 6
    for i in range(6):
        traj = stored(mem, middleware.trajectory_ids[f"t{i}"])
        assert traj.task == f"parcel {i}?"
        assert tool_steps(traj) == [
            ("tool_call", "carrier_status", None),
            ("tool_result", "carrier_status", "timeout"),
        ]


def test_store_false_only_recalls_and_recall_false_only_captures() -> None:
    mem = memory()
    mem.add_experience("parcel lesson", tenant_id=TENANT)
    model = ScriptedChatModel(replies=["ok"])
    only_recall = HindsightMiddleware(mem, tenant_id=TENANT, store=False)
    create_agent(model, [], system_prompt=ORIGINAL, middleware=[only_recall]).invoke(
        {"messages": [("user", "parcel lesson?")]}
    )
    assert "parcel lesson" in _check_tail(system_prompt_of(model.prompts[0]))
    assert only_recall.wait(timeout=30) and mem.writer.wait(30)
    assert all_trajectories(mem) == 0
    only_capture = HindsightMiddleware(mem, tenant_id=TENANT, recall=False)
    create_agent(model, [], system_prompt=ORIGINAL, middleware=[only_capture]).invoke(
        {"messages": [("user", "parcel lesson?")]}
    )
    assert system_prompt_of(model.prompts[1]) == ORIGINAL
    assert only_capture.wait(timeout=30)  # written in the background
    assert all_trajectories(mem) == 1


@pytest.mark.parametrize("name", ["recall", "store", "review"])
def test_middleware_switches_are_read_by_the_one_rule(name: str) -> None:
    """``"no"`` is off, never a truthy string; a value that is not a switch is refused when the
    middleware is built, not by the background writer after the run
    (docs/concepts.md#the-input-contract)."""
    from hindsight import UsageError

    mem = memory()
    with pytest.raises(UsageError, match=f"^{name} must be true or false, got 'maybe'$"):
        HindsightMiddleware(mem, tenant_id=TENANT, **{name: "maybe"})
    off = HindsightMiddleware(mem, tenant_id=TENANT, **{name: "no"})
    flags = {"recall": off._recall, "store": off._store, "review": off._engine.review}
    assert flags[name] is False and all(v is True for k, v in flags.items() if k != name)


@pytest.mark.parametrize("how", ["new_message", "content_replaced"])
def test_a_prompt_changed_between_calls_by_an_outer_middleware_gets_the_block_each_time(
    how: str,
) -> None:
    """The block is appended once per system message the agent passes; a middleware before
    HindsightMiddleware that passes another prompt on each call (a new message, or the same
    message with its content replaced) has each of them reach the model, block at the tail."""
    from langchain.agents.middleware import AgentMiddleware

    mem = memory(reviewer=HeuristicReviewer())
    agent, _, middleware = support_agent(mem)
    with pytest.raises(TimeoutError):
        agent.invoke({"messages": [("user", "Where is my parcel A1?")]})
    assert mem.flush(timeout=30)

    class Counting(AgentMiddleware):  # type: ignore[type-arg]
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0
            self.message = SystemMessage(content=ORIGINAL)

        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            self.calls += 1
            text = f"{ORIGINAL} Call {self.calls}."
            if how == "new_message":
                return handler(request.override(system_message=SystemMessage(content=text)))
            self.message.content = text
            return handler(request.override(system_message=self.message))

    model = ScriptedChatModel(script=support_script)
    hooked = create_agent(
        model,
        [carrier_status, tracking_cache],
        system_prompt=ORIGINAL,
        middleware=[Counting(), HindsightMiddleware(mem, tenant_id=TENANT, outcome=delivered)],
    )
    hooked.invoke({"messages": [("user", "Where is my parcel A1?")]})
    prompts = [system_prompt_of(p) for p in model.prompts]
    assert len(prompts) >= 2
    for n, system in enumerate(prompts, 1):
        assert system.startswith(f"{ORIGINAL} Call {n}.\n\n{BLOCK_START}"), system[:120]
        assert system.endswith(BLOCK_END) and system.count(BLOCK_START) == 1
    assert middleware.errors == 0
