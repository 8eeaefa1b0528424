"""HindsightMiddleware with middleware that catch a model's or a tool's exception (retries,
fallbacks): one invoke is one trajectory wherever the middleware stands in the list, its
outcome is how the invoke ended, and the block reaches every model call
(docs/integrations/langchain.md#order-with-other-middleware). An exception that leaves the
agent still ends the trajectory when it is raised."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)

# isort: split

import pytest
from hindsight_langchain import HindsightMiddleware
from hindsight_langchain._bench import hindsight_hooks
from hindsight_langchain.testing import ScriptedChatModel, ai, call, system_prompt_of
from langchain.agents import create_agent
from langchain.agents.middleware import (
    ModelFallbackMiddleware,
    ModelRetryMiddleware,
    ToolRetryMiddleware,
)
from langchain_core.tools import tool

from hindsight import BLOCK_START, Outcome
from tests.integrations.langchain_support import TENANT, all_trajectories, memory, steps, stored

LESSON = "sync_inventory times out at peak hours: retry it once"


def _flaky(fails: int) -> Any:
    """A tool that raises ``TimeoutError`` on its first ``fails`` calls, then answers."""
    calls = {"n": 0}

    @tool
    def sync_inventory(sku: str) -> str:
        """Sync the stock level of a SKU with the warehouse."""
        calls["n"] += 1
        if calls["n"] <= fails:
            raise TimeoutError("warehouse API timed out after 5 s")
        return f"{sku}: 12 in stock"

    return sync_inventory


def _tool_agent(mem: Any, *, first: bool, fails: int = 1, **retry: Any) -> tuple[Any, Any, Any]:
    model = ScriptedChatModel(
        replies=[ai("", call("sync_inventory", {"sku": "B-7"}, "c1")), "B-7 has 12 in stock."]
    )
    middleware = HindsightMiddleware(mem, tenant_id=TENANT)
    other = ToolRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False, **retry)
    order = [middleware, other] if first else [other, middleware]
    return create_agent(model, [_flaky(fails)], middleware=order), model, middleware


def _model_agent(mem: Any, *, first: bool, other: Any, fails: int = 1) -> tuple[Any, Any, Any]:
    replies: list[Any] = [RuntimeError("provider returned 503")] * fails + ["Stock synced."]
    model = ScriptedChatModel(replies=replies)
    middleware = HindsightMiddleware(mem, tenant_id=TENANT)
    order = [middleware, other] if first else [other, middleware]
    return create_agent(model, [], middleware=order), model, middleware


QUESTION = {"messages": [("user", "Sync the stock of SKU B-7 with the warehouse")]}


def _invoke(agent: Any, asynchronous: bool) -> Any:
    if asynchronous:
        return asyncio.run(agent.ainvoke(QUESTION))
    return agent.invoke(QUESTION)


def _one_run(mem: Any, middleware: Any, result: Any) -> Any:
    """The invoke's single trajectory, the one the agent's state names."""
    assert all_trajectories(mem) == 1
    assert result["hindsight_trajectory_id"] == middleware.last_trajectory_id
    traj = stored(mem, middleware.last_trajectory_id)
    assert "continues_trajectory" not in traj.metadata
    return traj


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("first", [False, True], ids=["retry-outside", "hindsight-outside"])
def test_a_retried_tool_call_is_one_run_that_succeeded(first: bool, asynchronous: bool) -> None:
    mem = memory()
    lesson = mem.add_experience(LESSON, tenant_id=TENANT)
    agent, model, middleware = _tool_agent(mem, first=first)
    traj = _one_run(mem, middleware, _invoke(agent, asynchronous))
    assert traj.outcome is Outcome.SUCCESS and "error" not in traj.metadata
    results = [s for s in steps(traj) if s[0] == "tool_result"]
    if first:  # outermost: it sees the call once, with its final result
        assert results == [("tool_result", "sync_inventory", "success")]
    else:  # inside the retry: each attempt
        assert results == [
            ("tool_result", "sync_inventory", "timeout"),
            ("tool_result", "sync_inventory", "success"),
        ]
    assert all(BLOCK_START in system_prompt_of(p) for p in model.prompts)
    assert len(model.prompts) == 2
    assert mem.get_experience(lesson.id, tenant_id=TENANT).confidence > lesson.confidence
    assert middleware.errors == 0


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("first", [False, True], ids=["retry-outside", "hindsight-outside"])
@pytest.mark.parametrize("kind", ["retry", "fallback"])
def test_a_model_call_retried_or_replaced_is_one_run_that_succeeded(
    kind: str, first: bool, asynchronous: bool
) -> None:
    mem = memory()
    lesson = mem.add_experience(LESSON, tenant_id=TENANT)
    fallback = ScriptedChatModel(replies=["Stock synced by the fallback model."])
    other = (
        ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False)
        if kind == "retry"
        else ModelFallbackMiddleware(fallback)
    )
    agent, model, middleware = _model_agent(mem, first=first, other=other)
    traj = _one_run(mem, middleware, _invoke(agent, asynchronous))
    assert traj.outcome is Outcome.SUCCESS and "error" not in traj.metadata
    calls = [s for s in steps(traj) if s[0] == "model_call"]
    # each attempt, wherever it stands: outside the other middleware it learns of the
    # failed ones from LangChain's callbacks
    assert [c[2] for c in calls] == ["failure", "success"]
    prompts = model.prompts + fallback.prompts
    assert prompts and all(BLOCK_START in system_prompt_of(p) for p in prompts)
    assert mem.get_experience(lesson.id, tenant_id=TENANT).confidence > lesson.confidence
    assert middleware.errors == 0


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_retries_given_up_and_reported_to_the_model_are_one_run(asynchronous: bool) -> None:
    """The retry middleware's default gives the model the error as a tool message: the agent
    goes on and answers; its tool failed and nothing succeeded after it, so it failed."""
    mem = memory()
    agent, _, middleware = _tool_agent(mem, first=False, fails=10)
    traj = _one_run(mem, middleware, _invoke(agent, asynchronous))
    results = [s for s in steps(traj) if s[0] == "tool_result"]
    assert results == [("tool_result", "sync_inventory", "timeout")] * 3
    assert traj.outcome is Outcome.FAILURE and "error" not in traj.metadata


class _AnswersForTheModel:
    """An application's own middleware that catches the model's exception and answers in its
    place (``ModelRetryMiddleware(on_failure="continue")`` does the same once it gives up)."""

    @staticmethod
    def make() -> Any:
        from langchain.agents.middleware import AgentMiddleware
        from langchain_core.messages import AIMessage

        class AnswersForTheModel(AgentMiddleware):  # type: ignore[type-arg]
            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                try:
                    return handler(request)
                except RuntimeError as exc:
                    return AIMessage(f"Sorry, the assistant is unavailable ({exc}).")

            async def awrap_model_call(self, request: Any, handler: Any) -> Any:
                try:
                    return await handler(request)
                except RuntimeError as exc:
                    return AIMessage(f"Sorry, the assistant is unavailable ({exc}).")

        return AnswersForTheModel()

    @staticmethod
    def helper() -> Any:
        """A middleware that asks a helper model something before the agent's model call
        (as ``LLMToolSelectorMiddleware`` does): a model call inside the wrap that works."""
        from langchain.agents.middleware import AgentMiddleware

        helper = ScriptedChatModel(replies=["category: inventory"] * 10)

        class AsksAHelperModel(AgentMiddleware):  # type: ignore[type-arg]
            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                helper.invoke("classify: " + str(request.messages[-1].content))
                return handler(request)

            async def awrap_model_call(self, request: Any, handler: Any) -> Any:
                await helper.ainvoke("classify: " + str(request.messages[-1].content))
                return await handler(request)

        return AsksAHelperModel()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("first", [False, True], ids=["other-outside", "hindsight-outside"])
@pytest.mark.parametrize("other", ["retry-continue", "own-middleware", "helper-model-and-retry"])
def test_a_reply_no_model_call_produced_is_no_success(
    other: str, first: bool, asynchronous: bool
) -> None:
    """Every model call failed and a middleware answered in the model's place: the failed
    calls are stored as such and that answer as the run's answer, not as a model reply, so
    the run is neither a success nor a failure and the recalled lesson is neither credited
    nor blamed: the same steps wherever HindsightMiddleware stands in the list."""
    mem = memory()
    lesson = mem.add_experience(LESSON, tenant_id=TENANT)
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False)
    catcher = _AnswersForTheModel.make() if other == "own-middleware" else retry
    agent, model, middleware = _model_agent(mem, first=first, other=catcher, fails=10)
    if other == "helper-model-and-retry":  # its helper's reply is no reply of the agent's
        order = [_AnswersForTheModel.helper(), retry]
        order = [middleware, *order] if first else [*order, middleware]
        agent = create_agent(model, [], middleware=order)
    result = _invoke(agent, asynchronous)
    traj = _one_run(mem, middleware, result)
    calls = [s for s in steps(traj) if s[0] == "model_call"]
    attempts = 1 if other == "own-middleware" else 3
    assert [c[2] for c in calls] == ["failure"] * attempts
    answer = result["messages"][-1].content
    assert [e.content for e in traj.events if e.event_type.value == "final_answer"] == [answer]
    assert traj.outcome is Outcome.UNKNOWN and "error" not in traj.metadata
    assert all(BLOCK_START in system_prompt_of(p) for p in model.prompts)
    after = mem.get_experience(lesson.id, tenant_id=TENANT)
    assert (after.helped_count, after.misled_count) == (0, 0)
    assert middleware.errors == 0


class _RaisesAnother:
    """A middleware that re-raises the model's exception as one of its own (``cycle``: and
    makes its own the model's exception's cause too, a loop in the chain)."""

    @staticmethod
    def make(cycle: bool = False) -> Any:
        from langchain.agents.middleware import AgentMiddleware

        def another(exc: BaseException) -> ValueError:
            err = ValueError("the model layer failed")
            err.__cause__ = exc
            if cycle:
                exc.__cause__ = err
            return err

        class RaisesAnother(AgentMiddleware):  # type: ignore[type-arg]
            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                try:
                    return handler(request)
                except RuntimeError as exc:
                    raise another(exc)  # noqa: B904  (the cause is set by another())

            async def awrap_model_call(self, request: Any, handler: Any) -> Any:
                try:
                    return await handler(request)
                except RuntimeError as exc:
                    raise another(exc)  # noqa: B904

        return RaisesAnother()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("first", [False, True], ids=["other-outside", "hindsight-outside"])
@pytest.mark.parametrize("how", ["fallbacks-raise-the-first", "raised-as-another", "cause-loop"])
def test_each_failed_model_call_is_recorded_once(how: str, first: bool, asynchronous: bool) -> None:
    """The exception leaving the wrap is not always the last one a model call raised (a
    ``with_fallbacks`` model raises its first error; a middleware may raise its own from the
    model's): each model call that failed is one failed call, wherever the middleware
    stands."""
    mem = memory()
    middleware = HindsightMiddleware(mem, tenant_id=TENANT)
    if how == "fallbacks-raise-the-first":
        model: Any = ScriptedChatModel(replies=[RuntimeError("provider returned 503")])
        model = model.with_fallbacks([ScriptedChatModel(replies=[ConnectionError("backup down")])])
        order, calls = [middleware], 2
    else:
        model = ScriptedChatModel(replies=[RuntimeError("provider returned 503")])
        other = _RaisesAnother.make(cycle=how == "cause-loop")
        order, calls = ([middleware, other] if first else [other, middleware]), 1
    agent = create_agent(model, [], middleware=order)
    with pytest.raises((RuntimeError, ValueError)):
        _invoke(agent, asynchronous)
    traj = stored(mem, middleware.last_trajectory_id)
    assert [s[2] for s in steps(traj) if s[0] == "model_call"] == ["failure"] * calls
    assert traj.outcome is Outcome.FAILURE


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("first", [False, True], ids=["retry-outside", "hindsight-outside"])
def test_retries_given_up_and_raised_are_each_a_failed_call(
    first: bool, asynchronous: bool
) -> None:
    """The retry middleware gives up and raises: every attempt is a failed model call (the
    model raised the same exception object each time in this script), wherever
    HindsightMiddleware stands, and the run a failure."""
    mem = memory()
    other = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False, on_failure="error")
    agent, _, middleware = _model_agent(mem, first=first, other=other, fails=10)
    with pytest.raises(RuntimeError):
        _invoke(agent, asynchronous)
    traj = stored(mem, middleware.last_trajectory_id)
    assert [s[2] for s in steps(traj) if s[0] == "model_call"] == ["failure"] * 3
    assert traj.outcome is Outcome.FAILURE and "RuntimeError" in traj.metadata["error"]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("watcher", [True, False], ids=["watched", "watcher-off"])
@pytest.mark.parametrize("where", ["tool", "model"])
def test_an_exception_that_leaves_the_agent_ends_the_run_as_a_failure(
    where: str, watcher: bool, asynchronous: bool
) -> None:
    """Retries exhausted and raised (or no retry at all): the invoke raises and its one
    trajectory is a failure naming the error, written when the agent raised. Without the
    watcher (switched off for the run) the first exception ends it, as before."""
    mem = memory()
    if where == "tool":
        agent, _, middleware = _tool_agent(mem, first=False, fails=10, on_failure="error")
        expected: type[Exception] = TimeoutError
    else:
        other = ModelRetryMiddleware(
            max_retries=1, initial_delay=0.0, jitter=False, on_failure="error"
        )
        agent, _, middleware = _model_agent(mem, first=False, other=other, fails=10)
        expected = RuntimeError
    with hindsight_hooks(router=False, watcher=watcher), pytest.raises(expected):
        _invoke(agent, asynchronous)
    assert middleware.last_trajectory_id is not None  # handed over before the raise returned
    # without the watcher each attempt that raised is a part of its own, as before
    assert all_trajectories(mem) == (1 if watcher else {"tool": 3, "model": 2}[where])
    first = stored(mem, middleware.last_trajectory_id)
    assert first.outcome is Outcome.FAILURE
    assert expected.__name__ in first.metadata["error"]
    if watcher:
        attempts = [s for s in steps(first) if s[2] in ("timeout", "failure")]
        assert len(attempts) == (3 if where == "tool" else 2)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_exception_after_an_interrupt_and_its_resume_ends_the_run(asynchronous: bool) -> None:
    """The resumed invoke runs in a new graph run: its failure is followed there too."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command, interrupt

    @tool
    def refund(order: str) -> str:
        """Refund an order once a person approved it."""
        interrupt({"approve": order})
        raise RuntimeError("payment gateway down")

    mem = memory()
    middleware = HindsightMiddleware(mem, tenant_id=TENANT)
    model = ScriptedChatModel(replies=[ai("", call("refund", {"order": "A1"}, "c1")), "done"])
    agent = create_agent(model, [refund], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"refunds-{asynchronous}"}}

    def run(value: Any) -> Any:
        if asynchronous:
            return asyncio.run(agent.ainvoke(value, config))
        return agent.invoke(value, config)

    assert run({"messages": [("user", "Refund order A1")]}).get("__interrupt__")
    with pytest.raises(RuntimeError, match="payment gateway down"):
        run(Command(resume=True))
    assert all_trajectories(mem) == 1
    traj = stored(mem, middleware.last_trajectory_id)
    assert traj.outcome is Outcome.FAILURE and "payment gateway down" in traj.metadata["error"]
    assert ("tool_result", "refund", "failure") in steps(traj)


