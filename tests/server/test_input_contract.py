"""One contract per argument: every row of the table (numbers, paging, text and list limits,
spellings, optional switches) is accepted, coerced and refused with the same words in Python,
over HTTP (the app of ``hindsight serve``), over MCP (``/mcp`` of the same app, and ``hindsight
mcp`` over stdio for a sample) and from the CLI, on SQLite and PostgreSQL; a refusal names its
field on HTTP and MCP (hindsight/_contract.py, docs/concepts.md#the-input-contract).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hindsight import Memory, UsageError
from hindsight._contract import (
    MAX_BATCH_ITEMS,
    MAX_CONTENT_CHARS,
    MAX_LABELS,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
)
from hindsight.config import load_config
from hindsight.service._keys import KeyRing, create_key
from hindsight.service.http import create_app
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
QUERY = f"query must be at most {MAX_QUERY_CHARS} characters"
CONTENT = "content must be a non-empty string"
CONTENT_LONG = f"content must be at most {MAX_CONTENT_CHARS} characters"
TAGS = f"tags must be at most {MAX_LABELS} strings"
TOOLS = f"tools must be at most {MAX_LABELS} strings"
TOOL = f"tool must be a tool name of 1..{MAX_NAME_CHARS} characters"
TOOL_NAMES = f"tools must be tool names of 1..{MAX_NAME_CHARS} characters, got"
ITEMS = f"items must be a list of at most {MAX_BATCH_ITEMS} lessons"
STATE = (
    f"state must be a list of at most {MAX_BATCH_ITEMS} tool results, each an object "
    '{"tool": <name>, "result": <JSON value or text>}'
)
SWITCH = "include_episodes must be true or false, got"
RECALL_SWITCHES = ("include_episodes", "risk_checks")
SOURCE = "source must be one of system, user, tool, unknown, or another spelling"
KIND = "kind must be one of outcome, key_step"
NAMESPACE = "namespace must be a non-empty string"

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
    # text and list limits (hindsight._contract.MAX_*), the same everywhere
    ("query", "q" * MAX_QUERY_CHARS, OK),
    ("query", "q" * (MAX_QUERY_CHARS + 1), QUERY),
    ("content", "c" * MAX_CONTENT_CHARS, OK),
    ("content", "c" * (MAX_CONTENT_CHARS + 1), CONTENT_LONG),
    ("content", "", CONTENT),
    ("content", "   ", CONTENT),
    ("content", "null", OK),  # text like any other, stored exactly
    ("content", "N/A", OK),
    ("content", "None", OK),
    ("tags", [f"t{i}" for i in range(MAX_LABELS)], OK),
    ("tags", [f"t{i}" for i in range(MAX_LABELS + 1)], TAGS),
    ("tools", [f"tool_{i}" for i in range(MAX_LABELS + 1)], TOOLS),
    ("tools", ["order_query", ""], TOOL_NAMES + " ''"),
    ("tools", ["   "], TOOL_NAMES),
    ("tools", ["x" * (MAX_NAME_CHARS + 1)], TOOL_NAMES),
    ("tools", ["x" * MAX_NAME_CHARS], OK),
    ("tool", "x" * MAX_NAME_CHARS, OK),
    ("tool", "x" * (MAX_NAME_CHARS + 1), TOOL),
    ("tool", "", TOOL),
    ("items", [], OK),
    ("items", MAX_BATCH_ITEMS + 1, ITEMS),
    # the run's state of check_action (docs/checks.md#conditions)
    ("state", None, OK),
    ("state", [], OK),
    ("state", [{"tool": "get_member", "result": {"member": {"standing": "good"}}}], OK),
    ("state", [{"tool": "get_member", "result": "plain text"}] * MAX_BATCH_ITEMS, OK),
    ("state", "get_member", STATE + ", got str"),
    ("state", [{"tool": "get_member"}] * (MAX_BATCH_ITEMS + 1), STATE + ", got 1001 items"),
    ("state", [{"tool": "get_member", "value": 1}], STATE + "; state[0] has unknown key 'value'"),
    (
        "state",
        [{"tool": "a", "result": 1}, {"tool_name": "b", "output": 2}],
        STATE + "; state[1] has unknown keys 'output', 'tool_name'",
    ),
    ("state", [{"tool": "a", "result": 1}, "b"], STATE + "; state[1] is a str"),
    (
        "state",
        [{"tool": "", "result": 1}],
        "state[0].tool must be a tool name of 1..200 characters, got ''",
    ),
    # spellings
    ("source", "tool_output", OK),
    ("source", "WEB", OK),
    ("source", "", OK),
    ("source", "usr", SOURCE),
    ("kind", "Anti_Pattern", OK),
    ("kind", "lesson", KIND),
    ("namespace", "", NAMESPACE),
    ("namespace", "  ", NAMESPACE),
    # null is the default of every optional switch
    ("include_episodes", None, OK),
    ("include_episodes", True, OK),
    # a switch reads "no" as off on every interface, never as a truthy string
    ("include_episodes", "no", OK),
    ("include_episodes", "false", OK),
    ("include_episodes", 0, OK),
    ("include_episodes", "maybe", SWITCH + " 'maybe'"),
    ("include_episodes", [True], SWITCH + " [True]"),
    ("risk_checks", "off", OK),
    ("risk_checks", None, OK),
    ("risk_checks", "maybe", "risk_checks must be true or false, got 'maybe'"),
]
"""Every numeric (and paging) argument, the text and list limits, the spellings and the
switches: ``cursor`` and ``offset`` belong to every listing, ``confidence``, ``importance``,
``content``, ``tags``, ``tools``, ``source``, ``kind`` and ``namespace`` to adding a lesson
(``importance`` also to an edit), ``delta`` to adjusting a confidence, ``query``,
``similarity_floor``, ``include_episodes`` and ``risk_checks`` to recall, ``tool`` to a
risk check, ``items`` to the batch write, ``order`` to listing experiences. The lesson fields
also run through the batch write (``add_experiences``, ``POST /v1/experiences:batch``), where
the same message names the item."""
LESSON_FIELDS = ("confidence", "importance", "content", "tags", "tools", "source", "kind")


def _items(arg: str, value: Any) -> list[dict[str, Any]]:
    """The batch of a row: a good lesson, then the one with the row's value."""
    if arg == "items":
        count = value if isinstance(value, int) else len(value)
        return [{"content": f"Batch lesson {i} on items"} for i in range(count)]
    return [{"content": f"Batch lesson one on {arg}"}, {"content": f"Batch {arg}", arg: value}]


