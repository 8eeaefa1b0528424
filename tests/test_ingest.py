"""Ingest parsers: tau-bench, OpenAI message logs, our events logs (docs/cli.md#hindsight-ingest),
empty and odd content included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _tau_bench import tau_file, tau_trajectories

from hindsight._errors import InvalidTrajectoryError, TenantRequiredError
from hindsight._status import classify_tool_result
from hindsight._text import InvalidTextWarning, collecting
from hindsight.capture.ingest import count_records, detect_format, iter_trajectories
from hindsight.models import EventStatus, EventType, Outcome, Provenance, Trajectory

__all__ = ["tau_file", "tau_trajectories"]  # fixtures imported for pytest


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def write_jsonl(path: Path, values: list[Any]) -> Path:
    lines = [json.dumps(v, ensure_ascii=False) for v in values]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def parse(path: Path, **kw: Any) -> list[Trajectory]:
    kw.setdefault("tenant_id", "t1")
    return list(iter_trajectories(path, **kw))


# --- tau-bench -----------------------------------------------------------------------------------


def test_tau_bench_parses_all_200_runs(tau_file: Path, tau_trajectories: list[Trajectory]) -> None:
    assert detect_format(tau_file) == "tau-bench"
    assert count_records(tau_file) == 200
    trajs = tau_trajectories
    assert len(trajs) == 200
    results = [e for t in trajs for e in t.events if e.event_type is EventType.TOOL_RESULT]
    failures = [e for e in results if e.status is EventStatus.FAILURE]
    assert len(results) == 1164
    assert len(failures) == 73
    assert all(e.content.startswith("Error") for e in failures)
    assert all(e.tool_name for e in results)
    assert sum(t.outcome is Outcome.SUCCESS for t in trajs) == 84
    assert sum(t.outcome is Outcome.FAILURE for t in trajs) == 116


def test_tau_bench_trajectory_fields(tau_trajectories: list[Trajectory]) -> None:
    first = tau_trajectories[0]
    assert first.task == "Hi! I'm looking to book a flight from New York to Seattle on May 20th."
    assert first.task_type == "tau-bench"
    assert first.tags == ["tau-bench"]
    assert first.source is Provenance.USER
    assert first.reward == 0.0
    assert first.metadata["task_id"] == 0 and first.metadata["trial"] == 0
    assert "info" not in first.metadata
    assert len(first.metadata["system_prompt_head"]) == 200
    assert first.metadata["system_prompt_head"].startswith("# Airline Agent Policy")
    # tool calls carry parsed arguments; results point at their call
    calls = [e for e in first.events if e.event_type is EventType.TOOL_CALL]
    assert calls[0].tool_name == "get_user_details"
    assert calls[0].tool_args == {"user_id": "mia_li_3668"}
    result = next(e for e in first.events if e.event_type is EventType.TOOL_RESULT)
    assert result.parent_id == calls[0].event_id
    assert result.tool_call_id == calls[0].tool_call_id
    # timestamps strictly increase on the synthetic clock
    times = [e.timestamp for e in first.events]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert first.started_at == times[0] and first.ended_at == times[-1]
    assert first.events[-1].event_type is EventType.USER_MESSAGE  # "###STOP###"
    finals = [e for e in first.events if e.event_type is EventType.FINAL_ANSWER]
    assert len(finals) == 1


def test_tau_bench_ids_are_deterministic_and_scoped(
    tau_file: Path, tau_trajectories: list[Trajectory]
) -> None:
    again = parse(tau_file)
    assert [t.id for t in again] == [t.id for t in tau_trajectories]
    assert again[5] == tau_trajectories[5]
    assert len({t.id for t in again}) == 200
    event_ids = [e.event_id for t in again for e in t.events]
    assert len(set(event_ids)) == len(event_ids)
    other_tenant = parse(tau_file, tenant_id="t2")
    other_ns = parse(tau_file, namespace="shared")
    assert not {t.id for t in other_tenant} & {t.id for t in again}
    assert not {t.id for t in other_ns} & {t.id for t in again}
    assert parse(tau_file, task_type="airline")[0].task_type == "airline"


# --- openai --------------------------------------------------------------------------------------


def test_openai_jsonl_records_outcomes_and_task_type(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    path = write_jsonl(
        tmp_path / "runs.jsonl",
        [
            {"messages": msgs, "reward": 1.0, "task_type": "greet", "task_id": 7, "id": "r1"},
            {"messages": msgs, "reward": 0},
            {"messages": msgs, "reward": 0.5},
            {"messages": msgs, "reward": 0.5, "outcome": "failed"},  # the word wins over partial
            {"messages": msgs},
        ],
    )
    assert detect_format(path) == "openai"
    assert count_records(path) == 5
    trajs = parse(path)
    assert [t.outcome for t in trajs] == [
        Outcome.SUCCESS,
        Outcome.FAILURE,
        Outcome.PARTIAL,
        Outcome.FAILURE,
        Outcome.UNKNOWN,
    ]
    assert trajs[0].task_type == "greet" and trajs[1].task_type is None
    assert trajs[0].metadata["task_id"] == 7 and trajs[0].metadata["source_id"] == "r1"
    assert parse(path, task_type="override")[0].task_type == "override"
    assert trajs[0].events[-1].event_type is EventType.FINAL_ANSWER
    assert trajs[0].task == "hello"


def test_openai_message_details(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "S" * 5000},
        {"role": "user", "content": [{"type": "text", "text": "book it"}]},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [call("c1", "lookup", '{"q": "x"}'), call("c2", "book", "{not json")],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "Error: card declined"},
        {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": '{"ok": true}'},
        {"role": "assistant", "content": "Trying again."},
        {"role": "assistant", "content": None, "function_call": {"name": "book", "arguments": ""}},
        {"role": "function", "name": "book", "content": "Request timed out"},
        {"role": "assistant", "content": "Sorry, booking is down."},
    ]
    (traj,) = parse(write_json(tmp_path / "one.json", messages))
    kinds = [e.event_type for e in traj.events]
    assert kinds == [
        EventType.USER_MESSAGE,
        EventType.MODEL_THOUGHT,
        EventType.TOOL_CALL,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.TOOL_RESULT,
        EventType.MODEL_CALL,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.FINAL_ANSWER,
    ]
    ev = traj.events
    assert ev[3].tool_args == {"_raw": "{not json"}
    assert ev[4].tool_name == "book" and ev[4].status is EventStatus.FAILURE  # name looked up
    assert ev[4].parent_id == ev[3].event_id
    assert ev[5].status is EventStatus.SUCCESS
    assert ev[7].tool_args == {} and ev[7].tool_call_id is None
    assert ev[8].tool_name == "book" and ev[8].status is EventStatus.TIMEOUT
    assert ev[8].parent_id == ev[7].event_id
    assert traj.task == "book it"
    assert traj.metadata["system_prompt_head"] == "S" * 200
    assert len(traj.metadata["system_prompt_sha256"]) == 16


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{"order": A1}', "Expecting value at character 10"),
        ('{"order": "A1"', "Expecting ',' delimiter at character 14"),
        ("order=A1", "Expecting value at character 0"),
    ],
)
@pytest.mark.parametrize("fmt", ["openai", "tau-bench"])
def test_arguments_that_are_not_json_are_kept_exactly_and_reported(
    tmp_path: Path, fmt: str, arguments: str, why: str
) -> None:
    lookup = {
        "id": "c1",
        "type": "function",
        "function": {"name": "lookup", "arguments": arguments},
    }
    messages = [
        {"role": "user", "content": "where is A1?"},
        {"role": "assistant", "content": None, "tool_calls": [lookup]},
        {
            "role": "assistant",
            "tool_calls": [{**lookup, "function": {"name": "ok", "arguments": "{}"}}],
        },
    ]
    record = {"messages": messages} if fmt == "openai" else {"task_id": 1, "traj": messages}
    path = write_jsonl(tmp_path / "runs.jsonl", [record])
    with collecting() as report:
        (traj,) = parse(path, format=fmt)
    assert (traj.events[1].tool_args, traj.events[1].content) == ({"_raw": arguments}, arguments)
    assert report.notes == [
        f"{path}:1: messages[1]: the arguments of tool 'lookup' are not valid JSON ({why}); "
        "kept as text in tool_args._raw"
    ]
    assert report.total == 0  # nothing was replaced
    with pytest.warns(InvalidTextWarning, match=r"messages\[1\]: the arguments of tool 'lookup'"):
        parse(path, format=fmt)


@pytest.mark.parametrize("arguments", ['{"order": "A1"}', "", None, {"order": "A1"}])
def test_arguments_that_are_json_are_parsed_without_a_word(tmp_path: Path, arguments: Any) -> None:
    lookup = {"id": "c1", "function": {"name": "lookup", "arguments": arguments}}
    path = write_jsonl(
        tmp_path / "runs.jsonl", [[{"role": "assistant", "content": None, "tool_calls": [lookup]}]]
    )
    with collecting() as report:
        (traj,) = parse(path)
    assert not report and "_raw" not in (traj.events[0].tool_args or {})


@pytest.mark.parametrize(
    ("arguments", "value", "content", "kind"),
    [
        ("[1, 2]", [1, 2], "[1, 2]", "an array"),
        ("42", 42, "42", "a number"),
        ('"A1"', "A1", '"A1"', "a string"),
        ("true", True, "true", "a boolean"),
        ([1, 2], [1, 2], "[1,2]", "an array"),
        (0, 0, "0", "a number"),
        (False, False, "false", "a boolean"),
    ],
)
def test_arguments_that_are_not_an_object_are_kept_as_they_are_and_reported(
    tmp_path: Path, arguments: Any, value: Any, content: str, kind: str
) -> None:
    lookup = {"id": "c1", "function": {"name": "lookup", "arguments": arguments}}
    path = write_jsonl(
        tmp_path / "runs.jsonl", [[{"role": "assistant", "content": None, "tool_calls": [lookup]}]]
    )
    with collecting() as report:
        (traj,) = parse(path)
    assert (traj.events[0].tool_args, traj.events[0].content) == ({"_value": value}, content)
    assert report.notes == [
        f"{path}:1: messages[0]: the arguments of tool 'lookup' are {kind}, not an object; "
        "kept in tool_args._value"
    ]
    assert report.total == 0
    with pytest.warns(InvalidTextWarning, match=r"messages\[0\]: the arguments of tool 'lookup'"):
        parse(path)


def _with_expected(fmt: str, action: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A record of ``fmt`` whose expected actions are ``[action]``, and where they are."""
    messages = [{"role": "user", "content": "cancel A1"}]
    if fmt == "tau-bench":
        record = {"task_id": 1, "traj": messages, "info": {"task": {"actions": [action]}}}
        return record, "info actions[0]"
    evidence = {"expected_actions": [action]}
    if fmt == "openai":
        return {"messages": messages, "evidence": evidence}, "evidence.expected_actions[0]"
    event = {"trajectory_id": "r1", "event_type": "user_message", "content": "cancel A1"}
    return {**event, "evidence": evidence}, "evidence.expected_actions[0]"


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{"order": A1}', "Expecting value at character 10"),
        ('{"order": "A1"', "Expecting ',' delimiter at character 14"),
        ("order=A1", "Expecting value at character 0"),
    ],
)
@pytest.mark.parametrize(
    ("fmt", "action_keys"),
    [
        ("openai", ("name", "arguments")),
        ("openai", ("tool", "args")),
        ("tau-bench", ("name", "kwargs")),
        ("events", ("name", "arguments")),
    ],
)
def test_expected_arguments_that_are_not_json_are_kept_exactly_and_reported(
    tmp_path: Path, fmt: str, action_keys: tuple[str, str], arguments: str, why: str
) -> None:
    tool_key, args_key = action_keys
    record, where = _with_expected(fmt, {tool_key: "cancel", args_key: arguments})
    path = write_jsonl(tmp_path / "runs.jsonl", [record])
    with collecting() as report:
        (traj,) = parse(path, format=fmt)
    assert traj.evidence is not None
    [action] = traj.evidence.expected_actions
    assert (action.tool, action.args) == ("cancel", {"_raw": arguments})
    assert report.notes == [
        f"{path}:1: {where}: the arguments of expected action 'cancel' are not valid JSON "
        f"({why}); kept as text in args._raw"
    ]
    assert report.total == 0
    with pytest.warns(InvalidTextWarning, match="the arguments of expected action 'cancel'"):
        parse(path, format=fmt)


