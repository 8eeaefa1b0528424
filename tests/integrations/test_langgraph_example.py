"""The example agent (examples/langgraph_agent.py, ``hindsight demo``): it fails, learns, and
succeeds, on the default embedded stack (hash embedder, heuristic reviewer, Qdrant Edge) over
SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hindsight_langchain.testing import system_prompt_of
from hindsight_langgraph.examples.scripted_model import read_advice, scripted_support_model
from hindsight_langgraph.examples.support_agent import (
    ESCALATION,
    MAX_TOOL_CALLS,
    REQUESTS,
    SYSTEM_PROMPT,
    TENANT,
    build_graph,
    run_demo,
)
from hindsight_langgraph.examples.support_tools import SupportDesk
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_support import closing  # noqa: F401  (autouse: closes opened memories)

from hindsight import BLOCK_END, BLOCK_START, Memory

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def tools_of(run: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["tool"], s["status"]) for s in run["steps"]]


@pytest.fixture
def demo(tmp_path: Path, database_url: str) -> tuple[dict[str, Any], list[str], Any, Memory]:
    model = scripted_support_model()
    lines: list[str] = []
    mem = Memory(data_dir=tmp_path / "data", database_url=database_url)
    try:
        report = run_demo(memory=mem, model=model, out=lines.append)
        yield report, lines, model, mem
    finally:
        mem.close()


def test_run_1_fails_on_the_timeout(demo: Any) -> None:
    report, lines, _, mem = demo
    run1 = report["run1"]
    assert tools_of(run1) == [("order_query", "timeout")] * 3 + [("order_query_cached", "ok")]
    assert run1["success"] is False
    assert run1["answer"] == ESCALATION.format(n=MAX_TOOL_CALLS)
    assert run1["recalled"] == [] and BLOCK_START not in run1["system_prompt"]
    traj = mem.get_trajectory(run1["trajectory_id"], tenant_id=TENANT)
    assert traj.outcome.value == "failure"
    results = [
        (e.tool_name, e.status.value) for e in traj.events if e.event_type.value == "tool_result"
    ]
    assert results == [("order_query", "timeout")] * 3 + [("order_query_cached", "success")]
    assert sum(e.event_type.value == "model_call" for e in traj.events) == 5
    assert any("FAILURE" in line and "3 timeouts" in line for line in lines)


def test_the_review_stores_the_lesson_to_use_the_cache_after_the_timeout(demo: Any) -> None:
    report, lines, _, _ = demo
    contents = [lesson["content"] for lesson in report["lessons"]]
    cache = [
        c
        for c in contents
        if re.search(r"order_query (?:can time|times|timed) out", c) and "order_query_cached" in c
    ]
    assert cache, contents
    retry = [c for c in contents if c.startswith("order_query can time out") and "retry once" in c]
    assert retry, contents
    printed = "\n".join(lines)
    assert cache[0] in printed and retry[0] in printed


def test_run_2_recalls_the_lesson_with_its_score_breakdown_and_succeeds(demo: Any) -> None:
    report, lines, model, mem = demo
    run2 = report["run2"]
    recalled = {h["content"]: h for h in run2["recalled"]}
    lesson = next(c for c in recalled if "order_query_cached" in c)
    breakdown = recalled[lesson]["breakdown"]
    assert breakdown["similarity"] > 0 and breakdown["weights"]["similarity"] == 0.6
    printed = "\n".join(lines)
    assert "similarity + 0.3 confidence" in printed
    assert any(line.strip().startswith("score ") and lesson in line for line in lines)
    # The system prompt the model read in run 2 ends with the delimited lesson.
    prompts = [system_prompt_of(p) for p in model.prompts]
    run2_prompts = prompts[-len([s for s in run2["steps"]]) - 1 :]
    for prompt in run2_prompts:
        assert prompt.startswith(SYSTEM_PROMPT + "\n\n" + BLOCK_START)
        assert prompt.rstrip().endswith(BLOCK_END)
        assert lesson in prompt[prompt.rindex(BLOCK_START) :]
    assert run2["system_prompt"] == run2_prompts[-1]
    # What the model read decides what it does: retry the live service as often as the lessons
    # allow, then the cache, then the refund.
    advice = read_advice(run2_prompts[0])
    retries = advice.retries.get("order_query", 0)
    assert advice.fallback == {"order_query": "order_query_cached"}
    assert tools_of(run2) == [("order_query", "timeout")] * (1 + retries) + [
        ("order_query_cached", "ok"),
        ("refund", "ok"),
    ]
    assert run2["success"] is True
    assert "Done: I refunded 89.50 for order 9907" in run2["answer"]
    assert any("SUCCESS" in line for line in lines)
    traj = mem.get_trajectory(run2["trajectory_id"], tenant_id=TENANT)
    assert traj.outcome.value == "success"
    # The success is credited to what was recalled.
    for hit in run2["recalled"]:
        assert report["confidence_after"][hit["id"]] > hit["confidence"]


def test_without_the_lesson_the_second_request_fails_too(tmp_path: Path) -> None:
    with Memory(data_dir=tmp_path / "empty") as mem:
        graph = build_graph(
            mem, scripted_support_model(), SupportDesk(hour=12), checkpointer=InMemorySaver()
        )
        state = graph.invoke(
            {"messages": [SystemMessage(SYSTEM_PROMPT), HumanMessage(REQUESTS[1])]},
            {"configurable": {"thread_id": "control"}},
        )
    assert state["messages"][-1].content == ESCALATION.format(n=MAX_TOOL_CALLS)


def test_outside_peak_hours_run_1_succeeds_without_any_lesson(tmp_path: Path) -> None:
    with Memory(data_dir=tmp_path / "quiet") as mem:
        graph = build_graph(mem, scripted_support_model(), SupportDesk(hour=16))
        state = graph.invoke(
            {"messages": [SystemMessage(SYSTEM_PROMPT), HumanMessage(REQUESTS[0])]}
        )
    assert state["messages"][-1].content.startswith("Done: I refunded 249.00")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "HINDSIGHT_DATA_DIR": str(tmp_path / "cli-data")}
    env.pop("HINDSIGHT_DATABASE_URL", None)
    return env


def test_hindsight_demo_runs_the_langgraph_example(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "hindsight"), "demo", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["run1"]["success"] is False and report["run2"]["success"] is True
    assert report["run2"]["system_prompt"].rstrip().endswith(BLOCK_END)
    text = subprocess.run(
        [str(BIN / "hindsight"), "demo"],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(tmp_path),
    )
    assert text.returncode == 0, text.stderr
    assert "Run 1" in text.stdout and "FAILURE" in text.stdout and "SUCCESS" in text.stdout


def test_hindsight_demo_leaves_the_users_data_dir_alone(tmp_path: Path) -> None:
    env = _env(tmp_path)  # HINDSIGHT_DATA_DIR names the user's real store
    done = subprocess.run(
        [str(BIN / "hindsight"), "demo", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "cli-data").exists() or not any((tmp_path / "cli-data").iterdir())
    kept = tmp_path / "kept"
    given = subprocess.run(
        [str(BIN / "hindsight"), "--data-dir", str(kept), "demo", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert given.returncode == 0, given.stderr
    assert (kept / "hindsight.db").exists()


def test_hindsight_demo_without_langgraph_falls_back_and_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['langgraph'] = None\n"
        "sys.argv = ['hindsight', 'demo']\n"
        "from hindsight.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert 'pip install "hindsight-memory[langgraph]"' in done.stderr
    assert "Run 1" in done.stdout  # the framework-free demo ran
    with_model = subprocess.run(
        [sys.executable, "-c", code.replace("'demo']", "'demo', '--model', 'openai:x']")],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(tmp_path),
    )
    assert with_model.returncode == 2
    assert "hindsight-memory[langgraph]" in with_model.stderr


def test_the_example_script_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "examples" / "langgraph_agent.py"),
            "--json",
            "--data-dir",
            str(tmp_path / "script"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [s["status"] for s in report["run1"]["steps"]].count("timeout") == 3
    assert report["run2"]["success"] is True
