"""Never fold what means something else, over HTTP (the app of ``hindsight serve``: one lesson,
a batch) and MCP (``add_experiences`` over ``/mcp`` of the same app, and ``hindsight mcp``
over stdio), on SQLite and PostgreSQL: each pair of tests/test_dedup_meaning.py is two
lessons, each text stored exactly; the same text up to punctuation is still one
(docs/lifecycle.md#dedup-on-write-hindsightwritebackdedup)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hindsight import Memory
from hindsight.server import KeyRing, create_app
from tests.helpers import make_memory
from tests.server.mcp_support import call, serving, stdio_session
from tests.test_dedup_meaning import PAIRS, SAME, SameVector

pytestmark = pytest.mark.anyio
KEY = "key-of-t"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def app_url(tmp_path: Path, database_url: str) -> Iterator[tuple[Memory, str]]:
    mem = make_memory(tmp_path / "data", database_url, embedder=SameVector())
    try:
        app = create_app(mem.aio, keyring=KeyRing.from_plain({KEY: "t"}))
        with serving(app) as url:
            yield mem, url
    finally:
        mem.close()


def _stored(mem: Memory, namespace: str) -> list[str]:
    rows = [
        e
        for status in ("active", "quarantined")
        for e in mem.list_experiences(tenant_id="t", namespace=namespace, status=status)
    ]
    return sorted(e.content for e in rows)


async def test_http_and_mcp_over_http_keep_both_texts(app_url: tuple[Memory, str]) -> None:
    mem, url = app_url
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        for i, (old, new) in enumerate(PAIRS + SAME):
            same = i >= len(PAIRS)
            one, two = (
                http.post("/v1/experiences", json={"content": t, "namespace": f"h{i}"})
                for t in (old, new)
            )
            assert (one.status_code, two.status_code) == (201, 201), two.text
            assert (two.json()["id"] == one.json()["id"]) is same, (old, new)
            items = [{"content": t, "namespace": f"hb{i}"} for t in (old, new)]
            batch = http.post("/v1/experiences:batch", json={"items": items})
            assert batch.status_code == 200, batch.text
            results = [item["result"] for item in batch.json()["items"]]
            assert (results == ["created", "merged"]) is same, (old, new, results)
            if not same:
                assert _stored(mem, f"h{i}") == _stored(mem, f"hb{i}") == sorted([old, new])
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as client,
        Client(streamable_http_client(f"{url}/mcp", http_client=client)) as session,
    ):
        for i, (old, new) in enumerate(PAIRS):
            lessons = [{"content": old}, {"content": new}]
            args = {"lessons": lessons, "namespace": f"m{i}"}
            added = (await call(session, "add_experiences", args)).ok()
            assert [a["result"] for a in added["items"]] != ["created", "merged"], (old, new)
            assert _stored(mem, f"m{i}") == sorted([old, new])


async def test_mcp_over_stdio_keeps_both_texts(tmp_path: Path, database_url: str) -> None:
    """``hindsight mcp`` as an MCP host runs it, with its default (hashing) embedder: the pairs
    its embedder puts close are the ones a fold would have lost."""
    async with stdio_session(tmp_path / "d", database_url) as session:
        for i, (old, new) in enumerate(PAIRS + SAME):
            ids = []
            for text in (old, new):
                args = {"lessons": [{"content": text}], "namespace": f"s{i}"}
                (item,) = (await call(session, "add_experiences", args)).ok()["items"]
                ids.append(item["id"])
                assert item["lesson"]["content"] == (old if i >= len(PAIRS) else text)
            assert (ids[0] == ids[1]) is (i >= len(PAIRS)), (old, new)
