"""``hindsight bench``: benchmark the configured deployment, ``hindsight bench engines``:
PostgreSQL + pgvector next to the embedded default, and ``hindsight bench learning FILE``: what
the review learns from a tau-bench file; docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hindsight.cli._common import (
    HindsightTyper,
    JsonOpt,
    app,
    err_console,
    fail,
    guarded,
    out_console,
    path_value,
    print_json,
)

_SIZES_HELP = "Store sizes to measure, comma-separated (10k = 10000)."
TempDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        parser=path_value,
        help="Folder for the temporary stores (default: the system temp dir); removed after.",
    ),
]

bench_app = HindsightTyper(
    name="bench",
    help="Benchmark the configured deployment (latency, ingest, end of a run, RSS, cold start);"
    " `bench goals`: the write and recall goals with their anchors and ratios in one run;"
    " `bench engines`: PostgreSQL + pgvector next to the embedded default;"
    " `bench learning FILE`: what the review learns from a tau-bench file.",
    invoke_without_command=True,
)
app.add_typer(bench_app)


@bench_app.callback()
def bench(
    ctx: typer.Context,
    sizes: Annotated[str, typer.Option("--sizes", help=_SIZES_HELP)] = "1000,10000,100000",
    queries: Annotated[
        int, typer.Option("--queries", help="Timed recalls per size (1-100000).")
    ] = 200,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            parser=path_value,
            help="Also write a PNG of recall latency vs size (matplotlib).",
        ),
    ] = None,
    data_dir: TempDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure recall latency, ingest throughput, the end of a run, peak RSS and cold start.

    Runs against the configured deployment: a temporary embedded store by default, or
    DATABASE_URL / VECTOR_DB_URL when set (in tenants of its own, deleted afterwards). Never
    touches the global --data-dir."""
    if ctx.invoked_subcommand is not None:
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from hindsight.bench import render_text, run_bench

    wanted = sizes_or_fail(sizes)
    if not 1 <= queries <= 100_000:
        raise fail(f"--queries must be in 1..100000, got {queries}", 2)
    _check_temp_dir(data_dir)
    if plot is not None:
        _check_plot(plot)
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with guarded(), Progress(*columns, console=err_console, transient=True) as bars:
        tasks: dict[Any, Any] = {}

        def started(size: Any) -> None:
            tasks["now"] = bars.add_task(f"{size}", total=1.0)

        def progress(what: str, fraction: float) -> None:
            bars.update(tasks["now"], description=what, completed=fraction)

        report = run_bench(
            wanted, queries=queries, parent=data_dir, progress=progress, size_started=started
        )
    if plot is not None:
        from hindsight.bench._plot import write_plot

        with guarded():
            write_plot(report, plot)
        report["plot"] = str(plot)
    if as_json:
        print_json(report)
        return
    for line in render_text(report):
        out_console.print(line, highlight=False, soft_wrap=True)
    if plot is not None:
        out_console.print(f"plot: {plot}", highlight=False, soft_wrap=True)
    out_console.print(
        "the write and recall goals, each with its anchor and ratio in one run: "
        "hindsight bench goals",
        highlight=False,
        soft_wrap=True,
    )


def sizes_or_fail(text: str) -> list[int]:
    """``--sizes`` parsed (:func:`hindsight.bench.parse_sizes`), or the one-line usage error."""
    from hindsight.bench import parse_sizes

    try:
        return parse_sizes(text)
    except ValueError as exc:
        raise fail(str(exc), 2) from None


def say_to_stderr(what: str) -> Any:
    """A progress callback printing ``what: line`` on stderr."""

    def say(line: str) -> None:
        err_console.print(f"{what}: {line}", highlight=False, soft_wrap=True)

    return say


def show(report: dict[str, Any], as_json: bool, lines: list[str]) -> None:
    """``report`` as JSON, or ``lines`` as text, on stdout."""
    if as_json:
        print_json(report)
        return
    for line in lines:
        out_console.print(line, highlight=False, soft_wrap=True)


