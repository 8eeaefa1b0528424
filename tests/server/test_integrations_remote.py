"""Integrations pointed at a real ``hindsight serve`` through the HTTP client.

A LangChain agent (real ``create_agent``, scripted chat model) with the callback handler or the
middleware, and a LangGraph graph with ``add_hindsight``, each given a ``HindsightClient`` /
``AsyncHindsightClient`` instead of an embedded memory: the run is stored on the server,
reviewed there and recalled into the next run's system prompt. A server that is down does not
fail the agent; the run is kept and stored at the next end of run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from hindsight import BLOCK_START, UsageError
from hindsight.client import AsyncHindsightClient, HindsightClient
from tests.server.conftest import Served, free_port

pytest.importorskip("langchain")
pytest.importorskip("langgraph")

from hindsight_langchain import HindsightCallbackHandler, HindsightMiddleware
from hindsight_langchain.testing import ai, call, system_prompt_of
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from tests.integrations.langchain_support import (
    carrier_status,
    carrier_status_handled,
    get_order,
    scripted,
    three_tool_agent,
    tracking_cache,
)

ACCEPTED = "HindsightClient or hindsight.client.AsyncHindsightClient"


class Switch(httpx.BaseTransport):
    """Real HTTP to the server, except while ``down`` (then: connection refused)."""

    def __init__(self) -> None:
        self.real = httpx.HTTPTransport()
        self.down = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        return self.real.handle_request(request)

    def close(self) -> None:
        self.real.close()


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def _tool_names(client: HindsightClient, trajectory_id: str) -> list[str | None]:
    traj = client.get_trajectory(trajectory_id)
    return [e.tool_name for e in traj.events if e.event_type.value == "tool_call"]


def test_handler_stores_on_the_server_and_the_middleware_recalls_it(served_sqlite: Served) -> None:
    tenant = "remote-lc"
    with served_sqlite.client(tenant, timeout=60) as client:
        handler = HindsightCallbackHandler(client, tenant_id=tenant, review=False)
        three_tool_agent(carrier_status_handled).invoke(
            _ask("Where is order A1?"), config={"callbacks": [handler]}
        )
        assert handler.wait(timeout=60)
        assert handler.errors == 0, handler.last_error
        tid = handler.last_trajectory_id
        assert tid is not None
        assert _tool_names(client, tid) == ["get_order", "carrier_status_handled", "tracking_cache"]
        experiences = client.review_now(tid)  # reviewed on the server
        assert experiences, "the server's review wrote nothing"
        assert all(e.tenant_id == tenant for e in experiences)

        model = scripted(ai("Order A2 was delivered."))
        middleware = HindsightMiddleware(client, tenant_id=tenant)
        agent = create_agent(model, [tracking_cache], middleware=[middleware])
        agent.invoke(_ask("Where is order A1? The carrier tool timed out"))
        assert middleware.wait(60) and middleware.errors == 0, middleware.last_error
        system = system_prompt_of(model.prompts[0])
        assert BLOCK_START in system
        assert any(e.content[:40] in system for e in experiences)
        # The second run went to the server too, with the recalled ids attributed.
        second = client.get_trajectory(middleware.last_trajectory_id)
        assert second.metadata["recalled_experience_ids"]


def test_async_client_serves_async_runs_on_two_event_loops(served_sqlite: Served) -> None:
    tenant = "remote-async"
    client = AsyncHindsightClient(served_sqlite.url, served_sqlite.key(tenant), timeout=60)
    handler = HindsightCallbackHandler(client, tenant_id=tenant, review=False)
    ids = []
    for order in ("B1", "B2"):  # asyncio.run twice: two loops, one client
        agent = create_agent(
            scripted(ai("", call("get_order", {"order_id": order}, "c1")), ai("done")),
            [get_order],
        )
        asyncio.run(agent.ainvoke(_ask(f"Where is {order}?"), config={"callbacks": [handler]}))
        assert asyncio.run(client.flush(timeout=60))  # what handler.wait() waits for too
        assert handler.wait(timeout=60)
        assert handler.errors == 0, handler.last_error
        ids.append(handler.last_trajectory_id)
    with served_sqlite.client(tenant) as sync:
        for tid in ids:
            assert tid is not None and _tool_names(sync, tid) == ["get_order"]
    asyncio.run(client.aclose())


def test_server_down_does_not_fail_the_run_and_the_run_is_kept(served_sqlite: Served) -> None:
    tenant = "remote-down"
    switch = Switch()
    client = HindsightClient(served_sqlite.url, served_sqlite.key(tenant), transport=switch)
    handler = HindsightCallbackHandler(client, tenant_id=tenant, review=False)
    switch.down = True
    out = three_tool_agent(carrier_status_handled).invoke(
        _ask("Where is A1?"), config={"callbacks": [handler]}
    )
    assert out["messages"][-1].content == "Order A1 was delivered yesterday."
    assert handler.wait(timeout=60)
    assert handler.errors == 1 and "ServiceError" in (handler.last_error or "")
    assert len(handler.unsaved) == 1
    assert client.flush(timeout=60) is False  # waited, and the run is not sent
    lost = handler.unsaved[0].id

    switch.down = False  # the server is back: the next end of run stores both
    three_tool_agent(carrier_status_handled).invoke(
        _ask("Where is A1 now?"), config={"callbacks": [handler]}
    )
    assert handler.wait(timeout=60)
    assert handler.errors == 1 and not handler.unsaved
    assert client.flush(timeout=60) is True
    assert _tool_names(client, lost) == ["get_order", "carrier_status_handled", "tracking_cache"]
    assert client.get_trajectory(handler.last_trajectory_id).task == "Where is A1 now?"
    client.close()


def test_unreachable_server_recall_goes_on_without_memory() -> None:
    client = HindsightClient(f"http://127.0.0.1:{free_port()}", "hs_nothing", timeout=2)
    middleware = HindsightMiddleware(client, tenant_id="t")
    model = scripted(ai("fine"))
    out = create_agent(model, [], middleware=[middleware]).invoke(_ask("hello"))
    assert out["messages"][-1].content == "fine"
    assert middleware.wait(60)
    assert middleware.errors >= 2  # recall and store, both logged
    assert [t.task for t in middleware.unsaved] == ["hello"]  # kept, sent again later
    assert BLOCK_START not in system_prompt_of(model.prompts[0])


def test_langgraph_nodes_store_and_recall_through_the_client(served_sqlite: Served) -> None:
    from hindsight_langgraph import HindsightState, add_hindsight
    from langgraph.graph import START, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    tenant = "remote-lg"

    def graph(model: Any, client: Any) -> Any:
        tools = [get_order, carrier_status, tracking_cache]
        bound = model.bind_tools(tools)
        builder = StateGraph(HindsightState)
        builder.add_node("agent", lambda s: {"messages": [bound.invoke(s["messages"])]})
        builder.add_node("tools", ToolNode(tools, handle_tool_errors=True))
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", tools_condition)
        builder.add_edge("tools", "agent")
        return add_hindsight(builder, client, tenant_id=tenant).compile()

    with served_sqlite.client(tenant, timeout=60) as client:
        first = scripted(
            ai("", call("get_order", {"order_id": "C1"}, "c1")),
            ai("", call("carrier_status", {"order_id": "C1"}, "c2")),
            ai("Order C1 is on its way."),
        )
        out = graph(first, client).invoke(_ask("Where is order C1?"))
        tid = out["trajectory_id"]
        assert client.flush(timeout=60)  # the run is sent in the background
        assert _tool_names(client, tid) == ["get_order", "carrier_status"]
        experiences = client.review_now(tid)  # reviewed on the server
        assert experiences

        second = scripted(ai("Same as before."))
        out2 = asyncio.run(graph(second, client).ainvoke(_ask("Where is order C1? carrier")))
        system = system_prompt_of(second.prompts[0])
        assert BLOCK_START in system
        assert any(e.content[:40] in system for e in experiences)
        assert out2["recalled_experiences"]
        assert client.flush(timeout=60)
        assert client.get_trajectory(out2["trajectory_id"]).task == "Where is order C1? carrier"


@pytest.mark.parametrize("what", [object(), "http://127.0.0.1:1", None])
def test_anything_else_is_refused_naming_the_accepted_types(what: Any) -> None:
    from hindsight_langgraph import create_reflect_node
    from hindsight_llamaindex import HindsightCapture

    for build in (
        lambda: HindsightCallbackHandler(what, tenant_id="t"),
        lambda: HindsightMiddleware(what, tenant_id="t"),
        lambda: create_reflect_node(what),
        lambda: HindsightCapture(what, tenant_id="t"),
    ):
        with pytest.raises(UsageError, match=ACCEPTED):
            build()
