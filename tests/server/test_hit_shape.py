"""One recall-hit shape on every interface (docs/concepts.md#one-hit-shape-on-every-interface):
Python (``RecallHit`` and ``RecallResult.to_json``), the CLI's ``recall --json``, the HTTP API and
the MCP tool all give ``experience`` (nested, with ``id`` and ``content``), ``score`` and
``breakdown`` with the same score terms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from hindsight import Memory
from hindsight.service.mcp import build_mcp_server, fixed_tenant
from hindsight.testing import test_memory
from tests.cli_helpers import cli_json
from tests.server.conftest import Served
from tests.server.mcp_support import call

LESSON = "order_query times out at peak hours: use order_query_cached"
QUERY = "order_query timed out"
TERMS = {"similarity", "confidence", "recency", "trust", "boost"}


def check(hit: dict[str, Any], where: str) -> None:
    assert {"experience", "score", "breakdown"} <= set(hit), where
    assert hit["experience"]["content"] == LESSON and hit["experience"]["id"], where
    assert isinstance(hit["score"], float) and set(hit["breakdown"]) >= TERMS, where


def test_python_and_cli_give_the_shape(tmp_path: Path) -> None:
    with Memory(data_dir=tmp_path) as mem:
        exp = mem.add_experience(LESSON, tenant_id="acme")
        result = mem.recall(QUERY, tenant_id="acme")
        [hit] = result.hits
        assert hit.experience.id == exp.id and set(hit.breakdown.model_dump()) >= TERMS
        [doc] = result.to_json()["hits"]
        check(doc, "python")
        assert doc["id"] == exp.id and doc["content"] == LESSON  # the flat copies stay
    [cli] = cli_json("recall", QUERY, "--tenant", "acme", data_dir=tmp_path)["hits"]
    check(cli, "cli")
    assert cli["experience"]["id"] == exp.id


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mcp_gives_the_shape(anyio_backend: str) -> None:
    mem = test_memory()
    try:
        mem.add_experience(LESSON, tenant_id="acme")
        async with Client(build_mcp_server(mem.aio, tenant=fixed_tenant("acme"))) as client:
            done = await call(client, "recall_similar", {"query": QUERY})
        [hit] = done.ok()["hits"]
        check(hit, "mcp")
        assert hit["why"] == hit["breakdown"]  # the name older clients read
    finally:
        mem.close()


def test_http_gives_the_shape(served_sqlite: Served) -> None:
    tenant = "hit-shape"
    with served_sqlite.http(tenant) as http:
        assert http.post("/v1/experiences", json={"content": LESSON}).status_code == 201
        reply = http.post("/v1/recall", json={"query": QUERY})
        assert reply.status_code == 200, reply.text
        [hit] = reply.json()["hits"]
    check(hit, "http")
