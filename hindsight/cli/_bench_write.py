"""``hindsight bench goals``: every performance goal with its anchor and ratio in one run
(:mod:`hindsight.bench._goals`); ``hindsight bench ingest``, ``bench cold-start`` and ``bench
review``: the write side's figures (public batch ingest, cold start next to raw Qdrant Edge, review
CPU per tau-bench run); :mod:`hindsight.bench._perf`, docs/benchmarks.md. Temporary embedded stores
only: never DATABASE_URL, VECTOR_DB_URL or the global --data-dir."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from hindsight.cli._bench import (
    TempDirOpt,
    _check_temp_dir,
    bench_app,
    say_to_stderr,
    show,
    sizes_or_fail,
)
from hindsight.cli._common import JsonOpt, checked_file, fail, guarded, path_value


@bench_app.command("ingest")
def bench_ingest(
    sizes: Annotated[
        str, typer.Option("--sizes", help="Store sizes, comma-separated (10k = 10000).")
    ] = "1000,10000,100000",
    batch: Annotated[int, typer.Option("--batch", help="Lessons per timed batch.")] = 1000,
    data_dir: TempDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Public batch ingest (Memory.add_experiences, guard and dedup on, embedding excluded):
    lessons/s at each store size, wall and CPU, and the slowdown per 10x of size."""
    from hindsight.bench._perf import batch_ingest

    wanted = sizes_or_fail(sizes)
    if not 1 <= batch <= 100_000:
        raise fail(f"--batch must be in 1..100000, got {batch}", 2)
    _check_temp_dir(data_dir)
    with guarded():
        report = batch_ingest(
            wanted, batch=batch, parent=data_dir, progress=say_to_stderr("ingest")
        )
    lines = [f"public batch ingest ({report['embedder']}, batches of {batch}, no embedding):"]
    for row in report["sizes"]:
        lines.append(
            f"  at {row['size']:>7,}: {row['lessons_per_s_cpu']:,.0f} lessons/s CPU, "
            f"{row['lessons_per_s_wall']:,.0f} wall (goal >= 2,000 at 10k) "
            f"[{row['created']} created, {row['merged']} merged, "
            f"{row['quarantined']} quarantined]"
        )
    for slope in report["slope_per_10x"]:
        lines.append(
            f"  {slope['from']:,} -> {slope['to']:,}: {slope['cpu']:.2f}x slower per 10x CPU, "
            f"{slope['wall']:.2f}x wall (goal <= 1.3)"
        )
    show(report, as_json, lines)


@bench_app.command("cold-start")
def bench_cold_start(
    size: Annotated[int, typer.Option("--size", help="Lessons in the store.")] = 1000,
    repeats: Annotated[int, typer.Option("--repeats", help="Processes of each kind.")] = 5,
    data_dir: TempDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Cold start: a new process opening the store and recalling once, next to a new process
    loading the raw Qdrant Edge shard and querying once (medians, wall and CPU)."""
    from hindsight.bench._perf import cold_start_vs_edge

    if size < 1 or not 1 <= repeats <= 1000:
        raise fail("--size must be >= 1 and --repeats in 1..1000", 2)
    _check_temp_dir(data_dir)
    with guarded():
        report = cold_start_vs_edge(
            size, repeats=repeats, parent=data_dir, progress=say_to_stderr("cold start")
        )
    ours, edge, ratio = report["hindsight"], report["edge"], report["ratio"]
    lines = [
        f"cold start ({size:,} lessons, median of {repeats}): hindsight {ours['wall_ms']:.0f} ms"
        f" wall / {ours['cpu_ms']:.0f} ms CPU; raw Edge {edge['wall_ms']:.0f} / "
        f"{edge['cpu_ms']:.0f}; ratio {ratio['wall']:.2f}x wall, {ratio['cpu']:.2f}x CPU "
        "(goal <= 1.5x)"
    ]
    show(report, as_json, lines)


@bench_app.command("review")
def bench_review(
    file: Annotated[
        Path, typer.Argument(parser=path_value, help="A tau-bench results file (JSON).")
    ],
    runs: Annotated[
        int | None, typer.Option("--runs", help="Only the first N runs (default all).")
    ] = None,
    data_dir: TempDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Review CPU per tau-bench run: Memory.review_now with the heuristic reviewer (review and
    write-back), process CPU ms per run."""
    from hindsight.bench._perf import review_cpu

    if runs is not None and runs < 1:
        raise fail(f"--runs must be >= 1, got {runs}", 2)
    checked_file(file, "tau-bench results file")
    _check_temp_dir(data_dir)
    with guarded():
        report = review_cpu(file, runs=runs, parent=data_dir, progress=say_to_stderr("review"))
    cpu = report["cpu_ms"]
    lines = [
        f"review ({report['runs']} tau-bench runs, heuristic, {report['lessons']} lessons): "
        f"{cpu['median']:.1f} ms CPU per run median, {cpu['mean']:.1f} mean, "
        f"{cpu['p95']:.1f} p95 (goal <= 10 ms)"
    ]
    show(report, as_json, lines)


@bench_app.command("goals")
def bench_goals(
    quick: Annotated[
        bool,
        typer.Option("--quick", help="Tiny sizes and counts: checks the run in seconds."),
    ] = False,
    sizes: Annotated[
        str | None,
        typer.Option(
            "--sizes",
            help="Store sizes for recall and ingest, comma-separated (default recall "
            "10k,100k and ingest 1k,10k,100k).",
        ),
    ] = None,
    repeats: Annotated[
        int | None, typer.Option("--repeats", help="Repeats, medians over them (default 5).")
    ] = None,
    ingest_repeats: Annotated[
        int | None,
        typer.Option(
            "--ingest-repeats",
            help="Repeats of the ingest rows, each filling a new store to the largest size "
            "(default: --repeats).",
        ),
    ] = None,
    tau_bench: Annotated[
        Path | None,
        typer.Option(
            "--tau-bench",
            parser=path_value,
            help="tau-bench results file for the review row (default "
            "../shared/data/tau-bench/gpt-4o-airline.json when it exists).",
        ),
    ] = None,
    data_dir: TempDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Every performance goal in one process run, one table: recall vs the raw Qdrant Edge
    query, public batch ingest and its slowdown per 10x, cold start vs the raw shard, review
    CPU per tau-bench run, capture overhead of each installed integration (background work
    included); each with what it is compared with, the ratio and whether the goal is met.
    Temporary embedded stores only (the configured EMBEDDING_MODEL)."""
    from hindsight.bench._goals import TAU_BENCH_DEFAULT, GoalSettings, render_goals, run_goals

    settings = GoalSettings.quick() if quick else GoalSettings.full()
    if sizes is not None:
        settings = settings.with_sizes(sizes_or_fail(sizes))
    if repeats is not None:
        if not 1 <= repeats <= 1000:
            raise fail(f"--repeats must be in 1..1000, got {repeats}", 2)
        settings = dataclasses.replace(settings, repeats=repeats)
    if ingest_repeats is not None:
        if not 1 <= ingest_repeats <= 1000:
            raise fail(f"--ingest-repeats must be in 1..1000, got {ingest_repeats}", 2)
        settings = dataclasses.replace(settings, ingest_repeats=ingest_repeats)
    if tau_bench is not None:
        checked_file(tau_bench, "tau-bench results file", option="--tau-bench")
    _check_temp_dir(data_dir)
    with guarded():
        report = run_goals(
            settings,
            tau_bench=tau_bench or TAU_BENCH_DEFAULT,
            parent=data_dir,
            progress=say_to_stderr("goals"),
        )
    show(report, as_json, render_goals(report))
