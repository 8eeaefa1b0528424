"""The recall and reflect nodes and the wiring helper, on real LangGraph graphs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest
from hindsight_langgraph import (
    HindsightState,
    add_hindsight,
    create_recall_node,
    create_reflect_node,
)
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph_support import (
    BLOCK_END,
    BLOCK_START,
    END,
    START,
    TENANT,
    agent_graph,
    ai,
    call,
    closing,  # noqa: F401  (autouse: closes the memories a test opened)
    memory,
    react_model,
    read,
    steps,
    system_of,
    tool_steps,
    trajectories,
    wire,
)

from hindsight import Lesson, TenantRequiredError, UsageError
from hindsight.testing import ScriptedReviewer
from tests.integrations.langchain_support import record_build_threads

LESSON = "order_query times out at peak hours: retry once, then use order_query_cached"


def seeded_lesson(mem: Any) -> Any:
    return next(e for e in mem.list_experiences(tenant_id=TENANT) if e.content == LESSON)


def seeded(**kwargs: Any) -> Any:
    mem = memory(**kwargs)
    mem.add_experience(LESSON, tenant_id=TENANT, kind="rule", tools=["order_query"])
    return mem


def answer_graph(mem: Any, *, state: type = MessagesState, **wire_kwargs: Any) -> Any:
    """agent answers once; hindsight wired around it."""
    model = react_model(ai("It is on its way."))
    builder = agent_graph(model, state=state)
    wire(builder, mem, **wire_kwargs)
    return builder, model


# -- the system message tail -----------------------------------------------------------------
def test_block_goes_to_the_tail_of_the_existing_system_message() -> None:
    mem = seeded()
    builder, model = answer_graph(mem)
    graph = builder.compile()
    out = graph.invoke(
        {"messages": [SystemMessage("You are support."), HumanMessage("Where is order 8812?")]}
    )
    systems = system_of(out["messages"])
    assert len(systems) == 1
    text = systems[0].content
    assert isinstance(text, str)
    assert text.startswith("You are support.\n\n" + BLOCK_START)
    assert text.rstrip().endswith(BLOCK_END)
    assert LESSON in text
    # What the model received: the same system prompt, first.
    prompt = model.prompts[0]
    assert isinstance(prompt[0], SystemMessage) and prompt[0].content == text


def test_system_message_is_created_first_when_absent() -> None:
    mem = seeded()
    builder, model = answer_graph(mem)
    out = builder.compile().invoke({"messages": [HumanMessage("Where is order 8812?")]})
    messages = out["messages"]
    assert isinstance(messages[0], SystemMessage)
    assert messages[0].content.startswith(BLOCK_START)
    assert [m.type for m in messages] == ["system", "human", "ai"]
    assert isinstance(model.prompts[0][0], SystemMessage)


def test_no_hits_leaves_the_messages_alone() -> None:
    mem = memory()  # nothing stored
    builder, _ = answer_graph(mem)
    out = builder.compile().invoke(
        {"messages": [SystemMessage("You are support."), HumanMessage("hi")]}
    )
    assert out["messages"][0].content == "You are support."
    assert [m.type for m in out["messages"]] == ["system", "human", "ai"]


def test_second_turn_on_a_thread_replaces_the_block_instead_of_stacking() -> None:
    mem = seeded()
    model = react_model(ai("On its way."), ai("Refund done."))
    builder = agent_graph(model)
    wire(builder, mem)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-1"}}
    graph.invoke(
        {"messages": [SystemMessage("You are support."), HumanMessage("Where is 8812?")]}, config
    )
    out = graph.invoke({"messages": [HumanMessage("Refund order 8812 please")]}, config)
    systems = system_of(out["messages"])
    assert len(systems) == 1
    assert systems[0].content.count(BLOCK_START) == 1
    assert systems[0].content.startswith("You are support.\n\n")
    # two runs, two trajectories, each with its own id in the state
    assert len(trajectories(mem)) == 2
    # each keeps the graph's policy, without the block recalled into it
    assert [t.system_prompt for t in trajectories(mem)] == ["You are support."] * 2


def test_replay_from_a_checkpoint_does_not_stack_blocks() -> None:
    mem = seeded()
    builder, _ = answer_graph(mem)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-replay"}}
    graph.invoke({"messages": [SystemMessage("Base."), HumanMessage("Where is 8812?")]}, config)
    history = list(graph.get_state_history(config))
    before_recall = next(s for s in history if s.next == ("hindsight_recall",))
    out = graph.invoke(None, before_recall.config)
    systems = system_of(out["messages"])
    assert len(systems) == 1 and systems[0].content.count(BLOCK_START) == 1


def test_list_content_system_message_gets_a_text_block() -> None:
    mem = seeded()
    builder, _ = answer_graph(mem)
    system = SystemMessage(content=[{"type": "text", "text": "You are support."}])
    out = builder.compile().invoke({"messages": [system, HumanMessage("Where is 8812?")]})
    content = system_of(out["messages"])[0].content
    assert isinstance(content, list)
    assert content[0] == {"type": "text", "text": "You are support."}
    assert content[-1]["text"].startswith(BLOCK_START)


def test_plain_list_messages_channel_is_replaced_whole() -> None:
    class Plain(TypedDict):
        messages: list[Any]

    mem = seeded()
    model = react_model(ai("ok"))

    def agent(s: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [*s["messages"], model.invoke(s["messages"])]}

    builder = StateGraph(Plain)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    wire(builder, mem)
    out = builder.compile().invoke({"messages": [HumanMessage("Where is 8812?")]})
    assert [m.type for m in out["messages"]] == ["system", "human", "ai"]
    assert out["messages"][0].content.startswith(BLOCK_START)


# -- what recall uses and writes ----------------------------------------------------------------
def test_hits_and_trajectory_id_are_written_to_the_state() -> None:
    mem = seeded()
    builder, _ = answer_graph(mem, state=HindsightState)
    out = builder.compile().invoke({"messages": [HumanMessage("Where is order 8812?")]})
    hits = out["recalled_experiences"]
    assert [h["content"] for h in hits] == [LESSON]
    assert set(hits[0]["breakdown"]) >= {"similarity", "confidence", "recency", "weights"}
    stored = read(mem, out["trajectory_id"], tenant_id=TENANT)
    assert stored.task == "Where is order 8812?"


def test_recall_queries_with_the_latest_user_message_and_tools() -> None:
    mem = memory()
    mem.add_experience("Refunds need the exact order total.", tenant_id=TENANT, kind="rule")
    seen: list[str] = []
    original, original_async = mem.recall, mem.aio.recall

    # the sync graph recalls through Memory.recall, which runs the core on the calling thread
    # (no hop through AsyncMemory.recall); an async graph would use mem.aio.recall
    def spy(query: str, **kwargs: Any) -> Any:
        seen.append(query)
        seen.extend(kwargs["tools"])
        return original(query, **kwargs)

    async def async_spy(query: str, **kwargs: Any) -> Any:
        seen.append(query)
        seen.extend(kwargs["tools"])
        return await original_async(query, **kwargs)

    mem.recall = spy  # type: ignore[method-assign]
    mem.aio.recall = async_spy  # type: ignore[method-assign]
    builder, _ = answer_graph(mem, tools=["order_query"], task_type="support")
    builder.compile().invoke(
        {
            "messages": [
                HumanMessage("first question"),
                AIMessage("answer"),
                HumanMessage("Refund order 8812"),
            ]
        }
    )
    assert seen == ["Refund order 8812", "order_query"]


@pytest.mark.parametrize("content", ["", "   ", [{"type": "text", "text": ""}]])
def test_blank_user_message_recalls_nothing_and_still_runs(content: Any) -> None:
    mem = seeded()
    builder, _ = answer_graph(mem, state=HindsightState)
    out = builder.compile().invoke({"messages": [HumanMessage(content=content)]})
    assert out["recalled_experiences"] == []
    assert not system_of(out["messages"])
    assert out["messages"][-1].content == "It is on its way."


def test_blank_user_message_with_task_type_recalls_by_task_type() -> None:
    mem = memory()
    mem.add_experience("Support lesson", tenant_id=TENANT, kind="rule", task_type="support")
    builder, _ = answer_graph(mem, state=HindsightState, task_type="support")
    out = builder.compile().invoke({"messages": [HumanMessage(content="")]})
    assert [h["content"] for h in out["recalled_experiences"]] == ["Support lesson"]


# -- tenant and namespace ---------------------------------------------------------------------
def test_missing_tenant_is_a_clear_error() -> None:
    mem = seeded()
    builder, _ = answer_graph(mem, tenant_id=None)
    with pytest.raises(TenantRequiredError, match="tenant_id"):
        builder.compile().invoke({"messages": [HumanMessage("Where is 8812?")]})


@pytest.mark.parametrize("bad", ["", "   "])
def test_empty_tenant_in_config_is_refused(bad: str) -> None:
    mem = seeded()
    builder, _ = answer_graph(mem, tenant_id=None)
    with pytest.raises(TenantRequiredError):
        builder.compile().invoke(
            {"messages": [HumanMessage("x")]}, {"configurable": {"tenant_id": bad}}
        )


def test_tenant_from_configurable_scopes_recall_and_storage() -> None:
    mem = seeded()
    mem.add_experience("Other tenant's lesson about order_query", tenant_id="other", kind="rule")
    builder, _ = answer_graph(mem, state=HindsightState, tenant_id=None)
    out = builder.compile().invoke(
        {"messages": [HumanMessage("order_query for 8812?")]},
        {"configurable": {"tenant_id": TENANT, "namespace": "default"}},
    )
    assert [h["content"] for h in out["recalled_experiences"]] == [LESSON]
    assert read(mem, out["trajectory_id"], tenant_id=TENANT).tenant_id == TENANT


def test_tenant_and_namespace_from_the_runtime_context() -> None:
    @dataclass
    class Ctx:
        tenant_id: str
        namespace: str = "team-a"

    mem = memory()
    mem.add_experience(
        "team-a lesson on order_query", tenant_id=TENANT, namespace="team-a", kind="rule"
    )
    mem.add_experience("default lesson on order_query", tenant_id=TENANT, kind="rule")
    model = react_model(ai("ok"))
    builder = agent_graph(model, state=HindsightState, context_schema=Ctx)
    add_hindsight(builder, mem, include_shared=False)
    graph = builder.compile()
    out = graph.invoke({"messages": [HumanMessage("order_query?")]}, context=Ctx(TENANT))
    assert [h["content"] for h in out["recalled_experiences"]] == ["team-a lesson on order_query"]
    stored = read(mem, out["trajectory_id"], tenant_id=TENANT)
    assert stored.namespace == "team-a"


def test_node_argument_tenant_wins_over_configurable() -> None:
    mem = seeded()
    builder, _ = answer_graph(mem, state=HindsightState, tenant_id=TENANT)
    out = builder.compile().invoke(
        {"messages": [HumanMessage("order 8812?")]}, {"configurable": {"tenant_id": "other"}}
    )
    assert read(mem, out["trajectory_id"], tenant_id=TENANT)


# -- reflect: storage, outcome, attribution ----------------------------------------------------
def test_reflect_stores_the_captured_steps_and_queues_the_review() -> None:
    lesson = Lesson(kind="rule", content="use the cache when order_query times out", confidence=0.7)
    mem = memory(reviewer=ScriptedReviewer([lesson]))
    model = react_model(ai("", call("order_query", {"order_id": "slow-1"})), ai("Sorry."))
    builder = agent_graph(model, state=HindsightState)
    wire(builder, mem)
    out = builder.compile().invoke({"messages": [HumanMessage("Where is order slow-1?")]})
    traj = read(mem, out["trajectory_id"], tenant_id=TENANT)
    assert tool_steps(traj) == [
        ("tool_call", "order_query", None),
        ("tool_result", "order_query", "timeout"),
    ]
    kinds = [s[0] for s in steps(traj)]
    assert kinds[0] == "user_message" and kinds[-1] == "final_answer"
    assert kinds.count("model_call") == 2
    assert traj.metadata["source"] == "langgraph"
    assert mem.flush(timeout=30)
    learned = mem.list_experiences(tenant_id=TENANT)
    assert [e.content for e in learned if e.kind.value == "rule"] == [lesson.content]


def test_reflect_builds_the_trajectory_off_the_graphs_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reflect node closes the capture and takes the end time; the background
    writer builds and validates the trajectory, which holds what a build in the node held."""
    import threading
    from datetime import UTC, datetime

    built_on = record_build_threads(monkeypatch)
    mem = memory()
    model = react_model(ai("", call("order_query", {"order_id": "slow-1"})), ai("Sorry."))
    builder = agent_graph(model, state=HindsightState)
    wire(builder, mem, write_wait=0)
    out = builder.compile().invoke({"messages": [HumanMessage("Where is order slow-1?")]})
    returned = datetime.now(UTC)
    traj = read(mem, out["trajectory_id"], tenant_id=TENANT)
    assert built_on and threading.get_ident() not in built_on
    assert traj.ended_at is not None and traj.ended_at <= returned
    assert traj.ended_at >= max(e.timestamp for e in traj.events)
    assert tool_steps(traj) == [
        ("tool_call", "order_query", None),
        ("tool_result", "order_query", "timeout"),
    ]
    kinds = [s[0] for s in steps(traj)]
    assert kinds[0] == "user_message" and kinds[-1] == "final_answer"
    assert traj.outcome.value == "failure"


