"""Field cases on real LangChain objects, with variants: tool validation errors, async
streaming with a failing tool, fallbacks, early children and unknown parents."""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from typing import Any

from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)

# isort: split

import pytest
from hindsight_langchain import AsyncHindsightCallbackHandler, HindsightCallbackHandler
from hindsight_langchain.testing import ScriptedChatModel, ai, call
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.agents.middleware import ModelFallbackMiddleware, wrap_tool_call
from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.callbacks.manager import CallbackManagerForToolRun
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from pydantic import ValidationError

from hindsight import Outcome
from tests.integrations.langchain_support import (
    TENANT,
    add,
    all_trajectories,
    closing,  # noqa: F401  (autouse fixture)
    divide,
    get_order,
    last_id,
    memory,
    scripted,
    steps,
    stored,
    tool_steps,
    tracking_cache,
)


def _paired(traj: Any) -> None:
    """No tool_call without its tool_result (same id, same tool), and no result twice."""
    calls = [e for e in traj.events if e.event_type.value == "tool_call"]
    results = [e for e in traj.events if e.event_type.value == "tool_result"]
    assert sorted(c.tool_call_id or c.event_id for c in calls) == sorted(
        r.tool_call_id or r.parent_id for r in results
    )


# -- tool validation errors --------------------------------------------------------------------
BAD_ARGS = [
    pytest.param({"a": "3"}, ["b", "Field required"], id="missing-arg"),
    pytest.param({"a": "three", "b": 1}, ["a", "valid integer"], id="wrong-type"),
    pytest.param({}, ["a", "b", "Field required"], id="no-args"),
    pytest.param({"a": [1], "b": {"x": 1}}, ["valid integer"], id="wrong-shapes"),
]


@pytest.mark.parametrize(("args", "words"), BAD_ARGS)
def test_validation_error_handled_by_the_agent(args: dict[str, Any], words: list[str]) -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    model = scripted(ai("", call("add", args, "c1")), ai("I could not add them."))
    result = create_agent(model, [add]).invoke(
        {"messages": [("user", "add 3 and ?")]}, {"callbacks": [handler]}
    )
    reply = next(m for m in result["messages"] if isinstance(m, ToolMessage))
    assert reply.status == "error"  # the ToolNode handled it and told the model
    traj = stored(mem, last_id(handler))
    assert tool_steps(traj) == [("tool_call", "add", None), ("tool_result", "add", "failure")]
    call_event, result_event = [e for e in traj.events if e.tool_name == "add"]
    assert call_event.tool_args == args and call_event.tool_call_id == "c1"
    assert (
        result_event.tool_call_id == "c1"
        and result_event.metadata["error_type"] == "ValidationError"
    )
    for word in words:
        assert word in result_event.content
    assert traj.outcome is Outcome.FAILURE  # default detector: the tool error stayed unresolved
    _paired(traj)


@pytest.mark.parametrize(("args", "words"), BAD_ARGS)
def test_validation_error_without_handling_fails_the_run(
    args: dict[str, Any], words: list[str]
) -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    with pytest.raises(ValidationError):
        add.invoke(args, {"callbacks": [handler]})
    traj = stored(mem, last_id(handler))
    assert tool_steps(traj) == [("tool_call", "add", None), ("tool_result", "add", "failure")]
    for word in words:
        assert word in traj.events[-1].content
    assert traj.outcome is Outcome.FAILURE
    _paired(traj)


