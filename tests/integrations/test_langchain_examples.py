"""The LangChain examples run offline, as a user would run them
(docs/integrations/langchain.md#examples)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)

# isort: split

from hindsight import BLOCK_END, BLOCK_START
from tests.integrations.langchain_support import TENANT  # noqa: F401  (skip guard)

TIMES_OUT = re.compile(r"carrier_status (?:can time|times|timed) out")  # the lesson's wording

REPO = Path(__file__).resolve().parents[2]


def _run(script: str, tmp_path: Path, *args: str) -> str:
    env = {**os.environ, "HINDSIGHT_DATA_DIR": str(tmp_path / "data")}
    env.pop("HINDSIGHT_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / script), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_callback_example_captures_three_tools_with_the_timeout(tmp_path: Path) -> None:
    out = _run("langchain_callback.py", tmp_path)
    assert "answer: Your order A1 is paid and out for delivery." in out
    rows = [line.split() for line in out.splitlines() if line.startswith("  ")]
    tools = [(r[0], r[1], r[2]) for r in rows if r[0] == "tool_result"]
    assert tools == [
        ("tool_result", "get_order", "success"),
        ("tool_result", "carrier_status", "timeout"),
        ("tool_result", "tracking_cache", "success"),
    ]
    assert "12 events" in out
    assert TIMES_OUT.search(out.split("lessons:")[1])  # the review ran


def test_agent_example_learns_across_two_runs(tmp_path: Path) -> None:
    out = _run("langchain_agent.py", tmp_path, "--data-dir", str(tmp_path / "mem"))
    run1, run2 = out.split("run 2:")
    assert "tools: carrier_status=timeout; outcome: failure" in run1
    assert "recalled into its tail:\n    (none)" in run1
    assert "tools: tracking_cache=success; outcome: success" in run2
    assert "system prompt starts with the original: True" in run2
    tail = run2.split("recalled into its tail:\n")[1]
    lines = [line.strip() for line in tail.strip().splitlines()]
    assert lines[0] == BLOCK_START and lines[-1] == BLOCK_END
    assert any(TIMES_OUT.search(line) for line in lines)
    assert (tmp_path / "mem" / "hindsight.db").exists()
