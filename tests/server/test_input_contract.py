"""One contract per argument (issue 18 item 2): top_k, token_budget, limit and offset accept
the same values, coerce them the same way and refuse them with the same words in Python, over
HTTP, over MCP and from the CLI (hindsight/_contract.py, docs/concepts.md#the-input-contract).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from hindsight import Memory, UsageError
from hindsight.service._keys import KeyRing, create_key
from hindsight.service.http import create_app
from hindsight.service.mcp import build_mcp_server, fixed_tenant
from tests.cli_helpers import run_cli
from tests.helpers import make_memory
from tests.server.mcp_support import serving

OK = "ok"
TOP_K = "top_k must be an integer from 1 to 1000"
BUDGET = "token_budget must be an integer from 150 to 1000000"
LIMIT = "limit must be an integer from 1 to 10000"
OFFSET = "offset must be an integer from 0 to 1000000000"
CONFIDENCE = "confidence must be a number from 0 to 1"
IMPORTANCE = "importance must be a number from 0 to 1"
DELTA = "delta must be a number from -1 to 1"
FLOOR = "similarity_floor must be a number from -1 to 1"
CURSOR = "cursor is not a next_cursor of this list (pass it back unchanged)"
ORDER = "order must be one of confidence, created, got"

# (argument, value, expected: OK or the start of the one-line error)
TABLE: list[tuple[str, Any, str]] = [
    ("top_k", 5, OK),
    ("top_k", "5", OK),
    ("top_k", " 7 ", OK),
    ("top_k", 5.0, OK),
    ("top_k", 1000, OK),
    ("top_k", 0, TOP_K),
    ("top_k", -3, TOP_K),
    ("top_k", 1001, TOP_K),
    ("top_k", True, TOP_K),
    ("top_k", 1.5, TOP_K),
    ("top_k", "abc", TOP_K),
    ("top_k", "", TOP_K),
    ("token_budget", 150, OK),
    ("token_budget", "300", OK),
    ("token_budget", 0, BUDGET),
    ("token_budget", 49, BUDGET),
    ("token_budget", 149, BUDGET),
    ("token_budget", True, BUDGET),
    ("token_budget", 10**7, BUDGET),
    ("limit", 1, OK),
    ("limit", "20", OK),
    ("limit", None, OK),
    ("limit", 0, LIMIT),
    ("limit", 10001, LIMIT),
    ("limit", False, LIMIT),
    ("limit", "x", LIMIT),
    ("offset", 0, OK),
    ("offset", "3", OK),
    ("offset", -1, OFFSET),
    ("offset", True, OFFSET),
    ("cursor", "not-a-cursor", CURSOR),
    ("cursor", "", CURSOR),
    ("cursor", 12, CURSOR),
    ("confidence", 0.7, OK),
    ("confidence", "0.7", OK),
    ("confidence", 1, OK),
    ("confidence", 0, OK),
    ("confidence", 1.01, CONFIDENCE),
    ("confidence", -0.1, CONFIDENCE),
    ("confidence", True, CONFIDENCE),
    ("confidence", "high", CONFIDENCE),
    ("confidence", "", CONFIDENCE),
    ("confidence", float("nan"), CONFIDENCE),
    ("confidence", float("inf"), CONFIDENCE),
    ("importance", 0.9, OK),
    ("importance", " 0.25 ", OK),
    ("importance", 2, IMPORTANCE),
    ("importance", False, IMPORTANCE),
    ("importance", "1e5", IMPORTANCE),
    ("delta", -0.2, OK),
    ("delta", "-0.2", OK),
    ("delta", "1e-1", OK),
    ("delta", 1, OK),
    ("delta", -1.5, DELTA),
    ("delta", 2, DELTA),
    ("delta", True, DELTA),
    ("delta", "lots", DELTA),
    ("similarity_floor", -1, OK),
    ("similarity_floor", "0.3", OK),
    ("similarity_floor", None, OK),
    ("similarity_floor", 1.5, FLOOR),
    ("similarity_floor", True, FLOOR),
    ("similarity_floor", "x", FLOOR),
    ("order", "created", OK),
    ("order", "confidence", OK),
    ("order", "newest", ORDER),
    ("order", "", ORDER),
]
"""Every numeric (and paging) argument: ``cursor`` and ``offset`` belong to every listing,
``confidence`` and ``importance`` to adding a lesson (``importance`` also to an edit),
``delta`` to adjusting a confidence, ``similarity_floor`` to recall, ``order`` to listing
experiences. ``confidence`` and ``importance`` also run through the batch write
(``add_experiences``, ``POST /v1/experiences:batch``), where the same message names the item."""


def _batch_python(mem: Memory, arg: str, value: Any) -> str:
    try:
        mem.add_experiences(
            [{"content": f"Batch lesson one on {arg}"}, {"content": f"Batch {arg}", arg: value}],
            tenant_id="t",
        )
    except UsageError as err:
        message = str(err)
        assert message.startswith("item 1: "), message  # the item's index
        return message.removeprefix("item 1: ")
    return OK


def _batch_http(client: httpx.Client, arg: str, value: Any) -> str:
    items = [{"content": f"HTTP batch one on {arg}"}, {"content": f"HTTP batch {arg}", arg: value}]
    r = client.post(
        "/v1/experiences:batch",
        content=json.dumps({"items": items}),
        headers={"Content-Type": "application/json"},
    )
    if r.status_code < 300:
        return OK
    assert r.status_code in (400, 422), r.text
    message: str = r.json()["error"]["message"]
    assert message.startswith(f"body field items.1.{arg}: "), message  # the item's index
    return message.split(": ", 1)[1]


def _python(mem: Memory, eid: str, arg: str, value: Any) -> str:
    try:
        if arg in ("top_k", "token_budget", "similarity_floor"):
            mem.recall("retry", tenant_id="t", **{arg: value})
        elif arg in ("confidence", "importance"):
            mem.add_experience(f"Lesson about {arg}", tenant_id="t", **{arg: value})
        elif arg == "delta":
            mem.adjust_confidence(eid, value, tenant_id="t")
            mem.adjust_confidence(eid, -float(value), tenant_id="t")  # back where it was
        else:
            mem.list_experiences(tenant_id="t", **{arg: value})
    except UsageError as err:
        return str(err)
    return OK


def _http(client: httpx.Client, eid: str, arg: str, value: Any) -> str:
    if arg in ("top_k", "token_budget", "similarity_floor"):
        r = client.post("/v1/recall", json={"query": "retry", arg: value})
    elif arg in ("confidence", "importance"):
        body = json.dumps({"content": f"Lesson on {arg}", arg: value})  # NaN as JS sends it
        r = client.post(
            "/v1/experiences", content=body, headers={"Content-Type": "application/json"}
        )
    elif arg == "delta":
        r = client.patch(f"/v1/experiences/{eid}", json={"confidence_delta": value})
        if r.status_code < 300:
            client.patch(f"/v1/experiences/{eid}", json={"confidence_delta": -float(value)})
    else:
        r = client.get("/v1/experiences", params={} if value is None else {arg: value})
    if r.status_code < 300:
        return OK
    assert r.status_code in (400, 422), r.text
    message: str = r.json()["error"]["message"]
    framed = message.startswith(("body field", "query field"))
    return message.split(": ", 1)[1] if framed else message


async def _mcp(mem: Memory, eid: str, arg: str, value: Any) -> str | None:
    if arg == "top_k":
        tool, args = "recall_similar", {"query": "retry", "top_k": value}
    elif arg == "limit" and value is not None:
        tool, args = "list_trajectories", {"limit": value}
    elif arg in ("offset", "cursor"):
        tool, args = "list_trajectories", {arg: value}
    elif arg in ("confidence", "importance"):
        tool, args = "add_experiences", {"lessons": [{"content": f"MCP {arg}", arg: value}]}
    elif arg == "delta":
        tool, args = "adjust_confidence", {"experience_id": eid, "delta": value}
    else:
        return None  # not an argument of any tool
    async with Client(build_mcp_server(mem.aio, tenant=fixed_tenant("t"))) as client:
        result = await client.call_tool(tool, args)
        if not result.is_error and arg == "delta":
            undo = {"experience_id": eid, "delta": -float(value)}
            await client.call_tool("adjust_confidence", undo)
    if not result.is_error:
        return OK
    text = "".join(getattr(b, "text", "") for b in result.content)
    message = text.split(": ", 1)[1]
    for prefix in (f"{arg}: ", f"lessons.0.{arg}: "):
        message = message.removeprefix(prefix)
    return message


@pytest.fixture
def interfaces(tmp_path: Path) -> Iterator[tuple[Memory, httpx.Client]]:
    keys = tmp_path / "keys"
    key = create_key(keys, "t")[0]
    mem = make_memory(tmp_path / "data", f"sqlite:///{tmp_path / 'h.db'}")
    mem.add_experience("Retry order_query once on 502", tenant_id="t", confidence=0.5)
    try:
        app = create_app(mem.aio, keyring=KeyRing.from_file(keys), mcp=False)
        with serving(app) as url:
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
                yield mem, client
    finally:
        mem.close()


def test_every_case_gets_the_same_answer_in_python_http_and_mcp(
    interfaces: tuple[Memory, httpx.Client],
) -> None:
    mem, client = interfaces
    eid = mem.list_experiences(tenant_id="t")[0].id
    for arg, value, expected in TABLE:
        answers = {
            "python": _python(mem, eid, arg, value),
            "http": _http(client, eid, arg, value),
        }
        if arg in ("confidence", "importance"):
            answers["python batch"] = _batch_python(mem, arg, value)
            answers["http batch"] = _batch_http(client, arg, value)
        mcp = anyio.run(_mcp, mem, eid, arg, value)
        # MCP sends JSON values: no strings for numbers; floats only where a number is real
        real = arg in ("confidence", "importance", "delta", "similarity_floor")
        if isinstance(value, float) and not math.isfinite(value):
            mcp = None  # JSON-RPC has no NaN or infinity
        if mcp is not None and not isinstance(value, str) and (real or type(value) is not float):
            answers["mcp"] = mcp
        for where, answer in answers.items():
            if expected == OK:
                assert answer == OK, (where, arg, value, answer)
            else:
                assert answer.startswith(expected), (where, arg, value, answer)
                assert "\n" not in answer


CLI_TABLE = [
    (["recall", "retry", "--top-k", "0"], TOP_K),
    (["recall", "retry", "--top-k", "-3"], TOP_K),
    (["recall", "retry", "--top-k", "abc"], TOP_K),
    (["recall", "retry", "--top-k", "5"], OK),
    (["experiences", "list", "--limit", "0"], LIMIT),
    (["experiences", "list", "--limit", "20"], OK),
    (["trajectories", "list", "--offset", "-1"], OFFSET),
    (["confidence", "6f0c3a4e-3a55-4b8e-9a0e-7d2f1c0b9e11", "-1.5"], DELTA),
    (["confidence", "6f0c3a4e-3a55-4b8e-9a0e-7d2f1c0b9e11", "2"], DELTA),
    (["confidence", "6f0c3a4e-3a55-4b8e-9a0e-7d2f1c0b9e11", "lots"], DELTA),
    (["confidence", "6f0c3a4e-3a55-4b8e-9a0e-7d2f1c0b9e11", "nan"], DELTA),
]


def test_the_cli_gives_the_same_answers(tmp_path: Path) -> None:
    for args, expected in CLI_TABLE:
        proc = run_cli(*args, "--tenant", "t", "--json", data_dir=tmp_path / "data")
        if expected == OK:
            assert proc.returncode == 0, (args, proc.stderr)
            json.loads(proc.stdout)
        else:
            assert proc.returncode == 2, (args, proc.stderr)
            assert proc.stderr.startswith(f"error: {expected}"), (args, proc.stderr)
