"""``run_learning``: the whole benchmark on one file, and the report's text form."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hindsight._contract import input_file
from hindsight._errors import UsageError
from hindsight.bench.learning._conditions import (
    evaluate_all,
    nearest_conditions,
    within_task_contrasts,
)
from hindsight.bench.learning._data import load_runs, split_runs
from hindsight.bench.learning._harness import Context, evaluate_baseline, evaluate_reviewer

__all__ = ["REVIEWERS", "commit_info", "parse_every", "parse_trials", "run_learning"]

REVIEWERS = ("heuristic", "llm", "both")
"""Reviewers the benchmark can run; ``llm`` and ``both`` need ``REFLECTION_MODEL``."""
MAX_K = 1000


def parse_trials(text: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]`` (order kept, repeats dropped).

    Raises:
        UsageError: empty, or a part is not a whole number >= 0 (one line).
    """
    out: list[int] = []
    for part in str(text).split(","):
        raw = part.strip()
        if not raw:
            continue
        if not raw.isdigit():
            raise UsageError(f"--train-trials: {raw!r} is not a trial number (0, 1, 2 ...)")
        if int(raw) not in out:
            out.append(int(raw))
    if not out:
        raise UsageError("--train-trials needs at least one trial, e.g. 0,1,2")
    return out


def parse_every(text: str) -> int:
    """``"every:5"`` -> ``5`` (the task split's held-out tasks: every N-th, N >= 2).

    Raises:
        UsageError: not ``every:N`` with a whole N >= 2 (one line).
    """
    raw = str(text).strip().lower()
    number = raw.removeprefix("every:")
    if raw == number or not number.isdigit() or int(number) < 2:
        raise UsageError(
            f"--held-out-tasks must be every:N with N >= 2 (e.g. every:5), got {text!r}"
        )
    return int(number)


def commit_info() -> dict[str, Any]:
    """``{"commit", "dirty"}`` of the git checkout hindsight runs from (``None`` when it is not
    one, e.g. an installed wheel). ``dirty``: files of the package differ from the commit."""
    import hindsight

    root = Path(hindsight.__file__).resolve().parents[1]

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no", "--", "hindsight")
    return {"commit": commit, "dirty": bool(status) if commit else None}


def _check_reviewers(reviewers: Sequence[str]) -> list[str]:
    from hindsight.config import MemoryConfig

    names = [r.strip().lower() for r in reviewers if r.strip()]
    bad = [r for r in names if r not in REVIEWERS]
    if bad or not names:
        raise UsageError(f"--reviewers: unknown {bad or reviewers!r}; choose from {REVIEWERS}")
    needs_model = [r for r in names if r != "heuristic"]
    if needs_model and not MemoryConfig().reflection_model:
        raise UsageError(
            f"reviewer {needs_model[0]!r} needs a model: set REFLECTION_MODEL (and LLM_BASE_URL "
            "for a local server); without one, run --reviewers heuristic"
        )
    return list(dict.fromkeys(names))


def _embedders(specs: Sequence[str]) -> list[tuple[str, Any]]:
    """``(spec, embedder)`` for each spec, built once (a local model loads once per run)."""
    from hindsight.embedders import make_embedder

    names = list(dict.fromkeys(s.strip() for s in specs if s.strip()))
    if not names:
        raise UsageError("--embedders needs at least one embedder, e.g. hash,local")
    out = []
    for spec in names:
        try:
            out.append((spec, make_embedder(spec)))
        except ImportError as exc:
            raise UsageError(f"--embedders {spec}: {exc}") from None
    return out