def _check_temp_dir(data_dir: Path | None) -> None:
    if data_dir is not None and not data_dir.is_dir():
        raise fail(f"--data-dir {data_dir} is not an existing folder", 2)


def _check_plot(path: Path) -> None:
    """Fail early (before minutes of measuring) when the plot cannot be written."""
    from hindsight.bench._plot import MATPLOTLIB_MISSING

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise fail(MATPLOTLIB_MISSING, 2) from None
    if path.suffix.lower() != ".png":
        raise fail(f"--plot writes a PNG: give a path ending in .png, got {path}", 2)
    if not path.parent.is_dir():
        raise fail(f"--plot: folder {path.parent} does not exist", 2)


@bench_app.command("recall")
def bench_recall(
    layouts: Annotated[
        str,
        typer.Option(
            "--layouts",
            help="size[xTENANTS], comma-separated: 100kx10 = 100,000 over 10 tenants.",
        ),
    ] = "10k,100k,100kx10",
    queries: Annotated[int, typer.Option("--queries", help="Timed queries per repeat.")] = 200,
    repeats: Annotated[int, typer.Option("--repeats", help="Repeats (medians over them).")] = 5,
    data_dir: TempDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall p50/p95 through Memory.recall next to the raw Qdrant Edge query with the same
    filter, wall and CPU time, and their ratio (docs/benchmarks.md). Temporary
    embedded stores only (the configured EMBEDDING_MODEL)."""
    from hindsight.bench import recall_vs_edge, render_recall_lines

    try:
        wanted = _parse_layouts(layouts)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if not 1 <= queries <= 100_000 or not 1 <= repeats <= 1000:
        raise fail("--queries must be in 1..100000 and --repeats in 1..1000", 2)
    _check_temp_dir(data_dir)
    with guarded():
        results = [
            recall_vs_edge(
                size,
                tenants=tenants,
                queries=queries,
                repeats=repeats,
                parent=data_dir,
                progress=say_to_stderr("recall"),
            )
            for size, tenants in wanted
        ]
    show({"recall_vs_raw_edge": results}, as_json, render_recall_lines(results))


@bench_app.command("engines")
def bench_engines(
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            help="PostgreSQL with pgvector for the pgvector side (default: DATABASE_URL); "
            "each layout in a schema of its own, dropped afterwards.",
        ),
    ] = None,
    layouts: Annotated[
        str,
        typer.Option(
            "--layouts",
            help="size[xTENANTS], comma-separated: 100kx100 = 100,000 over 100 tenants.",
        ),
    ] = "10k,100k,100kx100",
    embedding_model: Annotated[
        str, typer.Option("--embedding-model", help="hash, or local (MiniLM), ...")
    ] = "hash",
    queries: Annotated[int, typer.Option("--queries", help="Timed recalls per repeat.")] = 200,
    repeats: Annotated[int, typer.Option("--repeats", help="Repeats (medians over them).")] = 3,
    ingest_batch: Annotated[
        int, typer.Option("--ingest-batch", help="Lessons of the timed add_experiences batch.")
    ] = 1000,
    data_dir: TempDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall p50/p95 (wall and CPU), public batch ingest and overlap@5 with an exact scan, on
    PostgreSQL + pgvector and on the embedded default (SQLite + Qdrant Edge), same data, one
    run (docs/benchmarks.md)."""
    import os

    from hindsight.bench._engines import engines_side_by_side, render_engine_lines

    url = database_url or os.environ.get("HINDSIGHT_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if not url or not url.startswith(("postgres", "postgresql")):
        raise fail(
            "bench engines needs a PostgreSQL database with pgvector: --database-url or "
            "DATABASE_URL (docs/deploy.md#postgresql-and-pgvector)",
            2,
        )
    try:
        wanted = _parse_layouts(layouts)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if not 1 <= queries <= 100_000 or not 1 <= repeats <= 1000 or not ingest_batch >= 1:
        raise fail("--queries must be in 1..100000, --repeats in 1..1000, --ingest-batch >= 1", 2)
    _check_temp_dir(data_dir)
    with guarded():
        report = engines_side_by_side(
            url,
            layouts=wanted,
            embedding_model=embedding_model,
            queries=queries,
            repeats=repeats,
            ingest_batch=ingest_batch,
            parent=data_dir,
            progress=say_to_stderr("engines"),
        )
    show({"engines": report}, as_json, render_engine_lines(report))


def _parse_layouts(text: str) -> list[tuple[int, int]]:
    """``"10k,100kx10"`` -> ``[(10000, 1), (100000, 10)]``.

    Raises:
        ValueError: a part that is not ``SIZE`` or ``SIZExTENANTS`` (one line).
    """
    from hindsight.bench import parse_sizes

    out = []
    for part in str(text).split(","):
        if not part.strip():
            continue
        size, _, tenants = part.strip().lower().partition("x")
        try:
            count = int(tenants) if tenants else 1
        except ValueError:
            raise ValueError(f"--layouts: {part.strip()!r} is not SIZE or SIZExTENANTS") from None
        if not 1 <= count <= 1000:
            raise ValueError(f"--layouts: tenants must be in 1..1000, got {count}")
        out.append((parse_sizes(size)[0], count))
    if not out:
        raise ValueError("--layouts needs at least one layout, e.g. --layouts 10k,100kx10")
    return out


@bench_app.command("learning")
def bench_learning(
    file: Annotated[
        Path,
        typer.Argument(parser=path_value, help="A tau-bench results file (JSON or JSON Lines)."),
    ],
    train_trials: Annotated[
        str, typer.Option("--train-trials", help="Trials reviewed, comma-separated.")
    ] = "0,1,2",
    query_trial: Annotated[
        int, typer.Option("--query-trial", help="The trial held out: its runs are the queries.")
    ] = 3,
    embedders: Annotated[
        str,
        typer.Option("--embedders", help="Embedders, comma-separated: hash, local (MiniLM)..."),
    ] = "hash",
    reviewers: Annotated[
        str,
        typer.Option(
            "--reviewers", help="heuristic, llm, both (llm and both need REFLECTION_MODEL)."
        ),
    ] = "heuristic",
    k: Annotated[int, typer.Option("--k", help="Recall's top_k and the metrics' cutoff.")] = 5,
    tasks: Annotated[
        int | None, typer.Option("--tasks", help="Only the first N tasks (default all).")
    ] = None,
    held_out_tasks: Annotated[
        str,
        typer.Option(
            "--held-out-tasks",
            help="The task split: every run of every N-th task held out (every:N).",
        ),
    ] = "every:5",
    data_dir: TempDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Review some trials of a tau-bench file, query with a held-out one: what was learned.

    Reports same-task recall with the task text masked out of the lessons, identifiers in
    lessons, lessons per run, duplicates, confidence against outcomes, and whether a failed
    run's recall block names what it got wrong; next to the raw-message baseline and random
    (docs/benchmarks.md#learning); and, on a trial split and a task split (tasks never
    reviewed), with and without expected actions: rules with and without a condition,
    lesson-text-only recall, opposed blocks, and blocks and checks that name a condition the
    failed run violated. Temporary embedded stores only: never DATABASE_URL, VECTOR_DB_URL or
    the global --data-dir."""
    from hindsight.bench.learning import parse_every, parse_trials, render_report, run_learning

    _check_temp_dir(data_dir)
    progress = say_to_stderr("learning")
    with guarded():
        report = run_learning(
            file,
            train_trials=parse_trials(train_trials),
            query_trial=query_trial,
            embedders=embedders.split(","),
            reviewers=reviewers.split(","),
            k=k,
            tasks=tasks,
            parent=data_dir,
            progress=progress,
            held_out_every=parse_every(held_out_tasks),
        )
    if as_json:
        print_json(report)
        return
    for item in render_report(report):
        out_console.print(item, highlight=False, soft_wrap=isinstance(item, str))