@pytest.mark.parametrize("arguments", ['{"order": "A1"}', "", " ", {"order": "A1"}, None])
def test_expected_arguments_that_are_json_are_parsed_without_a_word(
    tmp_path: Path, arguments: Any
) -> None:
    record, _ = _with_expected("openai", {"name": "cancel", "arguments": arguments})
    path = write_jsonl(tmp_path / "runs.jsonl", [record])
    with collecting() as report:
        (traj,) = parse(path)
    assert not report and traj.evidence is not None
    assert traj.evidence.expected_actions[0].args == (
        {} if arguments in ("", " ", None) else {"order": "A1"}
    )


@pytest.mark.parametrize("arguments", ["[1, 2]", "42", [1, 2]])
def test_expected_arguments_that_are_not_an_object_are_the_records_error(
    tmp_path: Path, arguments: Any
) -> None:
    record, _ = _with_expected("openai", {"name": "cancel", "arguments": arguments})
    path = write_jsonl(tmp_path / "runs.jsonl", [record])
    with pytest.raises(
        InvalidTrajectoryError,
        match=r"expected_actions\[0\]: the arguments of expected action 'cancel' must be an object",
    ):
        parse(path)


def test_openai_json_array_of_message_lists(tmp_path: Path) -> None:
    runs = [[{"role": "user", "content": f"task {i}"}] for i in range(3)]
    path = write_json(tmp_path / "many.json", runs)
    assert count_records(path) == 3
    assert [t.task for t in parse(path)] == ["task 0", "task 1", "task 2"]


