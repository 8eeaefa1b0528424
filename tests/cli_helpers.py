"""Run the real ``hindsight`` command line in a subprocess (``python -m hindsight``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# Variables that would point a CLI run at another store than the test's own.
_STORE_ENV = (
    "DATABASE_URL",
    "VECTOR_DB_URL",
    "EMBEDDING_MODEL",
    "HINDSIGHT_DATABASE_URL",
    "HINDSIGHT_VECTOR_DB_URL",
    "HINDSIGHT_EMBEDDING_MODEL",
    "HINDSIGHT_DATA_DIR",
    "HINDSIGHT_TENANT",
    "HINDSIGHT_REVIEWER",
    "HINDSIGHT_GUARD",
    "HINDSIGHT_GUARD_RULES",
)


def cli_env(data_dir: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a CLI run: this one without store variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in _STORE_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env["COLUMNS"] = "200"  # rich tables: keep documented lines on one line
    env["PYTHONIOENCODING"] = "utf-8"
    if data_dir is not None:
        env["HINDSIGHT_DATA_DIR"] = str(data_dir)
    env.update(extra)
    return env


def run_cli(
    *args: str, data_dir: Path | None, timeout: float = 180, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m hindsight ARGS`` with ``HINDSIGHT_DATA_DIR=data_dir``; never raises on exit."""
    return subprocess.run(
        [sys.executable, "-m", "hindsight", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        env=cli_env(data_dir, **extra_env),
        stdin=subprocess.DEVNULL,
        cwd=REPO,
    )


def cli_json(*args: str, data_dir: Path | None, **extra_env: str) -> Any:
    """Run a command with ``--json``; assert it succeeded and return the parsed document."""
    proc = run_cli(*args, "--json", data_dir=data_dir, **extra_env)
    assert proc.returncode == 0, f"hindsight {' '.join(args)} failed: {proc.stderr}"
    return json.loads(proc.stdout)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int | None = None) -> str:
    """The run failed with one ``error: ...`` line on stderr, no traceback; returns it."""
    assert proc.returncode != 0, proc.stdout
    if code is not None:
        assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in proc.stderr
    return lines[0]