def test_validation_error_handled_by_the_tool_itself() -> None:
    @tool
    def add_safe(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    add_safe.handle_validation_error = True
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    # With a tool call id the reply is a ToolMessage(status="error") ...
    message = add_safe.invoke(
        {"name": "add_safe", "args": {"a": "3"}, "id": "c7", "type": "tool_call"},
        {"callbacks": [handler]},
    )
    assert message.status == "error"
    first = stored(mem, last_id(handler))
    # ... without one LangChain returns its default text: both are failed calls.
    add_safe.invoke({"a": "3"}, {"callbacks": [handler]})
    second = stored(mem, last_id(handler))
    for traj in (first, second):
        assert tool_steps(traj) == [
            ("tool_call", "add_safe", None),
            ("tool_result", "add_safe", "failure"),
        ]
        assert "validation error" in traj.events[1].content.lower()
        _paired(traj)
    assert first.events[0].tool_call_id == first.events[1].tool_call_id == "c7"


def test_with_the_middleware_capture() -> None:
    from hindsight_langchain import HindsightMiddleware

    mem = memory()
    middleware = HindsightMiddleware(mem, tenant_id=TENANT)
    model = scripted(ai("", call("add", {"a": "3"}, "c1")), ai("I could not add them."))
    create_agent(model, [add], middleware=[middleware]).invoke({"messages": [("user", "add")]})
    traj = stored(mem, middleware.last_trajectory_id)
    assert tool_steps(traj) == [("tool_call", "add", None), ("tool_result", "add", "failure")]
    assert "Field required" in traj.events[[s[0] for s in steps(traj)].index("tool_result")].content
    _paired(traj)


# -- async streaming with a failing tool ---------------------------------------------------------
@tool
async def adivide(a: int, b: int) -> float:
    """Divide a by b (async)."""
    return a / b


def _divide_agent(tool_fn: Any, *middleware: Any) -> Any:
    model = scripted(ai("", call(tool_fn.name, {"a": 1, "b": 0}, "call-div")), ai("Cannot divide."))
    return create_agent(model, [tool_fn], middleware=list(middleware))


async def _consume(agent: Any, mode: str, handler: Any) -> None:
    config = {"callbacks": [handler]}
    inputs = {"messages": [("user", "1/0?")]}
    if mode == "astream":
        async for _ in agent.astream(inputs, config, stream_mode="updates"):
            pass
    elif mode == "astream-messages":
        async for _ in agent.astream(inputs, config, stream_mode="messages"):
            pass
    else:
        async for _ in agent.astream_events(inputs, config, version="v2"):
            pass


def _one_failed_division(traj: Any, name: str) -> None:
    failed = [e for e in traj.events if e.event_type.value == "tool_result"]
    assert len(failed) == 1
    assert failed[0].status.value == "failure" and failed[0].tool_name == name
    assert failed[0].metadata["error_type"] == "ZeroDivisionError"
    assert failed[0].tool_call_id == "call-div"
    assert "division by zero" in failed[0].content
    _paired(traj)


@pytest.mark.parametrize("mode", ["astream", "astream-messages", "astream_events"])
@pytest.mark.parametrize("handler_cls", [AsyncHindsightCallbackHandler, HindsightCallbackHandler])
@pytest.mark.parametrize("tool_fn", [adivide, divide], ids=["async-tool", "sync-tool"])
def test_streamed_tool_error(mode: str, handler_cls: type, tool_fn: Any) -> None:
    mem = memory()
    handler = handler_cls(mem, tenant_id=TENANT)
    with pytest.raises(ZeroDivisionError):
        asyncio.run(_consume(_divide_agent(tool_fn), mode, handler))
    assert handler.wait() and handler.errors == 0 and all_trajectories(mem) == 1
    traj = stored(mem, last_id(handler))
    _one_failed_division(traj, tool_fn.name)
    assert traj.outcome is Outcome.FAILURE


@wrap_tool_call
async def report_errors(request: Any, handler: Any) -> Any:
    """An app-level middleware that turns tool exceptions into error replies."""
    try:
        return await handler(request)
    except ZeroDivisionError as exc:
        return ToolMessage(
            content=f"Error: {exc!r}", tool_call_id=request.tool_call["id"], status="error"
        )


@pytest.mark.parametrize("handler_cls", [AsyncHindsightCallbackHandler, HindsightCallbackHandler])
def test_streamed_tool_error_handled_by_middleware(handler_cls: type) -> None:
    mem = memory()
    handler = handler_cls(mem, tenant_id=TENANT)
    asyncio.run(_consume(_divide_agent(adivide, report_errors), "astream_events", handler))
    traj = stored(mem, last_id(handler))
    _one_failed_division(traj, "adivide")
    assert steps(traj)[-1] == ("final_answer", None, None)
    assert traj.outcome is Outcome.FAILURE  # default detector: the division never worked


# -- fallbacks, early children, unknown parents --------------------------------------------------
def _fallback_models() -> tuple[ScriptedChatModel, ScriptedChatModel]:
    return scripted(RuntimeError("primary model overloaded")), scripted("backup says hi")


@pytest.mark.parametrize("handler_cls", [HindsightCallbackHandler, AsyncHindsightCallbackHandler])
def test_with_fallbacks_is_one_trajectory(handler_cls: type) -> None:
    mem = memory()
    handler = handler_cls(mem, tenant_id=TENANT)
    primary, backup = _fallback_models()
    answer = asyncio.run(primary.with_fallbacks([backup]).ainvoke("hi", {"callbacks": [handler]}))
    assert answer.content == "backup says hi"
    assert all_trajectories(mem) == 1
    traj = stored(mem, last_id(handler))
    assert steps(traj) == [
        ("user_message", None, None),
        ("model_call", None, "failure"),
        ("model_call", None, "success"),
        ("final_answer", None, None),
    ]
    assert traj.events[1].metadata["error_type"] == "RuntimeError"
    assert traj.outcome is Outcome.SUCCESS  # default detector: the run recovered, answered


def test_fallbacks_inside_an_agent_and_a_chain() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    primary = scripted(RuntimeError("primary model overloaded"))
    backup = scripted(ai("", call("get_order", {"order_id": "A1"}, "c1")), ai("A1 is paid."))
    agent = create_agent(primary, [get_order], middleware=[ModelFallbackMiddleware(backup)])
    agent.invoke({"messages": [("user", "A1?")]}, {"callbacks": [handler]})
    primary2, backup2 = _fallback_models()
    chain = RunnableLambda(lambda x: x) | primary2.with_fallbacks([backup2])
    chain.invoke("hi", {"callbacks": [handler]})
    assert handler.wait() and all_trajectories(mem) == 2 and handler.stored == 2
    agent_traj = stored(mem, next(iter(handler.trajectory_ids.values())))
    failed = [s for s in steps(agent_traj) if s == ("model_call", None, "failure")]
    assert len(failed) == 2  # the primary fails on each of the two model turns
    assert ("tool_result", "get_order", "success") in steps(agent_traj)


def _sync_step(fails: int) -> tuple[Any, dict[str, int]]:
    """A chain step that raises ``TimeoutError`` on its first ``fails`` calls."""
    calls = {"n": 0}

    def sync(order: str) -> str:
        calls["n"] += 1
        if calls["n"] <= fails:
            raise TimeoutError("warehouse sync timed out")
        return f"synced {order}"

    return RunnableLambda(sync, name="sync"), calls


def _handled(step: Any, how: str) -> Any:
    """``step`` with its exception caught inside the chain: LangChain's retry, a fallback,
    or the application's own try/except around the step."""
    if how == "with_retry":
        return step.with_retry(
            stop_after_attempt=3,
            wait_exponential_jitter=False,
            retry_if_exception_type=(TimeoutError,),
        )
    if how == "with_fallbacks":
        return step.with_fallbacks([RunnableLambda(lambda o: f"queued {o}", name="queue")])

    def again(order: str, config: Any) -> str:
        try:
            return str(step.invoke(order, config))
        except TimeoutError:
            return str(step.invoke(order, config))

    return RunnableLambda(again, name="again")


@pytest.mark.parametrize("then_model", [False, True])
@pytest.mark.parametrize("how", ["with_retry", "with_fallbacks", "try_except"])
@pytest.mark.parametrize("handler_cls", [HindsightCallbackHandler, AsyncHindsightCallbackHandler])
def test_a_step_that_raised_inside_the_chain_is_not_a_failure(
    handler_cls: type, how: str, then_model: bool
) -> None:
    """The exception never left the run: the default detector judges what came after it,
    and the failed attempt stays in the trajectory for the review. A model that answered
    after it makes a success; an answer alone is unknown (a retry that worked and an apology
    read the same), never a failure that would blame what the run recalled."""
    mem = memory()
    handler = handler_cls(mem, tenant_id=TENANT)
    step, calls = _sync_step(1)
    chain = RunnableLambda(lambda o: o.strip(), name="prep") | _handled(step, how)
    if then_model:
        chain = chain | scripted("B-7 is synced.")
    answer = asyncio.run(chain.ainvoke(" B-7 ", {"callbacks": [handler]}))
    if not then_model:
        assert answer == ("queued B-7" if how == "with_fallbacks" else "synced B-7")
    assert calls["n"] == (1 if how == "with_fallbacks" else 2)
    traj = stored(mem, last_id(handler))
    kinds = [s[0] for s in steps(traj)]
    assert kinds[:2] == ["user_message", "error"] and kinds[-1] == "final_answer"
    assert ("model_call" in kinds) is then_model
    assert "warehouse sync timed out" in traj.events[1].content
    assert traj.outcome is (Outcome.SUCCESS if then_model else Outcome.UNKNOWN)


@pytest.mark.parametrize("how", ["with_retry", "try_except"])
def test_a_step_whose_retries_ran_out_is_a_failure(how: str) -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    step, calls = _sync_step(9)
    with pytest.raises(TimeoutError):
        _handled(step, how).invoke("B-7", {"callbacks": [handler]})
    assert calls["n"] == (3 if how == "with_retry" else 2)
    traj = stored(mem, last_id(handler))
    assert traj.outcome is Outcome.FAILURE
    assert "TimeoutError" in traj.metadata["error"]


@pytest.mark.parametrize("handler_cls", [HindsightCallbackHandler, AsyncHindsightCallbackHandler])
@pytest.mark.parametrize("words", ["timed out", "push timed out"])
def test_two_steps_that_raise_the_same_words_are_two_errors(handler_cls: type, words: str) -> None:
    """An error is one event however many runs it travels up through; a second step that
    raises the same type and words is a second error (the outcome does not depend on an
    error's wording)."""
    mem = memory()
    handler = handler_cls(mem, tenant_id=TENANT)

    def fail(words: str) -> Any:
        def step(order: str) -> str:
            raise TimeoutError(words)

        return step

    sync = RunnableLambda(fail("timed out"), name="sync")
    push = RunnableLambda(fail(words), name="push")
    inner = RunnableLambda(lambda o, config: push.invoke(o, config), name="inner")

    def root(order: str, config: Any) -> str | None:
        with contextlib.suppress(TimeoutError):
            sync.invoke(order, config)
        try:
            inner.invoke(order, config)  # push's error travels up through inner
        except TimeoutError:
            return None
        return order

    asyncio.run(RunnableLambda(root, name="root").ainvoke("B-7", {"callbacks": [handler]}))
    traj = stored(mem, last_id(handler))
    errors = [
        (e.metadata.get("run"), e.content) for e in traj.events if e.event_type.value == "error"
    ]
    assert errors == [("sync", "TimeoutError: timed out"), ("push", f"TimeoutError: {words}")]
    assert traj.outcome is Outcome.FAILURE  # the last error: nothing came after it


@pytest.mark.parametrize("depth", [1, 3])
def test_an_error_that_leaves_the_run_is_one_event(depth: int) -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)

    def step(order: str) -> str:
        raise TimeoutError("warehouse timed out")

    runnable: Any = RunnableLambda(step, name="step")
    for level in range(depth):
        runnable = RunnableLambda(
            lambda o, config, inner=runnable: inner.invoke(o, config), name=f"level{level}"
        )
    with pytest.raises(TimeoutError):
        runnable.invoke("B-7", {"callbacks": [handler]})
    traj = stored(mem, last_id(handler))
    assert [e.event_type.value for e in traj.events].count("error") == 1
    assert traj.outcome is Outcome.FAILURE


