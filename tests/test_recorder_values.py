"""A recorded run is never lost to one bad value: every value given to ``memory.record(...)``
and its recorder is checked at the call that sends it, refused with one line, and the run
recorded so far is still stored when the block ends (docs/concepts.md#the-input-contract).
Also the same rules for a log's ``tags`` and the line a bad event is named by on ingest."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import math
import warnings
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight import InvalidTextWarning, InvalidTrajectoryError, Memory, UsageError
from hindsight._text import MAX_JSON_DEPTH, collecting
from hindsight.capture.ingest import iter_results, iter_trajectories
from hindsight.capture.ingest._common import outcome_word
from hindsight.capture.ingest.records import trajectories_from_record
from hindsight.capture.recorder import RunRecorder
from hindsight.models import Event, Trajectory
from tests.helpers import file_memory

BAD_CALLS: dict[str, Callable[[RunRecorder], Any]] = {
    "reward as a word": lambda r: r.set_outcome("success", "high"),
    "reward NaN": lambda r: r.set_outcome("failure", math.nan),
    "reward infinite": lambda r: r.set_outcome("failure", -math.inf),
    "reward a list": lambda r: r.set_outcome("failure", [1]),
    "args hold a set": lambda r: r.tool_call("lookup", {"ids": {1, 2}}),
    "args hold bytes": lambda r: r.tool_call("lookup", {"blob": b"\x00\x01"}),
    "args hold a datetime": lambda r: r.tool_call("lookup", {"at": dt.datetime(2026, 1, 1)}),
    "args hold a Decimal deep down": lambda r: r.tool_call("pay", {"items": [{"p": Decimal(1)}]}),
    "args hold an object": lambda r: r.tool_call("lookup", {"x": object()}),
    "result metadata holds a set": lambda r: r.tool_result("lookup", "ok", seen={"a"}),
    "message metadata holds a path": lambda r: r.user_message("hi", file=Path("/tmp")),
    "final_state holds a set": lambda r: r.set_outcome("failure", final_state={"s": {1}}),
    "details hold bytes": lambda r: r.set_outcome("failure", details={"raw": b"x"}),
    "content bytes not UTF-8": lambda r: r.user_message(b"\xff\xfe"),
    "latency below zero": lambda r: r.model_call("x", latency_ms=-1),
    "args nested too deep": lambda r: r.tool_call("lookup", _nested(5000)),
    "args with a tuple key": lambda r: r.tool_call("lookup", {"a": {(1, 2): "x"}}),
}


def _nested(levels: int, key: str = "k") -> dict[str, Any]:
    """``levels`` dicts, one inside the other."""
    value: Any = "x"
    for _ in range(levels):
        value = {key: value}
    return value


# Every refusal of the recorder names its field: (call, field).
REFUSED_FIELDS: dict[str, tuple[Callable[[RunRecorder], Any], str]] = {
    "args not a dict": (lambda r: r.tool_call("lookup", [1, 2]), "tool_args"),
    "args a string": (lambda r: r.tool_call("lookup", "x"), "tool_args"),
    "args too deep": (lambda r: r.tool_call("lookup", _nested(MAX_JSON_DEPTH + 1)), "tool_args"),
    "args with a tuple key": (lambda r: r.tool_call("lookup", {(1, 2): "x"}), "tool_args"),
    "tool_name blank": (lambda r: r.tool_call(" ", {}), "tool_name"),
    "tool_name missing": (lambda r: r.tool_result(content="ok"), "tool_name"),
    # the limit of every interface: check_action refuses a longer name
    "tool_name too long": (lambda r: r.tool_call("x" * 201, {}), "tool_name"),
    "result's tool_name too long": (lambda r: r.tool_result("x" * 201, "ok"), "tool_name"),
    "tool_name not text": (lambda r: r.tool_call(7, {}), "tool_name"),
    "metadata too deep": (lambda r: r.user_message("hi", metadata=_nested(500)), "metadata"),
    "metadata not a dict": (lambda r: r.user_message("hi", metadata=[1]), "metadata"),
    "reason not text": (lambda r: r.set_outcome("failure", reason=5), "reason"),
    "outcome unknown": (lambda r: r.set_outcome(5), "outcome"),
    "final_state not a dict": (lambda r: r.set_outcome("failure", final_state=[1]), "final_state"),
    "latency NaN": (lambda r: r.model_call("x", latency_ms=math.nan), "latency_ms"),
    "latency below zero": (lambda r: r.tool_result("t", "ok", latency_ms=-5), "latency_ms"),
    "status unknown": (lambda r: r.tool_result("t", "ok", status="meh"), "status"),
    "expected_actions a dict": (
        lambda r: r.set_outcome("failure", expected_actions={"tool": "t"}),
        "expected_actions",
    ),
    "expected action a tuple": (
        lambda r: r.set_outcome("failure", expected_actions=[("t", {})]),
        "expected_actions",
    ),
    "expected action args hold a set": (
        lambda r: r.set_outcome("failure", expected_actions=[{"tool": "t", "args": {"a": {1}}}]),
        "expected_actions",
    ),
    "system_prompt not text": (lambda r: setattr(r, "system_prompt", 5), "system_prompt"),
}


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    with file_memory(tmp_path / "data") as memory:
        yield memory


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_a_bad_value_is_refused_at_its_call_and_the_run_is_kept(mem: Memory, name: str) -> None:
    with pytest.raises(UsageError) as refused, mem.record("look up", tenant_id="t") as run:
        run.user_message("where is my order?")
        run.tool_call("lookup", {"order": "A1"})
        run.tool_result("lookup", "shipped")
        BAD_CALLS[name](run)
    message = str(refused.value)
    assert "\n" not in message and len(message) < 300
    stored = mem.get_trajectory(run.trajectory_id, tenant_id="t")
    assert stored.outcome.value == "unknown"  # the caller's mistake, not the agent's failure
    kinds = [e.event_type.value for e in stored.events]
    assert kinds[:3] == ["user_message", "tool_call", "tool_result"]
    assert kinds[-1] == "error" and message in stored.events[-1].content


@pytest.mark.parametrize("name", list(REFUSED_FIELDS))
def test_every_refusal_of_the_recorder_names_its_field(mem: Memory, name: str) -> None:
    call, field = REFUSED_FIELDS[name]
    with mem.record("x", tenant_id="t") as run, pytest.raises(UsageError) as err:
        call(run)
    assert err.value.field == field, str(err.value)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"task_key": ""}, "task_key"),
        ({"task_key": 1.5}, "task_key"),
        ({"system_prompt": 5}, "system_prompt"),
        ({"metadata": _nested(MAX_JSON_DEPTH + 1)}, "metadata"),
    ],
)
def test_record_names_the_field_it_refuses(mem: Memory, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(UsageError) as err:
        mem.record("x", tenant_id="t", **kwargs)
    assert err.value.field == field
    with pytest.raises(UsageError) as err:
        mem.record(12345, tenant_id="t")  # type: ignore[arg-type]
    assert err.value.field == "task"


@pytest.mark.parametrize("where", ["tool_args", "metadata", "details", "final_state"])
def test_json_nested_deeper_than_the_limit_is_refused_with_its_path(
    mem: Memory, where: str
) -> None:
    def send(run: RunRecorder, value: dict[str, Any]) -> None:
        if where == "tool_args":
            run.tool_call("lookup", value)
        elif where == "metadata":
            run.tool_result("lookup", "ok", metadata=value)
        else:
            run.set_outcome("failure", **{where: value})

    with mem.record("x", tenant_id="t") as run:
        send(run, _nested(MAX_JSON_DEPTH))  # at the limit: kept
        for levels in (MAX_JSON_DEPTH + 1, 5000):
            with pytest.raises(
                UsageError, match=rf"^{where}\.k\.k.* is nested more than 100 "
            ) as err:
                send(run, _nested(levels))
            assert err.value.field == where and len(str(err.value)) < 200
    with pytest.raises(ValueError, match=r"is nested more than 100 levels"):
        Event(event_type="tool_call", tool_name="t", tool_args={"a": [_nested(MAX_JSON_DEPTH)]})


def test_a_metadata_keyword_is_the_metadata_itself(mem: Memory) -> None:
    with mem.record("x", tenant_id="t") as run:
        run.user_message("hi", metadata={"lang": "en"}, channel="web")
        with pytest.raises(UsageError, match=r"^metadata\.s holds a set"):
            run.tool_call("lookup", {}, metadata={"s": {1}})
    got = mem.get_trajectory(run.trajectory_id, tenant_id="t")
    assert got.events[0].metadata == {"lang": "en", "channel": "web"}


@pytest.mark.parametrize(
    ("args", "stored"),
    [
        ({1: "a"}, {"1": "a"}),
        ({"a": {2: "b", 1.5: "c"}}, {"a": {"2": "b", "1.5": "c"}}),
        ({"a": [{True: 1, None: 2}]}, {"a": [{"true": 1, "null": 2}]}),
    ],
)
def test_number_boolean_and_null_keys_are_their_json_text(
    mem: Memory, args: dict[Any, Any], stored: dict[str, Any]
) -> None:
    assert json.loads(json.dumps(args)) == stored  # as json.dumps writes them
    with mem.record("x", tenant_id="t") as run:
        run.tool_call("lookup", args)
    assert mem.get_trajectory(run.trajectory_id, tenant_id="t").events[0].tool_args == stored


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ({(1, 2): "x"}, r"tool_args has a key \(1, 2\) \(tuple\)"),
        ({"a": {(1, 2): "x"}}, r"tool_args\.a has a key"),
        ({"a": [{frozenset({1}): 1}]}, r"tool_args\.a\[0\] has a key frozenset"),
        ({"a": {dt.date(2026, 1, 1): 1}}, r"tool_args\.a has a key .*\(date\)"),
    ],
)
def test_other_keys_are_refused_with_one_line(
    mem: Memory, args: dict[Any, Any], where: str
) -> None:
    with mem.record("x", tenant_id="t") as run, pytest.raises(UsageError, match=where) as err:
        run.tool_call("lookup", args)
    assert err.value.field == "tool_args" and "JSON keys are strings" in str(err.value)


@pytest.mark.parametrize(
    ("value", "names"),
    [({"ids": {1}}, r"tool_args\.ids"), ({"a": [1, {"b": b"x"}]}, r"tool_args\.a\[1\]\.b")],
)
def test_the_refusal_names_the_path_and_what_to_send(
    mem: Memory, value: dict[str, Any], names: str
) -> None:
    with mem.record("x", tenant_id="t") as run, pytest.raises(UsageError, match=names) as err:
        run.tool_call("lookup", value)
    assert "JSON cannot store" in str(err.value) and "send" in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"task_type": 123}, "task_type must be a non-empty string"),
        ({"task_type": ""}, "task_type must be a non-empty string"),
        ({"task_type": "a\x00b"}, "task_type contains a NUL"),
        ({"metadata": [1, 2]}, "metadata must be a dict, got list"),
        ({"metadata": {"at": dt.date(2026, 1, 1)}}, r"metadata.at holds a date"),
        ({"tags": [1]}, "tags must be a list of strings"),
        ({"tags": {"a": 1}}, "tags must be a list of strings"),
        ({"source": "someone"}, "source"),
    ],
)
def test_record_refuses_bad_run_fields_before_the_block(
    mem: Memory, kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(UsageError, match=match) as err:
        mem.record("x", tenant_id="t", **kwargs)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("tags", "stored"), [("ops", ["ops"]), (("a", "b"), ["a", "b"]), ([], [])])
def test_tags_one_string_is_a_list_of_one(mem: Memory, tags: Any, stored: list[str]) -> None:
    with mem.record("x", tenant_id="t", tags=tags) as run:
        run.user_message("hi")
    assert mem.get_trajectory(run.trajectory_id, tenant_id="t").tags == stored


def test_json_values_are_stored_exactly_numpy_scalars_as_their_numbers(mem: Memory) -> None:
    args = {"n": np.int64(3), "x": np.float32(0.5), "ok": np.bool_(True), "t": (1, "a")}
    with mem.record("x", tenant_id="t", metadata={"k": [None, 1.5, "é"]}) as run:
        run.user_message("héllo".encode())
        run.tool_call("lookup", args)
        run.set_outcome("success", True)
    got = mem.get_trajectory(run.trajectory_id, tenant_id="t")
    assert got.events[0].content == "héllo"
    assert got.events[1].tool_args == {"n": 3, "x": 0.5, "ok": True, "t": [1, "a"]}
    assert got.metadata == {"k": [None, 1.5, "é"]} and got.reward == 1.0


def test_the_async_recorder_keeps_the_run_too(tmp_path: Path) -> None:
    from hindsight import AsyncMemory
    from hindsight.testing import FakeEmbedder, InMemoryVectorIndex, ScriptedReviewer

    async def run_it() -> list[str]:
        async with AsyncMemory(
            data_dir=tmp_path / "d",
            embedder=FakeEmbedder(64),
            index=InMemoryVectorIndex(64),
            reviewer=ScriptedReviewer([]),
        ) as amem:
            with pytest.raises(UsageError, match="reward must be a finite number"):
                async with amem.record("x", tenant_id="t") as run:
                    run.user_message("hi")
                    run.set_outcome("success", "high")
            got = await amem.get_trajectory(run.trajectory_id, tenant_id="t")
            return [e.event_type.value for e in got.events]

    assert asyncio.run(run_it()) == ["user_message", "error"]


@pytest.mark.parametrize("reward", ["high", math.nan, [1], {}])
def test_a_trajectory_refuses_a_reward_that_is_not_a_finite_number(reward: Any) -> None:
    with pytest.raises(ValueError, match="reward must be a finite number"):
        Trajectory(tenant_id="t", reward=reward)


@pytest.mark.parametrize(("reward", "value"), [(True, 1.0), (False, 0.0), ("0.5", 0.5), (-1, -1.0)])
def test_a_reward_is_any_finite_number_a_boolean_is_pass_fail(reward: Any, value: float) -> None:
    assert Trajectory(tenant_id="t", reward=reward).reward == value


def test_an_event_model_refuses_what_the_store_cannot_write() -> None:
    with pytest.raises(ValueError, match=r"tool_args.s holds a set"):
        Event(event_type="tool_call", tool_name="t", tool_args={"s": {1}})


# -- ingest: tags and the line of a bad event ---------------------------------------------------


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("fmt", ["events", "openai"])
@pytest.mark.parametrize(("tags", "stored"), [("ops", ["ops"]), (["a", " ", "b"], ["a", "b"])])
def test_ingest_reads_tags_as_everywhere(tmp_path: Path, fmt: str, tags: Any, stored: Any) -> None:
    if fmt == "events":
        record = {"events": [{"event_type": "user_message", "content": "hi"}], "tags": tags}
    else:
        record = {"messages": [{"role": "user", "content": "hi"}], "tags": tags}
    path = _write(tmp_path / "log.jsonl", [record])
    (traj,) = iter_trajectories(path, format=fmt, tenant_id="t")
    assert traj.tags == stored


@pytest.mark.parametrize("fmt", ["events", "openai"])
@pytest.mark.parametrize("tags", [7, [1, 2], {"a": "b"}, ["a", None]])
def test_ingest_refuses_tags_that_are_not_strings(tmp_path: Path, fmt: str, tags: Any) -> None:
    if fmt == "events":
        record = {"events": [{"event_type": "user_message", "content": "hi"}], "tags": tags}
    else:
        record = {"messages": [{"role": "user", "content": "hi"}], "tags": tags}
    path = _write(tmp_path / "log.jsonl", [record, {**record, "tags": "fine"}])
    results = list(iter_results(path, format=fmt, tenant_id="t"))
    assert "tags must be a string or a list of strings" in results[0].message
    assert isinstance(results[1], Trajectory) and results[1].tags == ["fine"]


@pytest.mark.parametrize("bad_line", [1, 2, 3])
def test_a_bad_event_line_is_named_by_its_own_line(tmp_path: Path, bad_line: int) -> None:
    lines: list[dict[str, Any]] = [
        {"trajectory_id": "r1", "event_type": "user_message", "content": "reset my password"},
        {"trajectory_id": "r1", "event_type": "tool_call", "tool_name": "reset"},
        {"trajectory_id": "r1", "event_type": "tool_result", "tool_name": "reset", "content": "ok"},
        {"trajectory_id": "r2", "event_type": "user_message", "content": "close the ticket"},
    ]
    lines[bad_line - 1]["latency_ms"] = -5
    path = _write(tmp_path / "events.jsonl", lines)
    results = list(iter_results(path, format="events", tenant_id="t"))
    error, other = results[-2:] if isinstance(results[-1], Trajectory) else results
    assert error.message.startswith(f"{path}:{bad_line}: latency_ms")
    assert "run 'r1' (3 lines) not ingested" in error.message
    assert isinstance(other, Trajectory) and other.task == "close the ticket"
    with pytest.raises(InvalidTrajectoryError, match=rf"events.jsonl:{bad_line}: latency_ms"):
        list(iter_trajectories(path, format="events", tenant_id="t"))


def test_a_bad_event_of_a_whole_record_is_named_by_its_index(tmp_path: Path) -> None:
    record = {"events": [{"event_type": "user_message", "content": "hi"}, {"event_type": "?"}]}
    path = _write(tmp_path / "log.jsonl", [record])
    (error,) = iter_results(path, format="events", tenant_id="t")
    assert error.message.startswith(f"{path}:1: events[1]: event_type")


@pytest.mark.parametrize(
    ("record", "where"),
    [
        ([{"role": "user", "content": "hi"}, {"role": "wizard"}], "messages[1]: unknown role"),
        ([{"role": "user", "content": "hi"}, "hello"], "messages[1]: a message must be an object"),
        (
            {
                "messages": [{"role": "user", "content": "hi"}],
                "evidence": {"expected_actions": [7]},
            },
            "evidence.expected_actions[0]: an expected action must be an object",
        ),
    ],
)
def test_a_bad_message_is_named_like_a_bad_event(tmp_path: Path, record: Any, where: str) -> None:
    path = _write(tmp_path / "log.jsonl", [record])
    (error,) = iter_results(path, format="openai", tenant_id="t")
    assert error.message.startswith(f"{path}:1: {where}")


@pytest.mark.parametrize("fmt", ["events", "openai"])
@pytest.mark.parametrize("task_type", ["", "  ", 5, ["a"]])
def test_ingest_refuses_a_record_task_type_the_api_refuses(
    tmp_path: Path, fmt: str, task_type: Any
) -> None:
    if fmt == "events":
        record = {"events": [{"event_type": "user_message", "content": "hi"}]}
    else:
        record = {"messages": [{"role": "user", "content": "hi"}]}
    path = _write(tmp_path / "log.jsonl", [{**record, "task_type": task_type}, record])
    error, kept = iter_results(path, format=fmt, tenant_id="t")
    assert error.message.startswith(f"{path}:1: task_type must be a non-empty string or None, got ")
    assert isinstance(kept, Trajectory) and kept.task_type is None


@pytest.mark.parametrize("task_type", ["", "   "])
def test_ingest_refuses_a_blank_task_type_as_it_does_a_blank_namespace(
    tmp_path: Path, task_type: str
) -> None:
    path = _write(tmp_path / "log.jsonl", [{"messages": [{"role": "user", "content": "hi"}]}])
    with pytest.raises(UsageError, match="task_type must be a non-empty string"):
        list(iter_results(path, tenant_id="t", task_type=task_type))


@pytest.mark.parametrize(
    ("reply", "status", "stored"),
    [
        ("Error: card declined", None, "failure"),
        ("ValueError: size_gb must be positive", None, "failure"),
        ("Request timed out after 30 s", None, "timeout"),
        ("错误：余额不足", None, "failure"),
        ('{"ok": true, "note": "no error"}', None, "success"),
        ("Error: card declined", "success", "success"),  # the caller's word wins
        ('{"ok": true}', "failure", "failure"),
        ({"error": "card declined"}, None, "failure"),  # a JSON reply's error field
        ({"status": "timeout"}, None, "timeout"),
        ("Delivered on time; no timeout.", None, "success"),
        ("404 Not Found", None, "failure"),
        ("Card declined by issuer", None, "failure"),  # said in the first clause
        ("No orders found", None, "success"),  # an empty answer
    ],
)
def test_a_tool_result_without_status_says_it_by_its_reply(
    mem: Memory, reply: Any, status: str | None, stored: str
) -> None:
    with mem.record("x", tenant_id="t") as run:
        run.tool_call("pay", {"amount": 5})
        event = run.tool_result("pay", reply, status=status)
    assert event.status is not None and event.status.value == stored
    got = mem.get_trajectory(run.trajectory_id, tenant_id="t")
    assert got.events[-1].status.value == stored


@pytest.mark.parametrize(
    ("reply", "stored"),
    [
        ({"ok": True, "n": None}, '{"ok": true, "n": null}'),
        ([{"ok": True}], '[{"ok": true}]'),
        ([{"error": "x"}], '[{"error": "x"}]'),
        ([1, "a"], '[1, "a"]'),
        ({"city": "Zürich", "n": np.int64(3)}, '{"city": "Zürich", "n": 3}'),
        ({1: (2, 3)}, '{"1": [2, 3]}'),
        (True, "true"),
        (42, "42"),
        ("plain text", "plain text"),
        ("é".encode(), "é"),
        ([{"type": "text", "text": "a"}, "b"], "a\nb"),  # content parts are their text
    ],
)
def test_a_reply_that_is_not_a_string_is_stored_as_json_text(
    mem: Memory, reply: Any, stored: str
) -> None:
    with mem.record("x", tenant_id="t") as run:
        run.tool_call("lookup", {})
        assert run.tool_result("lookup", reply).content == stored
    assert mem.get_trajectory(run.trajectory_id, tenant_id="t").events[-1].content == stored


@pytest.mark.parametrize(
    ("reply", "where"),
    [
        ({"a"}, "content holds a set"),
        ({"at": dt.date(2026, 1, 1)}, r"content\.at holds a date"),
        ([{"ok": {1}}], r"content\[0\]\.ok holds a set"),
        (object(), "content holds an object"),
        (_nested(MAX_JSON_DEPTH + 1), "content.k.k.* is nested more than 100 levels"),
    ],
)
def test_a_reply_json_cannot_hold_is_refused_naming_content(
    mem: Memory, reply: Any, where: str
) -> None:
    with mem.record("x", tenant_id="t") as run, pytest.raises(UsageError, match=where) as err:
        run.tool_result("lookup", reply)
    assert err.value.field == "content" and "\n" not in str(err.value)
    with pytest.raises(ValueError, match=where):
        Event(event_type="tool_result", tool_name="lookup", content=reply)


def test_the_depth_limit_counts_from_the_field_in_a_trajectory_dict_too(mem: Memory) -> None:
    event = {"event_type": "tool_call", "tool_name": "t", "tool_args": _nested(MAX_JSON_DEPTH)}
    mem.store_episode({"tenant_id": "t", "events": [event]}, review=False)
    event["tool_args"] = _nested(MAX_JSON_DEPTH + 1)
    with pytest.raises(UsageError, match=r"events\[0\]\.tool_args\.k.* is nested more than"):
        mem.store_episode({"tenant_id": "t", "events": [event]}, review=False)
    deep_inside = {"metadata": _nested(5000, key="metadata")}  # a key named like a field
    with pytest.raises(UsageError, match="is nested more than 100 levels"):
        mem.store_episode({"tenant_id": "t", "events": [{**event, "tool_args": deep_inside}]})


def test_a_trajectory_dict_keeps_its_model_fields_and_checks_its_free_json(mem: Memory) -> None:
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    event = {"event_type": "tool_call", "tool_name": "t", "timestamp": at, "tool_args": {"a": 1}}
    stored = mem.store_episode({"tenant_id": "t", "events": [event]}, review=False)
    got = mem.get_trajectory(stored.trajectory_id, tenant_id="t")
    assert got.events[0].timestamp == at and got.events[0].tool_args == {"a": 1}
    for where, bad in (("tool_args", {"a": {1}}), ("metadata", {"at": at})):
        with pytest.raises(UsageError, match=rf"events\[0\]\.{where}\.\w+ holds a"):
            mem.store_episode({"tenant_id": "t", "events": [{**event, where: bad}]})
    with pytest.raises(UsageError, match=r"final_state\.s holds a set"):
        mem.store_episode({"tenant_id": "t", "evidence": {"final_state": {"s": {1}}}})


@pytest.mark.parametrize(
    ("declared", "raised", "outcome"),
    [
        (None, "usage", "unknown"),  # a refused value: the caller's mistake
        ("success", "usage", "success"),  # what was declared before it stays
        (None, "crash", "failure"),  # the agent's own exception: a failed run
        ("success", "crash", "success"),
    ],
)
def test_the_outcome_of_a_run_a_refusal_or_a_crash_ended(
    mem: Memory, declared: str | None, raised: str, outcome: str
) -> None:
    with pytest.raises((UsageError, RuntimeError)), mem.record("look up", tenant_id="t") as run:
        run.tool_call("lookup", {"order": "A1"})
        if declared:
            run.set_outcome(declared)
        if raised == "usage":
            run.tool_call("lookup", {"ids": {1, 2}})
        raise RuntimeError("the agent crashed")
    assert mem.get_trajectory(run.trajectory_id, tenant_id="t").outcome.value == outcome


def test_the_longest_tool_name_the_recorder_takes_is_one_check_action_takes(mem: Memory) -> None:
    name = "t" * 200
    with mem.record("x", tenant_id="t") as run:
        call = run.tool_call(name, {})
        run.tool_result(content="ok", tool_call_id=call.tool_call_id)
    stored = mem.get_trajectory(run.trajectory_id, tenant_id="t")
    assert stored.events[0].tool_name == name
    assert mem.check_action(name, {}, tenant_id="t").checks == []


@pytest.mark.parametrize(
    ("word", "outcome"),
    [
        ("FAILED", "failure"),
        ("passed", "success"),
        (" Success ", "success"),
        ("partially", "partial"),
        (True, "success"),
        (False, "failure"),
        ("error", "failure"),
    ],
)
def test_the_recorder_reads_outcome_words_as_a_log_does(
    mem: Memory, word: object, outcome: str
) -> None:
    """``set_outcome`` and ``hindsight ingest`` read outcome words by one rule (a blank one
    aside: a log's empty field is an unknown outcome, an empty argument is refused)."""
    from hindsight.capture.ingest._common import outcome_from

    with mem.record("x", tenant_id="t") as run:
        run.set_outcome(word)  # type: ignore[arg-type]
    assert mem.get_trajectory(run.trajectory_id, tenant_id="t").outcome.value == outcome
    assert outcome_from(word, None, "log.jsonl:1").value == outcome


@pytest.mark.parametrize("word", ["", "  ", "won", 1, None])
def test_the_recorder_refuses_a_word_that_names_no_outcome(mem: Memory, word: object) -> None:
    with mem.record("x", tenant_id="t") as run, pytest.raises(UsageError) as err:
        run.set_outcome(word)  # type: ignore[arg-type]
    assert str(err.value).startswith("outcome must be one of success, failure, partial, unknown")


# -- an outcome its reward says the opposite of ---------------------------------------------------

# (outcome, reward): a success the reward calls a failure, or the reverse (by the rule that
# reads an outcome from a reward alone: 1 or more a success, 0 or less a failure)
CONTRADICTIONS = [("failure", 1.0), ("success", 0.0), ("FAILED", 2), ("passed", -1), (True, False)]
AGREEMENTS = [
    ("failure", 0.0),
    ("success", 1.0),
    ("partial", 1.0),
    ("success", 0.5),
    ("unknown", 0),
]


def _disagreement(outcome: Any, reward: Any) -> str:
    """The one line said of ``outcome`` given with ``reward``."""
    word = "success" if str(outcome).lower() in ("success", "passed", "true") else "failure"
    return (
        f'outcome "{word}" disagrees with reward {float(reward)} (a reward of 1 or more reads '
        "as a success, 0 or less as a failure); the outcome given is kept"
    )


@contextlib.contextmanager
def _said() -> Iterator[list[str]]:
    """The messages of the block's :class:`InvalidTextWarning` warnings (filled at its end)."""
    said: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield said
    said.extend(str(w.message) for w in caught if issubclass(w.category, InvalidTextWarning))


@pytest.mark.parametrize(("outcome", "reward"), CONTRADICTIONS)
def test_the_recorder_keeps_an_outcome_its_reward_disagrees_with_and_says_so(
    mem: Memory, outcome: Any, reward: Any
) -> None:
    # a reward may be on another scale: the outcome given is what the run keeps, said once
    with _said() as said, mem.record("x", tenant_id="t") as run:
        run.user_message("refund order A1")
        run.set_outcome(outcome, reward)
    assert said == [f"hindsight: {_disagreement(outcome, reward)}"]
    kept = mem.get_trajectory(run.trajectory_id, tenant_id="t")
    word = _disagreement(outcome, reward).split('"')[1]
    assert (kept.outcome.value, kept.reward) == (word, float(reward))


@pytest.mark.parametrize("given", ["dict", "model"])
@pytest.mark.parametrize(("outcome", "reward"), CONTRADICTIONS)
def test_store_episode_keeps_an_outcome_its_reward_disagrees_with(
    mem: Memory, given: str, outcome: Any, reward: Any
) -> None:
    word = outcome_word(outcome)  # a trajectory's outcome is one of the four words
    assert word is not None
    fields = {"tenant_id": "t", "task": "x", "outcome": word, "reward": reward}
    run: Any = fields if given == "dict" else Trajectory(**fields)
    with _said() as notes:
        stored = mem.store_episode(run)
    kept = mem.get_trajectory(stored.trajectory_id, tenant_id="t")
    assert (kept.outcome, kept.reward) == (word, float(reward))
    # a dict is said to disagree; a Trajectory is taken as built (the recorder and the log
    # formats say it where they build one)
    said = [f"hindsight: trajectory: {_disagreement(outcome, reward)}"] if given == "dict" else []
    assert notes == said


@pytest.mark.parametrize(("outcome", "reward"), AGREEMENTS)
def test_an_outcome_its_reward_agrees_with_is_stored_without_a_word(
    mem: Memory, outcome: str, reward: float
) -> None:
    with _said() as said:
        with mem.record("x", tenant_id="t") as run:
            run.set_outcome(outcome, reward)
        stored = mem.store_episode({"tenant_id": "t", "outcome": outcome, "reward": reward})
    assert said == []
    for tid in (run.trajectory_id, stored.trajectory_id):
        kept = mem.get_trajectory(tid, tenant_id="t")
        assert (kept.outcome.value, kept.reward) == (outcome, reward)


RUN_ID = "7f9c2a1e-4b1d-4c1a-9e33-2c5d0b6a8f10"


def test_parts_that_disagree_once_merged_are_merged_and_said(mem: Memory) -> None:
    # each part agrees with itself; the merged run holds the later outcome and the stored
    # reward, and says so
    first = {"id": RUN_ID, "tenant_id": "t", "task": "x", "reward": 1.0,
             "metadata": {"paused": True}}  # fmt: skip
    mem.store_episode(first)
    with _said() as said:
        mem.store_episode({"id": RUN_ID, "tenant_id": "t", "outcome": "failure"}, merge=True)
    kept = mem.get_trajectory(RUN_ID, tenant_id="t")
    assert (kept.outcome.value, kept.reward) == ("failure", 1.0)
    assert said == [
        f"hindsight: trajectory {RUN_ID} merged with its stored part: "
        + _disagreement("failure", 1.0)
    ]


def test_a_crash_does_not_make_a_failure_of_a_run_whose_reward_says_success(mem: Memory) -> None:
    with pytest.raises(RuntimeError), mem.record("x", tenant_id="t") as run:
        run.set_outcome("unknown", 1.0)
        raise RuntimeError("the agent crashed after its reward")
    kept = mem.get_trajectory(run.trajectory_id, tenant_id="t")
    assert (kept.outcome.value, kept.reward) == ("unknown", 1.0)
    with pytest.raises(RuntimeError), mem.record("x", tenant_id="t") as run:
        run.set_outcome("unknown", 0.5)  # a partial reward: the crash is the failure
        raise RuntimeError("the agent crashed")
    assert mem.get_trajectory(run.trajectory_id, tenant_id="t").outcome.value == "failure"


@pytest.mark.parametrize("fmt", ["openai", "events", "event lines", "tau-bench", "trajectory"])
@pytest.mark.parametrize(("outcome", "reward"), CONTRADICTIONS)
def test_ingest_keeps_a_record_whose_reward_disagrees_with_its_outcome_and_says_so(
    tmp_path: Path, fmt: str, outcome: Any, reward: Any
) -> None:
    """Stored with the outcome it gives, one line naming the record (every format)."""
    messages = [{"role": "user", "content": "refund order A1"}]
    fields = {"outcome": outcome, "reward": reward}
    good = {"outcome": "failure", "reward": 0}
    event = {"event_type": "user_message", "content": "hi"}
    records: list[dict[str, Any]]
    if fmt == "openai":
        records = [{"messages": messages, **f} for f in (fields, good)]
    elif fmt == "tau-bench":
        records = [{"task_id": i, "traj": messages, **f} for i, f in enumerate((fields, good))]
    elif fmt == "events":
        records = [{"events": [event], **f} for f in (fields, good)]
    elif fmt == "trajectory":
        records = [{"task": "x", "events": [event], "outcome": outcome_word(outcome),
                    "reward": reward}]  # fmt: skip
    else:
        records = [{"trajectory_id": "r1", **event, **fields}, {"trajectory_id": "r2", **event}]
        fmt = "events"
    path = _write(tmp_path / "log.jsonl", records)
    with collecting() as report:
        if fmt == "trajectory":
            found = trajectories_from_record(records[0], tenant_id="t", where=f"{path}:1")
        else:
            found = list(iter_results(path, format=fmt, tenant_id="t"))  # type: ignore[arg-type]
    assert all(isinstance(t, Trajectory) for t in found)
    word = _disagreement(outcome, reward).split('"')[1]
    assert (found[0].outcome.value, found[0].reward) == (word, float(reward))
    [line] = report.notes
    assert line.startswith(f"{path}:1") and line.endswith(_disagreement(outcome, reward))


def test_a_refused_record_keeps_none_of_its_notes(tmp_path: Path) -> None:
    # its arguments would have been kept as text, but the record is refused (an outcome no
    # word names): nothing of it was kept, so nothing is said of keeping it
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{A1"}}
    messages = [{"role": "user", "content": "where?"},
                {"role": "assistant", "content": None, "tool_calls": [call]}]  # fmt: skip
    path = _write(tmp_path / "log.jsonl", [{"messages": messages, "outcome": "won"},
                                           {"messages": messages}])  # fmt: skip
    with collecting() as report:
        error, kept = iter_results(path, format="openai", tenant_id="t")
    assert "outcome must be success, failure, partial or unknown" in error.message
    assert isinstance(kept, Trajectory)
    [line] = report.notes  # the second record's, which is kept
    assert line.startswith(f"{path}:2: messages[1]: the arguments of tool 'lookup'")


# -- a tool name longer than check_action takes ---------------------------------------------------

LONG_TOOL = "t" * 201


def _recorders_words(name: str) -> str:
    """The one line the recorder refuses ``name`` with."""
    with pytest.raises(UsageError) as err:
        RunRecorder("x", tenant_id="t").tool_call(name, {})
    return str(err.value)


@pytest.mark.parametrize("given", ["dict", "model"])
@pytest.mark.parametrize("event_type", ["tool_call", "tool_result"])
def test_store_episode_refuses_a_tool_name_the_recorder_refuses(
    mem: Memory, given: str, event_type: str
) -> None:
    events = [{"event_type": "user_message", "content": "hi"}]
    events.append({"event_type": event_type, "tool_name": LONG_TOOL})
    fields = {"tenant_id": "t", "task": "x", "events": events}
    run: Any = fields if given == "dict" else Trajectory(**fields)
    with pytest.raises(InvalidTrajectoryError) as err:
        mem.store_episode(run)
    assert str(err.value) == f"invalid trajectory: events[1]: {_recorders_words(LONG_TOOL)}"
    assert mem.list_trajectories(tenant_id="t") == []
    events[1]["tool_name"] = LONG_TOOL[:200]  # the longest one check_action takes
    stored = mem.store_episode({**fields, "events": events})
    assert mem.get_trajectory(stored.trajectory_id, tenant_id="t").events[1].tool_name == "t" * 200


@pytest.mark.parametrize(
    ("record", "where"),
    [
        (
            {"messages": [{"role": "assistant", "tool_calls": [
                {"id": "c1", "function": {"name": LONG_TOOL, "arguments": "{}"}}]}]},
            "messages[0]",
        ),
        ({"messages": [{"role": "assistant", "function_call": {"name": LONG_TOOL}}]},
         "messages[0]"),
        ({"messages": [{"role": "user", "content": "hi"},
                       {"role": "tool", "name": LONG_TOOL, "content": "ok"}]}, "messages[1]"),
        ({"task_id": 1, "traj": [{"role": "tool", "name": LONG_TOOL, "content": "ok"}]},
         "messages[0]"),
        ({"events": [{"event_type": "tool_call", "tool_name": LONG_TOOL}]}, "events[0]"),
        ({"trajectory_id": "r1", "event_type": "tool_result", "tool_name": LONG_TOOL}, ""),
    ],
)  # fmt: skip
def test_ingest_reports_a_record_with_a_tool_name_the_recorder_refuses(
    tmp_path: Path, record: dict[str, Any], where: str
) -> None:
    """The record's error, in the recorder's words; the next record is stored."""
    good = {"trajectory_id": "r2", "event_type": "user_message", "content": "hi"}
    if "messages" in record:
        good = {"messages": [{"role": "user", "content": "hi"}]}
    elif "traj" in record:
        good = {"task_id": 2, "traj": [{"role": "user", "content": "hi"}]}
    elif "events" in record:
        good = {"events": [good]}
    path = _write(tmp_path / "log.jsonl", [record, good])
    error, kept = iter_results(path, tenant_id="t")
    at = f"{path}:1: {where}: " if where else f"{path}:1: "
    assert error.message.startswith(at + _recorders_words(LONG_TOOL))
    assert isinstance(kept, Trajectory)
