"""MCP over streamable HTTP on a real loopback port (uvicorn): the tenant comes from each
request's API key (docs/mcp.md#http-set-up; tenant isolation and an empty
tenant over MCP-HTTP).

Two apps: the service app of ``hindsight serve`` (:func:`hindsight.server.create_app`, MCP at
``/mcp``) and :func:`create_mcp_http` alone on a bare Starlette route, so the MCP layer's own
401 is tested without the API's in front of it.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.routing import Route

from hindsight.server import KeyRing, create_app
from hindsight.service.mcp import create_mcp_http
from hindsight.testing import ScriptedReviewer, test_memory
from tests.server.mcp_support import call, echo_lessons, openai_run, serving

pytestmark = pytest.mark.anyio
KEYS = {"key-of-a": "tenant-a", "key-of-b": "tenant-b"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _standalone(memory: Any, ring: KeyRing) -> Starlette:
    app, lifespan = create_mcp_http(memory, ring.authenticate)

    @contextlib.asynccontextmanager
    async def run(_: Starlette) -> AsyncIterator[None]:
        async with lifespan():
            yield

    return Starlette(routes=[Route("/mcp", endpoint=app)], lifespan=run)


@pytest.fixture(params=["service", "standalone"])
def base_url(request: pytest.FixtureRequest) -> Iterator[str]:
    mem = test_memory(reviewer=ScriptedReviewer(echo_lessons))
    ring = KeyRing.from_plain(KEYS)
    app = (
        create_app(mem.aio, keyring=ring)
        if request.param == "service"
        else _standalone(mem.aio, ring)
    )
    try:
        with serving(app) as url:
            yield url
    finally:
        mem.close()


@contextlib.asynccontextmanager
async def mcp_as(base_url: str, key: str, mode: str = "legacy") -> AsyncIterator[Any]:
    headers = (
        {"Authorization": f"Bearer {key}"} if not key.startswith("x:") else {"X-API-Key": key[2:]}
    )
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_each_key_sees_only_its_tenant(base_url: str, mode: str) -> None:
    learned: dict[str, dict[str, Any]] = {}
    for key, task in [("key-of-a", "Helm"), ("x:key-of-b", "Terraform")]:
        async with mcp_as(base_url, key, mode) as client:
            stored = await call(
                client,
                "store_episode",
                {"trajectory": openai_run(f"Project Zephyr deploys with {task}"), "review": False},
            )
            tid = stored.ok()["trajectory_id"]
            review = (await call(client, "summarize_trajectory", {"trajectory_id": tid})).ok()
            learned[key] = {"tid": tid, "ids": [x["id"] for x in review["lessons"]]}
    async with mcp_as(base_url, "key-of-a", mode) as a:
        seen = await call(a, "recall_similar", {"query": "how does Zephyr deploy?", "top_k": 100})
        text = json.dumps(seen.ok())
        assert [h["id"] for h in seen.data["hits"]] == learned["key-of-a"]["ids"]
        assert "Helm" in text and "Terraform" not in text
        b = learned["x:key-of-b"]
        assert not any(i in text for i in [b["tid"], *b["ids"]])
        theirs = await call(a, "forget_experience", {"experience_id": b["ids"][0]})
        assert theirs.error is not None and theirs.error["type"] == "not_found"
    async with mcp_as(base_url, "x:key-of-b", mode) as b_client:
        mine = (await call(b_client, "recall_similar", {"query": "Zephyr deploy"})).ok()
        assert [h["id"] for h in mine["hits"]] == learned["x:key-of-b"]["ids"]


async def test_requests_without_a_valid_key_get_401_and_never_reach_a_tool(base_url: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "recall_similar", "arguments": {"query": "Zephyr"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for auth in [
        {},
        {"Authorization": "Bearer wrong"},
        {"X-API-Key": ""},
        {"Authorization": "Basic a2V5"},
    ]:
        reply = httpx.post(f"{base_url}/mcp", json=body, headers={**headers, **auth}, timeout=30)
        assert reply.status_code == 401, (auth, reply.text)
        assert reply.headers["www-authenticate"].startswith("Bearer")
        error = reply.json()["error"]
        assert error["type"] == "unauthorized" and "key" in error["message"]
    with pytest.raises(Exception):  # noqa: B017 - the SDK client fails to connect, any error
        async with mcp_as(base_url, "wrong-key") as client:
            await client.list_tools()


async def test_the_tenant_is_the_keys_even_when_a_trajectory_names_another(base_url: str) -> None:
    async with mcp_as(base_url, "key-of-a") as a:
        own = {"tenant_id": "tenant-b", "task": "sneak", "events": [], "id": str(uuid.uuid4())}
        done = await call(a, "store_episode", {"trajectory": own})
        assert done.error is not None and done.error["type"] == "invalid_request"
        assert "tenant" in done.error["message"]