@pytest.mark.parametrize(
    ("verdict", "outcome", "helped", "misled"),
    [
        (True, "success", 1, 0),
        (False, "failure", 0, 1),
        (None, "unknown", 0, 0),
        ("success", "success", 1, 0),
    ],
)
def test_outcome_from_a_state_key_is_attributed_to_what_was_recalled(
    verdict: Any, outcome: str, helped: int, misled: int
) -> None:
    class State(HindsightState, total=False):
        resolved: Any

    mem = seeded()
    model = react_model(ai("done"))
    builder = StateGraph(State)
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("judge", lambda s: {"resolved": verdict})
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "judge")
    builder.add_edge("judge", END)
    wire(builder, mem, outcome_key="resolved")
    out = builder.compile().invoke({"messages": [HumanMessage("order_query 8812?")]})
    traj = read(mem, out["trajectory_id"], tenant_id=TENANT)
    assert traj.outcome.value == outcome
    exp = seeded_lesson(mem)
    assert (exp.helped_count, exp.misled_count) == (helped, misled)


def test_outcome_callable_sees_the_final_state() -> None:
    mem = seeded()
    seen: list[str] = []

    def outcome(state: dict[str, Any]) -> bool:
        seen.append(state["messages"][-1].content)
        return True

    builder, _ = answer_graph(mem, state=HindsightState, outcome=outcome)
    out = builder.compile().invoke({"messages": [HumanMessage("order_query 8812?")]})
    assert seen == ["It is on its way."]
    assert read(mem, out["trajectory_id"], tenant_id=TENANT).outcome.value == "success"