@pytest.mark.parametrize("how", ["break", "close", "async-break"])
def test_a_stream_abandoned_ends_the_run_incomplete_and_blames_nothing(how: str) -> None:
    mem = memory()
    lesson = mem.add_experience(LESSON, tenant_id=TENANT)
    agent, _, middleware = _tool_agent(mem, first=False)
    if how == "async-break":

        async def first_chunk() -> None:
            async for _ in agent.astream(QUESTION):
                break

        asyncio.run(first_chunk())
    else:
        chunks = agent.stream(QUESTION)
        next(iter(chunks))
        if how == "close":
            chunks.close()
        else:
            del chunks
    assert middleware.wait(timeout=30)
    traj = stored(mem, middleware.last_trajectory_id)
    assert traj.metadata.get("incomplete") is True and "error" not in traj.metadata
    assert traj.outcome is Outcome.UNKNOWN
    assert mem.get_experience(lesson.id, tenant_id=TENANT).confidence == lesson.confidence


def test_the_end_of_a_run_that_raised_waits_write_wait_for_its_write() -> None:
    mem = memory()
    for _ in range(5):
        middleware = HindsightMiddleware(mem, tenant_id=TENANT, write_wait=10)
        agent = create_agent(
            ScriptedChatModel(replies=[ai("", call("sync_inventory", {"sku": "B-7"}, "c1"))]),
            [_flaky(10)],
            middleware=[ToolRetryMiddleware(max_retries=0, on_failure="error"), middleware],
        )
        with pytest.raises(TimeoutError):
            agent.invoke(QUESTION)
        assert mem.get_trajectory(middleware.last_trajectory_id, tenant_id=TENANT) is not None
