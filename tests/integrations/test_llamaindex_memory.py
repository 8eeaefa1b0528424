"""Recall through HindsightMemoryBlock and the one-call loop run_with_memory
(docs/integrations/llamaindex.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hindsight_llamaindex import HindsightMemoryBlock, instrument, run_with_memory
from llama_index.core.agent.workflow import ToolCall, ToolCallResult
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory as ChatMemory
from llamaindex_support import (
    ChunkedLLM,
    call,
    order_agent,
    order_query_cached,
    plan,
    run_agent,
    say,
    system_text,
)

from hindsight import BLOCK_END, BLOCK_START, Outcome, TenantRequiredError, UsageError
from hindsight.testing import test_memory

TENANT = "acme"
LESSON = "When order_query timed out, calling order_query_cached instead worked."


@pytest.fixture
def memory() -> Any:
    mem = test_memory()
    yield mem
    if not mem.aio._closed:
        mem.flush(30)
    mem.close()


def _block(memory: Any, **kw: Any) -> HindsightMemoryBlock:
    return HindsightMemoryBlock(memory=memory, tenant_id=kw.pop("tenant_id", TENANT), **kw)


def _agent() -> Any:
    return order_agent(plan(call("order_query_cached", 1, order_id="42"), say("shipped")))


def test_block_puts_recalled_lessons_after_the_system_prompt(memory: Any) -> None:
    memory.add_experience(LESSON, tenant_id=TENANT, kind="improvement", tools=["order_query"])
    cap = instrument(memory, tenant_id=TENANT)  # a captured run recalls once, not per call
    agent = _agent()
    chat = ChatMemory.from_defaults(session_id="s1", memory_blocks=[_block(memory)])
    run_agent(agent, user_msg="Where is my order 42?", memory=chat)
    first_call = agent.llm.seen[0]
    system = system_text(first_call)
    assert system.index("You are a support agent.") < system.index(BLOCK_START)  # the tail
    body = system.split(BLOCK_START, 1)[1]
    assert LESSON in body.split(BLOCK_END, 1)[0]
    # every model call of the run sees the block, but the recall happened once
    assert all(BLOCK_START in system_text(seen) for seen in agent.llm.seen)
    [exp] = memory.list_experiences(tenant_id=TENANT)
    assert exp.recall_count == 1
    cap.close()
    # The stored policy is the agent's prompt, not the memory's system message with the block.
    stored_run = memory.get_trajectory(cap.trajectory_ids[-1], tenant_id=TENANT)
    assert stored_run.system_prompt == "You are a support agent."


def test_block_recall_is_attributed_to_the_captured_run(memory: Any) -> None:
    exp = memory.add_experience(LESSON, tenant_id=TENANT, kind="improvement")
    cap = instrument(memory, tenant_id=TENANT)
    block = _block(memory)
    chat = ChatMemory.from_defaults(session_id="s2", memory_blocks=[block])
    run_agent(_agent(), user_msg="Where is my order 42?", memory=chat)
    tid = cap.trajectory_ids[-1]
    assert block.recall_for(tid) is not None
    assert [h.experience.id for h in block.recall_for(tid).hits] == [exp.id]
    assert memory.writer.wait(30)  # the default detector judged it a success: credited
    assert memory.get_experience(exp.id, tenant_id=TENANT).helped_count == 1
    assert memory.record_outcome(tid, True, tenant_id=TENANT) == []  # once per run
    cap.close()


def test_block_passes_the_agent_tools_to_recall(memory: Any) -> None:
    memory.add_experience(LESSON, tenant_id=TENANT, kind="improvement", tools=["order_query"])
    cap = instrument(memory, tenant_id=TENANT)
    block = _block(memory)
    agent = order_agent(
        plan(call("order_query_cached", 1, order_id="1"), say("ok")),
        tools=[order_query_cached],
    )
    agent.tools[0].metadata.name = "order_query"  # the agent's tool, as the lesson names it
    run_agent(agent, user_msg="order 1?", memory=ChatMemory.from_defaults(memory_blocks=[block]))
    [hit] = block.last_recall.hits
    assert "tool match: order_query" in hit.breakdown.reasons
    cap.close()


def test_block_never_shows_another_tenants_lessons(memory: Any) -> None:
    memory.add_experience("Zephyr deploys with Helm", tenant_id="a", kind="rule")
    memory.add_experience("Zephyr deploys with Terraform", tenant_id="b", kind="rule")

    async def text(tenant: str) -> str:
        return await _block(memory, tenant_id=tenant).aget(
            [ChatMessage(role="user", content="how does Zephyr deploy?")]
        )

    got_a, got_b = asyncio.run(text("a")), asyncio.run(text("b"))
    assert "Helm" in got_a and "Terraform" not in got_a
    assert "Terraform" in got_b and "Helm" not in got_b


def test_block_respects_the_token_budget(memory: Any) -> None:
    for i in range(20):
        memory.add_experience(f"order rule {i}: " + "very long detail " * 400, tenant_id=TENANT)
    block = _block(memory, top_k=20, token_budget=600)
    out = asyncio.run(block.aget([ChatMessage(role="user", content="order rule")]))
    assert out.startswith(BLOCK_START) and out.endswith(BLOCK_END)
    assert "truncated" in out
    assert len(out) < 600 * 5  # estimated tokens stay within budget (about 4 chars a token)


@pytest.mark.parametrize(
    "messages",
    [[], [ChatMessage(role="user", content="   ")], [ChatMessage(role="assistant", content="hi")]],
    ids=["none", "blank", "no-user-message"],
)
def test_block_without_a_question_recalls_nothing(memory: Any, messages: list[Any]) -> None:
    memory.add_experience(LESSON, tenant_id=TENANT)
    block = _block(memory)
    assert asyncio.run(block.aget(messages)) == ""
    assert block.last_recall is None


def test_recall_failure_never_breaks_the_agent(memory: Any) -> None:
    block = _block(memory)
    memory.aio.close()  # recall now raises inside the block
    chat = ChatMemory.from_defaults(session_id="s3", memory_blocks=[block])
    result = run_agent(_agent(), user_msg="Where is my order 42?", memory=chat)
    assert "shipped" in str(result)
    assert block.errors >= 1


@pytest.mark.parametrize("tenant", [None, "", "  ", 3])
def test_block_refuses_a_missing_tenant(memory: Any, tenant: Any) -> None:
    with pytest.raises(TenantRequiredError):
        HindsightMemoryBlock(memory=memory, tenant_id=tenant)


def test_block_refuses_a_wrong_memory() -> None:
    with pytest.raises(UsageError, match="hindsight"):
        HindsightMemoryBlock(memory={"not": "memory"}, tenant_id=TENANT)


# -- run_with_memory ------------------------------------------------------------------------
def test_run_with_memory_learns_and_credits_what_it_recalled(memory: Any) -> None:
    exp = memory.add_experience(
        LESSON, tenant_id=TENANT, kind="improvement", task_type="order_status"
    )
    memory.add_experience("Refunds need a receipt.", tenant_id=TENANT, task_type="refunds")
    run = asyncio.run(
        run_with_memory(
            _agent(),
            "Where is my order 42?",
            memory=memory,
            tenant_id=TENANT,
            task_type="order_status",
            success=lambda result: "shipped" in str(result),
            write_wait=30,  # wait for the background write (default: at most 0.05 s)
        )
    )
    assert run.success is True and "shipped" in str(run.result)
    assert run.receipt is not None and run.receipt["stored"] and run.receipt["review_queued"]
    assert [h.experience.id for h in run.recall.hits] == [exp.id]
    traj = memory.get_trajectory(run.trajectory_id, tenant_id=TENANT)
    assert traj.outcome is Outcome.SUCCESS and traj.task_type == "order_status"
    after = memory.get_experience(exp.id, tenant_id=TENANT)
    assert after.helped_count == 1 and after.confidence == pytest.approx(
        (2 * exp.confidence + 1) / 3, abs=1e-6
    )  # Beta posterior: prior worth 2 runs, one successful recall (writeback.confidence)


def test_run_with_memory_failed_judgement_lowers_confidence(memory: Any) -> None:
    exp = memory.add_experience(LESSON, tenant_id=TENANT, kind="improvement")
    run = asyncio.run(
        run_with_memory(
            _agent(), "Where is my order 42?", memory=memory.aio, tenant_id=TENANT, success=False
        )
    )
    assert memory.writer.wait(30)  # written in the background
    assert memory.get_trajectory(run.trajectory_id, tenant_id=TENANT).outcome is Outcome.FAILURE
    after = memory.get_experience(exp.id, tenant_id=TENANT)
    assert after.misled_count == 1 and after.confidence == pytest.approx(
        2 * exp.confidence / 3, abs=1e-6
    )  # Beta posterior: prior worth 2 runs, one failed recall (writeback.confidence)


def test_run_with_memory_stores_a_run_that_raises_then_reraises(memory: Any) -> None:
    exp = memory.add_experience(LESSON, tenant_id=TENANT, kind="improvement")

    def broken(messages: Any, **kw: Any) -> Any:
        raise ConnectionError("provider unreachable")

    with pytest.raises(Exception, match="provider unreachable") as info:
        asyncio.run(
            run_with_memory(
                order_agent(broken),
                "Where is my order 42?",
                memory=memory,
                tenant_id=TENANT,
                success=True,
            )
        )
    [note] = [n for n in info.value.__notes__ if n.startswith("hindsight trajectory_id: ")]
    assert memory.writer.wait(30)  # written in the background
    traj = memory.get_trajectory(note.split(": ")[1], tenant_id=TENANT)
    assert traj.outcome is Outcome.FAILURE
    assert any(e.event_type.value == "error" for e in traj.events)
    assert memory.get_experience(exp.id, tenant_id=TENANT).misled_count == 1


def test_run_with_memory_forwards_stream_events(memory: Any) -> None:
    seen: list[Any] = []

    async def on_event(event: Any) -> None:
        seen.append(event)

    run = asyncio.run(
        run_with_memory(
            _agent(), "Where is my order 42?", memory=memory, tenant_id=TENANT, on_event=on_event
        )
    )
    assert any(isinstance(e, ToolCall) for e in seen)
    assert any(isinstance(e, ToolCallResult) for e in seen)
    assert run.success is True  # not judged: the default detector (an answer, no tool error)
    assert memory.writer.wait(30)
    assert memory.get_trajectory(run.trajectory_id, tenant_id=TENANT).outcome is Outcome.SUCCESS


def test_run_with_memory_adds_its_block_to_a_given_chat_memory(memory: Any) -> None:
    memory.add_experience(LESSON, tenant_id=TENANT, kind="improvement")
    chat = ChatMemory.from_defaults(session_id="conversation-1")
    agent = _agent()
    asyncio.run(
        run_with_memory(
            agent, "Where is my order 42?", memory=memory, tenant_id=TENANT, chat_memory=chat
        )
    )
    assert sum(isinstance(b, HindsightMemoryBlock) for b in chat.memory_blocks) == 1
    asyncio.run(
        run_with_memory(agent, "And order 43?", memory=memory, tenant_id=TENANT, chat_memory=chat)
    )
    assert sum(isinstance(b, HindsightMemoryBlock) for b in chat.memory_blocks) == 1
    assert LESSON in system_text(agent.llm.seen[-1])


def test_run_with_memory_uses_an_installed_capture_without_duplicates(memory: Any) -> None:
    cap = instrument(memory, tenant_id="default-tenant")
    run = asyncio.run(run_with_memory(_agent(), "order 42?", memory=memory, tenant_id=TENANT))
    assert memory.writer.wait(30)  # written in the background
    assert list(cap.trajectory_ids) == [run.trajectory_id]
    assert memory.stats(tenant_id="default-tenant")["trajectories"] == 0
    assert memory.stats(tenant_id=TENANT)["trajectories"] == 1
    cap.close()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"tenant_id": None}, TenantRequiredError),
        ({"tenant_id": ""}, TenantRequiredError),
        ({"tenant_id": TENANT, "success": "yes"}, UsageError),
        ({"tenant_id": TENANT, "namespace": ""}, UsageError),
    ],
)
def test_run_with_memory_refuses_bad_arguments(memory: Any, kwargs: Any, error: Any) -> None:
    agent = _agent()
    with pytest.raises(error):
        asyncio.run(run_with_memory(agent, "order 42?", memory=memory, **kwargs))
    assert agent.llm.seen == []  # refused before the agent ran


def test_chunked_llm_is_a_real_function_calling_llm() -> None:
    llm = ChunkedLLM(plan(say("x")))
    assert llm.metadata.is_function_calling_model