def _unframe(message: str, prefixes: tuple[str, ...]) -> str:
    for prefix in prefixes:
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


def _batch_python(mem: Memory, arg: str, value: Any) -> str:
    try:
        mem.add_experiences(_items(arg, value), tenant_id="t")
    except UsageError as err:
        message = str(err)
        if arg != "items":
            assert message.startswith("item 1: "), message  # the item's index
            assert err.field == f"items.1.{arg}", (message, err.field)
        return message.removeprefix("item 1: ")
    return OK


def _batch_http(client: httpx.Client, arg: str, value: Any) -> str:
    r = client.post(
        "/v1/experiences:batch",
        content=json.dumps({"items": _items(arg, value)}),
        headers={"Content-Type": "application/json"},
    )
    if r.status_code < 300:
        return OK
    assert r.status_code in (400, 422), r.text
    error = r.json()["error"]
    where = "items" if arg == "items" else f"items.1.{arg}"
    assert error["field"] == where, error
    return _unframe(error["message"], (f"body field {where}: ", "item 1: "))


def _python(mem: Memory, eid: str, arg: str, value: Any) -> str:
    try:
        if arg in ("top_k", "token_budget", "similarity_floor", "query", *RECALL_SWITCHES):
            query = value if arg == "query" else "retry"
            extra = {} if arg == "query" else {arg: value}
            mem.recall(query, tenant_id="t", **extra)
        elif arg == "content":
            mem.add_experience(value, tenant_id="t")
        elif arg in (*LESSON_FIELDS, "namespace"):
            mem.add_experience(f"Lesson about {arg}", tenant_id="t", **{arg: value})
        elif arg == "delta":
            mem.adjust_confidence(eid, value, tenant_id="t")
            mem.adjust_confidence(eid, -float(value), tenant_id="t")  # back where it was
        elif arg == "tool":
            mem.check_action(value, {}, tenant_id="t")
        elif arg == "state":
            mem.check_action("renew_loan", {}, tenant_id="t", state=value)
        elif arg == "items":
            mem.add_experiences(_items(arg, value), tenant_id="t")
        else:
            mem.list_experiences(tenant_id="t", **{arg: value})
    except UsageError as err:
        if arg not in ("cursor", "order"):
            assert err.field == arg, (arg, str(err), err.field)
        return str(err)
    return OK