def _manager(handler: Any, parent: uuid.UUID | None = None) -> CallbackManager:
    return CallbackManager(handlers=[handler], inheritable_handlers=[handler], parent_run_id=parent)


def test_children_reported_before_their_parent() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    root, node = uuid.uuid4(), uuid.uuid4()
    # grandchild tool, then its parent node, then the root: all through the real manager
    tool_run = _manager(handler, node).on_tool_start(
        {"name": "get_order"}, "A1", inputs={"order_id": "A1"}, tool_call_id="c1"
    )
    tool_run.on_tool_end("order A1: paid")
    node_run = _manager(handler, root).on_chain_start({"name": "tools"}, {}, run_id=node)
    node_run.on_chain_end({})
    assert handler.wait() and handler.stored == 0  # nothing is final before the root ends
    root_run = _manager(handler).on_chain_start({"name": "agent"}, {"input": "A1?"}, run_id=root)
    root_run.on_chain_end({"output": "A1 is paid."})
    assert handler.wait() and handler.stored == 1 and handler.errors == 0
    traj = stored(mem, str(root))
    assert steps(traj) == [
        ("tool_call", "get_order", None),
        ("tool_result", "get_order", "success"),
        ("user_message", None, None),
        ("final_answer", None, None),
    ]
    _paired(traj)


