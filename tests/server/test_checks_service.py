"""check_action over HTTP (POST /v1/checks, the Python client) and MCP (docs/checks.md), on SQLite
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
            # how many checks were tested: the taught ones for acme, none exist for globex
            assert doc["tested"] >= len(doc["checks"]) and other.json()["tested"] == 0
            bad = httpx.post(f"{url}/v1/checks", json={"tool": "", "args": {}},
                             headers={"Authorization": f"Bearer {acme}"})  # fmt: skip
            assert bad.status_code == 422
            assert httpx.post(f"{url}/v1/checks", json=body).status_code == 401
            with HindsightClient(url, acme) as client:
                result = client.check_action("order_query", {"order_id": "Z9"})
                assert result.checks and {m.match for m in result.checks} == {"call"}
                assert result.render().startswith(ADVICE_START)
                assert result.tested is not None and result.tested >= len(result.checks)
                assert client.check_action("send_fax", {}).tested == 0  # no lesson about it
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


RULE = "renew_loan: when member.standing (from get_member) is suspended, do not call it."
CONDITION = {"condition": {"tool": "renew_loan", "form": "avoid", "predicates": [
    {"feature": "get_member.member.standing", "op": "=", "value": "suspended"}]}}  # fmt: skip
SUSPENDED = [{"tool": "get_member", "result": {"member": {"standing": "suspended"}}}]
GOOD = [{"tool": "get_member", "result": '{"member": {"standing": "good"}}'}]


def test_conditions_are_tested_against_the_state_on_every_interface(
    tmp_path: Path, database_url: str
) -> None:
    """A mined rule's condition against ``state``: HTTP, the Python client and MCP answer as
    Python does (condition / left out / unknown), and a malformed state is one line naming
    the field."""
    keys = tmp_path / "keys.json"
    acme, _ = create_key(keys, "acme")
    mem = make_memory(tmp_path / "data", database_url)
    try:
        rule = mem.add_experience(RULE, tenant_id="acme", kind="rule", tools=["renew_loan"],
                                  confidence=0.8, metadata=CONDITION)  # fmt: skip
        expect = {"held": ["condition"], "good": [], "none": ["unknown"]}
        states = {"held": SUSPENDED, "good": GOOD, "none": None}
        for k, v in states.items():
            found = mem.check_action("renew_loan", {}, tenant_id="acme", state=v)
            assert [m.match for m in found.checks] == expect[k], k
        app = create_app(mem.aio, keyring=KeyRing.from_file(keys), mcp=False)
        auth = {"Authorization": f"Bearer {acme}"}
        with serving(app) as url:
            for k, v in states.items():
                got = httpx.post(f"{url}/v1/checks", headers=auth,
                                 json={"tool": "renew_loan", "state": v})  # fmt: skip
                assert got.status_code == 200, got.text
                assert [c["match"] for c in got.json()["checks"]] == expect[k], k
                if expect[k]:
                    assert got.json()["checks"][0]["check"]["lesson_id"] == rule.id
            for bad in ("get_member", [{"tool": ""}], [{"tool": "x", "extra": 1}], [1]):
                got = httpx.post(f"{url}/v1/checks", headers=auth,
                                 json={"tool": "renew_loan", "state": bad})  # fmt: skip
                assert got.status_code == 422, got.text
                assert "state" in got.text
            with HindsightClient(url, acme) as client:
                found = client.check_action("renew_loan", {}, state=SUSPENDED)
                assert [m.match for m in found.checks] == ["condition"]

        async def call(args: dict[str, Any]) -> Any:
            server = build_mcp_server(mem.aio, tenant=fixed_tenant("acme"))
            async with Client(server) as client:
                return await client.call_tool("check_action", args)

        for k, v in states.items():
            done = asyncio.run(call({"tool": "renew_loan", "state": v}))
            assert not done.is_error
            assert [c["match"] for c in done.structured_content["checks"]] == expect[k], k
        refused = asyncio.run(call({"tool": "renew_loan", "state": [{"tool": ""}]}))
        assert refused.is_error and "state" in str(refused.content)
    finally:
        mem.close()
