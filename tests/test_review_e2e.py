"""End to end, no mocks in the reviewing process: a real OpenAI-compatible server on loopback
(``tests/llm_server.py``, its own process) and hindsight in other processes (the CLI, or a
small agent script). An exit right after queuing, a slow endpoint, and the review flow:
``hindsight ingest FILE --reviewer llm`` -> lessons traceable to their runs; malformed replies
-> failed jobs listed by ``hindsight jobs --state failed --json`` -> ``hindsight jobs retry
--all-failed`` -> ``hindsight worker --once`` -> succeeded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight import ExperienceKind, Memory
from hindsight.review import PROMPT_VERSION
from hindsight.review.masking import Masker
from tests.llm_server import Server, report_for, serve

REPO = Path(__file__).resolve().parents[1]
MODEL = "openai/review-model"
LESSON_KEYS = ("failing_tools", "repeated_attempts", "do_differently")  # + the rules


@pytest.fixture
def server() -> Iterator[Server]:
    with serve() as running:
        yield running


def env_for(data_dir: Path, server: Server, **extra: str) -> dict[str, str]:
    """A clean environment: the loopback model as REFLECTION_MODEL, the test's data dir."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        PYTHONPATH=str(REPO),
        PYTHONIOENCODING="utf-8",
        COLUMNS="200",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        HINDSIGHT_DATA_DIR=str(data_dir),
        REFLECTION_MODEL=MODEL,
        LLM_BASE_URL=server.base,
        # The review flow on its own: no LLM dedup judge; identical lessons of several runs may
        # still merge into one experience. The memory guard stays on (its default): honest
        # review output must pass it (tests/test_guard_conflict.py).
        HINDSIGHT_DEDUP_JUDGE="false",
    )
    env.update(extra)
    return env


def hindsight(*args: str, env: dict[str, str], timeout: float = 240) -> Any:
    proc = subprocess.run(
        [sys.executable, "-c", "from hindsight.cli import main; main()", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=timeout,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"hindsight {' '.join(args)}: {proc.stderr}"
    return json.loads(proc.stdout) if "--json" in args else proc


def python(code: str, *, env: dict[str, str], timeout: float = 120) -> Any:
    """Run an agent script in its own process; its last stdout line is JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=timeout,  # a hang fails the test here
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, f"the review wrote to the agent's stdout: {proc.stdout!r}"
    return json.loads(lines[0])


def refund_run(ticket: str, marker: str = "") -> dict[str, Any]:
    """An OpenAI-format log record of a failed refund run about ``ticket``."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "refund_order", "arguments": '{"order_id": "A-17"}'},
    }
    return {
        "messages": [
            {"role": "user", "content": f"Ticket {ticket}: please refund order A-17. {marker}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Error: timed out after 30 s"},
            {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "call_2"}]},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: timed out after 30 s"},
            {"role": "assistant", "content": "Sorry, I could not issue the refund."},
        ],
        "reward": 0,
    }


def expected_lessons(ticket: str, chinese: bool = False) -> set[str]:
    """The lessons of the server's reply, masked as the reviewer stores them (the runs'
    values are not in the reply: the patterns alone apply, docs/review.md#masking)."""
    report = report_for(ticket, chinese)
    texts = [report[k]["text"] for k in LESSON_KEYS]
    texts += [r["text"] for r in report["rules"]]
    return {Masker().mask(t).strip() for t in texts if t and t.strip()}


