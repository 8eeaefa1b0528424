"""``hindsight bench ingest``, ``bench cold-start`` and ``bench review``: the write side of
issue 20's figures (public batch ingest, cold start next to raw Qdrant Edge, review CPU per
tau-bench run); :mod:`hindsight.bench._perf`, docs/benchmarks.md. Temporary embedded stores
only: never DATABASE_URL, VECTOR_DB_URL or the global --data-dir."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hindsight.cli._bench import TempDirOpt, _check_temp_dir, bench_app
from hindsight.cli._common import JsonOpt, err_console, fail, guarded, out_console, print_json


def _say(what: str) -> Any:
    def say(line: str) -> None:
        err_console.print(f"{what}: {line}", highlight=False, soft_wrap=True)

    return say


def _show(report: dict[str, Any], as_json: bool, lines: list[str]) -> None:
    if as_json:
        print_json(report)
        return
    for line in lines:
        out_console.print(line, highlight=False, soft_wrap=True)


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
    from hindsight.bench import parse_sizes
    from hindsight.bench._perf import batch_ingest

    try:
        wanted = parse_sizes(sizes)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if not 1 <= batch <= 100_000:
        raise fail(f"--batch must be in 1..100000, got {batch}", 2)
    _check_temp_dir(data_dir)
    with guarded():
        report = batch_ingest(wanted, batch=batch, parent=data_dir, progress=_say("ingest"))
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
    _show(report, as_json, lines)


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
            size, repeats=repeats, parent=data_dir, progress=_say("cold start")
        )
    ours, edge, ratio = report["hindsight"], report["edge"], report["ratio"]
    lines = [
        f"cold start ({size:,} lessons, median of {repeats}): hindsight {ours['wall_ms']:.0f} ms"
        f" wall / {ours['cpu_ms']:.0f} ms CPU; raw Edge {edge['wall_ms']:.0f} / "
        f"{edge['cpu_ms']:.0f}; ratio {ratio['wall']:.2f}x wall, {ratio['cpu']:.2f}x CPU "
        "(goal <= 1.5x)"
    ]
    _show(report, as_json, lines)


@bench_app.command("review")
def bench_review(
    file: Annotated[Path, typer.Argument(help="A tau-bench results file (JSON).")],
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
    _check_temp_dir(data_dir)
    with guarded():
        report = review_cpu(file, runs=runs, parent=data_dir, progress=_say("review"))
    cpu = report["cpu_ms"]
    lines = [
        f"review ({report['runs']} tau-bench runs, heuristic, {report['lessons']} lessons): "
        f"{cpu['median']:.1f} ms CPU per run median, {cpu['mean']:.1f} mean, "
        f"{cpu['p95']:.1f} p95 (goal <= 10 ms)"
    ]
    _show(report, as_json, lines)
