"""The invalid-value policy and per-record errors through the real command line
(docs/concepts.md#stored-exactly-invalid-text-and-numbers, docs/cli.md#hindsight-ingest):
``hindsight ingest`` keeps every good record, reports each bad one with its line and reason (exit
1), and reports replaced invalid text in one ``warning:`` line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight.cli._common import MAX_SHOWN_WARNINGS
from tests.cli_helpers import REPO, assert_one_line_error, cli_env, cli_json, run_cli


def _lines(*records: object | bytes) -> bytes:
    out = []
    for record in records:
        out.append(record if isinstance(record, bytes) else json.dumps(record).encode())
    return b"\n".join(out) + b"\n"


def msgs(text: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]}


def test_ingest_keeps_good_records_and_reports_each_bad_one(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        _lines(
            msgs("good one"),  # 1
            b'{"messages": [{"role": "user", "content": "bad \\ud800 and \\u0000"}]}',  # 2
            {"foo": "bar"},  # 3: another shape
            b"not json",  # 4
            {"task_id": 1, "reward": 0, "traj": [{"role": "user", "content": "x"}]},  # 5
            b'{"messages": [{"role": "user", "content": "bytes \xff\xfe here"}]}',  # 6
            b'{"messages": [{"role": "user", "content": "nan"}], "reward": NaN}',  # 7
            msgs("good two"),  # 8
        )
    )
    data = tmp_path / "data"
    proc = run_cli(
        "ingest",
        str(log),
        "--format",
        "openai",
        "--tenant",
        "t",
        "--no-wait",
        "--json",
        data_dir=data,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["trajectories_added"] == 4  # lines 1, 2, 6, 8
    assert [e["line"] for e in doc["errors"]] == [3, 4, 5, 7]
    reasons = {e["line"]: e["error"] for e in doc["errors"]}
    assert "log.jsonl:3: does not match format openai" in reasons[3]
    assert "log.jsonl:4: invalid JSON" in reasons[4]
    assert "looks like a tau-bench record" in reasons[5]
    assert "reward must be a number" in reasons[7]
    assert all("\n" not in r for r in reasons.values())
    assert doc["invalid_values_replaced"] >= 4
    [warning] = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert "replaced" in warning and "line 2.messages[0].content (2)" in warning
    # what was stored: valid UTF-8, U+FFFD where the input was invalid
    listed = run_cli("trajectories", "list", "--tenant", "t", "--json", data_dir=data)
    tasks = sorted(t["task"] for t in json.loads(listed.stdout)["items"])
    assert tasks == sorted(
        ["good one", "bad \ufffd and \ufffd", "bytes \ufffd\ufffd here", "good two"]
    )
    # human output: one error line per bad record, with the line number
    proc = run_cli(
        "ingest", str(log), "--format", "openai", "--tenant", "t2", "--no-wait", data_dir=data
    )
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert [e.split(":")[2] for e in errors] == ["3", "4", "5", "7"]
    assert "records with errors: 4" in proc.stdout


@pytest.mark.parametrize("name", ["events.jsonl", "task.jsonl"])  # a file named as a field
@pytest.mark.parametrize("as_json", [True, False])
def test_ingest_lists_bad_records_in_file_order(tmp_path: Path, as_json: bool, name: str) -> None:
    """In the events format a run's lines are grouped: a bad event is reported when its run
    ends, after bad lines further down the file; the list is still in file order."""

    def event(run: str, kind: str, text: str) -> dict[str, str]:
        return {"trajectory_id": run, "event_type": kind, "content": text}

    log = tmp_path / name
    log.write_bytes(
        _lines(
            event("a", "user_message", "Where is order 7?"),  # 1
            event("b", "user_message", "Cancel order 9"),  # 2
            event("b", "bogus", "x"),  # 3: run b is refused once the file is read
            event("a", "final_answer", "It shipped."),  # 4
            b"not json",  # 5
            event("c", "nonsense", "y"),  # 6: run c ends at once (line 6)
            event("b", "final_answer", "Cancelled."),  # 7
            b"{also not json",  # 8
        )
    )
    args = ["ingest", str(log), "--format", "events", "--tenant", "t", "--no-wait"]
    proc = run_cli(*args, *(["--json"] if as_json else []), data_dir=tmp_path / "data")
    assert proc.returncode == 1, proc.stderr
    if as_json:
        lines = [e["line"] for e in json.loads(proc.stdout)["errors"]]
    else:
        shown = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
        lines = [int(line.split(":")[2]) for line in shown]
    assert lines == [3, 5, 6, 8]  # a run's error: the line of its bad event


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("reward", "high", "reward must be a number"),
        ("outcome", "great", "outcome must be success"),
        ("task_type", "  ", "task_type must be"),
    ],
)
@pytest.mark.parametrize("name", ["events.jsonl", "reward.jsonl"])
def test_a_bad_run_field_is_named_by_the_line_that_gave_it(
    tmp_path: Path, field: str, value: str, said: str, name: str
) -> None:
    """A run-level field of a grouped run (events format) comes from one of its lines: the
    error names that line, in the message and in --json."""
    log = tmp_path / name
    log.write_bytes(
        _lines(
            {"trajectory_id": "f", "event_type": "user_message", "content": "Sync order 7"},
            {"trajectory_id": "g", "event_type": "user_message", "content": "Where is order 9?"},
            {"trajectory_id": "f", "event_type": "final_answer", "content": "ok", field: value},
        )
    )
    args = ["ingest", str(log), "--format", "events", "--tenant", "t", "--no-wait", "--json"]
    proc = run_cli(*args, data_dir=tmp_path / "data")
    [error] = json.loads(proc.stdout)["errors"]
    assert error["line"] == 3
    assert f"{name}:3: {said}" in error["error"]
    assert error["error"].endswith("run 'f' (2 lines) not ingested")


def test_an_argument_that_is_not_utf8_is_replaced_not_a_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hindsight", "recall", b"retry \xff on 502", "--tenant", "t"],
        capture_output=True,
        env=cli_env(tmp_path / "data"),
        cwd=REPO,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "warning: replaced 1 invalid value(s)" in stderr and "query (1)" in stderr
    proc = subprocess.run(
        [sys.executable, "-m", "hindsight", "recall", "x", "--tenant", b"t\xff"],
        capture_output=True,
        env=cli_env(tmp_path / "data"),
        cwd=REPO,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    stderr = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in stderr
    assert stderr.startswith("error: tenant_id contains a lone surrogate"), stderr


def test_negative_numbers_are_arguments(tmp_path: Path) -> None:
    """`hindsight confidence ID -0.2`, the form the help shows."""
    from hindsight import Memory, MemoryConfig

    data = tmp_path / "data"
    with Memory(MemoryConfig(data_dir=data, embedding_model="hash")) as mem:
        eid = mem.add_experience("Retry order_query once on 502", tenant_id="t").id
    env = {"HINDSIGHT_EMBEDDING_MODEL": "hash"}
    confidences = []
    for args in (
        [eid, "-0.2", "--tenant", "t"],
        [eid, "--tenant", "t", "-.1"],
        [eid, "-1e-1", "--tenant", "t", "--reason", "-x"],
        [eid, "0.3", "--tenant", "t"],
    ):
        proc = run_cli("confidence", *args, "--json", data_dir=data, **env)
        assert proc.returncode == 0, proc.stderr
        confidences.append(round(json.loads(proc.stdout)["new"], 2))
    assert confidences == [0.3, 0.2, 0.1, 0.4]
    proc = run_cli("confidence", eid, "-2", "--tenant", "t", data_dir=data, **env)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: delta must be a number from -1 to 1, got '-2'")
    proc = run_cli("confidence", eid, "-x", "--tenant", "t", data_dir=data, **env)
    assert proc.returncode == 2 and "No such option: -x" in proc.stderr


def test_a_usage_error_points_at_the_help_of_the_command_used(tmp_path: Path) -> None:
    """The one-line usage error names the full subcommand path, whichever way hindsight was
    started (``python -m hindsight`` here), so the suggested help command runs as printed."""
    cases = {
        ("experiences", "list"): "(see 'hindsight experiences list --help')",
        ("quarantine", "approve"): "(see 'hindsight quarantine approve --help')",
        ("recall",): "(see 'hindsight recall --help')",
        ("--no-such-option",): "(see 'hindsight --help')",
    }
    for args, hint in cases.items():
        proc = run_cli(*args, data_dir=tmp_path / "data", HINDSIGHT_TENANT="")
        line = assert_one_line_error(proc, code=2)
        assert line.endswith(hint), (args, line)


@pytest.mark.parametrize("bad", [3, 10, 25])
def test_ingest_prints_the_first_ten_bad_records_and_counts_the_rest(
    tmp_path: Path, bad: int
) -> None:
    log = tmp_path / "runs.jsonl"
    rows = [json.dumps({"messages": [{"role": "user", "content": "good"}]})]
    rows += [json.dumps({"no": "messages"})] * bad
    log.write_text("\n".join(rows) + "\n", encoding="utf-8")
    proc = run_cli(
        "ingest", str(log), "--format", "openai", "--tenant", "t", "--no-wait",
        data_dir=tmp_path / "data",
    )  # fmt: skip
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == min(bad, 10)
    more = [line for line in proc.stderr.splitlines() if line.startswith("... and ")]
    assert more == ([f"... and {bad - 10} more records with errors (every one: --json)"]
                    if bad > 10 else [])  # fmt: skip
    assert f"records with errors: {bad}" in proc.stdout
    again = run_cli(
        "ingest", str(log), "--format", "openai", "--tenant", "t2", "--no-wait", "--json",
        data_dir=tmp_path / "data",
    )  # fmt: skip
    doc = json.loads(again.stdout)
    assert len(doc["errors"]) == doc["records_failed"] == bad


FILE_COMMANDS = [
    (["ingest", "{}", "--tenant", "t"], "", "trajectory log (JSON or JSONL)"),
    (["restore", "{}"], "", "file written by `hindsight backup`"),
    (["guard", "scan", "{}"], "", "JSONL file of candidate lessons"),
    (["guard", "eval", "{}"], "", "labelled JSONL file"),
    (["bench", "learning", "{}"], "", "tau-bench results file"),
    (["bench", "review", "{}"], "", "tau-bench results file"),
    (["bench", "goals", "--tau-bench", "{}"], "--tau-bench: ", "tau-bench results file"),
]
"""Every command that reads a file, where the file goes, and what it says it wants."""


@pytest.mark.parametrize(("args", "prefix", "what"), FILE_COMMANDS, ids=lambda v: str(v)[:30])
def test_every_command_that_reads_a_file_says_what_is_wrong_with_it(
    tmp_path: Path, args: list[str], prefix: str, what: str
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    cases = {
        str(tmp_path / "missing.json"): f"no such file: {tmp_path / 'missing.json'}",
        str(folder): f"{folder} is a folder, not a file: give one {what}",
        # a device or a pipe: the commands read a file more than once
        "/dev/null": f"/dev/null is not a regular file: give one {what}",
    }
    for given, message in cases.items():
        proc = run_cli(*[given if a == "{}" else a for a in args], data_dir=tmp_path / "data")
        line = assert_one_line_error(proc, 2)
        assert line == f"error: {prefix}{message}", line
    for blank in ["", "  "]:  # not the current folder: refused as the argument is parsed
        proc = run_cli(*[blank if a == "{}" else a for a in args], data_dir=tmp_path / "data")
        line = assert_one_line_error(proc, 2)
        assert re.fullmatch(r"error: Invalid value for '[-\w]+': empty: give a path .*", line)
    assert not (tmp_path / "data").exists()  # refused before opening anything


@pytest.mark.parametrize("option", ["--data-dir", "--rules", "--keys-file"])
def test_an_empty_path_option_is_refused_not_read_as_the_current_folder(
    tmp_path: Path, option: str
) -> None:
    args = {
        "--data-dir": ["--data-dir", "", "stats", "--tenant", "t"],
        "--rules": ["guard", "scan", str(tmp_path / "c.jsonl"), "--rules", " "],
        "--keys-file": ["serve", "--keys-file", ""],
    }[option]
    (tmp_path / "c.jsonl").write_text("")
    proc = run_cli(*args, data_dir=tmp_path / "data")
    line = assert_one_line_error(proc, 2)
    assert line.startswith(f"error: Invalid value for '{option}'") and "empty: give a path" in line
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("content", [b"", b"\n\n", b"[]", b"[]\n"])
def test_ingest_of_a_file_without_runs_says_so(tmp_path: Path, content: bytes) -> None:
    log = tmp_path / "log.json"
    log.write_bytes(content)
    proc = run_cli("ingest", str(log), "--tenant", "t", data_dir=tmp_path / "data")
    assert proc.returncode == 0, proc.stderr
    assert "trajectories: 0 added" in proc.stdout
    assert f"note: {log} holds no runs" in " ".join(proc.stderr.split()), proc.stderr


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("--namespace", "", "error: namespace must be a non-empty string"),
        ("--namespace", "n" * 201, "error: namespace must be at most 200 characters"),
        ("--task-type", "  ", "error: task_type must be a non-empty string"),
    ],
)
def test_ingest_refuses_a_bad_option_in_one_line_and_stores_nothing(
    tmp_path: Path, option: str, value: str, error: str
) -> None:
    """The error is stderr's first line (the progress bar has not started: its closing line
    came first), and no record was read."""
    log = tmp_path / "log.jsonl"
    log.write_bytes(_lines(msgs("good one")))
    data = tmp_path / "data"
    proc = run_cli("ingest", str(log), "--tenant", "t", option, value, data_dir=data)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(error), repr(proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    stats = cli_json("stats", "--tenant", "t", data_dir=data)
    assert stats["trajectories"] == 0


def test_recall_block_with_nothing_recalled_prints_no_block_and_says_so_on_stderr(
    tmp_path: Path,
) -> None:
    """stdout is the block alone (``$(hindsight recall ... --block)`` goes into a prompt): empty
    when nothing was recalled; the note is on stderr."""
    proc = run_cli(
        "recall", "cancel my trip", "--tenant", "t", "--tool", "cancel_reservation", "--block",
        data_dir=tmp_path / "data",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr.strip() == "no experiences recalled"


@pytest.mark.parametrize("tenant", [None, "", "  ", 42, "a\x00b", "t" * 201])
def test_a_refused_tenant_names_its_field(tenant: object) -> None:
    from hindsight import TenantRequiredError
    from hindsight._ids import validate_tenant

    with pytest.raises(TenantRequiredError) as err:
        validate_tenant(tenant)
    assert err.value.field == "tenant_id"


def test_recall_block_and_json_together_are_refused(tmp_path: Path) -> None:
    proc = run_cli("recall", "x", "--tenant", "t", "--block", "--json", data_dir=tmp_path / "d")
    line = assert_one_line_error(proc, 2)
    assert line == "error: give --block or --json, not both (--json has the block in 'rendered')"
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize(
    ("char", "shown"),
    [("\u202e", "\\u202e"), ("\x1b", "\\u001b"), ("\u2066", "\\u2066"), ("\x07", "\\u0007")],
)
def test_listings_show_the_characters_a_terminal_would_obey_as_escapes(
    tmp_path: Path, char: str, shown: str
) -> None:
    """A stored task with a bidirectional override or an ESC is listed with the character
    escaped, not sent to the terminal (it would turn the line around or start an ANSI
    sequence); the stored text is unchanged."""
    from hindsight import Memory

    task = f"restart web-07 {char}[2Jlive"
    with Memory(data_dir=tmp_path / "data") as mem:
        with mem.record(task, tenant_id="t") as run:
            run.user_message("restart it")
        assert mem.get_trajectory(run.trajectory_id, tenant_id="t").task == task
    proc = run_cli("trajectories", "list", "--tenant", "t", data_dir=tmp_path / "data")
    assert proc.returncode == 0, proc.stderr
    assert char not in proc.stdout and shown in proc.stdout, proc.stdout


def test_ingest_keeps_arguments_that_are_not_json_and_says_so_per_record(tmp_path: Path) -> None:
    broken = '{"order": A1'
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": broken}}
    called = {"role": "assistant", "content": None, "tool_calls": [call]}
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        _lines(msgs("good one"), {"messages": [*msgs("where is A1?")["messages"], called]})
    )
    data = tmp_path / "data"
    proc = run_cli("ingest", str(log), "--tenant", "t", "--no-wait", "--json", data_dir=data)
    assert proc.returncode in (0, 3), proc.stderr  # no record failed: nothing of it is lost
    doc = json.loads(proc.stdout)
    said = f"{log}:2: messages[2]: the arguments of tool 'lookup' are not valid JSON"
    assert doc["trajectories_added"] == 2 and doc["invalid_values_replaced"] == 0
    [warning] = doc["warnings"]
    assert warning.startswith(said) and warning.endswith("kept as text in tool_args._raw")
    assert [line for line in proc.stderr.splitlines() if line.startswith("warning:")] == [
        f"warning: {warning}"
    ]
    listed = run_cli("trajectories", "list", "--tenant", "t", "--json", data_dir=data)
    [tid] = [t["id"] for t in json.loads(listed.stdout)["items"] if t["task"] == "where is A1?"]
    shown = run_cli("trajectories", "show", tid, "--tenant", "t", "--json", data_dir=data)
    [stored] = [e for e in json.loads(shown.stdout)["events"] if e["event_type"] == "tool_call"]
    assert (stored["tool_args"], stored["content"]) == ({"_raw": broken}, broken)


def test_ingest_shows_the_first_warnings_and_counts_the_rest(tmp_path: Path) -> None:
    # one note per record whose arguments are not JSON: 14 notes, 10 lines and a count on
    # stderr (a large log cannot flood it), every one in --json
    def broken(i: int) -> dict:  # type: ignore[type-arg]
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "lookup", "arguments": f'{{"order": A{i}'}}  # fmt: skip
        called = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"messages": [*msgs(f"where is A{i}?")["messages"], called]}

    log = tmp_path / "log.jsonl"
    log.write_bytes(_lines(*(broken(i) for i in range(14))))
    proc = run_cli("ingest", str(log), "--tenant", "t", "--no-wait", "--json",
                   data_dir=tmp_path / "data")  # fmt: skip
    assert proc.returncode in (0, 3), proc.stderr
    assert len(json.loads(proc.stdout)["warnings"]) == 14
    said = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(said) == MAX_SHOWN_WARNINGS + 1 and said[-1] == "warning: ... and 4 more"
    assert all("not valid JSON" in line for line in said[:-1])


def test_ingest_keeps_expected_arguments_that_are_not_json_and_says_so(tmp_path: Path) -> None:
    broken = '{"order": A1'
    action = {"name": "cancel", "arguments": broken}
    bad_call = {"id": "c1", "function": {"name": "lookup", "arguments": "[1, 2]"}}
    record = {
        "messages": [
            *msgs("cancel A1")["messages"],
            {"role": "assistant", "content": None, "tool_calls": [bad_call]},
        ],
        "evidence": {"expected_actions": [action]},
    }
    log = tmp_path / "log.jsonl"
    log.write_bytes(_lines(record))
    data = tmp_path / "data"
    proc = run_cli("ingest", str(log), "--tenant", "t", "--no-wait", "--json", data_dir=data)
    assert proc.returncode in (0, 3), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["trajectories_added"] == 1 and doc["records_failed"] == 0
    assert doc["warnings"] == [
        f"{log}:1: messages[2]: the arguments of tool 'lookup' are an array, not an object; "
        "kept in tool_args._value",
        f"{log}:1: evidence.expected_actions[0]: the arguments of expected action 'cancel' are "
        "not valid JSON (Expecting value at character 10); kept as text in args._raw",
    ]
    warned = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert warned == [f"warning: {w}" for w in doc["warnings"]]
    listed = run_cli("trajectories", "list", "--tenant", "t", "--json", data_dir=data)
    [tid] = [t["id"] for t in json.loads(listed.stdout)["items"]]
    shown = run_cli("trajectories", "show", tid, "--tenant", "t", "--json", data_dir=data)
    assert json.loads(shown.stdout)["evidence"]["expected_actions"] == [
        {"tool": "cancel", "args": {"_raw": broken}}
    ]
