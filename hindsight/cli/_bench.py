"""``hindsight bench``: benchmark the configured deployment (issue 10; docs/benchmarks.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hindsight.cli._common import JsonOpt, app, err_console, fail, guarded, out_console, print_json

_SIZES_HELP = "Store sizes to measure, comma-separated (10k = 10000)."


@app.command()
def bench(
    sizes: Annotated[str, typer.Option("--sizes", help=_SIZES_HELP)] = "1000,10000,100000",
    queries: Annotated[
        int, typer.Option("--queries", help="Timed recalls per size (1-100000).")
    ] = 200,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Also write a PNG of recall latency vs size (matplotlib)."),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="Folder for the temporary stores (default: the system temp dir); removed after.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure recall latency, ingest throughput, the end of a run, peak RSS and cold start.

    Runs against the configured deployment: a temporary embedded store by default, or
    DATABASE_URL / VECTOR_DB_URL when set (in tenants of its own, deleted afterwards). Never
    touches the global --data-dir."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from hindsight.bench import parse_sizes, render_text, run_bench

    try:
        wanted = parse_sizes(sizes)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if not 1 <= queries <= 100_000:
        raise fail(f"--queries must be in 1..100000, got {queries}", 2)
    if data_dir is not None and not data_dir.is_dir():
        raise fail(f"--data-dir {data_dir} is not an existing folder", 2)
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
