"""Every ```python block of docs/**/*.md and README.md runs (docs are part of the feature).

Each block runs alone in a fresh interpreter, in a temporary working directory, with
HINDSIGHT_DATA_DIR pointing to a temporary folder. A block preceded by the line
``<!-- not-tested: reason -->`` is skipped (the reason is required).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_SKIP = re.compile(r"<!--\s*not-tested:\s*\S.*?-->\s*$")


def _blocks() -> list[tuple[str, str]]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    found = []
    for path in files:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            if _SKIP.search(before):
                continue
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{path.relative_to(REPO)}:{line}", match.group(1)))
    return found


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_doc_block_runs(where: str, code: str, tmp_path: Path) -> None:
    env = {**os.environ, "HINDSIGHT_DATA_DIR": str(tmp_path / "data")}
    env.pop("HINDSIGHT_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, f"{where} failed:\n{done.stderr[-3000:]}"
