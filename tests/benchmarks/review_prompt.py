"""Size of the LLM review request on real trajectories, measured without a model.

Not part of the default test run (tests/test_review_prompt.py runs it on a few runs). Run::

    python tests/benchmarks/review_prompt.py [--path FILE] [--tasks N] [--json]

Every trajectory of the tau-bench file (default ``../shared/data/tau-bench/gpt-4o-airline.json``
beside the repository, read in place) is compressed and wrapped exactly as
:class:`hindsight.review.llm.reviewer.LLMReviewer` does before sending it (docs/benchmarks.md,
"Review compression"). What the review learns is measured by ``hindsight bench learning``
(:mod:`hindsight.bench.learning`), which superseded this file's former relevance study.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from statistics import mean, median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no cost-map fetch

from hindsight.capture.ingest import iter_trajectories
from hindsight.models import Trajectory

DEFAULT_PATH = Path(__file__).resolve().parents[3] / "shared/data/tau-bench/gpt-4o-airline.json"


def load(path: Path, tasks: int | None = None) -> list[Trajectory]:
    """The trajectories of a tau-bench file, those of the first ``tasks`` task ids only."""
    trajs = list(iter_trajectories(path, tenant_id="prompt", format="tau-bench"))
    order = list(dict.fromkeys(t.metadata.get("task_id") for t in trajs))
    keep = set(order[:tasks] if tasks is not None else order)
    return [t for t in trajs if t.metadata.get("task_id") in keep]


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


def format_report(p: dict[str, Any]) -> str:
    """One paragraph of :func:`prompt_sizes`'s report."""
    return (
        f"review prompt ({p['trajectories']} trajectories): trajectory "
        f"{p['original_tokens']['mean']:.0f} -> {p['compressed_tokens']['mean']:.0f} tokens "
        f"on average (ratio {p['ratio']:.2f}, total {p['ratio_total']:.2f}; "
        f"{p['compressed_runs']} runs shortened, {p['over_budget']} over the "
        f"{p['budget']}-token budget); whole request "
        f"{p['prompt_tokens']['mean']:.0f} tokens on average, max {p['prompt_tokens']['max']}"
    )


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring. Returns the exit code."""
    parser = argparse.ArgumentParser(prog="python tests/benchmarks/review_prompt.py")
    parser.add_argument("--path", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--tasks", type=int, default=None, help="first N tasks (default all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.tasks is not None and args.tasks < 1:
        parser.error(f"--tasks must be >= 1, got {args.tasks}")
    if not args.path.is_file():
        parser.error(f"tau-bench file not found: {args.path}")
    report = prompt_sizes(load(args.path, args.tasks))
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
