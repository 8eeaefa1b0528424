"""The relevance benchmark (tests/benchmarks/relevance.py) computes what it claims.

Metrics on hand-made rankings with known values, the random baseline against exhaustive
enumeration, and the pipeline on a few real tau-bench tasks (hash embedder, heuristic
reviewer). No timing is asserted.
"""

from __future__ import annotations

import itertools
import json
from math import isclose
from pathlib import Path

import pytest

from tests.benchmarks import relevance
from tests.benchmarks._relevance_metrics import (
    hit_at_k,
    random_expectation,
    recall_at_k,
    reciprocal_rank,
)


def test_metrics_on_a_hand_made_ranking() -> None:
    ranked = ["a", "b", "c", "d"]
    relevant = {"b", "d", "z"}
    assert recall_at_k(ranked, relevant, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, relevant, 4) == pytest.approx(2 / 3)
    assert hit_at_k(ranked, relevant, 1) == 0.0
    assert hit_at_k(ranked, relevant, 2) == 1.0
    assert reciprocal_rank(ranked, relevant, 5) == 0.5
    assert reciprocal_rank(ranked, {"d"}, 3) == 0.0  # beyond the cutoff
    assert reciprocal_rank([], relevant, 5) == 0.0


def test_metrics_refuse_undefined_input() -> None:
    with pytest.raises(ValueError, match="no relevant"):
        recall_at_k(["a"], set(), 5)
    for fn in (recall_at_k, hit_at_k, reciprocal_rank):
        with pytest.raises(ValueError, match="k must be"):
            fn(["a"], {"a"}, 0)
    with pytest.raises(ValueError, match="relevant <= pool"):
        random_expectation(3, 4, 2)
    with pytest.raises(ValueError, match="pool >= 1"):
        random_expectation(0, 0, 1)


def test_random_expectation_small_known_values() -> None:
    assert random_expectation(2, 1, 1) == pytest.approx({"recall": 0.5, "hit": 0.5, "rr": 0.5})
    # one relevant item among 5, all shown: found for sure, at a uniform place
    exp = random_expectation(5, 1, 5)
    assert exp["recall"] == 1.0 and exp["hit"] == 1.0
    assert exp["rr"] == pytest.approx(sum(1 / i for i in range(1, 6)) / 5)
    # k beyond the pool
    assert random_expectation(3, 3, 10) == pytest.approx({"recall": 1.0, "hit": 1.0, "rr": 1.0})


@pytest.mark.parametrize(("pool", "rel", "k"), [(6, 2, 3), (7, 1, 5), (5, 4, 2), (6, 3, 6)])
def test_random_expectation_matches_every_permutation(pool: int, rel: int, k: int) -> None:
    relevant = {str(i) for i in range(rel)}
    totals = {"recall": 0.0, "hit": 0.0, "rr": 0.0}
    perms = list(itertools.permutations([str(i) for i in range(pool)]))
    for perm in perms:
        totals["recall"] += recall_at_k(perm, relevant, k)
        totals["hit"] += hit_at_k(perm, relevant, k)
        totals["rr"] += reciprocal_rank(perm, relevant, k)
    exact = random_expectation(pool, rel, k)
    for key, total in totals.items():
        assert isclose(exact[key], total / len(perms), rel_tol=1e-12), key


def test_score_queries_averages_and_skips_queries_without_relevant_items() -> None:
    rankings = {1: ["a", "b"], 2: ["c", "d"], 3: ["e"]}
    relevant = {1: {"b"}, 2: {"x", "y"}, 3: set()}
    out = relevance.score_queries(rankings, relevant, pool=10, k=2)
    assert out["queries"] == 2 and out["skipped"] == 1
    assert out["recall"] == pytest.approx((1.0 + 0.0) / 2)
    assert out["hit"] == pytest.approx(0.5)
    assert out["mrr"] == pytest.approx((0.5 + 0.0) / 2)
    want = [random_expectation(10, 1, 2), random_expectation(10, 2, 2)]
    assert out["random"]["mrr"] == pytest.approx((want[0]["rr"] + want[1]["rr"]) / 2)
    with pytest.raises(ValueError, match="nothing to score"):
        relevance.score_queries({1: ["a"]}, {1: set()}, pool=3, k=1)