def test_unknown_parent_orphans_are_kept_as_one_trajectory() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    # The handler is attached to the two models only: it never sees the fallback runnable,
    # their common parent.
    primary = scripted(RuntimeError("primary model overloaded")).with_config(callbacks=[handler])
    backup = scripted("backup says hi").with_config(callbacks=[handler])
    assert primary.with_fallbacks([backup]).invoke("hi").content == "backup says hi"
    assert handler.wait() and handler.stored == 0  # the parent may still come: kept
    assert handler.flush() and handler.stored == 1
    traj = stored(mem, last_id(handler))
    assert [s for s in steps(traj) if s[0] == "model_call"] == [
        ("model_call", None, "failure"),
        ("model_call", None, "success"),
    ]
    assert "orphan_of_run_id" in traj.metadata
    assert all_trajectories(mem) == 1


def test_idle_orphans_are_stored_when_the_next_root_starts() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT, orphan_timeout=0.0)
    run = _manager(handler, uuid.uuid4()).on_tool_start({"name": "get_order"}, "A1")
    run.on_tool_end("order A1: paid")
    tracking_cache.invoke({"order_id": "A1"}, {"callbacks": [handler]})
    assert handler.wait() and handler.stored == 2 and all_trajectories(mem) == 2


def test_events_after_the_root_ended_and_ends_without_starts() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    root = uuid.uuid4()
    root_run = _manager(handler).on_chain_start({"name": "agent"}, {"input": "A1?"}, run_id=root)
    late = root_run.get_child()
    root_run.on_chain_end({"output": "done"})
    late.on_tool_start({"name": "get_order"}, "A1", tool_call_id="c1").on_tool_end("late reply")
    # an end whose start never came
    CallbackManagerForToolRun(
        run_id=uuid.uuid4(), handlers=[handler], inheritable_handlers=[], parent_run_id=root
    ).on_tool_end("orphan end", name="ghost_tool")
    assert handler.wait() and handler.stored == 1
    assert handler.close() and handler.errors == 0
    assert handler.stored == 2  # one more group: everything late for root
    late_trajs = [stored(mem, t) for t in _trajectory_ids(mem)]
    late_trajs = [t for t in late_trajs if t.metadata.get("late_for_trajectory") == str(root)]
    tools = sorted(e.tool_name for t in late_trajs for e in t.events if e.tool_name)
    assert tools == ["get_order", "get_order", "ghost_tool"]
    ghost = next(e for t in late_trajs for e in t.events if e.tool_name == "ghost_tool")
    assert ghost.content == "orphan end" and ghost.metadata["unmatched_end"] is True


