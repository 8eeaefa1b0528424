"""Relevance of recall on real trajectories: tau-bench airline (gpt-4o, 50 tasks x 4 trials).

Not part of the default test run (tests/test_relevance.py runs it on a few tasks). Run::

    python tests/benchmarks/relevance.py [--embedders hash,local] [--tasks 50] [--json]

For each embedder x reviewer available offline, in a fresh embedded store (SQLite + Qdrant
Edge, the default), through the engine as a user would:

1. trials 0-2 of every task are ingested (``hindsight.capture.ingest.iter_trajectories``) and stored
   with ``Memory.store_episode(review=False)``, then reviewed with ``Memory.review_now`` (the
   lessons go through the usual write path: guard, dedup);
2. for every task, trial 3's first user message is the query: ``Memory.recall(query,
   top_k=k)``; a recalled lesson is *relevant* when one of its source trajectories is a
   trial of the same task;
3. recall@k, hit@k and MRR@k (:mod:`tests.benchmarks._relevance_metrics`) are averaged over
   the tasks that have at least one relevant lesson, next to their exact expected values for
   a random ranking of the same pool (all active lessons of the tenant).

Reviewers: only ``heuristic`` runs offline. ``llm`` and ``both`` need a language model, which
this machine does not have (no network, no local model server); they are reported as not
measured. The review prompt's size is measured without a model: every trajectory of the file
is compressed as :class:`hindsight.review.llm.reviewer.LLMReviewer` would before sending it
(:func:`prompt_sizes`).

The data file is read where it is (``--path``, default ``../shared/data/tau-bench/
gpt-4o-airline.json`` beside the repository); nothing is copied.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import mean, median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no cost-map fetch

from hindsight.capture.ingest import iter_trajectories
from hindsight.models import ExperienceKind, Trajectory
from tests.benchmarks._relevance_metrics import (
    hit_at_k,
    random_expectation,
    recall_at_k,
    reciprocal_rank,
)

DEFAULT_PATH = Path(__file__).resolve().parents[3] / "shared/data/tau-bench/gpt-4o-airline.json"
TENANT = "tau"
#: reviewer -> why it is not measured here (None: measured).
REVIEWERS: dict[str, str | None] = {
    "heuristic": None,
    "llm": "needs a language model; none is reachable offline on this machine",
    "both": "needs a language model (heuristic + llm); none is reachable offline",
}
EMBEDDERS = {"hash": "hash", "local": "local"}  # label -> MemoryConfig.embedding_model


def load_trials(path: Path, tasks: int | None = None) -> dict[int, dict[int, Trajectory]]:
    """``{task_id: {trial: Trajectory}}`` of the file, the first ``tasks`` task ids only.

    Raises:
        InvalidTrajectoryError: the file is missing or malformed.
        ValueError: a record has no ``task_id`` / ``trial``.
    """
    out: dict[int, dict[int, Trajectory]] = {}
    for traj in iter_trajectories(path, tenant_id=TENANT, format="tau-bench"):
        try:
            task, trial = int(traj.metadata["task_id"]), int(traj.metadata["trial"])
        except (KeyError, TypeError, ValueError):
            where = traj.metadata.get("source_record")
            raise ValueError(f"record {where} lacks task_id/trial") from None
        out.setdefault(task, {})[trial] = traj
    keep = sorted(out)[:tasks] if tasks is not None else sorted(out)
    return {t: out[t] for t in keep}


def score_queries(
    rankings: dict[int, list[str]],
    relevant: dict[int, set[str]],
    pool: int,
    k: int,
) -> dict[str, Any]:
    """Average recall@k / hit@k / MRR@k over queries that have a relevant item, plus the
    exact random-ranking expectation of each over the same queries and ``pool``.

    Args:
        rankings: query id -> ids returned, best first.
        relevant: query id -> relevant ids (a query with none is skipped and counted).
        pool: candidates a random ranking would draw from.
        k: cutoff.

    Returns:
        ``{"queries", "skipped", "recall", "hit", "mrr", "random": {"recall", "hit", "mrr"}}``.

    Raises:
        ValueError: no query has a relevant item, or ``pool``/``k`` are out of range.
    """
    scored = [q for q in rankings if relevant.get(q)]
    if not scored:
        raise ValueError("no query has a relevant item: nothing to score")
    rand = [random_expectation(pool, len(relevant[q]), k) for q in scored]
    return {
        "queries": len(scored),
        "skipped": len(rankings) - len(scored),
        "recall": mean(recall_at_k(rankings[q], relevant[q], k) for q in scored),
        "hit": mean(hit_at_k(rankings[q], relevant[q], k) for q in scored),
        "mrr": mean(reciprocal_rank(rankings[q], relevant[q], k) for q in scored),
        "random": {
            "recall": mean(r["recall"] for r in rand),
            "hit": mean(r["hit"] for r in rand),
            "mrr": mean(r["rr"] for r in rand),
        },
    }


def evaluate(
    trials: dict[int, dict[int, Trajectory]],
    *,
    embedding_model: str = "hash",
    reviewer: str = "heuristic",
    k: int = 5,
    data_dir: Path | None = None,
    train_trials: Sequence[int] = (0, 1, 2),
    query_trial: int = 3,
) -> dict[str, Any]:
    """Review ``train_trials`` of every task into a fresh store, query with ``query_trial``.

    Args:
        trials: from :func:`load_trials`.
        embedding_model: ``MemoryConfig.embedding_model`` (``"hash"``, ``"local"``, ...).
        reviewer: ``"heuristic"`` (``"llm"``/``"both"`` need a model configured in the env).
        k: top_k of recall and the metrics' cutoff.
        data_dir: the store's folder (must be new or empty); default a temporary one.

    Returns:
        :func:`score_queries`'s dict plus ``embedder``, ``reviewer``, ``k``, ``tasks``,
        ``trajectories`` (reviewed), ``lessons`` (active, episodes excluded: the pool),
        ``returned`` (mean lessons recalled per query), ``seconds`` (review + recall), and
        ``per_task`` (``{task: {"relevant", "ranks"}}``: 1-based ranks of the relevant hits).

    Raises:
        ValueError: a task lacks a query trial, or nothing is relevant for any task.
    """
    from hindsight import Memory

    missing = [t for t, by_trial in trials.items() if query_trial not in by_trial]
    if missing:
        raise ValueError(f"tasks {missing[:5]} have no trial {query_trial} to query with")
    tmp = tempfile.TemporaryDirectory(prefix="hindsight-relevance-") if data_dir is None else None
    root = Path(tmp.name) if tmp is not None else Path(data_dir)  # type: ignore[arg-type]
    start = time.perf_counter()
    try:
        with Memory(
            data_dir=root,
            embedding_model=embedding_model,
            reviewer=reviewer,
            background_review=False,
        ) as mem:
            task_of: dict[str, int] = {}
            for task, by_trial in trials.items():
                for trial in train_trials:
                    if trial in by_trial:
                        receipt = mem.store_episode(by_trial[trial], review=False)
                        task_of[receipt.trajectory_id] = task
                        mem.review_now(receipt.trajectory_id, tenant_id=TENANT)
            lessons = [
                e
                for e in mem.list_experiences(tenant_id=TENANT, limit=10000)
                if e.kind is not ExperienceKind.EPISODE
            ]
            relevant = {
                task: {
                    e.id
                    for e in lessons
                    if any(task_of.get(s) == task for s in e.source_trajectory_ids)
                }
                for task in trials
            }
            rankings: dict[int, list[str]] = {}
            for task, by_trial in trials.items():
                query = by_trial[query_trial].task or ""
                hits = mem.recall(query, tenant_id=TENANT, top_k=k).hits
                rankings[task] = [h.experience.id for h in hits]
    finally:
        if tmp is not None:
            tmp.cleanup()
    result = score_queries(rankings, relevant, len(lessons), k)
    result.update(
        embedder=embedding_model,
        reviewer=reviewer,
        k=k,
        tasks=len(trials),
        trajectories=len(task_of),
        lessons=len(lessons),
        returned=mean(len(r) for r in rankings.values()),
        seconds=time.perf_counter() - start,
        per_task={
            task: {
                "relevant": len(relevant[task]),
                "ranks": [i + 1 for i, x in enumerate(rankings[task]) if x in relevant[task]],
            }
            for task in trials
        },
    )
    return result


def prompt_sizes(
    trajectories: Sequence[Trajectory], model: str = "openai/gpt-4o-mini"
) -> dict[str, Any]:
    """Size of the LLM review request per trajectory, measured without calling a model.

    Each trajectory is compressed and wrapped exactly as :class:`LLMReviewer` does
    (``max_input_tokens`` 6000, few-shot on); tokens are counted with ``model``'s tokenizer
    as litellm ships it (offline). Returns ``{"trajectories", "original_tokens",
    "compressed_tokens", "prompt_tokens"}`` (each ``{"mean", "median", "max"}``; original =
    every event in full, compressed = the trajectory part of the request, prompt = the whole
    request: system prompt + few-shot + trajectory), ``"ratio"`` (mean of per-trajectory
    compressed/original), ``"ratio_total"`` (sum compressed / sum original), and
    ``"compressed_runs"`` (how many came out smaller at all: long outputs and arguments are cut
    even under budget), ``"over_budget"`` (how many exceeded ``"budget"``, the reviewer's
    ``max_input_tokens``, in full, so that middle steps had to be left out).

    Raises:
        ValueError: no trajectories.
    """
    from hindsight.review.llm.reviewer import LLMReviewer

    if not trajectories:
        raise ValueError("no trajectories to measure")
    reviewer = LLMReviewer(model)
    rows = []
    for traj in trajectories:
        compressed = reviewer.compress(traj)
        prompt = sum(reviewer.count_tokens(m["content"]) for m in reviewer.build_messages(traj))
        rows.append((compressed.original_tokens, compressed.compressed_tokens, prompt))

    def stats(values: list[int]) -> dict[str, float]:
        return {"mean": mean(values), "median": median(values), "max": max(values)}

    orig, comp, prompt_tokens = (list(col) for col in zip(*rows, strict=True))
    return {
        "trajectories": len(rows),
        "original_tokens": stats(orig),
        "compressed_tokens": stats(comp),
        "prompt_tokens": stats(prompt_tokens),
        "ratio": mean(c / o for o, c, _ in rows),
        "ratio_total": sum(comp) / sum(orig),
        "compressed_runs": sum(c < o for o, c, _ in rows),
        "over_budget": sum(o > reviewer.max_input_tokens for o, _, _ in rows),
        "budget": reviewer.max_input_tokens,
    }


def format_report(report: dict[str, Any]) -> str:
    """Plain-text tables of :func:`main`'s report."""
    k = report["k"]
    lines = [
        f"tau-bench airline, {report['tasks']} tasks: trials 0-2 reviewed, trial 3 queries, "
        f"top {k}",
        f"{'embedder':<10} {'reviewer':<10} {'lessons':>7} {'queries':>7} "
        f"{f'recall@{k}':>9} {'(random)':>9} {f'hit@{k}':>7} {'(random)':>9} "
        f"{f'MRR@{k}':>7} {'(random)':>9}",
    ]
    for r in report["runs"]:
        lines.append(
            f"{r['embedder']:<10} {r['reviewer']:<10} {r['lessons']:7d} {r['queries']:7d} "
            f"{r['recall']:9.3f} {r['random']['recall']:9.3f} {r['hit']:7.3f} "
            f"{r['random']['hit']:9.3f} {r['mrr']:7.3f} {r['random']['mrr']:9.3f}"
        )
    for name, why in report["not_measured"].items():
        lines.append(f"not measured: {name}: {why}")
    p = report.get("prompt")
    if p:
        lines.append(
            f"review prompt ({p['trajectories']} trajectories): trajectory "
            f"{p['original_tokens']['mean']:.0f} -> {p['compressed_tokens']['mean']:.0f} tokens "
            f"on average (ratio {p['ratio']:.2f}, total {p['ratio_total']:.2f}; "
            f"{p['compressed_runs']} runs shortened, {p['over_budget']} over the "
            f"{p['budget']}-token budget); whole request "
            f"{p['prompt_tokens']['mean']:.0f} tokens on average, max {p['prompt_tokens']['max']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring. Returns the exit code."""
    parser = argparse.ArgumentParser(prog="python tests/benchmarks/relevance.py")
    parser.add_argument("--path", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--embedders", default="hash,local", help=f"from {list(EMBEDDERS)}")
    parser.add_argument("--reviewers", default="heuristic", help=f"from {list(REVIEWERS)}")
    parser.add_argument("--tasks", type=int, default=None, help="first N tasks (default all)")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    embedders = [e.strip() for e in args.embedders.split(",") if e.strip()]
    reviewers = [r.strip() for r in args.reviewers.split(",") if r.strip()]
    bad = [e for e in embedders if e not in EMBEDDERS] + [
        r for r in reviewers if r not in REVIEWERS
    ]
    if bad or not embedders or not reviewers:
        parser.error(
            f"unknown embedder/reviewer {bad}; "
            f"embedders {list(EMBEDDERS)}, reviewers {list(REVIEWERS)}"
        )
    if (args.tasks is not None and args.tasks < 1) or args.top_k < 1:
        parser.error(f"--tasks and --top-k must be >= 1, got {args.tasks}, {args.top_k}")
    if not args.path.is_file():
        parser.error(f"tau-bench file not found: {args.path}")
    trials = load_trials(args.path, args.tasks)
    report: dict[str, Any] = {"tasks": len(trials), "k": args.top_k, "runs": [], "not_measured": {}}
    for name, why in REVIEWERS.items():
        if why is not None:
            report["not_measured"][name] = why
    for emb in embedders:
        for rev in reviewers:
            if REVIEWERS[rev] is not None:
                continue
            print(f"relevance: {emb} x {rev}", file=sys.stderr, flush=True)
            report["runs"].append(
                evaluate(trials, embedding_model=EMBEDDERS[emb], reviewer=rev, k=args.top_k)
            )
    report["prompt"] = prompt_sizes([t for by_trial in trials.values() for t in by_trial.values()])
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