def test_record_timestamps_are_used(tmp_path: Path) -> None:
    record = {
        "messages": [
            {"role": "user", "content": "a", "timestamp": "2025-03-01T10:00:00Z"},
            {"role": "assistant", "content": "b", "timestamp": 1740823205},
        ]
    }
    (traj,) = parse(write_jsonl(tmp_path / "ts.jsonl", [record, record]))[:1]
    assert traj.events[0].timestamp.isoformat() == "2025-03-01T10:00:00+00:00"
    assert traj.events[1].timestamp.isoformat() == "2025-03-01T10:00:05+00:00"


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("Error: payment amount does not add up", EventStatus.FAILURE),
        ("ERROR - no such user", EventStatus.FAILURE),
        ("error: x", EventStatus.FAILURE),
        ("Traceback (most recent call last):\n  File ...\nKeyError: 'a'", EventStatus.FAILURE),
        ("ValueError: bad input", EventStatus.FAILURE),
        ("Request timed out after 30s", EventStatus.TIMEOUT),
        ("Error: upstream timeout", EventStatus.TIMEOUT),
        ('{"status": "ok", "errors": []}', EventStatus.SUCCESS),
        ("The order shipped. " + "x" * 300 + " the carrier had a timeout", EventStatus.SUCCESS),
        ("", EventStatus.SUCCESS),
        # Chinese / Japanese replies (the field saw these marked as successes)
        ("错误：订单不存在", EventStatus.FAILURE),
        ("【错误】支付金额不一致", EventStatus.FAILURE),
        ("失败: 用户未找到", EventStatus.FAILURE),
        ("錯誤：找不到使用者", EventStatus.FAILURE),
        ("调用异常：余额不足", EventStatus.SUCCESS),  # does not start with an error word
        ("异常：余额不足", EventStatus.FAILURE),
        ("エラー: 注文が見つかりません", EventStatus.FAILURE),
        ("请求超时", EventStatus.TIMEOUT),
        ("错误：请求超时（30 秒）", EventStatus.TIMEOUT),
        ("接口超時，請稍後再試", EventStatus.TIMEOUT),
        ("タイムアウトしました", EventStatus.TIMEOUT),
        ("订单已发货，" + "数据" * 200 + "物流曾超时", EventStatus.SUCCESS),
        ("订单已发货，没有错误", EventStatus.SUCCESS),
        ("订单未超时，已送达", EventStatus.SUCCESS),  # negated
        # a marker counts at the start only, not negated, not taken back
        ("Delivered on time; no timeout.", EventStatus.SUCCESS),
        ("Finished without a timeout", EventStatus.SUCCESS),
        ("Error-free delivery confirmed for S1", EventStatus.SUCCESS),
        ("error free run", EventStatus.SUCCESS),
        ("No errors found", EventStatus.SUCCESS),
        ("Errors in your shipping label were corrected automatically.", EventStatus.SUCCESS),
        ("The tool timed out yesterday but the shipment is now delivered", EventStatus.SUCCESS),
        ("The call timed out, however the retry went through", EventStatus.SUCCESS),
        ("Shipped 500 Items to the depot", EventStatus.SUCCESS),
        ("500 items shipped", EventStatus.SUCCESS),
        ('{"message": "Error rate is 0.1%"}', EventStatus.SUCCESS),
        ('{"error": null, "data": {"id": 1}}', EventStatus.SUCCESS),
        ('{"result": "Error: carrier down"}', EventStatus.SUCCESS),
        ("[1, 2]", EventStatus.SUCCESS),
        # genuine errors and timeouts, any wording
        ("HTTP 500 Internal Server Error", EventStatus.FAILURE),
        ("HTTP/1.1 503", EventStatus.FAILURE),
        ("404 Not Found", EventStatus.FAILURE),
        ("401: unauthorized", EventStatus.FAILURE),
        ("Error 401: unauthorized", EventStatus.FAILURE),
        ("HTTP 504 Gateway Timeout", EventStatus.TIMEOUT),
        ("Operation timed out", EventStatus.TIMEOUT),
        ("The request timed out.", EventStatus.TIMEOUT),
        ("Timeout", EventStatus.TIMEOUT),
        ("Timed out contacting the insurer, but it may answer later", EventStatus.TIMEOUT),
        ("Deadline exceeded", EventStatus.TIMEOUT),
        ("TimeoutError: carrier API", EventStatus.TIMEOUT),
        ('{"error": "address not found"}', EventStatus.FAILURE),
        ('{"errors": ["zip is required"]}', EventStatus.FAILURE),
        ('{"error": {"code": 504, "message": "upstream timed out"}}', EventStatus.TIMEOUT),
        ('{"status": "error", "message": "carrier down"}', EventStatus.FAILURE),
        ('{"status": "timeout"}', EventStatus.TIMEOUT),
        ('{"status": "ok", "error": "ignored"}', EventStatus.SUCCESS),
    ],
)
def test_tool_result_status(text: str, status: EventStatus) -> None:
    assert classify_tool_result(text) is status


