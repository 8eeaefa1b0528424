"""The provenance spellings docs/security.md lists (``tool_output``, ``web``, an empty value,
any case, ...) are accepted wherever a ``source`` is given, and any other value is refused
with one line naming the field ``source``, the same in Python (``Memory``, ``AsyncMemory``:
one lesson, a batch, a recorded run, a stored trajectory), over HTTP (the app of ``hindsight
serve``) and over MCP (``/mcp`` of the same app), on SQLite and PostgreSQL
(docs/security.md#layer-2-provenance-trust)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hindsight import AsyncMemory, InvalidTrajectoryError, Memory, UsageError
from hindsight.guard import TRUST_WEIGHTS, canonical_source
from hindsight.models import PROVENANCE_SPELLINGS, Provenance
from hindsight.server import KeyRing, create_app
from tests.helpers import make_memory
from tests.server.mcp_support import call, serving

pytestmark = pytest.mark.anyio
KEY = "key-of-t"
ERROR = "source must be one of system, user, tool, unknown, or another spelling of one ("

SPELLINGS: list[tuple[Any, str]] = [
    *((p.value, p.value) for p in Provenance),
    *PROVENANCE_SPELLINGS.items(),
    ("Tool_Output", "tool"),
    ("  WEB ", "unknown"),
    ("Human", "user"),
    (None, "user"),  # null: the default, as for every optional argument
]
"""Every spelling of the table (docs/security.md) with the provenance it is stored as."""
HELD = {"tool", "unknown"}
"""Origins held until a person approves (docs/security.md#held-until-confirmed)."""


def _status(name: str) -> str:
    return "quarantined" if name in HELD else "active"


BAD: list[Any] = ["usr", "tools", "tool output", "webpage", 5, True, ["user"], {"s": 1}]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_table_is_the_guards_table() -> None:
    for spelling, name in SPELLINGS:
        if spelling is not None:
            assert canonical_source(spelling) == name
            assert TRUST_WEIGHTS[name] == TRUST_WEIGHTS[Provenance(spelling).value]


def _one_line(message: str) -> str:
    assert "\n" not in message and message.startswith(ERROR), message
    return message


def test_python(tmp_path: Path, database_url: str) -> None:
    with make_memory(tmp_path / "data", database_url) as mem:
        for i, (spelling, name) in enumerate(SPELLINGS):
            text = f"Lesson {i} on the export job."
            one = mem.add_experience(text, tenant_id="t", source=spelling)
            assert (one.provenance, one.status) == (name, _status(name))
            (item,) = mem.add_experiences([{"content": f"Batch {text}", "source": spelling}],
                                          tenant_id="t")  # fmt: skip
            assert (item.experience.provenance, item.experience.status) == (name, _status(name))
            with mem.record(f"run {i}", tenant_id="t", source=spelling) as run:
                run.user_message(f"run {i}")
            assert mem.get_trajectory(run.trajectory_id, tenant_id="t").source == name
            receipt = mem.store_episode({"tenant_id": "t", "task": f"dict run {i}",
                                         "source": spelling}, review=False)  # fmt: skip
            assert mem.get_trajectory(receipt.trajectory_id, tenant_id="t").source == name
        for bad in BAD:
            with pytest.raises(UsageError) as err:
                mem.add_experience("Bad source lesson.", tenant_id="t", source=bad)
            message = _one_line(str(err.value))
            with pytest.raises(UsageError) as batch:
                mem.add_experiences([{"content": "x"}, {"content": "y", "source": bad}],
                                    tenant_id="t")  # fmt: skip
            assert str(batch.value) == f"item 1: {message}"
            with pytest.raises(UsageError) as rec:
                mem.record("bad run", tenant_id="t", source=bad)
            assert str(rec.value) == message
            with pytest.raises(InvalidTrajectoryError, match=r"source: source must be one of"):
                mem.store_episode({"tenant_id": "t", "task": "bad", "source": bad})


def test_async_memory(tmp_path: Path, database_url: str) -> None:
    async def run() -> None:
        async with AsyncMemory(data_dir=tmp_path / "a", database_url=database_url) as amem:
            for spelling, name in SPELLINGS:
                exp = await amem.add_experience(f"Async {spelling!r}.", tenant_id="t",
                                                source=spelling)  # fmt: skip
                assert (exp.provenance, exp.status) == (name, _status(name))
            with pytest.raises(UsageError, match=r"^source must be one of"):
                await amem.add_experience("Async bad.", tenant_id="t", source="usr")

    asyncio.run(run())


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[tuple[Memory, str]]:
    mem = make_memory(tmp_path / "s", database_url)
    try:
        with serving(create_app(mem.aio, keyring=KeyRing.from_plain({KEY: "t"}))) as url:
            yield mem, url
    finally:
        mem.close()


def _python_error(mem: Memory, bad: Any) -> str:
    with pytest.raises(UsageError) as err:
        mem.add_experience("Bad source lesson.", tenant_id="t", source=bad)
    return str(err.value)


async def test_http_and_mcp(served: tuple[Memory, str]) -> None:
    mem, url = served
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        for i, (spelling, name) in enumerate(SPELLINGS):
            one = http.post("/v1/experiences", json={"content": f"HTTP {i}.", "source": spelling})
            assert one.status_code == 201 and one.json()["provenance"] == name, one.text
            assert one.json()["status"] == _status(name)
            items = [{"content": f"HTTP batch {i}.", "source": spelling}]
            batch = http.post("/v1/experiences:batch", json={"items": items})
            assert batch.json()["items"][0]["experience"]["provenance"] == name, batch.text
            assert batch.json()["items"][0]["experience"]["status"] == _status(name)
            run = {"task": f"HTTP run {i}", "source": spelling, "events": []}
            stored = http.post("/v1/episodes", json={"trajectory": run, "review": False})
            assert stored.status_code == 201, stored.text
            tid = stored.json()["episodes"][0]["trajectory_id"]
            assert http.get(f"/v1/trajectories/{tid}").json()["source"] == name
        for bad in BAD:
            expected = _python_error(mem, bad)
            one = http.post("/v1/experiences", json={"content": "HTTP bad.", "source": bad})
            error = one.json()["error"]
            assert (one.status_code, error["field"]) == (422, "source"), one.text
            assert error["message"] == f"body field source: {expected}"
            items = [{"content": "ok"}, {"content": "HTTP bad.", "source": bad}]
            error = http.post("/v1/experiences:batch", json={"items": items}).json()["error"]
            assert error["message"] == f"body field items.1.source: {expected}"
            run = {"task": "HTTP bad run", "source": bad, "events": []}
            error = http.post("/v1/episodes", json={"trajectory": run}).json()["error"]
            assert "source: source must be one of" in error["message"], error
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as client,
        Client(streamable_http_client(f"{url}/mcp", http_client=client)) as session,
    ):
        for i, (spelling, name) in enumerate(SPELLINGS):
            lesson = {"content": f"MCP {i}.", "source": spelling}
            added = (await call(session, "add_experiences", {"lessons": [lesson]})).ok()
            got_exp = mem.get_experience(added["items"][0]["id"], tenant_id="t")
            assert (got_exp.provenance, got_exp.status) == (name, _status(name))
            run = {"task": f"MCP run {i}", "source": spelling, "events": []}
            got = await call(session, "store_episode", {"trajectory": run, "review": False})
            tid = got.ok()["trajectory_id"]
            assert mem.get_trajectory(tid, tenant_id="t").source == name
        for bad in BAD:
            expected = _python_error(mem, bad)
            lesson = {"content": "MCP bad.", "source": bad}
            done = await call(session, "add_experiences", {"lessons": [lesson]})
            assert done.error is not None, done.text
            assert done.error["message"] == f"lessons.0.source: {expected}", done.error
            run = {"task": "MCP bad run", "source": bad, "events": []}
            done = await call(session, "store_episode", {"trajectory": run})
            assert done.error is not None and "source: source must be one of" in json.dumps(
                done.error
            )


