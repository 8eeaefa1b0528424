"""Commands for review jobs: ``hindsight jobs``, ``hindsight jobs retry`` and
``hindsight worker`` (docs/review.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from hindsight.cli._common import (
    CursorOpt,
    HindsightTyper,
    JsonOpt,
    State,
    app,
    err_console,
    escape,
    fail,
    guarded,
    open_memory,
    out_console,
    print_json,
    print_next_cursor,
    state,
)
from hindsight.cli._wait import ReviewerOpt, check_reviewer

jobs_app = HindsightTyper(
    name="jobs",
    help="Review jobs: list them (pending, running, succeeded, failed) and retry failed ones.",
    invoke_without_command=True,
)
app.add_typer(jobs_app)

AnyTenantOpt = Annotated[
    str | None,
    typer.Option("--tenant", help="Only this tenant's jobs (default: every tenant)."),
]


@contextmanager
def _open_store(st: State) -> Iterator[Any]:
    """The SQL store alone: listing and retrying jobs needs no vectors and no data-dir lock,
    so it works while an agent process has the embedded store open."""
    from hindsight.config import load_config
    from hindsight.store import SqlStore

    config = load_config(data_dir=st.data_dir) if st.data_dir is not None else load_config()
    if config.database_url is None:
        path = Path(config.data_dir) / "hindsight.db"
        if not path.exists():
            raise fail(f"no hindsight store in {config.data_dir} (nothing stored there yet)", 1)
    store = SqlStore(config.sql_url())
    try:
        yield store
    finally:
        store.close()


@jobs_app.callback()
def jobs(
    ctx: typer.Context,
    state_: Annotated[
        str | None,
        typer.Option("--state", help="pending | running | succeeded | failed (default: all)."),
    ] = None,
    tenant: AnyTenantOpt = None,
    limit: Annotated[str, typer.Option("--limit", help="1..10000.")] = "100",
    cursor: CursorOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List review jobs, oldest first, with attempts, last error and trajectory id; one page
    (--cursor: the next one)."""
    if ctx.invoked_subcommand is not None:
        return
    from hindsight._contract import Limit, check
    from hindsight.engine.async_memory import review_jobs_page

    with guarded(), _open_store(state(ctx)) as store:
        n = check(Limit, limit)
        found = review_jobs_page(store, state=state_, tenant_id=tenant, limit=n, cursor=cursor)
        counts = {
            s: store.count_review_jobs(state=s, tenant_id=tenant)
            for s in ("pending", "running", "succeeded", "failed")
        }
        if as_json:
            print_json(
                {
                    "counts": counts,
                    "jobs": [j.to_json() for j in found],
                    "next_cursor": found.next_cursor,
                }
            )
            return
        _print_jobs(found, counts)
        print_next_cursor(found.next_cursor)


def _print_jobs(found: list[Any], counts: dict[str, int]) -> None:
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    for job in found:
        out_console.print(
            f"{job.id}  {job.state.value:<9}  attempts {job.attempts}  tenant "
            f"{escape(job.tenant_id)}  trajectory {job.trajectory_id}  updated "
            f"{job.updated_at:%Y-%m-%d %H:%M:%S}",
            highlight=False,
            soft_wrap=True,
        )
        if job.last_error:
            error = job.last_error if len(job.last_error) <= 500 else job.last_error[:500] + "…"
            out_console.print(f"    last error: {escape(error)}", highlight=False, soft_wrap=True)
    if not found:
        out_console.print("no review jobs listed", highlight=False)
    out_console.print(summary, highlight=False)