@pytest.mark.parametrize(
    ("text", "status"),
    [
        # a record's status is its state: the read went through
        ('{"pipeline_id": "pl-1", "status": "failed", "failing_step": "lint"}', "success"),
        ('{"orderId": 77, "status": "failed", "total": 12.5}', "success"),
        ('{"id": "pay_1", "status": "error", "amount": 3}', "success"),
        ('{"payment": {"id": 1}, "transaction_id": "t9", "status": "timeout"}', "success"),
        # an envelope about the call, even with the ids of the request itself
        ('{"status": "failed", "request_id": "r-1", "message": "bad input"}', "failure"),
        ('{"status": "timeout", "trace_id": "abc"}', "timeout"),
        ('{"status": "error", "error_id": "E-7", "detail": "quota"}', "failure"),
        # a record whose error field holds something still reports an error
        ('{"id": 5, "status": "error", "error": "write conflict"}', "failure"),
        # an envelope naming what it was about, with its message
        ('{"order_id": "W1", "status": "error", "message": "cannot be cancelled"}', "failure"),
        ('{"id": "req_1", "status": "error", "detail": "Internal server error"}', "failure"),
        # keys that end in "id" without being ids
        ('{"paid": false, "status": "failed"}', "failure"),
        ('{"status": "error", "valid": false}', "failure"),
        ('{"android": "14", "uuid": "u-1", "status": "failed"}', "failure"),
    ],
)
def test_a_records_status_is_its_state_not_the_calls(text: str, status: str) -> None:
    assert classify_tool_result(text) is EventStatus(status)


