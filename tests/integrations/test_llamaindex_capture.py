"""Capture of LlamaIndex agent runs through instrumentation (docs/integrations/llamaindex.md),
streaming on and off included."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import pytest
from hindsight_llamaindex import HindsightCapture, instrument, run_options
from hindsight_llamaindex._runs import RunState
from llama_index.core.agent.workflow import (
    AgentStream,
    AgentWorkflow,
    FunctionAgent,
    ToolCall,
    ToolCallResult,
)
from llama_index.core.instrumentation import get_dispatcher
from llamaindex_support import (
    ChunkedLLM,
    call,
    order_agent,
    order_query,
    order_query_cached,
    plan,
    run_agent,
    say,
    steps,
)

from hindsight import NotFoundError, Outcome, TenantRequiredError, UsageError
from hindsight.testing import test_memory

TENANT = "acme"
FULL_RUN = [
    ("user_message", None, None),
    ("model_call", None, "success"),
    ("tool_call", "order_query", None),
    ("tool_result", "order_query", "timeout"),
    ("model_call", None, "success"),
    ("tool_call", "order_query_cached", None),
    ("tool_result", "order_query_cached", "success"),
    ("model_call", None, "success"),
    ("final_answer", None, None),
]


@pytest.fixture
def memory() -> Any:
    mem = test_memory()
    yield mem
    if not mem.aio._closed:
        mem.flush(30)  # let queued reviews finish before the in-memory database goes away
    mem.close()


@pytest.fixture
def capture(memory: Any) -> Any:
    cap = instrument(memory, tenant_id=TENANT)
    yield cap
    cap.close()


def stored(memory: Any, capture: HindsightCapture, index: int = -1) -> Any:
    assert capture.flush(30)
    return memory.get_trajectory(capture.trajectory_ids[index], tenant_id=TENANT)


# -- tool steps and model calls ------------------------------------------------------------
def test_function_agent_run_is_one_trajectory_with_tool_steps(memory: Any, capture: Any) -> None:
    result = run_agent(order_agent(), user_msg="Where is order 42?")
    assert "shipped" in str(result)
    traj = stored(memory, capture)
    assert steps(traj) == FULL_RUN
    assert traj.task == "Where is order 42?"
    assert traj.outcome is Outcome.SUCCESS  # the default detector: answered, no tool error left
    assert traj.metadata["agent"] == "support" and "incomplete" not in traj.metadata
    assert traj.system_prompt == "You are a support agent."  # the agent's policy
    calls = [e for e in traj.events if e.event_type.value == "tool_call"]
    results = [e for e in traj.events if e.event_type.value == "tool_result"]
    assert [c.tool_args for c in calls] == [{"order_id": "42"}, {"order_id": "42"}]
    assert [r.tool_call_id for r in results] == [c.tool_call_id for c in calls]
    assert results[0].content == "order service timed out for order 42"
    assert results[0].metadata["error_type"] == "TimeoutError"
    assert all(r.latency_ms is not None and r.latency_ms >= 0 for r in results)
    first_model = traj.events[1]
    assert first_model.metadata["tool_calls"][0]["name"] == "order_query"
    assert traj.events[-1].content == "Your order 42 has shipped."
    assert capture.stats.runs_started == capture.stats.runs_finished == 1
    assert capture.stats.handler_errors == 0


def not_found_tool(order_id: str) -> str:
    """A tool that raises a plain error."""
    raise ValueError(f"no order {order_id}")


@pytest.mark.parametrize(
    ("decision", "content_part", "error_type"),
    [
        (call("not_found_tool", 1, order_id="7"), "no order 7", "ValueError"),
        (call("no_such_tool", 1, x=1), "Tool no_such_tool not found", None),
        (
            call("not_found_tool", 1, wrong="7"),
            "unexpected keyword argument",
            "TypeError",
        ),  # bad arguments
    ],
    ids=["tool-raises", "unknown-tool", "wrong-arguments"],
)
def test_failed_tool_steps_are_failures_with_the_reason(
    memory: Any, capture: Any, decision: Any, content_part: str, error_type: str | None
) -> None:
    agent = order_agent(plan(decision, say("Sorry.")), tools=[not_found_tool])
    run_agent(agent, user_msg="find order 7")
    traj = stored(memory, capture)
    result = next(e for e in traj.events if e.event_type.value == "tool_result")
    assert result.status.value == "failure"
    assert content_part in result.content
    assert result.metadata.get("error_type") == error_type
    assert [s[0] for s in steps(traj)].count("tool_call") == 1
    assert traj.outcome is Outcome.FAILURE  # the default detector: a tool error never got past


def test_llm_error_stores_a_failed_run_with_the_error(memory: Any, capture: Any) -> None:
    def broken(messages: Any, **kw: Any) -> Any:
        raise ConnectionError("provider unreachable")

    with pytest.raises(Exception, match="provider unreachable"):
        run_agent(order_agent(broken), user_msg="Where is order 42?")
    traj = stored(memory, capture)
    assert traj.outcome is Outcome.FAILURE
    errors = [e for e in traj.events if e.event_type.value == "error"]
    assert errors and errors[0].metadata["error_type"] == "ConnectionError"
    model = [e for e in traj.events if e.event_type.value == "model_call"]
    assert [m.status.value for m in model] == ["failure"]  # the call is closed, not dangling
    assert capture.stats.runs_failed == 1


# -- streaming on and off -------------------------------------------------------------------
def _workflow(streaming: bool) -> Any:
    return AgentWorkflow(agents=[order_agent(streaming=streaming)], root_agent="support")


@pytest.mark.parametrize("build", [order_agent, _workflow], ids=["FunctionAgent", "AgentWorkflow"])
@pytest.mark.parametrize("chunk_size", [1, 4, 1000], ids=["1-char", "4-char", "one-chunk"])
def test_streaming_on_and_off_capture_the_same_steps(
    memory: Any, capture: Any, build: Any, chunk_size: int
) -> None:
    async def run(streaming: bool, read_stream: bool) -> None:
        agent = build(streaming=streaming)
        for llm in _llms(agent):
            llm.chunk_size = chunk_size
        handler = agent.run(user_msg="Where is order 42?")
        if read_stream:
            async for _ in handler.stream_events():
                pass
        await handler

    for streaming, read_stream in [(True, True), (False, True), (True, False), (False, False)]:
        asyncio.run(run(streaming, read_stream))
    assert capture.flush(30)
    runs = [memory.get_trajectory(t, tenant_id=TENANT) for t in capture.trajectory_ids]
    assert len(runs) == 4
    for traj in runs:
        assert steps(traj) == FULL_RUN
    streamed = [e for e in runs[0].events if e.event_type.value == "model_call"]
    assert streamed[-1].content == "Your order 42 has shipped."
    assert streamed[-1].metadata["streamed_chunks"] >= 1


def _llms(agent: Any) -> list[ChunkedLLM]:
    agents = list(agent.agents.values()) if isinstance(agent, AgentWorkflow) else [agent]
    return [a.llm for a in agents]


def _slow_agent(**kw: Any) -> Any:
    agent = order_agent(**kw)
    agent.llm.delay = 0.01
    return agent


async def _consume_until(handler: Any, stop: Any) -> list[Any]:
    seen = []
    async for event in handler.stream_events():
        seen.append(event)
        if stop(seen):
            break
    return seen


def _answer_stream(seen: list[Any]) -> bool:
    """Stop in the middle of the streamed final answer (after both tool steps)."""
    return sum(isinstance(e, ToolCallResult) for e in seen) == 2 and isinstance(
        seen[-1], AgentStream
    )


@pytest.mark.parametrize("ending", ["cancel_run", "loop-ends", "task-cancelled"])
def test_stream_abandoned_halfway_is_stored_incomplete(
    memory: Any, capture: Any, ending: str
) -> None:
    async def scenario() -> None:
        agent = _slow_agent()
        agent.llm.chunk_size = 1
        handler = agent.run(user_msg="Where is order 42?")
        await _consume_until(handler, _answer_stream)
        if ending == "cancel_run":
            await handler.cancel_run()
            await asyncio.sleep(0.05)
        elif ending == "task-cancelled":
            handler.cancel()
            with pytest.raises(asyncio.CancelledError):
                await handler
        # "loop-ends": asyncio.run cancels the still-running workflow on exit

    asyncio.run(scenario())
    traj = stored(memory, capture)
    assert traj.metadata["incomplete"] is True
    assert traj.metadata["incomplete_reason"] in {"cancelled", "cancelled by user"}
    assert traj.outcome is Outcome.PARTIAL
    got = steps(traj)
    # everything before the break is kept; the model call cut off mid-stream is closed
    assert got == [*FULL_RUN[:7], ("model_call", None, "failure")]
    last_model = traj.events[-1]
    assert last_model.metadata["incomplete"] is True
    assert "Your order 42 has shipped.".startswith(last_model.content)  # the partial text
    assert 0 < last_model.metadata["streamed_chunks"] < len("Your order 42 has shipped.")
    assert "final_answer" not in [s[0] for s in got]
    assert capture.stats.runs_incomplete == 1


def test_run_cut_off_during_a_tool_call_keeps_the_call(memory: Any, capture: Any) -> None:
    started = asyncio.Event()

    async def slow_tool(order_id: str) -> str:
        """A tool that never answers in time."""
        started.set()
        await asyncio.sleep(30)
        return "late"

    async def scenario() -> None:
        agent = order_agent(plan(call("slow_tool", 1, order_id="1"), say("x")), tools=[slow_tool])
        handler = agent.run(user_msg="check order 1")
        await _consume_until(handler, lambda seen: isinstance(seen[-1], ToolCall))
        await started.wait()
        await handler.cancel_run()
        await asyncio.sleep(0.05)

    asyncio.run(scenario())
    traj = stored(memory, capture)
    result = next(e for e in traj.events if e.event_type.value == "tool_result")
    assert result.tool_name == "slow_tool" and result.status.value == "failure"
    assert result.metadata["incomplete"] is True
    assert traj.metadata["incomplete"] is True and traj.outcome is Outcome.PARTIAL


def test_close_stores_runs_still_open_as_incomplete(memory: Any) -> None:
    cap = instrument(memory, tenant_id=TENANT)
    release = asyncio.Event()

    async def waiting_tool(order_id: str) -> str:
        """Waits until released."""
        await release.wait()
        return "done"

    async def scenario() -> None:
        agent = order_agent(
            plan(call("waiting_tool", 1, order_id="1"), say("done")), tools=[waiting_tool]
        )
        handler = agent.run(user_msg="check order 1")
        await _consume_until(handler, lambda seen: isinstance(seen[-1], ToolCall))
        await asyncio.sleep(0.01)
        cap.close()  # the app shuts the capture down while the run is still going
        release.set()
        await handler

    asyncio.run(scenario())
    traj = memory.get_trajectory(cap.trajectory_ids[-1], tenant_id=TENANT)
    assert traj.metadata["incomplete_reason"] == "capture closed"
    assert ("tool_call", "waiting_tool", None) in steps(traj)
    assert cap.installed is False


# -- one trajectory per run; concurrent runs never mix ---------------------------------------
def test_concurrent_runs_never_mix(memory: Any) -> None:
    cap = instrument(memory)  # no default tenant: each run names its own

    def agent_for(i: int) -> Any:
        async def lookup(order_id: str) -> str:
            """Look up."""
            await asyncio.sleep(0.001 * (i % 3))
            return f"order {order_id} for agent {i}"

        lookup.__name__ = f"lookup_{i}"
        agent = order_agent(
            plan(call(f"lookup_{i}", 1, order_id=str(i)), say(f"answer {i}")),
            tools=[lookup],
            name=f"agent_{i}",
        )
        agent.llm.delay = 0.001
        agent.llm.chunk_size = 2
        return agent

    async def one(i: int) -> None:
        with run_options(tenant_id=f"tenant-{i % 2}", task_type=f"type-{i}"):
            handler = agent_for(i).run(user_msg=f"question {i}")
        await handler

    async def scenario() -> None:
        await asyncio.gather(*(one(i) for i in range(8)))

    asyncio.run(scenario())
    assert cap.flush(30)
    assert len(cap.trajectory_ids) == 8
    for tid in cap.trajectory_ids:
        traj = _find(memory, tid, ("tenant-0", "tenant-1"))
        i = int(traj.task_type.split("-")[1])
        assert traj.tenant_id == f"tenant-{i % 2}"
        assert traj.task == f"question {i}"
        assert {e.tool_name for e in traj.events if e.tool_name} == {f"lookup_{i}"}
        assert traj.events[-1].content == f"answer {i}"
        assert len(traj.events) == 6
    cap.close()


def _find(memory: Any, trajectory_id: str, tenants: tuple[str, ...]) -> Any:
    found = []
    for tenant in tenants:
        with contextlib.suppress(NotFoundError):
            found.append(memory.get_trajectory(trajectory_id, tenant_id=tenant))
    assert len(found) == 1, f"{trajectory_id} stored under {len(found)} tenants"
    return found[0]


def test_nested_agent_run_gets_its_own_trajectory(memory: Any, capture: Any) -> None:
    inner = order_agent(plan(call("order_query_cached", 1, order_id="9"), say("inner: shipped")))

    async def ask_inner(question: str) -> str:
        """Ask the order agent."""
        return str(await inner.run(user_msg=question))

    outer = order_agent(
        plan(call("ask_inner", 1, question="order 9?"), say("outer: shipped")),
        tools=[ask_inner],
        name="router",
    )
    run_agent(outer, user_msg="where is order 9")
    assert capture.flush(30)
    first, second = (memory.get_trajectory(t, tenant_id=TENANT) for t in capture.trajectory_ids)
    inner_traj, outer_traj = (
        (first, second)
        if first.metadata["agent"] == "support"
        else (
            second,
            first,
        )
    )
    assert inner_traj.metadata["parent_trajectory_id"] == outer_traj.id
    assert {e.tool_name for e in inner_traj.events if e.tool_name} == {"order_query_cached"}
    assert {e.tool_name for e in outer_traj.events if e.tool_name} == {"ask_inner"}
    assert outer_traj.events[-1].content == "outer: shipped"


# -- never break the host ------------------------------------------------------------------
def test_handler_errors_are_logged_and_counted_never_raised(
    memory: Any, capture: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("bug in the capture")

    monkeypatch.setattr(RunState, "tool_start", boom)
    with caplog.at_level(logging.WARNING, logger="hindsight.llamaindex"):
        result = run_agent(order_agent(), user_msg="Where is order 42?")
    assert "shipped" in str(result)
    assert capture.stats.handler_errors == 2
    assert "error in the LlamaIndex capture" in caplog.text
    traj = stored(memory, capture)  # the run is still stored, without the broken steps
    assert [s[0] for s in steps(traj)].count("tool_call") == 0


def test_store_failure_is_logged_counted_and_kept(
    capture: Any, memory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    memory.aio.close()  # the store is gone when the run ends
    with caplog.at_level(logging.ERROR, logger="hindsight"):
        result = run_agent(order_agent(), user_msg="Where is order 42?")
        capture.flush(30)
    assert "shipped" in str(result)
    assert capture.stats.store_errors == 1
    assert [t.task for t in capture.unsaved] == ["Where is order 42?"]  # in-memory: kept here
    assert "not stored (the memory is closed)" in caplog.text


def test_runs_without_a_tenant_are_skipped_not_guessed(memory: Any) -> None:
    cap = instrument(memory)
    run_agent(order_agent(), user_msg="Where is order 42?")
    assert cap.stats.runs_skipped == 1 and not cap.trajectory_ids
    assert memory.stats(tenant_id=TENANT)["trajectories"] == 0
    cap.close()


def test_install_is_idempotent_and_uninstall_detaches(memory: Any) -> None:
    root = get_dispatcher()
    before = (len(root.event_handlers), len(root.span_handlers))
    cap = HindsightCapture(memory, tenant_id=TENANT)
    cap.install().install()
    assert (len(root.event_handlers), len(root.span_handlers)) == (before[0] + 1, before[1] + 1)
    cap.uninstall()
    assert (len(root.event_handlers), len(root.span_handlers)) == before
    run_agent(order_agent(), user_msg="Where is order 42?")
    assert cap.stats.runs_started == 0


@pytest.mark.parametrize("tenant", ["", "   ", 5])
def test_bad_arguments_are_refused(memory: Any, tenant: Any) -> None:
    with pytest.raises(TenantRequiredError):
        HindsightCapture(memory, tenant_id=tenant)
    with pytest.raises(TenantRequiredError), run_options(tenant_id=tenant):
        pass
    with pytest.raises(UsageError, match=r"hindsight\.Memory"):
        HindsightCapture("not a memory", tenant_id=TENANT)


def test_tool_names_of_the_agent_are_known_to_the_run(memory: Any, capture: Any) -> None:
    seen: list[Any] = []

    async def probe() -> str:
        """Report the current run."""
        from hindsight_llamaindex import current_run

        seen.append(current_run())
        return "ok"

    agent = order_agent(plan(call("probe", 1), say("done")), tools=[probe, order_query_cached])
    run_agent(agent, user_msg="probe it")
    assert seen[0] is not None
    assert seen[0].tools == ("probe", "order_query_cached")
    assert seen[0].trajectory_id == capture.trajectory_ids[-1]
    assert seen[0].tenant_id == TENANT


def test_function_agent_with_real_function_tool_objects(memory: Any, capture: Any) -> None:
    from llama_index.core.tools import FunctionTool

    tools = [
        FunctionTool.from_defaults(order_query),
        FunctionTool.from_defaults(order_query_cached),
    ]
    agent = FunctionAgent(
        tools=tools,
        llm=ChunkedLLM(
            plan(
                call("order_query", 1, order_id="42"),
                call("order_query_cached", 2, order_id="42"),
                say("Your order 42 has shipped."),
            )
        ),
        system_prompt="You are a support agent.",
    )
    run_agent(agent, user_msg="Where is order 42?")
    assert steps(stored(memory, capture)) == FULL_RUN


def test_a_review_that_is_not_a_switch_is_refused_when_capture_is_built(memory: Any) -> None:
    with pytest.raises(UsageError, match=r"^review must be true or false, got 'maybe'$"):
        HindsightCapture(memory, tenant_id=TENANT, review="maybe")  # type: ignore[arg-type]
    HindsightCapture(memory, tenant_id=TENANT, review="no").close()  # type: ignore[arg-type]