def _http(client: httpx.Client, eid: str, arg: str, value: Any) -> str:
    if arg in ("top_k", "token_budget", "similarity_floor", "query", *RECALL_SWITCHES):
        body = {"query": value} if arg == "query" else {"query": "retry", arg: value}
        r = client.post("/v1/recall", json=body)
    elif arg == "content":
        r = client.post("/v1/experiences", json={"content": value})
    elif arg in (*LESSON_FIELDS, "namespace"):
        body = json.dumps({"content": f"Lesson on {arg}", arg: value})  # NaN as JS sends it
        r = client.post(
            "/v1/experiences", content=body, headers={"Content-Type": "application/json"}
        )
    elif arg == "delta":
        r = client.patch(f"/v1/experiences/{eid}", json={"confidence_delta": value})
        if r.status_code < 300:
            client.patch(f"/v1/experiences/{eid}", json={"confidence_delta": -float(value)})
    elif arg == "tool":
        r = client.post("/v1/checks", json={"tool": value, "args": {}})
    elif arg == "state":
        r = client.post("/v1/checks", json={"tool": "renew_loan", "state": value})
    elif arg == "items":
        return _batch_http(client, arg, value)
    else:
        r = client.get("/v1/experiences", params={} if value is None else {arg: value})
    if r.status_code < 300:
        return OK
    assert r.status_code in (400, 422), r.text
    error = r.json()["error"]
    field = "confidence_delta" if arg == "delta" else arg  # the HTTP name of delta
    if arg not in ("cursor", "order"):
        assert error["field"] == field, error
    return _unframe(error["message"], (f"body field {field}: ", f"query field {field}: "))


def _mcp_call(arg: str, value: Any, eid: str) -> tuple[str, dict[str, Any]] | None:
    """The tool call of a row, or ``None`` when no tool takes that argument."""
    if arg in ("top_k", "query", *RECALL_SWITCHES):
        query = value if arg == "query" else "retry"
        extra = {} if arg == "query" else {arg: value}
        return "recall_similar", {"query": query, **extra}
    if arg == "limit" and value is not None:
        return "list_trajectories", {"limit": value}
    if arg in ("offset", "cursor"):
        return "list_trajectories", {arg: value}
    if arg in LESSON_FIELDS:
        lesson = {"content": value} if arg == "content" else {"content": f"MCP {arg}", arg: value}
        return "add_experiences", {"lessons": [lesson]}
    if arg == "namespace":
        return "add_experiences", {"lessons": [{"content": "MCP ns"}], "namespace": value}
    if arg == "items":
        return "add_experiences", {"lessons": _items(arg, value)}
    if arg == "delta":
        return "adjust_confidence", {"experience_id": eid, "delta": value}
    if arg == "tool":
        return "check_action", {"tool": value}
    if arg == "state":
        return "check_action", {"tool": "renew_loan", "state": value}
    return None  # not an argument of any tool


async def _mcp(session: Any, eid: str, arg: str, value: Any) -> str | None:
    call = _mcp_call(arg, value, eid)
    if call is None:
        return None
    tool, args = call
    result = await session.call_tool(tool, args)
    if not result.is_error and arg == "delta":
        await session.call_tool("adjust_confidence", {"experience_id": eid, "delta": -float(value)})
    if not result.is_error:
        return OK
    error = (result.structured_content or {}).get("error") or {}
    top = "lessons" if arg in LESSON_FIELDS or arg == "items" else arg
    assert error.get("field") == top, (arg, error)
    message = str(error["message"])
    return _unframe(message, (f"{arg}: ", f"lessons.0.{arg}: ", "lessons: ", "item 0: "))


