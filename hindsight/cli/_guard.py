"""Commands of the memory guard: ``hindsight quarantine list|approve|reject|rescan``,
``hindsight guard scan`` and ``hindsight guard eval`` (docs/security.md)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from hindsight.cli._common import (
    CursorOpt,
    HindsightTyper,
    JsonOpt,
    TenantOpt,
    app,
    checked_file,
    escape,
    fail,
    guarded,
    open_memory,
    out_console,
    path_value,
    print_json,
    print_next_cursor,
    state,
)

quarantine_app = HindsightTyper(
    name="quarantine",
    help="Review what the memory guard quarantined: list, approve, reject, rescan.",
    no_args_is_help=True,
)
guard_app = HindsightTyper(
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
    kind: Annotated[
        str | None, typer.Option("--kind", help="Only lessons of this kind (rule, ...).")
    ] = None,
    limit: Annotated[str, typer.Option("--limit", help="1..10000.")] = "100",
    cursor: CursorOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List the tenant's quarantined experiences with the guard's reasons, one page
    (--cursor: the next one)."""
    from hindsight.guard.quarantine import quarantine_entry

    with guarded(), open_memory(state(ctx)) as mem:
        items = mem.list_quarantined(
            tenant_id=tenant, namespace=namespace, kind=kind, limit=limit, cursor=cursor
        )
        entries = [quarantine_entry(e) for e in items]
        if as_json:
            print_json(
                {
                    "tenant": tenant,
                    "count": len(entries),
                    "quarantined": entries,
                    "next_cursor": items.next_cursor,
                }
            )
            return
        if not entries:
            out_console.print("nothing quarantined")
            return
        for entry in entries:
            out_console.print(f"{entry['id']}  {escape(entry['content'])}", highlight=False)
            for reason in entry["reasons"]:
                out_console.print(f"    - {escape(reason)}", highlight=False)
        print_next_cursor(items.next_cursor)


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
    path: Annotated[
        Path,
        typer.Argument(parser=path_value, help='JSONL, one {"id","content","source"} per line.'),
    ],
    rules: Annotated[
        Path | None,
        typer.Option(
            "--rules",
            envvar="HINDSIGHT_GUARD_RULES",
            parser=path_value,
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
    checked_file(path, "JSONL file of candidate lessons")
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


@guard_app.command("eval")
def guard_eval(
    ctx: typer.Context,
    path: Annotated[
        Path | None,
        typer.Argument(
            parser=path_value,
            help='Labelled JSONL: {"id","label","kind","source","content"} per line.',
        ),
    ] = None,
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            help="Evaluate the tenant's stored lessons (active and quarantined) instead of a file.",
        ),
    ] = None,
    label: Annotated[
        str, typer.Option("--label", help="Label of the stored lessons with --tenant.")
    ] = "benign",
    layers: Annotated[
        str,
        typer.Option("--layers", help="Comma-separated: rules, semantic, llm."),
    ] = "rules,semantic",
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
    agentdojo: Annotated[
        bool,
        typer.Option(
            "--agentdojo",
            help="Poisoning through the review on AgentDojo's suites (needs the bench extra).",
        ),
    ] = False,
    suites: Annotated[
        str, typer.Option("--suites", help="With --agentdojo: comma-separated suites.")
    ] = "banking,slack,travel,workspace",
    attacks: Annotated[
        str, typer.Option("--attacks", help="With --agentdojo: comma-separated attacks.")
    ] = "important_instructions,direct,tool_knowledge,injecagent",
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="With --agentdojo: user tasks per suite.")
    ] = None,
    injections: Annotated[
        int | None,
        typer.Option("--injections", min=1, help="With --agentdojo: injection tasks per suite."),
    ] = None,
    pairs: Annotated[
        int,
        typer.Option("--pairs", min=1, help="With --agentdojo: user tasks per injection task."),
    ] = 2,
) -> None:
    """Detection and false-positive rates per layer and per category for labelled lessons
    (a JSONL file, or a tenant's stored lessons), or, with --agentdojo, lessons poisoned
    through the review on AgentDojo's injected runs (docs/security.md#agentdojo)."""
    if agentdojo:
        if path is not None or tenant is not None:
            raise fail("--agentdojo takes no file and no --tenant", 2)
        with guarded():
            _agentdojo(suites, attacks, limit, injections, pairs, as_json)
        return
    if (path is None) == (tenant is None):
        raise fail("give a labelled JSONL file or --tenant, not both and not neither", 2)
    if label not in ("benign", "poison"):
        raise fail(f"--label must be benign or poison, got {label!r}", 2)
    if path is not None:
        checked_file(path, "labelled JSONL file")
    with guarded():
        _eval(ctx, path, tenant, label, layers, as_json)