def test_declared_status_wins() -> None:
    assert classify_tool_result("all fine", {"is_error": True}) is EventStatus.FAILURE
    assert classify_tool_result("Error: x", {"status": "success"}) is EventStatus.SUCCESS


# A short reply whose first clause states that the call was refused or could not be done is a
# failure (docs/concepts.md#trajectories-and-events). Each of these was a success before the
# rule; the invented ones are from shells, HTTP APIs, payments and file systems.
STATED_FAILURES = [
    # unavailable, unreachable, expired, locked, not eligible, rejected, did not complete
    "Service Unavailable",
    "Host unreachable",
    "Endpoint not reachable from this network",
    "Card expired",
    "Account locked",
    "Member not eligible on date of service",
    "DUR reject: drug-drug interaction",
    "The restart did not complete",
    "The payment didn't go through.",
    "Segmentation fault (core dumped)",
    "Permission denied",
    "Access denied: token expired",
    "Quota exceeded for project atlas",
    "Rate limit exceeded, try again in 30s",
    "Unauthorized",
    "403 forbidden",
    "Not allowed: the account is locked",
    "The payment was declined.",
    "Could not connect to the database",
    "Unable to find the file",
    "Cannot open /etc/x: no such file or directory",
    "No such file or directory",
    "权限不足",
    "拒绝访问",
    # shell and operating system
    "Permission denied (publickey).",
    "Connection refused",
    "Operation not permitted",
    "Too many open files",
    "Could not resolve host: github.com",
    "Can't open config.yaml for writing",
    # HTTP APIs
    "Forbidden",
    "Request failed with status code 403",
    "Too many requests, retry after 60 seconds",
    "You exceeded your current quota, please check your plan and billing details.",
    "Max retries exceeded with url: /v1/orders",
    "Not authenticated",
    "The caller does not have permission",
    "You are not allowed to refund this order",
    "Request rejected by the upstream service",
    "Method Not Allowed",
    # payments
    "Card declined by issuer",
    "Your card was declined again.",
    "Insufficient funds",
    "Transaction rejected: CVV mismatch",
    "Payment failed: card expired",
    # file systems and lookups of a named thing
    "File not found: report.pdf",
    "Order 9907 was not found",
    "Directory /data/in does not exist",
    "Unable to write to /var/log/app.log: read-only file system",
    "Couldn't find a user named bob",
    # other languages
    "支付失败",
    "用户名不能为空",
    "订单不存在",
    "请求过于频繁，请稍后再试",
    "余额不足，无法扣款",
    "アクセスが拒否されました",
    "ファイルが見つかりません",
    "ログインできません",
]


@pytest.mark.parametrize("text", STATED_FAILURES)
def test_a_short_reply_that_states_a_failure_is_one(text: str) -> None:
    assert classify_tool_result(text) is EventStatus.FAILURE


