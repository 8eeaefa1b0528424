"""``hindsight backup`` and ``hindsight restore`` (docs/deploy.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hindsight.cli._common import (
    JsonOpt,
    State,
    app,
    guarded,
    out_console,
    path_value,
    print_json,
    state,
)


def _config(st: State) -> Any:
    from hindsight.config import load_config

    kwargs: dict[str, Any] = {} if st.data_dir is None else {"data_dir": st.data_dir}
    return load_config(**kwargs)


@app.command("backup")
def backup(
    ctx: typer.Context,
    dest: Annotated[Path, typer.Argument(parser=path_value, help="The backup file to create.")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite DEST if it exists.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Back up the SQL store (SQLite file copy or pg_dump), safe while it is in use.

    Vectors are not copied: `hindsight restore` rebuilds them from the embeddings kept in SQL."""
    from hindsight.ops.backup import backup as run

    with guarded():
        report = run(_config(state(ctx)), dest, force=force)
    if as_json:
        print_json(report)
        return
    out_console.print(
        f"backed up {report['experiences']} experience(s) and {report['trajectories']} "
        f"trajectory(ies) ({report['kind']}, {report['bytes']} bytes) to {report['path']}",
        highlight=False,
        soft_wrap=True,
    )


@app.command("restore")
def restore(
    ctx: typer.Context,
    source: Annotated[
        Path, typer.Argument(parser=path_value, help="A file written by `hindsight backup`.")
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Replace a store that is not empty.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Replace the store with a backup and rebuild its vectors from SQL (store closed)."""
    from hindsight.ops.backup import restore as run

    with guarded():
        report = run(_config(state(ctx)), source, force=force)
    if as_json:
        print_json(report)
        return
    points = report["points"]
    vectors = "" if points is None else f", {points} vector(s) rebuilt"
    out_console.print(
        f"restored {report['experiences']} experience(s) and {report['trajectories']} "
        f"trajectory(ies) from {report['path']}{vectors}",
        highlight=False,
        soft_wrap=True,
    )