@pytest.mark.parametrize(("source", "held"), [("web", True), ("tool_output", True),
                                              ("user", False), ("operator", False)])  # fmt: skip
def test_reviewed_lessons_follow_the_runs_origin(
    tmp_path: Path, database_url: str, source: str, held: bool
) -> None:
    """A reviewed lesson is held when the run it came from has a low-trust source, and not
    when a user's run merely quotes a tool's error message (its trust is 0.6 either way)."""
    from hindsight import Event, Trajectory

    run = Trajectory(tenant_id="t", task="look up order 7", outcome="failure", source=source,
                     events=[Event(event_type="user_message", content="look up order 7"),
                             Event(event_type="tool_call", tool_name="order_query",
                                   tool_args={"id": 7}),
                             Event(event_type="tool_result", tool_name="order_query",
                                   status="failure",
                                   content="upstream pool exhausted, retry later")])  # fmt: skip
    with make_memory(tmp_path / "r", database_url) as mem:
        mem.store_episode(run, review=False)
        lessons = mem.review_now(run.id, tenant_id="t")
        assert lessons
        for exp in lessons:
            if exp.kind.value != "episode":  # an episode's origin is its provenance
                assert exp.metadata["provenance"]["origin"] == canonical_source(source)
            reasons = exp.metadata.get("quarantine_reasons", [])
            unconfirmed = [r for r in reasons if r.startswith("unconfirmed source")]
            assert bool(unconfirmed) is held, (exp.content, reasons)
            assert (exp.status.value == "quarantined") is held
        if held:  # approval releases it, and a later edit does not hold it again
            first = lessons[0]
            approved = mem.approve(first.id, tenant_id="t")
            assert approved.status.value == "active"
            edited = mem.edit_experience(first.id, tenant_id="t", tags=["checked"])
            assert edited.status.value == "active"
