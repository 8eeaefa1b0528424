"""The review-prompt benchmark (tests/benchmarks/review_prompt.py) measures what it claims."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchmarks import review_prompt


def test_prompt_sizes_measure_the_compressed_review_request(tau_bench_path: Path) -> None:
    trajs = review_prompt.load(tau_bench_path, tasks=2)
    assert len(trajs) == 8 and {t.metadata["task_id"] for t in trajs} == {0, 1}
    out = review_prompt.prompt_sizes(trajs[:5])
    assert out["trajectories"] == 5
    assert out["compressed_tokens"]["max"] <= 6000
    assert out["compressed_tokens"]["mean"] <= out["original_tokens"]["mean"]
    assert out["prompt_tokens"]["mean"] > out["compressed_tokens"]["mean"]  # + system, few-shot
    assert 0 < out["ratio"] <= 1 and 0 < out["ratio_total"] <= 1
    assert out["budget"] == 6000 and 0 <= out["over_budget"] <= out["compressed_runs"] <= 5
    with pytest.raises(ValueError, match="no trajectories"):
        review_prompt.prompt_sizes([])


def test_cli_json_and_one_line_errors(
    tau_bench_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert review_prompt.main(["--path", str(tau_bench_path), "--tasks", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trajectories"] == 4
    for bad in (["--tasks", "0"], ["--path", str(tau_bench_path) + ".nope"]):
        with pytest.raises(SystemExit) as exc:
            review_prompt.main(bad)
        assert exc.value.code == 2
    assert "tau-bench file not found" in capsys.readouterr().err
