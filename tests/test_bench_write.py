"""The write-side benchmarks (docs/benchmarks.md#the-write-side) run on small sizes and report their
shape (no assertion on time: they are benchmarks, tests/benchmarks/bench_write_side.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight.bench._perf import (
    _bytecode_env,
    _child_run,
    batch_ingest,
    cold_start_vs_edge,
    review_cpu,
)
from tests.cli_helpers import cli_json

REPO = Path(__file__).resolve().parents[1]


def test_batch_ingest_runs_on_small_sizes(tmp_path: Path) -> None:
    report = batch_ingest([60, 120], batch=30, parent=tmp_path)
    assert [r["size"] for r in report["sizes"]] == [60, 120]
    for row in report["sizes"]:
        assert row["lessons_per_s_wall"] > 0 and row["lessons_per_s_cpu"] > 0
        assert row["created"] + row["merged"] + row["quarantined"] == 30
    (slope,) = report["slope_per_10x"]
    assert (slope["from"], slope["to"]) == (60, 120) and slope["cpu"] > 0
    assert list(tmp_path.iterdir()) == []  # the temporary store is removed


def test_cold_start_and_review_run_on_small_inputs(tmp_path: Path, tau_bench_path: Path) -> None:
    cold = cold_start_vs_edge(30, repeats=1, parent=tmp_path)
    assert cold["hindsight"]["wall_ms"] > 0 and cold["edge"]["wall_ms"] > 0
    assert cold["ratio"]["wall"] > 0 and cold["ratio"]["cpu"] > 0
    review = review_cpu(tau_bench_path, runs=2, parent=tmp_path)
    assert review["runs"] == 2 and review["lessons"] > 0
    assert review["cpu_ms"]["median"] > 0


def test_cold_start_processes_start_from_compiled_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installed package starts from the bytecode pip compiled; a checkout run with
    # PYTHONDONTWRITEBYTECODE (or a read-only one) would time the compiler in every process.
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = _bytecode_env(tmp_path / "pycache")
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["PATH"] == os.environ["PATH"]
    _child_run("import hindsight.bench._perf", env)
    compiled = {p.name.split(".")[0] for p in (tmp_path / "pycache").rglob("*.pyc")}
    assert {"_perf", "_data", "_size"} <= compiled
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        _child_run("1 / 0", env)


def test_hindsight_bench_ingest_prints_json(tmp_path: Path) -> None:
    report = cli_json(
        "bench",
        "ingest",
        "--sizes",
        "20,40",
        "--batch",
        "10",
        "--data-dir",
        str(tmp_path),
        data_dir=tmp_path / "global",
    )
    assert [r["size"] for r in report["sizes"]] == [20, 40]


def test_the_benchmark_script_parses_its_arguments() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tests/benchmarks/bench_write_side.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "--sizes" in done.stdout