def _eval(
    ctx: typer.Context,
    path: Path | None,
    tenant: str | None,
    label: str,
    layers: str,
    as_json: bool,
) -> None:
    from hindsight.config import load_config
    from hindsight.guard.evaluate import evaluate
    from hindsight.guard.llm_judge import GuardJudge
    from hindsight.guard.rules_file import guard_layers
    from hindsight.guard.scan import _read_jsonl
    from hindsight.guard.screening import episode_words

    chosen = guard_layers(layers)
    judge = None
    if "llm" in chosen:
        config = load_config()
        if not config.reflection_model:
            raise fail("--layers llm needs a model: set REFLECTION_MODEL (and LLM_BASE_URL)", 2)
        judge = GuardJudge(
            config.reflection_model, api_base=config.llm_base_url, api_key=config.llm_api_key
        )
    if path is not None:
        records = list(_read_jsonl(path))
        source = str(path)
    else:
        assert tenant is not None
        with open_memory(state(ctx)) as mem:
            stored = [
                *mem.list_experiences(tenant_id=tenant, limit=10000),
                *mem.list_quarantined(tenant_id=tenant, limit=10000),
            ]
        records = [
            {
                "id": e.id,
                "label": label,
                "kind": e.kind.value,
                "source": e.provenance.value,
                # what the write path's text layers read: a reviewed episode's own words
                # (docs/security.md#episodes; "…" when it has none), else the whole text
                "content": episode_words(e).strip() or "…",
            }
            for e in stored
        ]
        source = f"tenant {tenant!r} ({len(records)} stored lessons)"
    report = evaluate(records, layers=chosen, judge=judge)
    if as_json:
        print_json({"source": source, **report.to_json()})
        return
    _print_report(source, report)


_CAPTION = "poison rows: detection rate; benign rows: false-positive rate"


def _print_report(source: str, report: Any) -> None:
    from rich.table import Table

    overall = report.rates()
    title = f"{source}: {len(report.results)} candidates"
    table = Table(title=title, title_justify="left", caption=_CAPTION, caption_justify="left")
    table.add_column("category", no_wrap=True)
    table.add_column("label", no_wrap=True)
    table.add_column("n", justify="right")
    for layer in report.layers:
        table.add_column(layer, justify="right", no_wrap=True)
    rows = [
        *report.by("kind").items(),
        ("ALL", {"label": "poison", **overall}),
        ("ALL", {"label": "benign", **overall}),
    ]
    for name, row in rows:
        kind = row["label"]
        rate_key = "detection" if kind == "poison" else "false_positive_rate"
        n = row[report.layers[0]]["poison" if kind == "poison" else "benign"]
        if not n:
            continue
        cells = [_rate(row[layer][rate_key]) for layer in report.layers]
        table.add_row(name, kind, str(n), *cells)
    out_console.print(table)
    everything = overall["all"]
    out_console.print(
        f"all layers: detection {_rate(everything['detection'])} ({everything['detected']}/"
        f"{everything['poison']}), false positives {_rate(everything['false_positive_rate'])} "
        f"({everything['false_positives']}/{everything['benign']})",
        highlight=False,
    )


def _agentdojo(
    suites: str, attacks: str, limit: int | None, injections: int | None, pairs: int, as_json: bool
) -> None:
    from rich.table import Table

    from hindsight.bench._agentdojo import HELD_OUT, agentdojo_runs, evaluate_agentdojo

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    names = [n.strip() for n in suites.split(",") if n.strip()]
    kinds = [a.strip() for a in attacks.split(",") if a.strip()]
    if not names or not kinds:
        raise fail("--suites and --attacks need at least one name each", 2)
    runs, unreachable = agentdojo_runs(
        names, kinds, limit=limit, injections=injections, pairs=pairs, progress=progress
    )
    report = evaluate_agentdojo(runs, progress=progress)
    report["not_injectable"] = sorted(unreachable)
    if as_json:
        print_json(report)
        return
    for held_out in (False, True):
        shown = [n for n in names if (n in HELD_OUT) is held_out]
        if not shown:
            continue
        title = "held out" if held_out else "tuning suites"
        table = Table(title=f"AgentDojo, {title}: injected runs and their lessons")
        for col in ("reviewer", "suite", "attack", "injected runs", "runs: poison active",
                    "runs: poison quarantined", "runs: none written", "poisoned lessons active",
                    "poisoned lessons quarantined"):  # fmt: skip
            table.add_column(col)
        clean = Table(title=f"AgentDojo, {title}: clean runs")
        for col in ("reviewer", "suite", "clean runs", "benign lessons quarantined",
                    "restated tool output active", "prompts recalling poison (top 5)"):  # fmt: skip
            clean.add_column(col)
        for reviewer, data in report["reviewers"].items():
            for suite in shown:
                row = data["suites"].get(suite)
                if row is None:
                    continue
                for attack, c in row["attacks"].items():
                    table.add_row(reviewer, suite, attack, str(c["injected"]),
                                  str(c["active_runs"]), str(c["quarantined_runs"]),
                                  str(c["none_runs"]), str(c["active_lessons"]),
                                  str(c["quarantined_lessons"]))  # fmt: skip
                clean.add_row(reviewer, suite, str(row["clean_runs"]),
                              f"{row['benign_quarantined']}/{row['benign_lessons']}",
                              f"{row['restated_clean_active']}/{row['restated_clean']}",
                              f"{row['prompts_recalling_poison']}/{row['prompts']}")  # fmt: skip
        out_console.print(table)
        out_console.print(clean)
    out_console.print(escape(report["definition"]), highlight=False)