@pytest.mark.parametrize(
    ("text", "status"),
    [
        # negated before the words, or taken back after them
        ("No access denied errors in the last hour", EventStatus.SUCCESS),
        ("No hosts unreachable", EventStatus.SUCCESS),
        ("Items that expired: 3", EventStatus.SUCCESS),
        ("Unavailable dates: none", EventStatus.SUCCESS),
        ("Invalid entries: 0", EventStatus.SUCCESS),
        ("Locked seats are shown in grey", EventStatus.SUCCESS),
        ("Account unlocked", EventStatus.SUCCESS),
        ("The job did complete", EventStatus.SUCCESS),
        ("Validity: not expired", EventStatus.SUCCESS),
        ("The card was not declined", EventStatus.SUCCESS),
        ("Rate limit not exceeded", EventStatus.SUCCESS),
        ("0 requests failed", EventStatus.SUCCESS),
        ("The payment was declined at first but went through", EventStatus.SUCCESS),
        ("Could not connect at first, however the retry succeeded", EventStatus.SUCCESS),
        ("用户未被拒绝，订单已创建", EventStatus.SUCCESS),
        # not in the first clause, or a long reply: data
        ("Payment approved; no charge declined", EventStatus.SUCCESS),
        (
            "Shipment S1 delivered. " + "x" * 300 + " access denied for user bob",
            EventStatus.SUCCESS,
        ),
        (
            "Permission denied for 3 of 40 users (report follows) " + "u,ok;" * 40,
            EventStatus.SUCCESS,
        ),
        ("Order shipped, cannot be cancelled any more", EventStatus.SUCCESS),
        # the words describe data, or the agent's own action, not the call
        ("Access granted", EventStatus.SUCCESS),
        ("3 declined transactions this week", EventStatus.SUCCESS),
        ("Declined the invitation from Bob", EventStatus.SUCCESS),
        ("Items that cannot be returned: gift cards, perishables", EventStatus.SUCCESS),
        ("Orders which were declined: 3", EventStatus.SUCCESS),
        ("Monthly sales target exceeded", EventStatus.SUCCESS),
        ("Sales exceeded the forecast by 12%", EventStatus.SUCCESS),
        ("今日失败的订单：3", EventStatus.SUCCESS),
        # a search that found nothing is an answer; a thing the call names that is missing is not
        ("Found 3 orders", EventStatus.SUCCESS),
        ("No orders found", EventStatus.SUCCESS),
        ("Found 0 orders matching 'bob'", EventStatus.SUCCESS),
        ("Nothing found", EventStatus.SUCCESS),
        ("Order 9907 not found", EventStatus.FAILURE),
        # a JSON reply is read by its fields only
        ('{"message": "Access denied"}', EventStatus.SUCCESS),
        ('["Access denied", "Access granted"]', EventStatus.SUCCESS),
        # a timeout stays a timeout
        ("Could not connect: connection timed out", EventStatus.TIMEOUT),
        ("Unable to reach the carrier; the request timed out", EventStatus.TIMEOUT),
        ("Request to api.example.com timed out", EventStatus.TIMEOUT),
        ("0 timeouts in the last hour", EventStatus.SUCCESS),
        ("Requests that timed out: none", EventStatus.SUCCESS),
    ],
)
def test_failure_words_count_only_as_a_statement_of_the_first_clause(
    text: str, status: EventStatus
) -> None:
    assert classify_tool_result(text) is status


# --- empty and odd content ------------------------------------------------------------------------


