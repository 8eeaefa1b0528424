"""Commands of the memory guard: ``hindsight quarantine list|approve|reject|rescan`` and
``hindsight guard scan`` (issue 5, items 4 and 6; issue 17; docs/security.md)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from hindsight.cli._common import (
    JsonOpt,
    TenantOpt,
    app,
    fail,
    guarded,
    open_memory,
    out_console,
    print_json,
    state,
)

quarantine_app = typer.Typer(
    name="quarantine",
    help="Review what the memory guard quarantined: list, approve, reject, rescan.",
    no_args_is_help=True,
)
guard_app = typer.Typer(
    name="guard",
    help="The memory guard's offline tools.",
    no_args_is_help=True,
)
app.add_typer(quarantine_app)
app.add_typer(guard_app)

IdArg = Annotated[str, typer.Argument(help="The experience id (any UUID form).")]
NoteOpt = Annotated[
    str | None, typer.Option("--note", help="Why (kept in the experience's metadata).")
]


@quarantine_app.command("list")
def quarantine_list(
    ctx: typer.Context,
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    namespace: Annotated[str | None, typer.Option("--namespace")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000)] = 100,
    as_json: JsonOpt = False,
) -> None:
    """List the tenant's quarantined experiences with the guard's reasons."""
    from hindsight.guard.quarantine import quarantine_entry

    with guarded(), open_memory(state(ctx)) as mem:
        items = mem.list_quarantined(tenant_id=tenant, namespace=namespace, limit=limit)
        entries = [quarantine_entry(e) for e in items]
        if as_json:
            print_json({"tenant": tenant, "count": len(entries), "quarantined": entries})
            return
        if not entries:
            out_console.print("nothing quarantined")
            return
        for entry in entries:
            out_console.print(f"{entry['id']}  {escape(entry['content'])}", highlight=False)
            for reason in entry["reasons"]:
                out_console.print(f"    - {escape(reason)}", highlight=False)


def _decision(action: str, done: str, help_text: str) -> None:
    """Register ``hindsight quarantine <action> ID --tenant T [--note] [--json]``."""

    def command(
        ctx: typer.Context,
        experience_id: IdArg,
        tenant: TenantOpt = ...,  # type: ignore[assignment]
        note: NoteOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        with guarded(), open_memory(state(ctx)) as mem:
            exp = getattr(mem, action)(experience_id, tenant_id=tenant, note=note)
            if as_json:
                print_json({"id": exp.id, "status": exp.status.value, "content": exp.content})
            else:
                out_console.print(f"{done} {exp.id} (now {exp.status.value})", highlight=False)

    command.__doc__ = help_text
    quarantine_app.command(action)(command)


_decision("approve", "approved", "Approve a quarantined experience: it is recalled again.")
_decision("reject", "rejected", "Reject a quarantined experience: soft-deleted, kept for audit.")


@quarantine_app.command("rescan")
def quarantine_rescan(
    ctx: typer.Context,
    experience_id: Annotated[
        str | None, typer.Argument(help="One experience; omit to rescan the whole tenant.")
    ] = None,
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    namespace: Annotated[str | None, typer.Option("--namespace")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the memory guard again on stored experiences: it quarantines what it now flags
    (never releases: approve does)."""
    from hindsight.guard.quarantine import quarantine_entry

    with guarded(), open_memory(state(ctx)) as mem:
        if experience_id is not None and namespace is not None:
            raise fail("give an experience id or --namespace, not both", 2)
        items = mem.rescan(experience_id, tenant_id=tenant, namespace=namespace)
        entries = [{**quarantine_entry(e), "status": e.status.value} for e in items]
        if as_json:
            print_json({"tenant": tenant, "count": len(entries), "experiences": entries})
            return
        if not entries:
            out_console.print("nothing changed")
        for entry in entries:
            out_console.print(f"{entry['id']}  {entry['status']}", highlight=False)
            for reason in entry["reasons"]:
                out_console.print(f"    - {escape(reason)}", highlight=False)


def _rate(value: Any) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


@guard_app.command("scan")
def guard_scan(
    path: Annotated[Path, typer.Argument(help='JSONL, one {"id","content","source"} per line.')],
    rules: Annotated[
        Path | None,
        typer.Option(
            "--rules",
            envvar="HINDSIGHT_GUARD_RULES",
            help="Extra/disabled rules and thresholds (JSON or TOML).",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help='One JSON object per line, then {"summary": {...}} on the last line.'
        ),
    ] = False,
) -> None:
    """Check candidate lessons offline; with labels ("poison"/"benign"), print the detection
    and false-positive rates."""
    if not path.is_file():
        raise fail(f"no such file: {path}", 2)
    with guarded():
        try:
            _scan(path, rules, as_json)
        except BrokenPipeError:  # `hindsight guard scan ... | head`: stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(0) from None


def _scan(path: Path, rules: Path | None, as_json: bool) -> None:
    from hindsight.guard import scan_jsonl, summarize
    from hindsight.guard.rules_file import guard_from_file

    guard = guard_from_file(rules)
    results = []
    for result in scan_jsonl(path, guard=guard):
        results.append(result)
        if as_json:
            sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
        else:
            line = f"{result['id']}  {result['verdict']}"
            if result["reasons"]:
                line += "  " + "; ".join(result["reasons"])
            out_console.print(escape(line), highlight=False, soft_wrap=True)
    summary = summarize(results)
    if as_json:
        sys.stdout.write(json.dumps({"summary": summary}, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        return
    out_console.print(
        f"{summary['total']} candidates: {summary['quarantine']} quarantined, "
        f"{summary['allow']} allowed",
        highlight=False,
    )
    if "detection_rate" in summary:
        out_console.print(
            f"detection {_rate(summary['detection_rate'])} ({summary['detected']}/"
            f"{summary['poison']}), false positives {_rate(summary['false_positive_rate'])} "
            f"({summary['false_positives']}/{summary['benign']})",
            highlight=False,
        )
