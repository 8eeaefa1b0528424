"""HindsightCallbackHandler / AsyncHindsightCallbackHandler on real LangChain runs
(docs/integrations/langchain.md)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import uuid
from typing import Any

from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)

# isort: split

import httpx
import pytest
from hindsight_langchain import AsyncHindsightCallbackHandler, HindsightCallbackHandler
from hindsight_langchain._convert import error_status
from hindsight_langchain.testing import ai, call
from langchain.agents import create_agent
from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.callbacks.manager import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import ToolException, tool

from hindsight import AsyncMemory, EventStatus, Outcome
from hindsight.testing import FakeEmbedder, InMemoryVectorIndex, memory_store
from tests.integrations.langchain_support import (
    TENANT,
    all_trajectories,
    carrier_status,
    carrier_status_handled,
    closing,  # noqa: F401  (autouse fixture)
    get_order,
    last_id,
    memory,
    scripted,
    steps,
    stored,
    three_tool_agent,
    tracking_cache,
)

TIMEOUT_STEPS = [
    ("user_message", None, None),
    ("model_call", None, "success"),
    ("tool_call", "get_order", None),
    ("tool_result", "get_order", "success"),
    ("model_call", None, "success"),
    ("tool_call", "carrier_status", None),
    ("tool_result", "carrier_status", "timeout"),
]


def _check_links(traj: Any) -> None:
    """Each tool_result's parent is its tool_call, each tool_call's parent the model call that
    asked for it; ids match; every call has exactly one result (no start without an end)."""
    by_id = {e.event_id: e for e in traj.events}
    calls = [e for e in traj.events if e.event_type.value == "tool_call"]
    results = [e for e in traj.events if e.event_type.value == "tool_result"]
    assert len(calls) == len(results)
    for result in results:
        call_event = by_id[result.parent_id]
        assert call_event.event_type.value == "tool_call"
        assert call_event.tool_call_id == result.tool_call_id
        assert call_event.tool_name == result.tool_name
    for call_event in calls:
        asking = by_id[call_event.parent_id]
        assert asking.event_type.value == "model_call"
        ids = [c["id"] for c in asking.metadata["tool_calls"]]
        assert call_event.tool_call_id in ids


# -- done when: three tools, one times out ------------------------------------------------------
def test_three_tools_one_timeout_raised_is_one_trajectory_step_by_step() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    agent = three_tool_agent(carrier_status)
    with pytest.raises(TimeoutError, match="carrier API timed out"):
        agent.invoke({"messages": [("user", "Where is order A1?")]}, {"callbacks": [handler]})
    assert handler.wait() and handler.errors == 0
    assert all_trajectories(mem) == 1
    traj = stored(mem, last_id(handler))
    assert steps(traj) == TIMEOUT_STEPS
    assert traj.outcome is Outcome.FAILURE
    assert traj.task == "Where is order A1?"
    assert [e.tool_call_id for e in traj.events if e.tool_name == "carrier_status"] == ["c2"] * 2
    assert traj.events[-1].metadata["error_type"] == "TimeoutError"
    assert "timed out after 5 s" in traj.events[-1].content
    assert traj.events[-1].latency_ms is not None and traj.events[-1].latency_ms >= 0
    assert traj.metadata["error"].startswith("TimeoutError")
    _check_links(traj)


def test_three_tools_one_timeout_handled_run_continues_to_answer() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    agent = three_tool_agent(carrier_status_handled)
    result = agent.invoke({"messages": [("user", "Where is order A1?")]}, {"callbacks": [handler]})
    assert result["messages"][-1].content == "Order A1 was delivered yesterday."
    traj = stored(mem, last_id(handler))
    assert steps(traj) == [
        ("user_message", None, None),
        ("model_call", None, "success"),
        ("tool_call", "get_order", None),
        ("tool_result", "get_order", "success"),
        ("model_call", None, "success"),
        ("tool_call", "carrier_status_handled", None),
        ("tool_result", "carrier_status_handled", "timeout"),
        ("model_call", None, "success"),
        ("tool_call", "tracking_cache", None),
        ("tool_result", "tracking_cache", "success"),
        ("model_call", None, "success"),
        ("final_answer", None, None),
    ]
    assert traj.outcome is Outcome.SUCCESS  # default detector: answered, timeout worked around
    assert traj.events[-1].content == "Order A1 was delivered yesterday."
    assert traj.metadata["system_prompt_head"] == "You are a support agent."
    assert traj.system_prompt == "You are a support agent."  # the whole policy
    _check_links(traj)


def test_async_handler_records_the_same_steps_as_the_sync_one() -> None:
    mem = memory()
    handler = AsyncHindsightCallbackHandler(mem.aio, tenant_id=TENANT)
    agent = three_tool_agent(carrier_status)

    async def run() -> None:
        with pytest.raises(TimeoutError):
            await agent.ainvoke(
                {"messages": [("user", "Where is order A1?")]}, {"callbacks": [handler]}
            )

    asyncio.run(run())
    assert handler.errors == 0
    traj = stored(mem, last_id(handler))
    assert steps(traj) == TIMEOUT_STEPS
    _check_links(traj)


def test_async_handler_in_a_sync_run_and_sync_handler_in_an_async_run() -> None:
    mem = memory()
    async_handler = AsyncHindsightCallbackHandler(mem, tenant_id=TENANT)
    with pytest.raises(TimeoutError):
        three_tool_agent().invoke({"messages": [("user", "A1?")]}, {"callbacks": [async_handler]})
    sync_handler = HindsightCallbackHandler(mem, tenant_id=TENANT)

    async def run() -> None:
        with pytest.raises(TimeoutError):
            await three_tool_agent().ainvoke(
                {"messages": [("user", "A1?")]}, {"callbacks": [sync_handler]}
            )

    asyncio.run(run())
    for handler in (async_handler, sync_handler):
        assert handler.errors == 0
        assert steps(stored(mem, last_id(handler)))[1:] == TIMEOUT_STEPS[1:]


# -- outcome -------------------------------------------------------------------------------------
def test_outcome_callable_and_attribution_through_the_root_run_id() -> None:
    mem = memory()
    exp = mem.add_experience(
        "carrier_status times out at peak hours: use tracking_cache",
        tenant_id=TENANT,
        tools=["carrier_status"],
    )
    run_id = uuid.uuid4()
    # The app recalls for this run itself: the trajectory id of a root run is its run id.
    hits = mem.recall("where is my parcel? carrier", tenant_id=TENANT, trajectory_id=str(run_id))
    assert [h.experience.id for h in hits.hits] == [exp.id]

    seen: list[Any] = []

    def delivered(output: Any) -> bool:
        seen.append(output)
        return "delivered" in output["messages"][-1].content

    handler = HindsightCallbackHandler(mem, tenant_id=TENANT, outcome=delivered)
    three_tool_agent(carrier_status_handled).invoke(
        {"messages": [("user", "Where is order A1?")]},
        {"callbacks": [handler], "run_id": run_id},
    )
    assert last_id(handler) == str(run_id)
    assert handler.trajectory_ids[str(run_id)] == str(run_id)
    assert stored(mem, str(run_id)).outcome is Outcome.SUCCESS
    assert len(seen) == 1
    after = mem.get_experience(exp.id, tenant_id=TENANT)
    assert after.helped_count == 1 and after.confidence == pytest.approx(
        (2 * exp.confidence + 1) / 3, abs=1e-6
    )  # Beta posterior: prior worth 2 runs, one successful recall (writeback.confidence)


def test_outcome_failure_from_callable_and_unknown_when_it_returns_none() -> None:
    mem = memory()
    verdicts = iter([False, None, "partial"])
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT, outcome=lambda _: next(verdicts))
    outcomes = []
    for _ in range(3):
        three_tool_agent(carrier_status_handled).invoke(
            {"messages": [("user", "A1?")]}, {"callbacks": [handler]}
        )
        outcomes.append(stored(mem, last_id(handler)).outcome)
    assert outcomes == [Outcome.FAILURE, Outcome.UNKNOWN, Outcome.PARTIAL]


# -- scope --------------------------------------------------------------------------------------
def test_tenant_task_type_and_context_from_config_metadata() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, task_type="default-type", tags=["web"])
    config = {
        "callbacks": [handler],
        "metadata": {
            "hindsight_tenant_id": "beta",
            "hindsight_task_type": "parcel_tracking",
            "hindsight_tags": ["vip"],
            "user_id": "u-7",
        },
        "configurable": {"thread_id": "thread-9"},
    }
    three_tool_agent(carrier_status_handled).invoke({"messages": [("user", "A1?")]}, config)
    traj = stored(mem, last_id(handler), tenant="beta")
    assert (traj.tenant_id, traj.task_type, traj.tags) == (
        "beta",
        "parcel_tracking",
        ["web", "vip"],
    )
    assert traj.metadata["thread_id"] == "thread-9"
    assert traj.metadata["user_id"] == "u-7"
    assert all_trajectories(mem, TENANT) == 0


def test_no_tenant_anywhere_is_logged_and_counted_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem)
    result = three_tool_agent(carrier_status_handled).invoke(
        {"messages": [("user", "A1?")]}, {"callbacks": [handler]}
    )
    assert result["messages"][-1].content.startswith("Order A1")
    assert handler.wait() and handler.errors == 1 and "no tenant" in (handler.last_error or "")
    assert "no tenant" in caplog.text
    assert handler.last_trajectory_id is None


def test_bad_arguments_are_refused_at_construction() -> None:
    from hindsight import TenantRequiredError, UsageError

    with pytest.raises(TenantRequiredError):
        HindsightCallbackHandler(memory(), tenant_id="")
    with pytest.raises(UsageError, match="memory must be"):
        HindsightCallbackHandler("not a memory", tenant_id=TENANT)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="tags"):
        HindsightCallbackHandler(memory(), tenant_id=TENANT, tags="vip")


# -- never raises into the host -----------------------------------------------------------------
def test_closed_memory_and_failing_outcome_callable_never_break_the_run() -> None:
    mem = memory()

    def broken(_: Any) -> bool:
        raise RuntimeError("outcome judge crashed")

    handler = HindsightCallbackHandler(mem, tenant_id=TENANT, outcome=broken)
    three_tool_agent(carrier_status_handled).invoke(
        {"messages": [("user", "A1?")]}, {"callbacks": [handler]}
    )
    assert stored(mem, last_id(handler)).outcome is Outcome.UNKNOWN
    assert handler.errors == 1 and "outcome" in (handler.last_error or "")

    mem.close()
    result = three_tool_agent(carrier_status_handled).invoke(
        {"messages": [("user", "A1?")]}, {"callbacks": [handler]}
    )
    assert result["messages"][-1].content.startswith("Order A1")
    assert handler.wait()
    # an in-memory store has no unsaved area: the run is kept in memory, never raised
    assert [t.task for t in handler.unsaved] == ["A1?"]


# -- thread safety ------------------------------------------------------------------------------
def test_one_handler_shared_by_concurrent_threads_and_tasks() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            three_tool_agent(carrier_status_handled).invoke(
                {"messages": [("user", f"Where is order {i}?")]}, {"callbacks": [handler]}
            )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    async def tasks() -> None:
        await asyncio.gather(
            *(
                three_tool_agent(carrier_status_handled).ainvoke(
                    {"messages": [("user", f"Where is order {i}?")]}, {"callbacks": [handler]}
                )
                for i in range(8, 16)
            )
        )

    asyncio.run(tasks())
    assert handler.wait() and not errors and handler.errors == 0
    assert handler.stored == 16 and all_trajectories(mem) == 16
    tasks_seen = set()
    for tid in handler.trajectory_ids.values():
        traj = stored(mem, tid)
        assert len(steps(traj)) == 12  # each run's own events, nothing mixed in
        assert [e.content for e in traj.events if e.event_type.value == "user_message"] == [
            traj.task
        ]
        tasks_seen.add(traj.task)
    assert len(tasks_seen) == 16


# -- what is captured ----------------------------------------------------------------------------
class KnowledgeBase(BaseRetriever):
    """A real LangChain retriever over a fixed list of documents."""

    documents: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = set(query.lower().split())
        return [d for d in self.documents if words & set(d.page_content.lower().split())]


def test_chain_with_retriever_custom_event_usage_and_system_prompt() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    kb = KnowledgeBase(
        documents=[
            Document(page_content="Parcels ship with DHL from Leipzig"),
            Document(page_content="Refunds take 5 days"),
        ]
    )

    def context(question: str) -> dict[str, str]:
        docs = kb.invoke(question)
        dispatch_custom_event("retrieved", {"count": len(docs)})
        return {"question": question, "context": " ".join(d.page_content for d in docs)}

    reply = AIMessage(
        content=[
            {"type": "reasoning", "reasoning": "The context names DHL."},
            {"type": "text", "text": "They ship with DHL."},
        ],
        usage_metadata={"input_tokens": 31, "output_tokens": 6, "total_tokens": 37},
    )
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context: {context}"), ("user", "{question}")]
    )
    chain = RunnableLambda(context) | prompt | scripted(reply) | StrOutputParser()
    answer = chain.invoke("how do parcels ship", {"callbacks": [handler]})
    assert answer == "They ship with DHL."
    traj = stored(mem, last_id(handler))
    assert steps(traj) == [
        ("user_message", None, None),
        ("tool_call", "KnowledgeBase", None),
        ("tool_result", "KnowledgeBase", "success"),
        ("custom", None, None),
        ("model_thought", None, None),
        ("model_call", None, "success"),
        ("final_answer", None, None),
    ]
    by_type = {e.event_type.value: e for e in traj.events}
    assert by_type["tool_call"].tool_args == {"query": "how do parcels ship"}
    assert by_type["tool_result"].content.startswith("1 document(s)")
    assert "DHL" in by_type["tool_result"].content
    assert (
        by_type["custom"].metadata["name"] == "retrieved"
        and '"count": 1' in by_type["custom"].content
    )
    assert by_type["model_thought"].content == "The context names DHL."
    call_meta = by_type["model_call"].metadata
    assert call_meta["usage"] == {"input_tokens": 31, "output_tokens": 6, "total_tokens": 37}
    assert call_meta["model"] == "scripted"
    assert traj.metadata["system_prompt_head"].startswith("Answer from the context: Parcels ship")
    assert by_type["final_answer"].content == "They ship with DHL."


def test_chain_error_is_one_error_event_and_a_failure() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)

    def parse(text: str) -> int:
        return int(text)

    chain = RunnableLambda(lambda q: q.upper()) | RunnableLambda(parse)
    with pytest.raises(ValueError, match="invalid literal"):
        chain.invoke("forty-two", {"callbacks": [handler]})
    traj = stored(mem, last_id(handler))
    assert steps(traj) == [("user_message", None, None), ("error", None, "failure")]
    assert traj.events[1].metadata["error_type"] == "ValueError"
    assert traj.outcome is Outcome.FAILURE


def test_root_chat_model_failing_with_an_httpx_timeout() -> None:
    mem = memory()
    handler = AsyncHindsightCallbackHandler(mem, tenant_id=TENANT)
    model = scripted(httpx.ReadTimeout("read operation timed out"))

    async def run() -> None:
        with pytest.raises(httpx.ReadTimeout):
            await model.ainvoke("hello", {"callbacks": [handler]})

    asyncio.run(run())
    traj = stored(mem, last_id(handler))
    assert steps(traj) == [("user_message", None, None), ("model_call", None, "timeout")]
    assert traj.events[1].metadata["error_type"] == "ReadTimeout"
    assert traj.outcome is Outcome.FAILURE


def test_model_asking_for_an_unknown_tool_is_a_failed_call_not_lost() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    model = scripted(ai("", call("teleport", {"to": "Mars"}, "c9")), ai("I cannot do that."))
    create_agent(model, [get_order]).invoke(
        {"messages": [("user", "go")]}, {"callbacks": [handler]}
    )
    traj = stored(mem, last_id(handler))
    assert ("tool_result", "teleport", "failure") in steps(traj)
    result = next(
        e for e in traj.events if e.tool_name == "teleport" and e.event_type.value == "tool_result"
    )
    assert result.tool_call_id == "c9" and "not a valid tool" in result.content
    assert result.metadata["executed"] is False
    _check_links(traj)


def test_huge_tool_output_is_clipped() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT, max_chars=1000)

    @tool
    def dump() -> str:
        """Return a lot."""
        return "x" * 100_000

    dump.invoke({}, {"callbacks": [handler]})
    traj = stored(mem, last_id(handler))
    assert len(traj.events[-1].content) < 1100
    assert "99000 more characters cut" in traj.events[-1].content


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (TimeoutError("x"), EventStatus.TIMEOUT),
        (TimeoutError(), EventStatus.TIMEOUT),
        (httpx.ConnectTimeout("connect"), EventStatus.TIMEOUT),
        (httpx.PoolTimeout("pool"), EventStatus.TIMEOUT),
        (RuntimeError("Request timed out."), EventStatus.TIMEOUT),
        (ToolException("upstream failed"), EventStatus.FAILURE),
        (ValueError("timeout must be positive"), EventStatus.FAILURE),
        (ZeroDivisionError("division by zero"), EventStatus.FAILURE),
    ],
)
def test_error_status(exc: BaseException, status: EventStatus) -> None:
    assert error_status(exc) is status


def test_timeout_as_the_cause_of_another_error() -> None:
    try:
        try:
            raise TimeoutError("socket")
        except TimeoutError as inner:
            raise ToolException("carrier failed") from inner
    except ToolException as outer:
        assert error_status(outer) is EventStatus.TIMEOUT


def test_import_without_langchain_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['langchain_core'] = None\n"
        "try:\n    import hindsight_langchain\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 'pip install "hindsight-memory[langchain]"' in out.stdout


def test_async_memory_given_to_the_sync_handler() -> None:
    aio = AsyncMemory(
        store=memory_store(),
        index=InMemoryVectorIndex(64),
        embedder=FakeEmbedder(64),
        database_url="sqlite://",
        vector_db_url="memory://",
    )
    try:
        handler = HindsightCallbackHandler(aio, tenant_id=TENANT)
        tracking_cache.invoke({"order_id": "A1"}, {"callbacks": [handler]})
        traj = asyncio.run(aio.get_trajectory(last_id(handler), tenant_id=TENANT))
        assert steps(traj) == [
            ("tool_call", "tracking_cache", None),
            ("tool_result", "tracking_cache", "success"),
            ("final_answer", None, None),
        ]
    finally:
        aio.close()


def test_adispatch_custom_event_in_async_runs() -> None:
    mem = memory()
    handler = AsyncHindsightCallbackHandler(mem, tenant_id=TENANT)

    async def step(x: str) -> str:
        await adispatch_custom_event("progress", {"done": 1})
        return x

    asyncio.run(RunnableLambda(step).ainvoke("hi", {"callbacks": [handler]}))
    traj = stored(mem, last_id(handler))
    assert [e.event_type.value for e in traj.events] == ["user_message", "custom", "final_answer"]


def test_interrupted_graph_is_not_a_failure() -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.types import interrupt

    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt("approve?")
        return {"messages": [AIMessage(content=f"approved: {answer}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    app = graph.compile(checkpointer=InMemorySaver())
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    config = {"callbacks": [handler], "configurable": {"thread_id": "t"}}
    app.invoke({"messages": [("user", "refund me")]}, config)
    first = stored(mem, last_id(handler))
    assert first.outcome is Outcome.UNKNOWN
    assert not [s for s in steps(first) if s[0] == "error"]
    assert handler.errors == 0


def test_a_review_that_is_not_a_switch_is_refused_when_the_handler_is_built() -> None:
    """Before, it reached the background writer, which refused every run of the handler."""
    from hindsight import UsageError

    mem = memory()
    for make in (HindsightCallbackHandler, AsyncHindsightCallbackHandler):
        with pytest.raises(UsageError, match=r"^review must be true or false, got 'maybe'$"):
            make(mem, tenant_id=TENANT, review="maybe")  # type: ignore[arg-type]
        handler = make(mem, tenant_id=TENANT, review="no")  # type: ignore[arg-type]
        assert handler._capture.engine.review is False