ODD_RECORDS: dict[str, Any] = {
    "empty list": [],
    "empty user": [{"role": "user", "content": ""}],
    "whitespace user": [{"role": "user", "content": "  \n\t "}],
    "none content with tool calls": [
        {"role": "user", "content": "find my order"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "order_query", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
    ],
    "parts with empty text": [
        {"role": "user", "content": [{"type": "text", "text": ""}, {"type": "text", "text": " "}]},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
    ],
    "null messages": {"messages": None},
}


@pytest.mark.parametrize("name", list(ODD_RECORDS))
def test_inputs_parse(tmp_path: Path, name: str) -> None:
    sentinel = {"messages": [{"role": "user", "content": "sentinel"}]}
    for path in (
        write_jsonl(tmp_path / "odd.jsonl", [ODD_RECORDS[name]]),
        write_jsonl(tmp_path / "odd.log", [ODD_RECORDS[name], sentinel]),
    ):
        traj, *rest = parse(path, format="openai")
        assert [t.task for t in rest] == (["sentinel"] if path.suffix == ".log" else [])
    assert parse(write_json(tmp_path / "odd.json", [ODD_RECORDS[name]]), format="openai")[0] == traj
    if name == "none content with tool calls":
        call_event = traj.events[1]
        assert call_event.event_type is EventType.TOOL_CALL
        assert call_event.tool_name == "order_query" and call_event.tool_args == {}
        assert traj.events[2].tool_name == "order_query"
    else:
        assert traj.is_empty()


# --- events format -------------------------------------------------------------------------------


def test_events_lines_grouped_by_trajectory(tmp_path: Path) -> None:
    lines = [
        {"trajectory_id": "A", "event_type": "user_message", "content": "first", "event_id": "e1"},
        {"trajectory_id": "B", "event_type": "user_message", "content": "second"},
        {
            "trajectory_id": "A",
            "event_type": "tool_result",
            "tool_name": "order_query",
            "status": "timeout",
            "parent_id": "e1",
            "outcome": "failure",
        },
    ]
    path = write_jsonl(tmp_path / "events.jsonl", lines)
    assert detect_format(path) == "events"
    assert count_records(path) == 2
    a, b = parse(path, namespace="ns1")
    assert a.task == "first" and b.task == "second"
    assert a.outcome is Outcome.FAILURE and b.outcome is Outcome.UNKNOWN
    assert a.metadata["source_trajectory_id"] == "A"
    assert [e.trajectory_id for e in a.events] == [a.id, a.id]
    assert a.events[1].status is EventStatus.TIMEOUT
    assert a.events[1].parent_id == a.events[0].event_id
    assert a.events[0].metadata["source_event_id"] == "e1"
    assert [t.id for t in parse(path, namespace="ns1")] == [a.id, b.id]
    assert a.id not in {t.id for t in parse(path, tenant_id="t2", namespace="ns1")}


def test_events_whole_trajectory_lines(tmp_path: Path) -> None:
    original = Trajectory(
        tenant_id="someone-else",
        task="do it",
        outcome=Outcome.SUCCESS,
        source=Provenance.SYSTEM,
        events=[{"event_type": "user_message", "content": "do it"}],  # type: ignore[list-item]
    )
    path = write_jsonl(tmp_path / "trajs.jsonl", [json.loads(original.model_dump_json())])
    (traj,) = parse(path)
    assert traj.tenant_id == "t1" and traj.id != original.id
    assert traj.source is Provenance.USER  # a log file cannot claim system trust
    assert traj.outcome is Outcome.SUCCESS and traj.task == "do it"
    assert traj.metadata["source_trajectory_id"] == original.id


@pytest.mark.parametrize(
    ("content", "status"),
    [
        ('{"error": "Booking B-1 has a non-refundable rate and cannot be cancelled"}', "failure"),
        ("Error: upstream connection reset", "failure"),
        ("The request timed out.", "timeout"),
        ('{"booking_id": "B-1", "state": "cancelled"}', "success"),
        ("No bookings found", "success"),
    ],
)
@pytest.mark.parametrize("shape", ["grouped lines", "whole trajectory"])
def test_an_events_result_without_status_gets_the_one_its_text_says(
    tmp_path: Path, content: str, status: str, shape: str
) -> None:
    """As the recorder and the other formats read it; a given status and the recorder's
    placeholder for a call the run never saw answered stay as they are."""
    events = [
        {"event_type": "user_message", "content": "cancel my booking"},
        {"event_type": "tool_call", "tool_name": "cancel", "tool_call_id": "c1"},
        {
            "event_type": "tool_result",
            "tool_name": "cancel",
            "tool_call_id": "c1",
            "content": content,
        },
        {
            "event_type": "tool_result",
            "tool_name": "cancel",
            "content": content,
            "status": "success",
        },
        {"event_type": "tool_result", "tool_name": "cancel", "metadata": {"incomplete": True}},
    ]
    if shape == "grouped lines":
        records = [{"trajectory_id": "A", **event} for event in events]
    else:
        records = [{"task": "cancel my booking", "events": events}]
    (traj,) = parse(write_jsonl(tmp_path / "events.jsonl", records))
    inferred, given, placeholder = traj.events[2:]
    assert inferred.status is EventStatus(status)
    assert given.status is EventStatus.SUCCESS and placeholder.status is None


def test_events_line_without_trajectory_id_is_refused(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [{"event_type": "user_message", "content": "x"}])
    with pytest.raises(InvalidTrajectoryError, match=r"bad\.jsonl:1: .*trajectory_id"):
        parse(path, format="events")


# --- errors --------------------------------------------------------------------------------------


def test_unparsable_json_names_file_and_line(tmp_path: Path) -> None:
    good = {"messages": [{"role": "user", "content": "ok"}]}
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n{oops\n", encoding="utf-8")
    stream = iter_trajectories(path, tenant_id="t1")
    assert next(stream).task == "ok"  # streamed: records before the bad line arrive first
    assert next(stream).task == "ok"
    with pytest.raises(InvalidTrajectoryError, match=r"broken\.jsonl:3: invalid JSON"):
        next(stream)
    doc = tmp_path / "broken.json"
    doc.write_text('[{"messages": []},\n {"messages": [}]', encoding="utf-8")
    with pytest.raises(InvalidTrajectoryError, match=r"broken\.json:2: invalid JSON"):
        parse(doc)


@pytest.mark.parametrize("stamp", ["yesterday", "2025-13-45", True, "", [2025], float("nan")])
def test_a_timestamp_that_is_no_time_refuses_its_record(tmp_path: Path, stamp: object) -> None:
    """Never dropped for the synthetic clock: the record is refused with one line, as a
    reward that is no number; ISO-8601 text and Unix seconds (or milliseconds) are read."""
    record = {"messages": [{"role": "user", "content": "hi"}], "timestamp": stamp}
    with pytest.raises(InvalidTrajectoryError, match=r"o\.jsonl:1: timestamp must be ISO-8601"):
        parse(write_jsonl(tmp_path / "o.jsonl", [record]))
    for good in (
        "2025-03-03T10:00:00Z", 1741000000, 1741000000000, "2025-03-03 10:00", "1741000000",
        "1741000000000", " 1741000000.5 ",
    ):  # fmt: skip
        (traj,) = parse(write_jsonl(tmp_path / "g.jsonl", [{**record, "timestamp": good}]))
        assert traj.started_at.year == 2025


def test_bad_records_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidTrajectoryError, match="record 1: does not match format openai"):
        parse(write_json(tmp_path / "n.json", [42]), format="openai")
    # a record of another shape is an error, never an empty run
    for record, why in (
        ({"reward": 1.0}, "got an object with keys 'reward'"),
        ({"task_id": 1, "traj": []}, "it looks like a tau-bench record"),
        ({"event_type": "user_message", "trajectory_id": "a"}, "looks like an events record"),
    ):
        with pytest.raises(InvalidTrajectoryError, match="does not match format openai") as err:
            parse(write_jsonl(tmp_path / "o.jsonl", [record]), format="openai")
        assert why in str(err.value) and "o.jsonl:1:" in str(err.value)
    for fmt in ("tau-bench", "events"):
        wrong = rf"o\.jsonl:1: does not match format {fmt}: .*, it looks like an openai record"
        with pytest.raises(InvalidTrajectoryError, match=wrong):
            parse(write_jsonl(tmp_path / "o.jsonl", [{"messages": []}]), format=fmt)
    with pytest.raises(InvalidTrajectoryError, match="unknown role 'robot'"):
        parse(write_json(tmp_path / "r.json", [[{"role": "robot", "content": "x"}]]))
    with pytest.raises(InvalidTrajectoryError, match="reward must be a number"):
        parse(write_jsonl(tmp_path / "w.jsonl", [{"messages": [], "reward": "lots"}]))
    with pytest.raises(InvalidTrajectoryError, match="cannot tell the log format"):
        parse(write_jsonl(tmp_path / "u.jsonl", [{"foo": 1}]))
    with pytest.raises(InvalidTrajectoryError, match="no such file"):
        parse(tmp_path / "missing.json")
    for blank in ["", " "]:  # Path("") would be the current folder
        with pytest.raises(
            InvalidTrajectoryError, match=r"^no file given: give one trajectory log"
        ):
            parse(blank)


@pytest.mark.parametrize("tenant", ["", "  ", None])
def test_tenant_is_required(tmp_path: Path, tenant: Any) -> None:
    path = write_json(tmp_path / "x.json", [])
    with pytest.raises(TenantRequiredError):
        list(iter_trajectories(path, tenant_id=tenant))


def test_empty_file_yields_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    assert parse(path) == []
    assert count_records(path) == 0


@pytest.mark.parametrize("name", ["runs.jsonl", "task.jsonl", "reward.jsonl"])
def test_a_grouped_runs_error_names_its_line_whatever_the_file_is_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A file given by a relative path whose name starts like a run-level field: the bad
    event's own line, not the line that gave the field; a bad field, the line that gave it."""
    from hindsight.capture.ingest import RecordError, iter_results

    monkeypatch.chdir(tmp_path)

    def event(run: str, kind: str, **extra: Any) -> str:
        return json.dumps({"trajectory_id": run, "event_type": kind, "content": "x", **extra})

    Path(name).write_text(
        "\n".join(
            [
                event("f", "user_message", task="Sync order 7", reward=1),  # 1
                event("g", "user_message", reward="high"),  # 2: g's bad reward
                event("f", "bogus"),  # 3: f's bad event
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    errors = [
        item
        for item in iter_results(Path(name), format="events", tenant_id="t")
        if isinstance(item, RecordError)
    ]
    assert sorted((e.number, e.message.split(": ", 2)[1]) for e in errors) == [
        (2, "reward must be a number, got 'high'; run 'g' (1 line) not ingested"),
        (3, "event_type"),
    ]
