"""Maintenance commands: ``maintain``, ``audit``, ``doctor`` and ``reembed``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hindsight.cli._common import (
    JsonOpt,
    TenantOpt,
    app,
    err_console,
    escape,
    fail,
    guarded,
    open_memory,
    out_console,
    print_json,
    state,
)


@app.command("maintain")
def maintain(
    ctx: typer.Context,
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="Judge time rules at this ISO 8601 time (default: now)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Dedup, archive stale low-confidence experiences, compress over the cap
    (docs/lifecycle.md)."""
    from rich.progress import Progress

    with guarded(), open_memory(state(ctx)) as mem:
        with Progress(console=err_console, transient=True, disable=as_json) as progress:
            bar = progress.add_task("maintain", total=3)

            def step(name: str) -> None:
                progress.update(bar, description=name, advance=0 if name == "dedup" else 1)

            report = mem.maintain(tenant_id=tenant, as_of=as_of, progress=step)
            progress.update(bar, completed=3)
        if as_json:
            print_json(report)
            return
        out_console.print(
            f"merged {len(report['merged'])}, archived {len(report['archived'])}, compressed "
            f"{len(report['compressed'])} cluster(s); active {report['active_before']} -> "
            f"{report['active_after']} (as of {report['as_of']})",
            highlight=False,
        )


@app.command("audit")
def audit(
    ctx: typer.Context,
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    sample: Annotated[str, typer.Option("--sample", help="Lessons to show, 1..1000.")] = "20",
    mark_wrong: Annotated[
        list[str] | None,
        typer.Option("--mark-wrong", help="Quarantine this experience (repeatable)."),
    ] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why it is wrong.")] = None,
    seed: Annotated[str | None, typer.Option("--seed", help="Reproducible sample.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a random sample of lessons to a human and quarantine the ones marked wrong.

    Interactive on a terminal; ``--mark-wrong ID`` (and ``--json``) for scripts."""
    import sys

    with guarded(), open_memory(state(ctx)) as mem:
        if mark_wrong:
            done = [mem.mark_wrong(i, tenant_id=tenant, note=note) for i in mark_wrong]
            if as_json:
                print_json({"quarantined": [e.id for e in done]})
            else:
                for exp in done:
                    out_console.print(f"quarantined {exp.id}", highlight=False)
            return
        items = mem.audit_sample(tenant_id=tenant, size=sample, seed=seed)
        if as_json:
            print_json([e.model_dump(mode="json") for e in items])
            return
        if not items:
            out_console.print("no active experiences to audit")
            return
        interactive = sys.stdin.isatty()
        wrong = 0
        for i, exp in enumerate(items, 1):
            out_console.print(
                f"[{i}/{len(items)}] {exp.id} ({exp.kind.value}, conf {exp.confidence:.2f}, "
                f"support {exp.support_count})\n  {escape(exp.content)}",
                highlight=False,
            )
            if interactive and typer.confirm("  wrong?", default=False):
                mem.mark_wrong(exp.id, tenant_id=tenant, note=note)
                wrong += 1
        if interactive:
            out_console.print(f"{wrong} marked wrong and quarantined")


def _finding_line(f: Any) -> str:
    mark = "ok " if f.ok else "FAIL"
    fixed = f" (repaired {f.repaired})" if f.repaired else ""
    return f"{mark} {f.name}: {f.message}{fixed}"


@app.command("doctor")
def doctor(
    ctx: typer.Context,
    repair: Annotated[bool, typer.Option("--repair", help="Fix what can be fixed.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check SQL vs vectors, the embedding model and stuck jobs (docs/troubleshooting.md); exit 1 on
    problems left."""
    from hindsight._errors import EmbedderMismatchError

    mismatch: EmbedderMismatchError | None = None
    with guarded():  # a locked data dir or bad settings: one line, not a traceback
        try:
            ctx_mem = open_memory(state(ctx))
            mem = ctx_mem.__enter__()
        except EmbedderMismatchError as exc:  # a finding of its own, reported below
            mismatch = exc
    if mismatch is not None:
        doc = {
            "ok": False,
            "findings": [
                {
                    "name": "embedding_model",
                    "ok": False,
                    "count": 1,
                    "message": str(mismatch),
                    "ids": [],
                    "repaired": 0,
                }
            ],
        }
        if as_json:
            print_json(doc)
        else:
            out_console.print(f"FAIL embedding_model: {escape(str(mismatch))}", highlight=False)
        raise typer.Exit(1) from None
    with guarded():
        try:
            findings = mem.doctor(repair=repair)
            if repair:  # report what is left after the repair
                left = mem.doctor(repair=False)
                for f, after in zip(findings, left, strict=True):
                    f.ok = after.ok
        finally:
            ctx_mem.__exit__(None, None, None)
    ok = all(f.ok for f in findings)
    if as_json:
        print_json({"ok": ok, "findings": [f.to_json() for f in findings]})
    else:
        for f in findings:
            out_console.print(_finding_line(f), highlight=False)
    if not ok:
        raise typer.Exit(1)


@app.command("reembed")
def reembed(
    ctx: typer.Context,
    embedder: Annotated[
        str, typer.Option("--embedder", help="New EMBEDDING_MODEL, e.g. hash:512 or local.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Rebuild every vector with another embedding model and record it."""
    from rich.progress import Progress

    from hindsight.config import load_config
    from hindsight.ops.reembed import reembed as run

    st = state(ctx)
    if not embedder.strip():
        raise fail("--embedder must name a model, e.g. hash:512", 2)
    with guarded():
        kwargs: dict[str, Any] = {}
        if st.data_dir is not None:
            kwargs["data_dir"] = st.data_dir
        config = load_config(**kwargs)
        with Progress(console=err_console, transient=True, disable=as_json) as progress:
            bar = progress.add_task("re-embedding", total=None)

            def tick(done: int, total: int) -> None:
                progress.update(bar, completed=done, total=total)

            report = run(config, embedder.strip(), progress=tick)
        if as_json:
            print_json(report)
        else:
            out_console.print(
                f"re-embedded {report['experiences']} experience(s) with {report['to']['model']} "
                f"({report['to']['dimension']}-d), {report['points']} vector(s) written",
                highlight=False,
            )


@app.command("distill")
def distill(
    ctx: typer.Context,
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    min_sources: Annotated[
        int,
        typer.Option("--min-sources", min=2, help="Distinct namespaces (agents) a lesson needs."),
    ] = 2,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the rules that would be written.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Distil rules learned by several agents into the shared namespace (docs/checks.md)."""
    with guarded(), open_memory(state(ctx)) as mem:
        report = mem.distill(tenant_id=tenant, min_sources=min_sources, dry_run=dry_run)
        if as_json:
            print_json(report)
            return
        for cluster in report["clusters"]:
            status = cluster["status"] or "would be written"
            out_console.print(
                f"{escape(status)}: {escape(cluster['content'])} "
                f"[dim]({', '.join(escape(n) for n in cluster['namespaces'])})[/dim]"
            )
        out_console.print(
            f"written {len(report['written'])}, quarantined {len(report['quarantined'])}, "
            f"already shared {len(report['existing'])} of {len(report['clusters'])} rule(s)",
            highlight=False,
        )
        llm = report.get("llm")
        if llm is not None and llm["error"]:
            err_console.print(
                f"the LLM method stopped ({escape(llm['error'])}): offline rules only",
                highlight=False,
            )