def test_invalid_outcome_value_is_a_usage_error() -> None:
    mem = seeded()
    builder, _ = answer_graph(mem, outcome=lambda s: "great")
    with pytest.raises(UsageError, match="outcome"):
        builder.compile().invoke({"messages": [HumanMessage("x")]})


def test_async_invoke_uses_the_async_nodes() -> None:
    mem = seeded()
    model = react_model(ai("", call("order_query", {"order_id": "8812"})), ai("Shipped."))
    builder = agent_graph(model, state=HindsightState)
    wire(builder, mem, outcome=lambda s: True)
    graph = builder.compile()
    out = asyncio.run(graph.ainvoke({"messages": [HumanMessage("order_query 8812?")]}))
    assert out["recalled_experiences"][0]["content"] == LESSON
    traj = read(mem, out["trajectory_id"], tenant_id=TENANT)
    assert tool_steps(traj) == [
        ("tool_call", "order_query", None),
        ("tool_result", "order_query", "success"),
    ]
    assert traj.outcome.value == "success"


def test_nodes_added_by_hand_to_a_new_graph() -> None:
    mem = seeded()
    model = react_model(ai("Shipped."))
    builder = StateGraph(HindsightState)
    builder.add_node("recall", create_recall_node(mem, tenant_id=TENANT))
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("reflect", create_reflect_node(mem, outcome=lambda s: True))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "agent")
    builder.add_edge("agent", "reflect")
    builder.add_edge("reflect", END)
    out = builder.compile().invoke({"messages": [HumanMessage("order_query 8812?")]})
    traj = read(mem, out["trajectory_id"], tenant_id=TENANT)
    assert [s[0] for s in steps(traj)] == ["user_message", "model_call", "final_answer"]
    assert seeded_lesson(mem).helped_count == 1


