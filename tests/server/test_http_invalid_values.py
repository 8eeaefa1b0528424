"""The invalid-value policy over HTTP, on SQLite and PostgreSQL
(docs/concepts.md#stored-exactly-invalid-text-and-numbers): the same input gets the same answer on
both backends, never a 5xx; text with lone surrogates or NUL is stored with U+FFFD and the
replacement is reported in a ``Warning`` header; names holding them and NaN/infinity in numbers are
refused with one line naming the field (docs/http.md#invalid-values)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hindsight.service._keys import KeyRing, create_key
from hindsight.service.http import create_app
from tests.helpers import make_memory
from tests.server.mcp_support import serving

# raw JSON bodies: the escapes reach the server as sent (a lone surrogate cannot be encoded
# by httpx's json=)
CASES: list[tuple[str, str, str | None, int, str | None]] = [
    # (method, path, body, status, what the answer or header must contain)
    (
        "POST",
        "/v1/experiences",
        '{"content": "Retry \\ud800 once \\u0000", "tags": ["a\\u0000"],'
        ' "metadata": {"x": NaN, "k\\u0000": Infinity, "ok": "x\\u00b2"}}',
        201,
        "content (2)",
    ),
    ("POST", "/v1/experiences", '{"content": "ok", "namespace": "a\\u0000b"}', 422, "namespace"),
    ("POST", "/v1/experiences", '{"content": "ok", "task_type": "\\udc00"}', 422, "task_type"),
    ("POST", "/v1/experiences", '{"content": "ok", "confidence": NaN}', 422, "confidence"),
    ("POST", "/v1/experiences", '{"content": "ok", "importance": -Infinity}', 422, "importance"),
    ("POST", "/v1/recall", '{"query": "retry \\ud800 \\u0000", "tags": ["\\u0000"]}', 200, "query"),
    (
        "POST",
        "/v1/episodes",
        '{"trajectory": {"task": "t \\ud800", "messages": '
        '[{"role": "user", "content": "hi \\u0000 \\udc00"}]}}',
        201,
        "trajectory.messages[0].content (2)",
    ),
    (
        "POST",
        "/v1/episodes",
        '{"trajectory": {"task": "t", "namespace": "x\\u0000", "messages": '
        '[{"role": "user", "content": "hi"}]}}',
        422,
        "trajectory.namespace",
    ),
    ("GET", "/v1/experiences?namespace=a%00", None, 400, "namespace"),
    ("GET", "/v1/trajectories?task_type=a%00", None, 400, "task_type"),
    ("GET", "/v1/experiences?tag=a%00", None, 200, None),
]


@pytest.fixture
def http(tmp_path: Path, database_url: str) -> Iterator[httpx.Client]:
    keys = tmp_path / "keys"
    key = create_key(keys, "t")[0]
    mem = make_memory(tmp_path / "data", database_url)
    try:
        app = create_app(mem.aio, keyring=KeyRing.from_file(keys))
        with serving(app) as url:
            headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
                yield client
    finally:
        mem.close()


def test_invalid_values_get_one_answer_on_both_backends(http: httpx.Client) -> None:
    for method, path, body, status, must in CASES:
        r = http.request(method, path, content=body)
        assert r.status_code == status, (path, body, r.text)
        if status >= 400:
            error: dict[str, Any] = r.json()["error"]
            assert "\n" not in error["message"] and must is not None
            assert must in error["message"] or must == error["field"], error
            assert "127.0.0.1" not in error["message"] and "postgresql" not in error["message"]
        elif must is not None:
            warning = r.headers["warning"]
            assert warning.startswith('299 hindsight "replaced ') and must in warning
    [exp] = [
        e for e in http.get("/v1/experiences").json()["items"] if e["content"].startswith("Retry")
    ]
    assert exp["content"] == "Retry \ufffd once \ufffd"
    assert exp["tags"] == ["a\ufffd"]
    assert exp["metadata"]["x"] is None and exp["metadata"]["k\ufffd"] is None
    assert exp["metadata"]["ok"] == "x²"  # valid text stored exactly (no NFKC)
    runs = http.get("/v1/trajectories").json()["items"]
    assert len(runs) == 1  # the good run stored, the refused one not
    run = http.get(f"/v1/trajectories/{runs[0]['id']}").json()
    assert run["task"] == "t \ufffd"
    assert run["events"][0]["content"] == "hi \ufffd \ufffd"
    # a clean request carries no Warning header
    assert "warning" not in http.post("/v1/recall", json={"query": "retry"}).headers


def test_mcp_over_http_replaces_lone_surrogates_and_reports_them(http: httpx.Client) -> None:
    """The SDK's strict JSON parser refuses a whole request for one ``\\ud800`` escape; the
    service applies the policy first, so MCP answers as HTTP does."""
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
        '"recall_similar", "arguments": {"query": "retry \\ud800 once \\u0000"}}}'
    )
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    reply = http.post("/mcp", content=body, headers=headers)
    assert reply.status_code == 200, reply.text
    result = reply.json()["result"]
    assert not result.get("isError"), result
    assert result["structuredContent"]["query"] == "retry \ufffd once \ufffd"
    [warning] = result["_meta"]["io.hindsight/warnings"]
    assert warning.startswith("replaced 2 invalid value(s)") and "query (2)" in warning
    assert reply.headers["warning"].startswith('299 hindsight "replaced 2')
    # a name holding one is refused, naming it
    body = body.replace('"query"', '"namespace": "a\\ud800", "query"')
    result = http.post("/mcp", content=body, headers=headers).json()
    assert "result" in result or "error" in result
    text = json.dumps(result)
    assert "namespace" in text and "Traceback" not in text


def _mcp_store_episode(http: httpx.Client, trajectory: Any) -> dict[str, Any]:
    """The result of MCP ``store_episode`` over HTTP (asserted not an error)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "store_episode", "arguments": {"trajectory": trajectory}},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    result: dict[str, Any] = http.post("/mcp", json=body, headers=headers).json()["result"]
    assert not result.get("isError"), result
    return result