@pytest.fixture
def interfaces(
    tmp_path: Path, database_url: str
) -> Iterator[tuple[Memory, httpx.Client, str, str]]:
    keys = tmp_path / "keys"
    key = create_key(keys, "t")[0]
    mem = make_memory(tmp_path / "data", database_url)
    mem.add_experience("Retry order_query once on 502", tenant_id="t", confidence=0.5)
    try:
        app = create_app(mem.aio, keyring=KeyRing.from_file(keys))
        with serving(app) as url:
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
                yield mem, client, url, key
    finally:
        mem.close()


def _mcp_answers(url: str, key: str, eid: str, rows: list[tuple[str, Any, str]]) -> list[Any]:
    async def run() -> list[Any]:
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as session,
        ):
            return [await _mcp(session, eid, arg, value) for arg, value, _ in rows]

    return anyio.run(run)


def test_every_case_gets_the_same_answer_in_python_http_and_mcp(
    interfaces: tuple[Memory, httpx.Client, str, str],
) -> None:
    mem, client, url, key = interfaces
    eid = mem.list_experiences(tenant_id="t")[0].id
    mcp_answers = _mcp_answers(url, key, eid, TABLE)
    for (arg, value, expected), mcp in zip(TABLE, mcp_answers, strict=True):
        answers = {
            "python": _python(mem, eid, arg, value),
            "http": _http(client, eid, arg, value),
        }
        if arg in LESSON_FIELDS:
            answers["python batch"] = _batch_python(mem, arg, value)
            answers["http batch"] = _batch_http(client, arg, value)
        # MCP sends JSON values: no strings for numbers; floats only where a number is real
        real = arg in ("confidence", "importance", "delta", "similarity_floor")
        numeric = arg in ("top_k", "token_budget", "limit", "offset", "delta", *("confidence",
                          "importance", "similarity_floor"))  # fmt: skip
        if isinstance(value, float) and not math.isfinite(value):
            mcp = None  # JSON-RPC has no NaN or infinity
        sent = not (numeric and isinstance(value, str)) and (real or type(value) is not float)
        if mcp is not None and sent:
            answers["mcp"] = mcp
        for where, answer in answers.items():
            if expected == OK:
                assert answer == OK, (where, arg, str(value)[:40], answer)
            else:
                assert answer.startswith(expected), (where, arg, str(value)[:40], answer)
                assert "\n" not in answer


