"""Run ``hindsight bench learning`` against another checkout of hindsight (an older commit).

The learning benchmark (:mod:`hindsight.bench.learning`) measures through the public API
only, so the same harness code can measure an older version: this script imports ``hindsight``
from ``--checkout`` (e.g. ``git worktree add /tmp/base 15fd364``) and the harness from this
repository, mapping the few modules that moved since (``hindsight.ingest`` ->
``hindsight.capture.ingest``, ``hindsight.screening`` -> ``hindsight.guard.screening``)::

    python tests/benchmarks/learning_at_commit.py --checkout /tmp/base \\
        ../shared/data/tau-bench/gpt-4o-airline.json --embedders hash,local [--json]

It takes the options of ``hindsight bench learning`` after the file; the report's ``commit``
is the checkout's.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[2] / "hindsight" / "bench" / "learning"
MOVED = {"hindsight.capture.ingest": "hindsight.ingest", "hindsight.guard.screening":
         "hindsight.screening"}  # fmt: skip


def _load(checkout: Path) -> object:
    """``hindsight`` from ``checkout``, ``hindsight.bench.learning`` from this repository."""
    sys.path.insert(0, str(checkout))
    import hindsight

    if not Path(hindsight.__file__).resolve().is_relative_to(checkout.resolve()):
        raise SystemExit(f"hindsight was imported from {hindsight.__file__}, not {checkout}")
    for new, old in MOVED.items():
        try:
            importlib.import_module(new)
        except ImportError:
            sys.modules[new] = importlib.import_module(old)
    import hindsight.bench

    spec = importlib.util.spec_from_file_location(
        "hindsight.bench.learning", HERE / "__init__.py", submodule_search_locations=[str(HERE)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["hindsight.bench.learning"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/benchmarks/learning_at_commit.py")
    parser.add_argument("--checkout", type=Path, required=True)
    parser.add_argument("path", type=Path)
    parser.add_argument("--train-trials", default="0,1,2")
    parser.add_argument("--query-trial", type=int, default=3)
    parser.add_argument("--embedders", default="hash")
    parser.add_argument("--reviewers", default="heuristic")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    learning = _load(args.checkout)
    report = learning.run_learning(  # type: ignore[attr-defined]
        args.path,
        train_trials=learning.parse_trials(args.train_trials),  # type: ignore[attr-defined]
        query_trial=args.query_trial,
        embedders=args.embedders.split(","),
        reviewers=args.reviewers.split(","),
        k=args.k,
        tasks=args.tasks,
        progress=lambda line: print(f"learning: {line}", file=sys.stderr, flush=True),
    )
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    from rich.console import Console

    console = Console()
    for item in learning.render_report(report):  # type: ignore[attr-defined]
        console.print(item, highlight=False, soft_wrap=isinstance(item, str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
