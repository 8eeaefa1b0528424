"""One contract on HTTP (the app of ``hindsight serve``) and MCP (``/mcp`` of the same app, and
``hindsight mcp`` over stdio), on SQLite and PostgreSQL: a body that is not UTF-8 gets the same
422 on every route; a refusal names its field (an empty namespace, a reserved metadata key) on
both; ``null`` is the default of every optional switch; a list inside a lesson may be sent as
JSON text like a tool's own list arguments; an embedder that returns NaN is named with what it
was embedding (docs/http.md#errors, docs/mcp.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hindsight import Memory
from hindsight._contract import MAX_QUERY_CHARS
from hindsight.server import KeyRing, create_app
from tests.helpers import make_memory
from tests.server.mcp_support import call, serving, stdio_session
from tests.test_clock_and_errors import PoisonedEmbedder

pytestmark = pytest.mark.anyio
KEY = "key-of-t"
NOT_UTF8 = "the request body is not valid JSON (it is not UTF-8 text: byte 0xe9 at character"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[tuple[Memory, str, Any]]:
    mem = make_memory(tmp_path / "data", database_url, embedder=PoisonedEmbedder())
    app = create_app(mem.aio, keyring=KeyRing.from_plain({KEY: "t"}))
    try:
        with serving(app) as url:
            yield mem, url, app
    finally:
        mem.close()


def _json_routes(app: Any) -> list[tuple[str, str]]:
    """Every ``/v1`` operation that takes a request body (from the app's OpenAPI document):
    (method, path with a made-up id)."""
    out = []
    for path, operations in app.openapi()["paths"].items():
        for method, operation in operations.items():
            if path.startswith("/v1/") and "requestBody" in operation:
                for name in ("experience_id", "trajectory_id", "thread_id"):
                    path = path.replace(f"{{{name}}}", "6f0c3a4e-3a55-4b8e-9a0e-7d2f1c0b9e11")
                out.append((method.upper(), path))
    return out


async def test_http_and_mcp_answer_alike(served: tuple[Memory, str, Any]) -> None:
    mem, url, app = served
    headers = {"Authorization": f"Bearer {KEY}"}
    exp = mem.add_experience("Retry the export once.", tenant_id="t")
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        # a body that is not UTF-8: one answer on every JSON route (was 400 or 422)
        routes = _json_routes(app)
        assert ("POST", "/v1/experiences") in routes and ("POST", "/v1/episodes") in routes
        for method, path in routes:
            r = http.request(method, path, content=b'{"content": "caf\xe9"}',
                             headers={"Content-Type": "application/json"})  # fmt: skip
            assert r.status_code == 422, (method, path, r.text)
            error = r.json()["error"]
            assert error["type"] == "validation_error" and error["message"].startswith(NOT_UTF8)
        # the field of a refusal the engine makes
        r = http.post("/v1/experiences", json={"content": "x lesson", "namespace": " "})
        assert (r.status_code, r.json()["error"]["field"]) == (400, "namespace"), r.text
        r = http.post("/v1/recall", json={"query": "x", "namespace": ""})
        assert r.json()["error"]["field"] == "namespace", r.text
        bad = {"content": "x lesson", "metadata": {"quarantine_reasons": ["mine"]}}
        r = http.post("/v1/experiences", json=bad)
        assert (r.status_code, r.json()["error"]["field"]) == (400, "metadata"), r.text
        r = http.patch(f"/v1/experiences/{exp.id}", json={"metadata": {"guard": {}}})
        assert r.json()["error"]["field"] == "metadata", r.text
        # null is the default of every optional switch
        body = {"query": "export", "include_episodes": None, "explain": None, "record": None,
                "include_shared": None}  # fmt: skip
        r = http.post("/v1/recall", json=body)
        assert r.status_code == 200 and [h["experience"]["id"] for h in r.json()["hits"]] == [
            exp.id
        ], r.text
        run = {"task": "null switches", "events": []}
        r = http.post("/v1/episodes", json={"trajectory": run, "review": None, "merge": None})
        assert r.status_code == 201 and r.json()["episodes"][0]["review_queued"] is False
        r = http.post("/v1/checks", json={"tool": "export", "include_shared": None, "record": None})
        assert r.status_code == 200, r.text
        # an embedder that answers NaN: named, with what it embedded; nothing stored
        r = http.post("/v1/experiences", json={"content": "poison lesson"})
        error = r.json()["error"]
        assert (r.status_code, error["type"]) == (502, "embedding_failed"), r.text
        assert error["message"].startswith("embedder 'poisoned-64' returned NaN")
        assert "for the content" in error["message"]
        r = http.post("/v1/recall", json={"query": "poison query"})
        assert "for the query" in r.json()["error"]["message"], r.text
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        Client(streamable_http_client(f"{url}/mcp", http_client=client)) as session,
    ):
        await _mcp_cases(session, exp.id)
    assert [e.id for e in mem.list_experiences(tenant_id="t", limit=1000)
            if "poison" in e.content] == []  # fmt: skip


async def _mcp_cases(session: Any, eid: str) -> None:
    args = {"lessons": [{"content": "x lesson"}], "namespace": ""}
    done = await call(session, "add_experiences", args)
    assert done.error is not None and done.error["field"] == "namespace", done.text
    args = {"experience_id": eid, "metadata": {"quarantine_reasons": ["mine"]}}
    done = await call(session, "edit_experience", args)
    assert done.error is not None and done.error["field"] == "metadata", done.text
    # a list inside a lesson as JSON text, as a tool's own list arguments may be sent
    lesson = {"content": "Tag me by text.", "tags": '["billing", "refunds"]', "tools": '["export"]'}
    added = (await call(session, "add_experiences", {"lessons": [lesson]})).ok()
    assert added["items"][0]["lesson"]["tags"] == ["billing", "refunds"], added
    top = (await call(session, "recall_similar", {"query": "export", "tags": '["billing"]'})).ok()
    assert top["hits"], top
    # null for the optional switches
    done = await call(session, "recall_similar", {"query": "export", "include_episodes": None})
    assert not done.is_error, done.text
    run = {"task": "mcp null switch", "events": []}
    done = await call(session, "store_episode", {"trajectory": run, "review": None})
    assert done.ok()["review_queued"] is False
    # NaN from the embedder
    done = await call(session, "add_experiences", {"lessons": [{"content": "poison lesson"}]})
    assert done.error is not None and done.error["type"] == "embedding_failed", done.text
    assert "returned NaN or infinite values for the content" in done.error["message"]
    too_long = "q" * (MAX_QUERY_CHARS + 1)
    done = await call(session, "recall_similar", {"query": too_long})
    assert done.error is not None and done.error["field"] == "query"
    assert done.error["message"].startswith(f"query: query must be at most {MAX_QUERY_CHARS}")


async def test_mcp_over_stdio_answers_the_same(tmp_path: Path, database_url: str) -> None:
    async with stdio_session(tmp_path / "d", database_url) as session:
        lesson = {"content": "Retry the export once.", "tags": '["ops"]', "source": "web"}
        added = (await call(session, "add_experiences", {"lessons": [lesson]})).ok()
        assert added["items"][0]["lesson"]["tags"] == ["ops"]
        eid = added["items"][0]["id"]
        done = await call(session, "recall_similar", {"query": "x", "include_episodes": None})
        assert not done.is_error, done.text
        for args, field in [
            ({"lessons": [{"content": "y"}], "namespace": " "}, "namespace"),
            ({"lessons": [{"content": "y", "source": "usr"}]}, "lessons"),
            ({"lessons": [{"content": "y", "tags": [str(i) for i in range(101)]}]}, "lessons"),
        ]:
            done = await call(session, "add_experiences", args)
            assert done.error is not None and done.error["field"] == field, done.text
        done = await call(session, "recall_similar", {"query": "q" * (MAX_QUERY_CHARS + 1)})
        assert done.error is not None and done.error["field"] == "query"
        args = {"experience_id": eid, "metadata": {"guard": {}}}
        done = await call(session, "edit_experience", args)
        assert done.error is not None and done.error["field"] == "metadata"
        assert done.error["type"] == "invalid_request"