def test_custom_messages_key() -> None:
    class Chat(TypedDict):
        chat: Annotated[list[Any], add_messages]

    mem = seeded()
    model = react_model(ai("ok"))
    builder = StateGraph(Chat)
    builder.add_node("agent", lambda s: {"chat": [model.invoke(s["chat"])]})
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    wire(builder, mem, messages_key="chat")
    out = builder.compile().invoke({"chat": [HumanMessage("order_query 8812?")]})
    assert out["chat"][0].content.startswith(BLOCK_START)


# -- wiring ---------------------------------------------------------------------------------
def test_add_hindsight_wires_start_recall_entry_and_exit_reflect_end() -> None:
    mem = memory()
    builder = agent_graph(react_model(ai("ok")))
    add_hindsight(builder, mem, tenant_id=TENANT)
    graph = builder.compile().get_graph()
    edges = {(e.source, e.target) for e in graph.edges}
    assert ("__start__", "hindsight_recall") in edges
    assert ("hindsight_recall", "agent") in edges
    assert ("agent", "hindsight_reflect") in edges
    assert ("hindsight_reflect", "__end__") in edges
    assert ("agent", "__end__") not in edges


def test_add_hindsight_with_explicit_entry_and_exit_on_a_bare_graph() -> None:
    mem = seeded()
    model = react_model(ai("ok"))
    builder = StateGraph(HindsightState)
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    add_hindsight(builder, mem, entry="agent", exit="agent", tenant_id=TENANT)
    out = builder.compile().invoke({"messages": [HumanMessage("order_query?")]})
    assert read(mem, out["trajectory_id"], tenant_id=TENANT)