CLI_TABLE: list[tuple[list[str], str]] = [
    (["recall", "q" * (MAX_QUERY_CHARS + 1)], QUERY),
    (["recall", "q" * MAX_QUERY_CHARS], OK),
    (["quarantine", "list", "--limit", "0"], LIMIT),
    (["quarantine", "list", "--limit", "10001"], LIMIT),
    (["quarantine", "list", "--limit", "x"], LIMIT),
    (["quarantine", "list", "--limit", "5"], OK),
    (["jobs", "--limit", "50000"], LIMIT),
    (["jobs", "--limit", "0"], LIMIT),
    (["jobs", "--limit", "10000"], OK),
    (["audit", "--sample", "0"], "size must be an integer from 1 to 1000"),
    (["audit", "--sample", "x"], "size must be an integer from 1 to 1000"),
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


_TENANTLESS = ("jobs",)
"""Commands over every tenant (operators): no ``--tenant``."""


def test_the_cli_gives_the_same_answers(tmp_path: Path) -> None:
    for args, expected in CLI_TABLE:
        tenant = [] if args[0] in _TENANTLESS else ["--tenant", "t"]
        proc = run_cli(*args, *tenant, "--json", data_dir=tmp_path / "data")
        if expected == OK:
            assert proc.returncode == 0, (args[:3], proc.stderr)
            json.loads(proc.stdout)
        else:
            assert proc.returncode == 2, (args[:3], proc.stderr)
            assert proc.stderr.startswith(f"error: {expected}"), (args[:3], proc.stderr)
            assert proc.stderr.count("\n") == 1, proc.stderr


ENV_TABLE = [
    ("HINDSIGHT_TOKEN_BUDGET", "token_budget", "0", BUDGET),
    ("HINDSIGHT_TOKEN_BUDGET", "token_budget", "lots", BUDGET),
    ("HINDSIGHT_MAX_RETRIEVE_COUNT", "top_k", "0", TOP_K),
]
"""Settings from the environment are checked by the same rules, named by their variable."""


def test_settings_get_the_same_answers(tmp_path: Path) -> None:
    for variable, setting, value, expected in ENV_TABLE:
        line = f"invalid configuration: {variable}: {expected}, got {value!r}"
        proc = run_cli(
            "recall", "retry", "--tenant", "t", data_dir=tmp_path / "d", **{variable: value}
        )
        assert (proc.returncode, proc.stderr) == (2, f"error: {line}\n")
        with pytest.raises(UsageError) as err:
            load_config(**{setting: value})
        assert str(err.value) == f"invalid configuration: {setting}: {expected}, got {value!r}"


_ASKED = [{"role": "user", "content": "refund order A1"}]
_SAID_HI = {"event_type": "user_message", "content": "hi"}
LONG_TOOL = "t" * (MAX_NAME_CHARS + 1)
_LONG_CALL = {"event_type": "tool_call", "tool_name": LONG_TOOL}
TOOL_NAME = f"tool_name must be a tool name of 1..{MAX_NAME_CHARS} characters, got 'ttt"


def _called(name: str) -> dict[str, Any]:
    """An assistant message calling the tool ``name``."""
    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


# (what is sent, the record, the one line that refuses it)
STORE_TABLE: list[tuple[str, Any, str]] = [
    ("openai agreeing", {"messages": _ASKED, "outcome": "failure", "reward": 0}, OK),
    ("events", [{"trajectory_id": "r", **_SAID_HI}], OK),
    ("openai", {"messages": [*_ASKED, _called(LONG_TOOL)]}, TOOL_NAME),
    ("openai", {"messages": [*_ASKED, _called(LONG_TOOL[:MAX_NAME_CHARS])]}, OK),
    ("trajectory", {"events": [{"event_type": "tool_call", "tool_name": LONG_TOOL}]}, TOOL_NAME),
    (
        "events",
        [{"trajectory_id": "r", "event_type": "tool_call", "tool_name": LONG_TOOL}],
        TOOL_NAME,
    ),
]
"""A run is refused with the same words whichever interface stores it: ``store_episode`` in
Python (the record parsed as the service parses it), ``POST /v1/episodes`` and MCP
``store_episode``; nothing of it is stored."""


def _store_python(mem: Memory, record: Any) -> str:
    from hindsight.capture.ingest.records import trajectories_from_record

    try:
        for traj in trajectories_from_record(record, tenant_id="t", where="trajectory"):
            mem.store_episode(traj)
    except UsageError as err:
        return str(err)
    return OK


_WHERE = re.compile(
    r"^((request body trajectory|trajectory|record)( event \d+)?|invalid trajectory"
    r"|(messages|events)\[\d+\]): "
)


def _unwrap(message: str) -> str:
    """The refusal without where it was found (a record, a message or event of it)."""
    while (where := _WHERE.match(message)) is not None:
        message = message[where.end() :]
    return message


def test_a_run_is_refused_with_the_same_words_in_python_http_and_mcp(
    interfaces: tuple[Memory, httpx.Client, str, str],
) -> None:
    mem, client, url, key = interfaces

    async def mcp_answers() -> list[str]:
        headers = {"Authorization": f"Bearer {key}"}
        answers = []
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as session,
        ):
            for _, record, _ in STORE_TABLE:
                result = await session.call_tool("store_episode", {"trajectory": record})
                error = (result.structured_content or {}).get("error") or {}
                assert not result.is_error or error.get("field") == "trajectory", error
                answers.append(str(error["message"]) if result.is_error else OK)
        return answers

    before = len(mem.list_trajectories(tenant_id="t"))
    for (what, record, expected), mcp in zip(STORE_TABLE, anyio.run(mcp_answers), strict=True):
        r = client.post("/v1/episodes", json={"trajectory": record})
        http = OK
        if r.status_code >= 300:
            assert (r.status_code, r.json()["error"]["field"]) == (422, "trajectory"), r.text
            http = r.json()["error"]["message"]
        answers = {"python": _store_python(mem, record), "http": http, "mcp": mcp}
        for where, answer in answers.items():
            assert "\n" not in answer
            if expected == OK:
                assert answer == OK, (what, where, answer)
            else:
                assert _unwrap(answer).startswith(expected), (
                    what,
                    where,
                    answer,
                )
    stored = len(mem.list_trajectories(tenant_id="t")) - before
    assert stored == 3  # the ones refused by none (the same record thrice: stored once)
