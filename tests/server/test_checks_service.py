"""check_action over HTTP (POST /v1/checks, the Python client) and MCP (issue 16), on SQLite
and PostgreSQL with the embedded Qdrant Edge index."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from mcp import Client

from hindsight.checks import ADVICE_START
from hindsight.client import HindsightClient
from hindsight.review.heuristic import HeuristicReviewer
from hindsight.server import KeyRing, build_mcp_server, create_app, create_key
from hindsight.service.mcp import fixed_tenant
from tests.helpers import make_memory
from tests.server.mcp_support import serving
from tests.test_checks import _teach


def test_checks_over_http_and_the_client(tmp_path: Path, database_url: str) -> None:
    keys = tmp_path / "keys.json"
    acme, _ = create_key(keys, "acme")
    globex, _ = create_key(keys, "globex")
    mem = make_memory(tmp_path / "data", database_url, reviewer=HeuristicReviewer())
    try:
        _teach(mem)
        app = create_app(mem.aio, keyring=KeyRing.from_file(keys), mcp=False)
        with serving(app) as url:
            body = {"tool": "book_reservation", "args": {"cabin": "basic_economy"}}
            got = httpx.post(f"{url}/v1/checks", json=body,
                             headers={"Authorization": f"Bearer {acme}"})  # fmt: skip
            assert got.status_code == 200, got.text
            doc = got.json()
            cabin = next(c for c in doc["checks"] if c["check"]["conditions"][0]["key"] == "cabin")
            assert cabin["match"] == "class" and cabin["argument_class"] == "basic_economy"
            assert doc["rendered"].startswith(ADVICE_START)
            other = httpx.post(f"{url}/v1/checks", json=body,
                               headers={"Authorization": f"Bearer {globex}"})  # fmt: skip
            assert other.json()["checks"] == [] and other.json()["rendered"] == ""
            bad = httpx.post(f"{url}/v1/checks", json={"tool": "", "args": {}},
                             headers={"Authorization": f"Bearer {acme}"})  # fmt: skip
            assert bad.status_code == 422
            assert httpx.post(f"{url}/v1/checks", json=body).status_code == 401
            with HindsightClient(url, acme) as client:
                result = client.check_action("order_query", {"order_id": "Z9"})
                assert result.checks and {m.match for m in result.checks} == {"call"}
                assert result.render().startswith(ADVICE_START)
    finally:
        mem.close()


def test_checks_over_mcp(tmp_path: Path, database_url: str) -> None:
    mem = make_memory(tmp_path / "data", database_url, reviewer=HeuristicReviewer())
    try:
        _teach(mem)

        async def call(tenant: str, args: dict[str, Any]) -> Any:
            server = build_mcp_server(mem.aio, tenant=fixed_tenant(tenant))
            async with Client(server) as client:
                return await client.call_tool("check_action", args)

        args = {"tool": "book_reservation", "args": {"cabin": "basic_economy"}}
        done = asyncio.run(call("acme", args))
        assert not done.is_error
        data = done.structured_content
        cabin = next(c for c in data["checks"] if c["argument"] == "cabin")
        assert cabin["match"] == "class" and cabin["severity"] == "high"
        assert data["rendered"].startswith(ADVICE_START)
        assert asyncio.run(call("globex", args)).structured_content["checks"] == []
        refused = asyncio.run(call("acme", {"tool": "book_reservation", "args": ["x"]}))
        assert refused.is_error
    finally:
        mem.close()