def test_load_trials_groups_the_file_by_task_and_trial(tau_bench_path: Path) -> None:
    trials = relevance.load_trials(tau_bench_path)
    assert len(trials) == 50
    assert all(sorted(by_trial) == [0, 1, 2, 3] for by_trial in trials.values())
    few = relevance.load_trials(tau_bench_path, tasks=3)
    assert sorted(few) == [0, 1, 2]
    assert few[1][3].metadata["task_id"] == 1 and few[1][3].metadata["trial"] == 3


@pytest.fixture(scope="module")
def five_tasks(tau_bench_path: Path) -> dict[int, dict[int, object]]:
    return relevance.load_trials(tau_bench_path, tasks=5)  # type: ignore[return-value]


def test_evaluate_on_real_trajectories_is_consistent_and_beats_random(
    five_tasks: dict, tmp_path: Path
) -> None:
    out = relevance.evaluate(
        five_tasks, embedding_model="hash", reviewer="heuristic", k=5, data_dir=tmp_path / "store"
    )
    assert out["trajectories"] == 15 and out["tasks"] == 5
    assert out["lessons"] > 0 and 0 < out["returned"] <= 5
    # the averages are what the per-task ranks say
    rows = [r for r in out["per_task"].values() if r["relevant"]]
    assert out["queries"] == len(rows) and out["skipped"] == 5 - len(rows)
    assert out["hit"] == pytest.approx(sum(bool(r["ranks"]) for r in rows) / len(rows))
    assert out["mrr"] == pytest.approx(
        sum(1 / r["ranks"][0] if r["ranks"] else 0 for r in rows) / len(rows)
    )
    assert out["recall"] == pytest.approx(
        sum(len(r["ranks"]) / r["relevant"] for r in rows) / len(rows)
    )
    # the same store, a random ranking: the hash embedder is deterministic, so this is stable
    assert out["mrr"] > out["random"]["mrr"]
    assert out["recall"] > out["random"]["recall"]


def test_evaluate_refuses_tasks_without_a_query_trial(five_tasks: dict) -> None:
    partial = {0: {t: five_tasks[0][t] for t in (0, 1, 2)}}
    with pytest.raises(ValueError, match="no trial 3"):
        relevance.evaluate(partial)


def test_prompt_sizes_measure_the_compressed_review_request(five_tasks: dict) -> None:
    trajs = [five_tasks[t][0] for t in five_tasks]
    out = relevance.prompt_sizes(trajs)
    assert out["trajectories"] == 5
    assert out["compressed_tokens"]["max"] <= 6000
    assert out["compressed_tokens"]["mean"] <= out["original_tokens"]["mean"]
    assert out["prompt_tokens"]["mean"] > out["compressed_tokens"]["mean"]  # + system, few-shot
    assert 0 < out["ratio"] <= 1 and 0 < out["ratio_total"] <= 1
    assert out["budget"] == 6000 and 0 <= out["over_budget"] <= out["compressed_runs"] <= 5
    with pytest.raises(ValueError, match="no trajectories"):
        relevance.prompt_sizes([])


def test_cli_json_and_one_line_errors(
    tau_bench_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = relevance.main(
        ["--path", str(tau_bench_path), "--embedders", "hash", "--tasks", "2", "--json"]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["embedder"] for r in report["runs"]] == ["hash"]
    assert set(report["not_measured"]) == {"llm", "both"}
    assert report["prompt"]["trajectories"] == 8
    with pytest.raises(SystemExit) as exc:
        relevance.main(["--path", str(tau_bench_path), "--embedders", "word2vec"])
    assert exc.value.code == 2
    assert "unknown embedder/reviewer ['word2vec']" in capsys.readouterr().err
    for bad in (["--tasks", "0"], ["--top-k", "0"], ["--path", str(tau_bench_path) + ".nope"]):
        with pytest.raises(SystemExit) as exc:
            relevance.main(bad)
        assert exc.value.code == 2
    assert "tau-bench file not found" in capsys.readouterr().err