def test_ingest_with_a_real_openai_compatible_server_then_jobs_retry_and_worker(
    tmp_path: Path, server: Server
) -> None:
    data = tmp_path / "data"
    env = env_for(data, server)
    log = tmp_path / "runs.jsonl"
    records = {
        "T-1": refund_run("T-1"),
        "T-2": refund_run("T-2", "MALFORMED"),
        "T-3": refund_run("T-3", "KIND:fenced"),
        "T-4": refund_run("T-4", "MALFORMED"),
        "T-5": refund_run("T-5", "KIND:tool_call"),
    }
    log.write_text("\n".join(json.dumps(r) for r in records.values()) + "\n", encoding="utf-8")

    doc = hindsight("ingest", str(log), "--reviewer", "llm", "--json", env=env)
    assert doc["trajectories_added"] == 5 and doc["reviews_queued"] == 5
    assert (doc["reviews_succeeded"], doc["reviews_failed"], doc["reviews_pending"]) == (3, 2, 0)
    assert doc["episodes_added"] == 3

    failed = hindsight("jobs", "--state", "failed", "--json", env=env)
    assert failed["counts"] == {"pending": 0, "running": 0, "succeeded": 3, "failed": 2}
    assert len(failed["jobs"]) == 2
    for job in failed["jobs"]:
        assert job["state"] == "failed" and job["attempts"] == 1
        assert job["last_error"].startswith("ReportParseError: ")
        assert "the reply holds no JSON object" in job["last_error"]
        assert "can't produce a review" in job["last_error"]  # the model's reply is kept
    failed_ids = {j["trajectory_id"] for j in failed["jobs"]}

    with Memory(data_dir=data) as mem:
        by_ticket = _lessons_by_ticket(mem)
        ticket_of = _tickets(mem)
    assert {ticket_of[t] for t in failed_ids} == {"T-2", "T-4"}
    for ticket in ("T-1", "T-3", "T-5"):  # every lesson the server returned, traceable
        assert by_ticket[ticket]["lessons"] == expected_lessons(ticket)
        report = report_for(ticket, False)
        episode = by_ticket[ticket]["episode"]  # the outcome, cause, task class folded in
        assert episode.startswith(report["episode"] + " Outcome: " + report["outcome"]["text"])
        assert episode.endswith("Task class: " + report["task_class"]["text"])
    assert "T-2" not in by_ticket and "T-4" not in by_ticket

    # the recall path shows the same provenance
    recalled = hindsight(
        "recall",
        "refund_order timed out for ticket T-3",
        "--tenant",
        "default",
        "--top-k",
        "3",
        "--json",
        env=env,
    )
    assert recalled["hits"]
    for hit in recalled["hits"]:
        [source] = hit["source_trajectory_ids"]
        assert hit["content"] in by_ticket[ticket_of[source]]["lessons"]
        if "T-" in hit["content"]:  # the server wrote the run's ticket into its lessons
            assert ticket_of[source] in hit["content"]

    # the model is fixed; retry the failed jobs and let a worker process run them
    server.control(fixed=True)
    retried = hindsight("jobs", "retry", "--all-failed", "--json", env=env)
    assert retried["retried"] == 2
    assert {j["state"] for j in retried["jobs"]} == {"pending"}
    report = hindsight("worker", "--once", "--reviewer", "llm", "--json", env=env)
    assert report["succeeded"] == 2 and report["failed_attempts"] == 0
    assert report["jobs"] == {"pending": 0, "running": 0, "succeeded": 5, "failed": 0}
    assert hindsight("jobs", "--state", "failed", "--json", env=env)["jobs"] == []
    with Memory(data_dir=data) as mem:
        by_ticket = _lessons_by_ticket(mem)
    for ticket in ("T-2", "T-4"):
        assert by_ticket[ticket]["lessons"] == expected_lessons(ticket)


def _tickets(mem: Memory) -> dict[str, str]:
    out = {}
    for job in mem.review_jobs(limit=1000):
        traj = mem.get_trajectory(job.trajectory_id, tenant_id="default")
        out[traj.id] = traj.task.split(":")[0].split()[-1]
    return out


def _lessons_by_ticket(mem: Memory) -> dict[str, dict[str, Any]]:
    """Per ticket: the lessons whose sources include its run, and its episode. A lesson that
    several runs gave (same text) is one experience listing all of them as sources."""
    ticket_of = _tickets(mem)
    out: dict[str, dict[str, Any]] = {}
    for exp in mem.list_experiences(tenant_id="default", limit=10_000):
        assert exp.source_trajectory_ids and exp.reviewer == f"llm:{MODEL}"
        assert exp.metadata["prompt_version"] == PROMPT_VERSION
        for source in exp.source_trajectory_ids:  # traceable to every run that gave it
            entry = out.setdefault(ticket_of[source], {"lessons": set(), "episode": None})
            if exp.kind is ExperienceKind.EPISODE:
                assert exp.source_trajectory_ids == [source]  # one episode per run
                entry["episode"] = exp.content
            else:
                entry["lessons"].add(exp.content)
    return out


# -- submit run 1's review, start run 2 at once, exit ----------------------------------------

AGENT = """
import json, sys
import litellm  # an agent that talks to models has it imported already
from hindsight import Memory

def run(mem, ticket):
    with mem.record(f"Ticket {ticket}: please refund order A-17.", tenant_id="acme") as rec:
        rec.user_message(f"Ticket {ticket}: please refund order A-17.")
        call = rec.tool_call("refund_order", {"order_id": "A-17"})
        rec.tool_result("refund_order", "timed out after 30 s", status="timeout",
                        tool_call_id=call.tool_call_id)
        rec.final_answer("Sorry, the refund failed.")
        rec.set_outcome("failure")
    return rec.trajectory_id
"""