@jobs_app.command("retry")
def jobs_retry(
    ctx: typer.Context,
    job_ids: Annotated[
        list[str] | None, typer.Argument(help="Failed job id(s) to run again.")
    ] = None,
    all_failed: Annotated[
        bool, typer.Option("--all-failed", help="Retry every failed job (of --tenant).")
    ] = False,
    tenant: AnyTenantOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Put failed review jobs back to pending (attempts reset). A worker then runs them: the
    process that has the store open, its next open, or `hindsight worker`."""
    if bool(job_ids) == all_failed:
        raise fail("give job id(s) or --all-failed (not both)", 2)
    with guarded(), _open_store(state(ctx)) as store:
        retried = store.retry_review_jobs(job_ids or (), all_failed=all_failed, tenant_id=tenant)
        pending = store.count_review_jobs(state="pending", tenant_id=tenant)
        if as_json:
            jobs = [j.to_json() for j in retried]
            print_json({"retried": len(retried), "pending": pending, "jobs": jobs})
            return
        out_console.print(
            f"{len(retried)} job(s) back to pending, {pending} pending in all; they run in the "
            "process that has the store open, on its next open, or under `hindsight worker`",
            highlight=False,
        )


@app.command()
def worker(
    ctx: typer.Context,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=64, help="Workers in this process.")
    ] = 1,
    once: Annotated[bool, typer.Option("--once", help="Exit when no job is ready to run.")] = False,
    reviewer: ReviewerOpt = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            min=0,
            max=65535,
            envvar="HINDSIGHT_METRICS_PORT",
            help="Serve Prometheus metrics at http://HOST:PORT/metrics (docs/deploy.md#metrics).",
        ),
    ] = None,
    metrics_host: Annotated[
        str,
        typer.Option(
            "--metrics-host",
            envvar="HINDSIGHT_METRICS_HOST",
            help="Address of --metrics-port; another than loopback needs API keys.",
        ),
    ] = "127.0.0.1",
    as_json: JsonOpt = False,
) -> None:
    """Run review workers in this process against the configured store.

    With DATABASE_URL and VECTOR_DB_URL pointing at servers, run as many worker processes on
    as many machines as needed (PostgreSQL hands each job to one worker). With the embedded
    default the worker holds the data-dir lock: run it only while no agent has the store
    open (see docs/review.md)."""
    from hindsight.review.workers import run_workers

    overrides = {"background_review": False, **check_reviewer(reviewer)}

    def on_job(job: Any, error: str | None) -> None:
        if as_json:
            return
        if error is None:
            err_console.print(f"reviewed trajectory {job.trajectory_id}", highlight=False)
        else:
            err_console.print(
                f"review of trajectory {job.trajectory_id} failed (attempt {job.attempts}): "
                f"{escape(error[:300])}",
                highlight=False,
            )

    with (
        guarded(),
        open_memory(state(ctx), note_pending=False, **overrides) as mem,
        ExitStack() as stack,
    ):
        if mem.aio._lock is not None and not as_json:
            err_console.print(
                "note: embedded store: this worker holds the data-dir lock until it exits",
                highlight=False,
            )
        if metrics_port is not None:
            from hindsight.service._keys import KeyRing
            from hindsight.service.metrics_http import MetricsServer

            keyring = KeyRing.from_env(data_dir=mem.config.data_dir)
            served = MetricsServer(mem.metrics, metrics_port, metrics_host, keyring)
            stack.callback(served.close)
            err_console.print(f"metrics at {served.url}", highlight=False)

        def ready() -> None:  # on stderr even with --json: stdout stays one document
            err_console.print(
                f"{concurrency} review worker(s) running"
                + ("" if once else "; stop with Ctrl-C or SIGTERM"),
                highlight=False,
            )

        import asyncio

        report = asyncio.run(
            run_workers(mem.aio, concurrency=concurrency, once=once, on_job=on_job, on_ready=ready)
        )
        counts = mem.aio.store.stats()["review_jobs"]
        doc = {
            "succeeded": report.succeeded,
            "failed_attempts": report.failed,
            "errors": [{"trajectory_id": t, "error": e} for t, e in report.errors],
            "stopped_by_signal": report.stopped_by_signal,
            "jobs": counts,
        }
        if as_json:
            print_json(doc)
        else:
            out_console.print(
                f"{report.succeeded} review(s) done, {report.failed} failed attempt(s); jobs now: "
                + ", ".join(f"{n} {s}" for s, n in counts.items()),
                highlight=False,
            )
