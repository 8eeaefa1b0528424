"""The HTTP service under load and on PostgreSQL.

* the API key is checked before the body is read (a request without a key never waits for
  its body, however large or unfinished);
* the OpenAPI schema lists every status a route answers, with the error body;
* a large run is parsed, converted and stored off the event loop (HTTP and MCP);
* on PostgreSQL, a value the database cannot hold is a 4xx, never a 503 the client retries,
  and no store error shown to a client names a host, user or URL of the deployment.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import sqlalchemy as sa

from hindsight import AsyncMemory
from hindsight.capture.ingest import records
from hindsight.service._keys import KeyRing
from hindsight.service.http import create_app
from tests.server.conftest import Served

V1_ERRORS = {"400", "401", "404", "413", "422", "503"}


def _raw_request(url: str, request: bytes, timeout: float = 10.0) -> bytes:
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks):
                head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
                length = [
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ]
                if length and len(rest) >= length[0]:
                    break
        return b"".join(chunks)


def test_the_key_is_checked_before_the_body_is_read(served_sqlite: Served) -> None:
    """The request announces 1 MB and sends 10 bytes: without a key the answer is a 401 at
    once (the server never waits for, nor parses, the body); with a key it would wait."""
    head = (
        b"POST /v1/episodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Content-Length: 1000000\r\nConnection: close\r\n\r\n{"trajecto'
    )
    reply = _raw_request(served_sqlite.url, head)
    assert reply.startswith(b"HTTP/1.1 401"), reply[:200]
    body = json.loads(reply.partition(b"\r\n\r\n")[2])
    assert body["error"]["type"] == "unauthorized"
    with httpx.Client(base_url=served_sqlite.url) as http:  # a malformed body: still 401
        r = http.post("/v1/recall", content=b"{not json", headers={"X-API-Key": "wrong"})
        assert r.status_code == 401 and r.json()["error"]["type"] == "unauthorized"
        assert http.get("/health").status_code == 200  # public paths need no key
        assert http.get("/openapi.json").status_code == 200


def test_openapi_lists_every_status_a_route_answers(served_sqlite: Served) -> None:
    schema = httpx.get(served_sqlite.url + "/openapi.json", timeout=30).json()
    assert "ErrorResponse" in schema["components"]["schemas"]
    for path, item in schema["paths"].items():
        for method, op in item.items():
            codes = set(op["responses"])
            if path.startswith("/v1/"):
                assert codes >= V1_ERRORS, (method, path, codes)
                for code in V1_ERRORS:
                    ref = op["responses"][code]["content"]["application/json"]["schema"]
                    assert ref["$ref"].endswith("/ErrorResponse"), (method, path, code)
    episodes = schema["paths"]["/v1/episodes"]["post"]
    assert {"201", "403"} <= set(episodes["responses"])
    body = episodes["requestBody"]["content"]["application/json"]["schema"]
    assert body["$ref"] == "#/components/schemas/EpisodeBody"
    assert "trajectory" in schema["components"]["schemas"]["EpisodeBody"]["properties"]
    assert "504" in schema["paths"]["/v1/episodes/{trajectory_id}/review"]["post"]["responses"]
    assert "503" in schema["paths"]["/ready"]["get"]["responses"]


def _big_run(messages: int) -> dict[str, Any]:
    turns = []
    for i in range(messages // 2):
        turns.append({"role": "user", "content": f"step {i}: where is order {i}?"})
        turns.append({"role": "assistant", "content": f"order {i} is on its way"})
    return {"messages": turns, "reward": 1}


@pytest.fixture
def spy_conversion(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record the thread each conversion of a record into trajectories runs on (the real
    conversion runs; nothing is replaced)."""
    seen: list[str] = []
    for name in ("trajectories_from_record", "trajectory_from_record"):
        real = getattr(records, name)

        def spy(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            seen.append(threading.current_thread().name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(records, name, spy)
    yield seen


def test_a_large_run_is_converted_and_stored_off_the_event_loop(
    tmp_path: Path, spy_conversion: list[str]
) -> None:
    """HTTP ``POST /v1/episodes`` and MCP ``store_episode`` with a 6,000-message run: the
    conversion runs in a worker thread of the loop's executor, never on the event loop's own
    thread, and the run is stored."""
    from mcp import Client

    from hindsight.service.mcp import build_mcp_server, fixed_tenant
    from tests.server.mcp_support import call, serving

    memory = AsyncMemory(data_dir=tmp_path / "d", background_review=False)
    app = create_app(memory, keyring=KeyRing.single_tenant("acme"), mcp=False)
    with serving(app) as url:
        r = httpx.post(url + "/v1/episodes", json={"trajectory": _big_run(6000)}, timeout=120)
    assert r.status_code == 201 and r.json()["episodes"][0]["stored"], r.text

    async def over_mcp() -> dict[str, Any]:
        async with Client(build_mcp_server(memory, tenant=fixed_tenant("acme"))) as client:
            done = await call(client, "store_episode", {"trajectory": _big_run(4000)})
        return done.ok()

    doc = asyncio.run(over_mcp())
    assert doc["stored"] and doc["events"] == 4000, doc
    assert len(spy_conversion) >= 2, spy_conversion  # HTTP (and its inner call) and MCP
    assert all(name.startswith("asyncio_") for name in spy_conversion), spy_conversion
    assert asyncio.run(memory.stats(tenant_id="acme"))["trajectories"] == 2
    memory.close()


# -- PostgreSQL ---------------------------------------------------------------------------------


@pytest.fixture
def pg_server(database_url: str, tmp_path: Path) -> Iterator[tuple[str, AsyncMemory, str]]:
    """A server over PostgreSQL (in this process, on a loopback port): its URL, its memory and
    the database URL."""
    from tests.server.mcp_support import serving

    memory = AsyncMemory(
        data_dir=tmp_path / "d",
        database_url=database_url,
        background_review=False,
    )
    app = create_app(memory, keyring=KeyRing.single_tenant("acme"), mcp=False)
    with serving(app) as url:
        yield url, memory, database_url
    memory.close()


def _deployment_words(database_url: str) -> list[str]:
    url = sa.engine.make_url(database_url)
    return [str(url.host), str(url.username), str(url.database), "postgresql", "://"]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_value_postgresql_cannot_hold_is_a_4xx_not_a_retryable_503(
    pg_server: tuple[str, AsyncMemory, str],
) -> None:
    url, _, database_url = pg_server
    for body in (
        json.dumps({"content": "retry the payment gateway \u0000 once"}),
        '{"content": "check the refund window", "metadata": {"score": NaN}}',
    ):
        r = httpx.post(
            url + "/v1/experiences",
            content=body,
            headers={"content-type": "application/json"},
            timeout=60,
        )
        assert r.status_code < 500, (body, r.status_code, r.text)
        if r.status_code >= 400:
            message = r.json()["error"]["message"]
            assert not any(word in message for word in _deployment_words(database_url)), message


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_store_errors_shown_to_clients_name_no_host_user_or_url(
    pg_server: tuple[str, AsyncMemory, str],
) -> None:
    url, memory, database_url = pg_server
    with memory.store._tx(write=True) as conn:  # the tables vanish under the server
        conn.execute(sa.text("DROP TABLE experiences CASCADE"))
    r = httpx.get(url + "/v1/experiences", timeout=60)
    assert r.status_code == 503 and r.json()["error"]["type"] == "store_unavailable", r.text
    message = r.json()["error"]["message"]
    assert not any(word in message for word in _deployment_words(database_url)), message
    assert "server log" in message