@pytest.mark.parametrize("reviewer", ["llm", "heuristic"])
def test_exit_right_after_queuing_loses_nothing(
    tmp_path: Path, server: Server, reviewer: str
) -> None:
    data = tmp_path / "data"
    server.control(sleep=5.0)  # run 1's review is still in flight when the process exits
    env = env_for(data, server, HINDSIGHT_REVIEWER=reviewer)
    first = python(
        AGENT
        + """
mem = Memory()
one = run(mem, "T-1")   # its review is queued and starts in the background
two = run(mem, "T-2")   # run 2 starts at once
jobs = {j.trajectory_id: j.state.value for j in mem.review_jobs()}
print(json.dumps({"one": one, "two": two, "jobs_at_exit": jobs}))
sys.exit(0)             # no flush, no close: the interpreter's exit hooks only
""",
        env=env,
    )
    with Memory(data_dir=data, background_review=False) as mem:  # look without reviewing
        states = {j.trajectory_id: j for j in mem.review_jobs()}
        stored = {e.source_trajectory_ids[0] for e in mem.list_experiences(tenant_id="acme")}
    assert set(states) == {first["one"], first["two"]}  # both runs and both jobs survived
    for tid, job in states.items():
        # stored already, or still pending and resumable: never lost, never stuck running
        assert job.state.value in ("succeeded", "pending"), job
        if job.state.value == "succeeded":
            assert tid in stored
        # a pending job may have written some lessons before the exit: its re-review on the
        # next start rewrites nothing (stable ids)
    if reviewer == "llm":
        assert states[first["one"]].state.value == "pending"  # interrupted -> back to pending

    server.control(sleep=0.0)
    second = python(
        """
import json
from hindsight import Memory
with Memory() as mem:               # the next start resumes what was left
    assert mem.flush(timeout=120)
    jobs = {j.trajectory_id: j.state.value for j in mem.review_jobs()}
    hits = mem.recall("refund_order timed out for ticket T-2", tenant_id="acme", top_k=3).hits
    print(json.dumps({"jobs": jobs, "top": [h.experience.source_trajectory_ids for h in hits],
                      "contents": [h.experience.content for h in hits]}))
""",
        env=env,
    )
    assert second["jobs"] == {first["one"]: "succeeded", first["two"]: "succeeded"}
    # the latest run's lesson is recalled (the heuristic lessons of the two runs are the same
    # general lesson: one experience learned from both)
    assert any(first["two"] in sources for sources in second["top"])
    if reviewer == "llm":
        assert any("T-2" in c for c in second["contents"])


# -- a slow endpoint never delays the agent or hangs exit ------------------------------------


@pytest.mark.parametrize(
    ("when", "sleep"),
    # The case's 30 s endpoint; and one that sleeps longer than the agent process may take
    # in all (90 s), so an exit that waited for the reply would fail the test.
    [("after_timeout", 30.0), ("during_request", 120.0)],
)
def test_slow_endpoint_times_out_is_retried_later_and_exit_does_not_hang(
    tmp_path: Path, server: Server, when: str, sleep: float
) -> None:
    data = tmp_path / "data"
    server.control(sleep=sleep)
    env = env_for(
        data,
        server,
        HINDSIGHT_REVIEWER="llm",
        HINDSIGHT_REVIEW_TIMEOUT="2",
        HINDSIGHT_REVIEW_RETRY_BASE="60",
    )
    wait = "mem.flush(timeout=20)" if when == "after_timeout" else "None"
    first = python(
        AGENT
        + f"""
import time
mem = Memory()
t0 = time.perf_counter()
tid = run(mem, "T-9")
finished_ms = (time.perf_counter() - t0) * 1000
drained = {wait}
job = mem.review_jobs()[0]
print(json.dumps({{"tid": tid, "finished_ms": finished_ms, "state": job.state.value,
                  "attempts": job.attempts, "last_error": job.last_error}}))
""",
        env=env,
        timeout=90,  # a hang fails here; the process never waits for the slow reply
    )
    print(f"\nslow endpoint ({when}): agent run finished in {first['finished_ms']:.1f} ms")
    if when == "after_timeout":
        assert server.requests()["count"] >= 1  # the review did reach the slow endpoint
    with Memory(data_dir=data, background_review=False) as mem:
        [job] = mem.review_jobs()
        assert mem.get_trajectory(first["tid"], tenant_id="acme").events  # the run is stored
    if when == "after_timeout":
        assert (first["state"], first["attempts"]) == ("pending", 1)
        assert first["last_error"].startswith("ReviewTimeoutError: ")
        assert "timed out after 2 s (review_timeout)" in first["last_error"]
        assert job.state.value == "pending" and job.attempts == 1
        assert (job.run_after - job.updated_at).total_seconds() == pytest.approx(60, abs=1)
    else:
        assert job.state.value == "pending"  # interrupted by exit, or not started yet

    # later: the endpoint is fast again, and the retry is due
    server.control(sleep=0.0)
    env["HINDSIGHT_REVIEW_TIMEOUT"] = "120"  # no tight per-request timeout for the retry
    later = python(
        """
import json
from datetime import datetime, timedelta, UTC
from hindsight import Memory
from hindsight.testing import ManualClock
with Memory(clock=ManualClock(datetime.now(UTC) + timedelta(seconds=90))) as mem:
    assert mem.flush(timeout=60)
    job = mem.review_jobs()[0]
    print(json.dumps({"state": job.state.value, "attempts": job.attempts,
                      "lessons": len(mem.list_experiences(tenant_id="acme"))}))
""",
        env=env,
    )
    assert later["state"] == "succeeded" and later["lessons"] > 0
    if when == "after_timeout":
        assert later["attempts"] == 1  # the timed-out attempt; the retry succeeded