def run_learning(
    path: Path,
    *,
    train_trials: Sequence[int] = (0, 1, 2),
    query_trial: int = 3,
    embedders: Sequence[str] = ("hash",),
    reviewers: Sequence[str] = ("heuristic",),
    k: int = 5,
    tasks: int | None = None,
    parent: Path | None = None,
    progress: Callable[[str], None] | None = None,
    held_out_every: int = 5,
) -> dict[str, Any]:
    """Run the learning benchmark on a tau-bench file (:mod:`hindsight.bench.learning`).

    Args:
        path: the tau-bench results file (JSON array or JSON Lines), read in place.
        train_trials: trials reviewed; query_trial: the trial held out (one run per task).
        embedders: embedder specs (``hash``, ``local``, ...); reviewers: from :data:`REVIEWERS`.
        k: recall's top_k and the metrics' cutoff (1..1000).
        tasks: only the first N task ids (default all).
        parent: folder for the temporary stores (default: the system temp dir).
        progress: called with a short line per step.
        held_out_every: the task split holds out every run of every N-th task
            (:mod:`hindsight.bench.learning._conditions`).

    Returns:
        ``{"file", "tasks", "train_trials", "query_trial", "k", "train_runs", "held_out_runs",
        "held_out_failed", "baselines": [per embedder], "runs": [per embedder x reviewer],
        "conditions": [per split x mode, the strict figures], "contrasts": {tool: {"worse",
        "better"}} (task groups, over every run of the file), "nearest": {mode: [per decision
        set, its strongest condition]} (:func:`~hindsight.bench.learning._conditions.
        nearest_conditions`)
        (each with ``embedder_spec``, the spec given, and ``embedder``, the model's name),
        "commit", "dirty", "machine", "cpu_seconds", "wall_seconds"}``.

    Raises:
        UsageError: a bad argument (one line). InvalidTrajectoryError: a malformed file.
    """
    from hindsight.bench._run import _machine

    if not 1 <= k <= MAX_K:
        raise UsageError(f"--k must be in 1..{MAX_K}, got {k}")
    if tasks is not None and tasks < 1:
        raise UsageError(f"--tasks must be >= 1, got {tasks}")
    if query_trial < 0:
        raise UsageError(f"--query-trial must be >= 0, got {query_trial}")
    if held_out_every < 2:
        raise UsageError(
            f"--held-out-tasks must be every:N with N >= 2, got every:{held_out_every}"
        )
    input_file(path, "tau-bench results file")
    names = _check_reviewers(reviewers)
    commit = commit_info()  # before the run: the checkout may move while it runs
    wall, cpu = time.perf_counter(), time.process_time()
    say = progress or (lambda _msg: None)
    runs, records = load_runs(Path(path), tasks=tasks)
    split = split_runs(runs, train_trials, query_trial)
    models = _embedders(embedders)
    ctx = Context.build(split, records, runs, k=k, parent=parent, progress=say)
    report: dict[str, Any] = {
        "file": str(path),
        "tasks": len(split.tasks),
        "train_trials": list(dict.fromkeys(train_trials)),
        "query_trial": query_trial,
        "k": k,
        "train_runs": len(split.train),
        "train_failed": sum(not r.success for r in split.train),
        "held_out_runs": len(split.held),
        "held_out_failed": sum(not r.success for r in split.held),
        "unjudged_differences": sorted(d.label() for d in ctx.ignore),
        "baselines": [],
        "runs": [],
    }
    for spec, model in models:
        base = evaluate_baseline(ctx, model)
        report["baselines"].append({"embedder_spec": spec, **base})
        for name in names:
            run = evaluate_reviewer(ctx, model, name)
            report["runs"].append({"embedder_spec": spec, **run})
    report["held_out_every"] = held_out_every
    report["conditions"] = evaluate_all(
        runs,
        k=k,
        every=held_out_every,
        train_trials=list(dict.fromkeys(train_trials)),
        query_trial=query_trial,
        parent=parent,
        progress=say,
    )
    report["contrasts"] = within_task_contrasts(runs)
    report["nearest"] = nearest_conditions(
        runs, train_trials=list(dict.fromkeys(train_trials)), query_trial=query_trial
    )
    report.update(commit)
    report["machine"] = _machine()
    report["cpu_seconds"] = time.process_time() - cpu
    report["wall_seconds"] = time.perf_counter() - wall
    return report
