"""docs/http.md runs: its bash (curl) blocks in one shell session and each python block in a
fresh interpreter, against a live ``hindsight serve`` with HINDSIGHT_URL and HINDSIGHT_API_KEY
set, as the page tells its reader (every example in docs is run by a test)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.server.conftest import REPO, Served

PAGE = REPO / "docs" / "http.md"
MARK = "tests/server/test_http_docs.py"
_FENCE = re.compile(r"^```(bash|python)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks(lang: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if match.group(1) == lang and MARK in before:
            found.append(match.group(2))
    return found


def env_for(served: Served) -> dict[str, str]:
    return {**os.environ, "HINDSIGHT_URL": served.url, "HINDSIGHT_API_KEY": served.key("docs")}


def test_the_page_has_examples_for_every_route_group() -> None:
    script = "\n".join(blocks("bash"))
    for route in (
        "/health",
        "/ready",
        "/v1/episodes",
        "/review",
        "/v1/recall",
        "/v1/experiences",
        "/v1/experiences:batch",
        "/history",
        "/rollback",
        "/v1/forget",
        "/v1/outcomes",
        "/v1/quarantine",
        "/v1/jobs",
        "/v1/jobs/retry",
        "/v1/stats",
        "/v1/trajectories",
    ):
        assert route in script, route
    assert len(blocks("python")) == 3


def test_curl_examples_run(served_sqlite: Served) -> None:
    script = "set -euo pipefail\n" + "\n".join(blocks("bash"))
    done = subprocess.run(
        ["bash", "-c", script],
        env=env_for(served_sqlite),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    out = done.stdout
    assert '{"status":"ok"}' in out and "Project Zephyr deploys with Helm" in out
    assert "deleted" in out  # the rejected lesson
    assert "0 created\n1 merged\n" in out  # the batch: the second item folded into the first
    # paging: a full first page with a cursor, the next page by it, another list's refusal
    assert '"n": 2,\n  "next_cursor": true' in out
    assert "cursor is not a next_cursor of this list (pass it back unchanged)" in out


@pytest.mark.parametrize("index", [0, 1, 2])
def test_python_examples_run(served_sqlite: Served, index: int) -> None:
    code = blocks("python")[index]
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env_for(served_sqlite),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    if index == 0:
        assert "--- Past experience" in done.stdout and "not found:" in done.stdout
    elif index == 1:
        assert done.stdout.count("hits") == 2
    else:  # paging: a full first page, a second one by its cursor, every lesson once
        assert "2 on the first page; more: True\n2 on the second\n" in done.stdout