def _trajectory_ids(mem: Any) -> list[str]:
    store = mem.aio.store
    return list(store.list_trajectory_ids(TENANT))


class _Recorder(BaseCallbackHandler):
    """Records every callback of a real run, to replay it in other orders."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_") and name != "on_llm_new_token":

            def record(*args: Any, **kwargs: Any) -> None:
                object.__getattribute__(self, "calls").append((name, args, kwargs))

            return record
        return object.__getattribute__(self, name)


def _recorded_run() -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    recorder = _Recorder()
    model = scripted(
        ai(
            "",
            call("get_order", {"order_id": "A1"}, "c1"),
            call("tracking_cache", {"order_id": "A1"}, "c2"),
        ),
        ai("A1 was delivered."),
    )
    create_agent(model, [get_order, tracking_cache]).invoke(
        {"messages": [("user", "A1?")]}, {"callbacks": [recorder]}
    )
    return recorder.calls


RECORDED = _recorded_run()


@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False))
def test_any_order_of_callbacks_never_crashes_or_drops_a_tool_step(rnd: random.Random) -> None:
    calls = list(RECORDED)
    rnd.shuffle(calls)
    mem = memory()
    try:
        handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
        for name, args, kwargs in calls:
            getattr(handler, name)(*args, **kwargs)
        handler.close()
        assert handler.errors == 0
        ids = _trajectory_ids(mem)
        events = [e for tid in ids for e in stored(mem, tid).events]
        for call_id in ("c1", "c2"):
            kinds = {e.event_type.value for e in events if e.tool_call_id == call_id}
            assert {"tool_call", "tool_result"} <= kinds
        assert any(e.event_type.value == "user_message" for e in events)
    finally:
        mem.flush(timeout=30)
        mem.close()
