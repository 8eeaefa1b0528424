"""Commands: ingest, recall, stats, demo."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import typer

from hindsight._errors import UsageError
from hindsight.cli._common import (
    JsonOpt,
    TenantOpt,
    app,
    checked_file,
    err_console,
    escape,
    fail,
    guarded,
    open_memory,
    out_console,
    path_value,
    print_json,
    state,
)
from hindsight.cli._wait import ReviewerOpt, check_reviewer, review_wait_seconds, wait_for_reviews

Format = Literal["auto", "openai", "tau-bench", "events"]

PENDING_EXIT = 3
"""Exit code of a command that finished its own work but left review jobs pending (``ingest
--no-wait``, or a wait that ran out of time): the reviews are queued, not done."""

MAX_SHOWN_ERRORS = 10
"""Records with errors ``hindsight ingest`` prints one per line; the rest are counted (every one
is in ``--json``)."""


@app.command()
def ingest(
    ctx: typer.Context,
    path: Annotated[
        Path, typer.Argument(parser=path_value, help="A trajectory log: JSON or JSONL.")
    ],
    format: Annotated[
        str, typer.Option("--format", help="auto | openai | tau-bench | events")
    ] = "auto",
    tenant: TenantOpt = "default",
    namespace: Annotated[str, typer.Option("--namespace")] = "default",
    task_type: Annotated[str | None, typer.Option("--task-type")] = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait/--no-wait",
            help="Wait for the reviews of the file's runs (queued now or left pending by an "
            "earlier run); --no-wait exits 3 when some are still pending.",
        ),
    ] = True,
    reviewer: ReviewerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store the trajectories of a log file and review them. Re-ingesting adds nothing, and
    finishes the reviews an interrupted ingest of the file left pending.

    Reviews that fail are reported (reviews_failed) and kept as failed jobs: see
    `hindsight jobs --state failed` and `hindsight jobs retry`. Exit 1: some records could not
    be stored (listed); exit 3: reviews still pending (--no-wait, or the wait timed out)."""
    from rich.progress import Progress

    from hindsight._contract import Namespace, TaskType, check
    from hindsight.capture.ingest import RecordError, count_records, iter_results

    if format not in ("auto", "openai", "tau-bench", "events"):
        raise fail(f"--format must be auto, openai, tau-bench or events, got {format!r}", 2)
    checked_file(path, "trajectory log (JSON or JSONL)")
    with (
        guarded() as replaced,
        open_memory(state(ctx), note_pending=False, **check_reviewer(reviewer)) as mem,
    ):
        before = mem.stats(tenant_id=tenant)
        # checked before the progress bar starts, whose closing line would come first
        check(Namespace, namespace)
        check(TaskType, task_type)
        added = skipped = events = queued = 0
        run_ids: list[str] = []
        present: list[str] = []  # stored by an earlier ingest
        errors: list[dict[str, Any]] = []
        started = time.perf_counter()
        fmt = cast(Format, format)
        total = count_records(path, fmt)
        with Progress(console=err_console, transient=True, disable=as_json) as progress:
            bar = progress.add_task("storing trajectories", total=total)
            for item in iter_results(
                path,
                format=fmt,
                tenant_id=tenant,
                namespace=namespace,
                task_type=task_type,
            ):
                progress.advance(bar)
                if isinstance(item, RecordError):
                    errors.append({"line": item.number, "error": item.message})
                    continue
                try:
                    receipt = mem.store_episode(item)
                except UsageError as exc:  # this record only (e.g. a field out of range)
                    errors.append({"line": _line_of(item), "error": str(exc)})
                    continue
                run_ids.append(receipt.trajectory_id)
                if receipt["stored"]:
                    added += 1
                    events += len(item.events)
                    queued += int(receipt["review_queued"])
                else:
                    skipped += 1
                    present.append(receipt.trajectory_id)
            # in file order: a format that groups lines into runs (events) reports a bad run
            # when the run ends, after the bad lines that came later in the file
            errors.sort(key=lambda e: (e["line"] is None, e["line"] or 0))
            store = mem.aio.store
            left = store.review_job_states(tenant, present)
            found = left["pending"] + left["running"]  # left pending by an earlier ingest
            jobs = store.review_job_states(tenant, run_ids)
            if wait and jobs["pending"] + jobs["running"]:
                jobs = wait_for_reviews(
                    mem,
                    tenant_id=tenant,
                    trajectory_ids=run_ids,
                    progress=progress,
                    timeout=review_wait_seconds(mem.config, jobs["pending"] + jobs["running"]),
                )
        after = mem.stats(tenant_id=tenant)
        episodes = _by_kind(after, "episode") - _by_kind(before, "episode")
        remaining = jobs["pending"] + jobs["running"]
        doc: dict[str, Any] = {
            "trajectories_added": added,
            "trajectories_skipped": skipped,
            "events_added": events,
            "reviews_queued": queued,
            "reviews_found_pending": found,
            "reviews_succeeded": jobs["succeeded"],
            "reviews_failed": jobs["failed"],
            "reviews_pending": remaining,
            "experiences_added": _exp_total(after) - _exp_total(before),
            "episodes_added": episodes,
            "records_failed": len(errors),
            "errors": errors,
            "invalid_values_replaced": replaced.total,
            "warnings": list(replaced.notes),
            "seconds": round(time.perf_counter() - started, 3),
        }
        if as_json:
            print_json(doc)
        else:
            out_console.print(
                f"trajectories: {added} added, {skipped} already present; events: {events}; "
                f"experiences: {doc['experiences_added']} added, of which {episodes} episodes "
                f"({doc['seconds']} s); reviews: {jobs['succeeded']} succeeded, "
                f"{jobs['failed']} failed, {remaining} pending"
                + (f"; records with errors: {len(errors)}" if errors else "")
            )
        if not as_json:
            for error in errors[:MAX_SHOWN_ERRORS]:
                err_console.print(
                    f"error: {escape(error['error'])}", highlight=False, soft_wrap=True
                )
            if len(errors) > MAX_SHOWN_ERRORS:
                err_console.print(
                    f"... and {len(errors) - MAX_SHOWN_ERRORS} more records with errors "
                    "(every one: --json)",
                    highlight=False,
                    soft_wrap=True,
                )
        if not (added or skipped or errors):
            err_console.print(
                f"note: {escape(str(path))} holds no runs (an empty file, blank lines or an "
                "empty list): nothing was stored",
                highlight=False,
                soft_wrap=True,
            )
        if jobs["failed"]:
            err_console.print(
                f"[yellow]warning:[/] {jobs['failed']} review(s) failed; their errors: "
                "`hindsight jobs --state failed`; run them again: `hindsight jobs retry "
                "--all-failed`",
                highlight=False,
                soft_wrap=True,
            )
    if remaining:
        why = "not waited for (--no-wait)" if not wait else "still running when the wait ended"
        err_console.print(
            f"{remaining} review(s) of this file's runs pending, {why}: they run in "
            "`hindsight serve` or `hindsight worker`, or when this file is ingested again",
            highlight=False,
            soft_wrap=True,
        )
    if errors:
        raise typer.Exit(1)  # the good records are stored; the bad ones are listed
    if remaining:
        raise typer.Exit(PENDING_EXIT)