def test_tool_arguments_that_are_not_json_are_kept_exactly_and_reported(
    http: httpx.Client,
) -> None:
    """Kept as text in ``tool_args._raw`` (and the call's content), never dropped; one line
    naming the message and the tool in the ``Warning`` header and MCP's ``_meta``."""
    broken = '{"order": A1, '
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": broken}}
    messages = [
        {"role": "user", "content": "where is A1?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    said = "messages[1]: the arguments of tool 'lookup' are not valid JSON"
    r = http.post("/v1/episodes", json={"trajectory": {"messages": messages}})
    assert r.status_code == 201, r.text
    assert said in r.headers["warning"] and "kept as text in tool_args._raw" in r.headers["warning"]
    tid = r.json()["episodes"][0]["trajectory_id"]
    stored = http.get(f"/v1/trajectories/{tid}").json()["events"][1]
    assert (stored["tool_args"], stored["content"]) == ({"_raw": broken}, broken)
    result = _mcp_store_episode(http, messages)
    [warning] = result["_meta"]["io.hindsight/warnings"]
    assert warning.startswith(f"record: {said}"), warning
    # arguments that are JSON: nothing to say
    call["function"]["arguments"] = '{"order": "A1"}'
    assert "warning" not in http.post("/v1/episodes", json={"trajectory": messages}).headers


def test_a_warning_about_a_chinese_tool_name_keeps_the_name_as_escapes(
    http: httpx.Client,
) -> None:
    # a header is ASCII: the name is written \uXXXX, not replaced by "?"
    call = {"id": "c1", "type": "function", "function": {"name": "查询", "arguments": "{订单"}}
    messages = [
        {"role": "user", "content": "订单在哪里?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    r = http.post("/v1/episodes", json={"trajectory": {"messages": messages}})
    assert r.status_code == 201, r.text
    warning = r.headers["warning"]
    assert "the arguments of tool '\\u67e5\\u8be2' are not valid JSON" in warning, warning
    assert "?" not in warning


def test_expected_arguments_that_are_not_json_are_kept_exactly_and_reported(
    http: httpx.Client,
) -> None:
    """An expected action's arguments kept as text in ``args._raw``, one line naming the
    field and the tool, as for a tool call's (the ``Warning`` header, MCP's ``_meta``)."""
    broken = '{"order": A1'
    record = {
        "messages": [{"role": "user", "content": "cancel A1"}],
        "evidence": {"expected_actions": [{"name": "cancel", "arguments": broken}]},
    }
    said = (
        "evidence.expected_actions[0]: the arguments of expected action 'cancel' are "
        "not valid JSON (Expecting value at character 10); kept as text in args._raw"
    )
    r = http.post("/v1/episodes", json={"trajectory": record})
    assert r.status_code == 201, r.text
    assert r.headers["warning"] == f'299 hindsight "request body trajectory: {said}"'
    tid = r.json()["episodes"][0]["trajectory_id"]
    stored = http.get(f"/v1/trajectories/{tid}").json()["evidence"]["expected_actions"]
    assert stored == [{"tool": "cancel", "args": {"_raw": broken}}]
    result = _mcp_store_episode(http, record)
    assert result["_meta"]["io.hindsight/warnings"] == [f"record: {said}"]


@pytest.mark.parametrize(
    ("record", "line"),
    [
        ({"messages": [{"role": "user", "content": "refund A1"}], "outcome": "failure",
          "reward": 1.0}, 'outcome "failure" disagrees with reward 1.0'),
        ({"task_id": 3, "traj": [{"role": "user", "content": "refund A1"}], "reward": 0,
          "outcome": "passed"}, 'outcome "success" disagrees with reward 0.0'),
        ({"events": [{"event_type": "user_message", "content": "hi"}], "outcome": "failure",
          "reward": 2}, 'outcome "failure" disagrees with reward 2.0'),
    ],
)  # fmt: skip
def test_an_outcome_its_reward_disagrees_with_is_kept_and_said_the_same_way(
    http: httpx.Client,
    record: dict,
    line: str,  # type: ignore[type-arg]
) -> None:
    """Stored with the outcome it gives (a reward may be on another scale), and the one line
    said in the ``Warning`` header, MCP's ``_meta`` and to Python alike."""
    from hindsight._text import collecting
    from hindsight.capture.ingest.records import trajectories_from_record

    tail = (
        " (a reward of 1 or more reads as a success, 0 or less as a failure); the outcome "
        "given is kept"
    )
    r = http.post("/v1/episodes", json={"trajectory": record})
    assert r.status_code == 201, r.text
    quoted = f"request body trajectory: {line}{tail}".replace('"', '\\"')  # a quoted-string
    assert r.headers["warning"] == f'299 hindsight "{quoted}"'
    tid = r.json()["episodes"][0]["trajectory_id"]
    stored = http.get(f"/v1/trajectories/{tid}").json()
    assert stored["outcome"] == line.split('"')[1]
    result = _mcp_store_episode(http, record)
    assert result["_meta"]["io.hindsight/warnings"] == [f"record: {line}{tail}"]
    with collecting() as report:
        trajectories_from_record(record, tenant_id="t", where="record")
    assert report.notes == [f"record: {line}{tail}"]


def test_a_refused_request_carries_no_warning(http: httpx.Client) -> None:
    # the arguments would have been kept as text, but the request is refused (an outcome no
    # word names): nothing was kept, so no header says it was
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{A1"}}
    messages = [{"role": "user", "content": "where?"},
                {"role": "assistant", "content": None, "tool_calls": [call]}]  # fmt: skip
    r = http.post("/v1/episodes", json={"trajectory": {"messages": messages, "outcome": "won"}})
    assert r.status_code == 422 and "warning" not in r.headers, (r.status_code, r.headers)


@pytest.mark.parametrize("blank", ["   ", " ", "\t \t", "  \u3000 "])
def test_a_refused_value_is_quoted_as_sent(http: httpx.Client, blank: str) -> None:
    """The message is one line, and its spaces are the value's: Python's words exactly."""
    from hindsight._errors import UsageError
    from hindsight.testing import test_memory

    r = http.post("/v1/experiences", json={"content": blank})
    assert r.status_code == 422, r.text
    with test_memory() as mem, pytest.raises(UsageError) as err:
        mem.add_experience(blank, tenant_id="t")
    assert r.json()["error"]["message"] == f"body field content: {err.value}"


def test_an_error_message_is_one_line_with_its_inner_spaces_kept() -> None:
    from hindsight.service._wire import error_body

    message = error_body("x", "first line\r\n   second  line\n\nthird\u2028fourth  ")["error"]
    assert message["message"] == "first line second  line third fourth"