def test_add_hindsight_refuses_bad_graphs() -> None:
    mem = memory()
    builder = agent_graph(react_model(ai("ok")))
    with pytest.raises(UsageError, match="no node named 'nope'"):
        add_hindsight(builder, mem, entry="nope")
    bare = StateGraph(MessagesState)
    bare.add_node("agent", lambda s: s)
    with pytest.raises(UsageError, match="no entry"):
        add_hindsight(bare, mem)
    loop = StateGraph(MessagesState)
    loop.add_node("agent", lambda s: s)
    loop.add_edge(START, "agent")
    with pytest.raises(UsageError, match="END"):
        add_hindsight(loop, mem)
    taken = agent_graph(react_model(ai("ok")))
    taken.add_node("hindsight_recall", lambda s: s)
    with pytest.raises(UsageError, match="already has a node"):
        add_hindsight(taken, mem)

    class Summed(TypedDict):
        messages: Annotated[list[Any], lambda a, b: a + b]

    summed = StateGraph(Summed)
    summed.add_node("agent", lambda s: s)
    summed.add_edge(START, "agent")
    with pytest.raises(UsageError, match="add_messages"):
        add_hindsight(summed, mem)
    with pytest.raises(UsageError, match="memory"):
        create_recall_node(object())
    for bad in (
        {"top_k": 0},
        {"top_k": True},
        {"task_type": " "},
        {"tags": "vip"},
        {"tools": [object()]},
        {"messages_mode": "append"},
    ):
        with pytest.raises(UsageError):
            create_recall_node(mem, **bad)
    with pytest.raises(UsageError, match="outcome"):
        create_reflect_node(mem, outcome="yes")  # type: ignore[arg-type]


def test_importing_without_langgraph_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['langgraph'] = None\n"
        "sys.modules['langgraph.graph'] = None\n"
        "try:\n"
        "    import hindsight_langgraph\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert 'pip install "hindsight-memory[langgraph]"' in done.stdout, done.stderr


def test_add_hindsight_refuses_a_review_that_is_not_a_switch() -> None:
    mem = memory()
    with pytest.raises(UsageError, match=r"^review must be true or false, got 'maybe'$"):
        add_hindsight(agent_graph(react_model(ai("ok"))), mem, review="maybe")  # type: ignore[arg-type]
    add_hindsight(agent_graph(react_model(ai("ok"))), mem, review="no")  # type: ignore[arg-type]