def _line_of(traj: Any) -> int | None:
    """The line (or record number) a converted trajectory came from."""
    number = traj.metadata.get("source_record")
    return number if isinstance(number, int) else None


def _by_kind(stats: dict[str, Any], kind: str) -> int:
    exps = stats.get("experiences", {})
    by_kind = exps.get("by_kind", {}) if isinstance(exps, dict) else {}
    return int(by_kind.get(kind, 0))


def _exp_total(stats: dict[str, Any]) -> int:
    exps = stats.get("experiences", {})
    if isinstance(exps, dict):
        return int(exps.get("total", sum(v for v in exps.values() if isinstance(v, int))))
    return int(exps)


@app.command()
def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="The task or question to recall lessons for.")],
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    namespace: Annotated[
        list[str] | None, typer.Option("--namespace", help="Private namespace(s), in order.")
    ] = None,
    task_type: Annotated[str | None, typer.Option("--task-type")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Boost this tag.")] = None,
    tool: Annotated[
        list[str] | None,
        typer.Option("--tool", help="A tool the agent has: boosts its lessons, adds its checks."),
    ] = None,
    top_k: Annotated[str | None, typer.Option("--top-k", help="1..1000 (default 5).")] = None,
    mode: Annotated[str | None, typer.Option("--mode", help="vector | task_type")] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show why, and what was left out.")
    ] = False,
    episodes: Annotated[
        bool,
        typer.Option("--episodes", help="Also show the most similar past episodes (runs)."),
    ] = False,
    block: Annotated[
        bool,
        typer.Option("--block", help="Print the block the agent gets, not the table."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Recall the experiences most useful for QUERY, with their score breakdown."""
    if block and as_json:
        raise fail("give --block or --json, not both (--json has the block in 'rendered')", 2)
    with guarded(), open_memory(state(ctx)) as mem:
        result = mem.recall(
            query,
            tenant_id=tenant,
            namespace=namespace or "default",
            task_type=task_type,
            tags=tag or (),
            tools=tool or (),
            top_k=top_k,
            mode=mode,
            include_episodes=episodes,
            explain=explain,
        )
        if as_json:
            print_json(result.to_json(explain=explain))
            return
        if block:
            text = result.render()
            if text:  # the block alone on stdout: nothing when nothing was recalled
                out_console.print(escape(text), highlight=False, soft_wrap=True)
            else:
                err_console.print("no experiences recalled", highlight=False)
            return
        _print_hits(result, explain)
        if episodes:
            _print_episodes(result)


def _print_episodes(result: Any) -> None:
    from rich.table import Table

    if not result.episodes:
        out_console.print("no past episodes recalled")
        return
    table = Table(title="past episodes", show_lines=False)
    for col in ("#", "score", "outcome", "episode"):
        table.add_column(col)
    for i, hit in enumerate(result.episodes, 1):
        exp = hit.experience
        table.add_row(
            f"E{i}",
            f"{hit.score:.3f}",
            str(exp.metadata.get("outcome", "unknown")),
            escape(exp.content),
        )
    out_console.print(table)


def _print_hits(result: Any, explain: bool) -> None:
    from rich.table import Table

    if not result.hits:
        out_console.print("no experiences recalled")
    else:
        table = Table(show_lines=False)
        for col in ("#", "score", "kind", "confidence", "content"):
            table.add_column(col)
        for i, hit in enumerate(result.hits, 1):
            table.add_row(
                str(i),
                f"{hit.score:.3f}",
                hit.experience.kind.value,
                f"{hit.experience.confidence:.2f}",
                escape(hit.experience.content),
            )
        out_console.print(table)
    if explain:
        for i, hit in enumerate(result.hits, 1):
            b = hit.breakdown
            out_console.print(
                f"{i}. similarity {b.similarity:.3f} x {b.weights['similarity']} + confidence "
                f"{b.confidence:.2f} x {b.weights['confidence']} + recency {b.recency:.3f} x "
                f"{b.weights['recency']}, trust {b.trust:.2f}, boost {b.boost:.2f}, "
                f"kind bonus {b.kind_bonus:.2f} "
                f"(age {b.age_days:.1f} days, namespace {b.namespace})",
                highlight=False,
            )
        for ex in result.excluded[:20]:
            out_console.print(f"excluded {ex.experience_id}: {ex.reason}", highlight=False)


@app.command()
def stats(
    ctx: typer.Context,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="One tenant (default: whole store).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Counts of trajectories, events, experiences, vectors and review jobs."""
    with guarded(), open_memory(state(ctx)) as mem:
        data = mem.stats(tenant_id=tenant)
        if as_json:
            print_json(data)
        else:
            for key, value in data.items():
                out_console.print(f"{key}: {value}", highlight=False)


@app.command()
def demo(
    ctx: typer.Context,
    reviewer: ReviewerOpt = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="A real model (provider:model, LangChain init_chat_model)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Watch an agent fail on a flaky tool, learn the lesson, and avoid the failure next run.

    The agent is the LangGraph support agent of hindsight_langgraph (extra: langgraph); without
    LangGraph the framework-free demo runs instead. It runs in a fresh temporary data dir
    (deleted after), never in the one HINDSIGHT_DATA_DIR names, unless --data-dir is given
    on the command line (hindsight --data-dir DIR demo)."""
    from hindsight.cli._demo_graph import run

    overrides = check_reviewer(reviewer)
    root = ctx.find_root()
    source = root.get_parameter_source("data_dir")  # typer vendors click: compare by name
    given = getattr(source, "name", None) == "COMMANDLINE"
    data_dir = state(ctx).data_dir if given else None
    with guarded():
        run(data_dir, as_json=as_json, reviewer=overrides.get("reviewer"), model=model)


def main() -> None:
    """Console-script entry point: usage errors are one line on stderr, exit code 2."""
    import sys

    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        code = 130
    except Exception as exc:
        # typer vendors click; its usage errors are ClickExceptions with these two members.
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            print(ctx.get_help())
            sys.exit(0)
        names = []  # the subcommand path ("experiences list"), however hindsight was started
        while ctx is not None and ctx.parent is not None:
            names.append(ctx.info_name)
            ctx = ctx.parent
        where = " ".join(["hindsight", *reversed(names)])
        err_console.print(
            f"[bold red]error:[/] {escape(exc.format_message())} (see '{where} --help')",
            highlight=False,
            soft_wrap=True,
        )
        code = exc.exit_code
    sys.exit(code if isinstance(code, int) else 0)


@app.command()
def version(as_json: JsonOpt = False) -> None:
    """Print the installed hindsight version (imports nothing else: a quick health check)."""
    from hindsight.cli import print_version

    print_version(as_json)
