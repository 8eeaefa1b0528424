"""The "Point at a server" examples of docs/integrations/{langchain,langgraph,llamaindex}.md
run against a live ``hindsight serve`` (every example in docs is run by a test).

Each block marked with this file's path runs alone in a fresh interpreter, in an empty working
directory with an empty HINDSIGHT_DATA_DIR, and HINDSIGHT_URL / HINDSIGHT_API_KEY set as
docs/http.md tells the reader; the runs it prints must then be on the server, in the key's
tenant, and the tenant's stats must count them. tests/test_docs.py skips these blocks (their
``not-tested`` marker names this file).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.conftest import REPO, Served

pytest.importorskip("langchain")
pytest.importorskip("langgraph")
pytest.importorskip("llama_index.core")

MARK = "tests/server/test_integration_docs.py"
TENANT = "acme"  # the tenant the blocks name: "the key's tenant"
_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
_ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")

# page -> (how many runs its block stores, the task of those runs)
PAGES = {
    "langchain": (2, "Where is order 42?"),
    "langgraph": (1, "Where is order 8812?"),
    "llamaindex": (1, "Where is order 42?"),
}


def marked_blocks(page: str) -> list[str]:
    path = REPO / "docs" / "integrations" / f"{page}.md"
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if MARK in before:
            found.append(match.group(1))
    return found


def trajectories(served: Served) -> int:
    with served.http(TENANT) as http:
        response = http.get("/v1/stats")
        response.raise_for_status()
        return int(response.json()["trajectories"])


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_page_has_one_short_marked_block_that_test_docs_skips(page: str) -> None:
    from tests.test_docs import _blocks

    found = marked_blocks(page)
    assert len(found) == 1, f"{page}.md: {len(found)} blocks marked {MARK}"
    code = found[0]
    assert len(code.splitlines()) <= 25
    assert 'os.environ["HINDSIGHT_URL"]' in code and 'os.environ["HINDSIGHT_API_KEY"]' in code
    assert code not in [c for _, c in _blocks()]  # not run by tests/test_docs.py (no server)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_block_runs_and_its_runs_are_stored_on_the_server(
    served_sqlite: Served, page: str, tmp_path: Path
) -> None:
    runs, task = PAGES[page]
    env = {
        **os.environ,
        "HINDSIGHT_URL": served_sqlite.url,
        "HINDSIGHT_API_KEY": served_sqlite.key(TENANT),
        "HINDSIGHT_DATA_DIR": str(tmp_path / "data"),  # nothing may be stored locally
    }
    for name in ("DATABASE_URL", "HINDSIGHT_DATABASE_URL"):
        env.pop(name, None)
    before = trajectories(served_sqlite)
    done = subprocess.run(
        [sys.executable, "-c", marked_blocks(page)[0]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "ServiceError" not in done.stderr, done.stderr[-3000:]  # a store that failed is logged
    assert trajectories(served_sqlite) == before + runs
    ids = _ID.findall(done.stdout)
    assert len(set(ids)) == runs, done.stdout
    with served_sqlite.client(TENANT) as client:
        for trajectory_id in ids:
            stored = client.get_trajectory(trajectory_id)
            assert stored.tenant_id == TENANT
            assert stored.task == task
            assert [e for e in stored.events if e.event_type.value == "final_answer"]
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())
