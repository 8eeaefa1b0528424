"""Commands of the write-back lifecycle: ``experiences list|show|history|rollback|
restore``, ``confidence``, ``outcome`` and ``forget``. Each takes ``--tenant`` (required) and
``--json``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hindsight._paging import walk
from hindsight.cli._common import (
    CursorOpt,
    HindsightTyper,
    JsonOpt,
    TenantOpt,
    app,
    escape,
    fail,
    guarded,
    open_memory,
    out_console,
    print_json,
    print_next_cursor,
    state,
)
from hindsight.review._text import one_line

experiences_app = HindsightTyper(
    help="List, show, version and restore experiences.", no_args_is_help=True
)
app.add_typer(experiences_app, name="experiences")


def _doc(exp: Any) -> dict[str, Any]:
    doc: dict[str, Any] = exp.model_dump(mode="json")
    return doc


def _line(exp: Any) -> str:
    return (
        f"{exp.id}  v{exp.version}  {exp.status.value:<11} {exp.kind.value:<16} "
        f"conf {exp.confidence:.2f}  support {exp.support_count}  "
        f"{escape(one_line(exp.content))}"
    )


@experiences_app.command("list")
def experiences_list(
    ctx: typer.Context,
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    status: Annotated[
        str, typer.Option("--status", help="active|quarantined|archived|superseded|deleted")
    ] = "active",
    namespace: Annotated[str | None, typer.Option("--namespace")] = None,
    task_type: Annotated[str | None, typer.Option("--task-type")] = None,
    task_key: Annotated[
        str | None,
        typer.Option("--task-key", help="Only those learned from runs of this task group."),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help="Only lessons of this kind: rule, improvement, anti_pattern, failure_cause, "
            "tool_reliability, key_step, outcome, task_scope or episode.",
        ),
    ] = None,
    limit: Annotated[str, typer.Option("--limit", help="1..10000.")] = "50",
    order: Annotated[
        str,
        typer.Option("--order", help="confidence (most confident first) | created (oldest first)."),
    ] = "confidence",
    cursor: CursorOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Experiences of a tenant, most confident first (--order created: oldest first), one
    page (--cursor: the next one)."""
    with guarded(), open_memory(state(ctx)) as mem:
        exps = mem.list_experiences(
            tenant_id=tenant,
            status=status,
            namespace=namespace,
            task_type=task_type,
            task_key=task_key,
            kind=kind,
            limit=limit,
            cursor=cursor,
            order=order,
        )
        if as_json:
            print_json({"items": [_doc(e) for e in exps], "next_cursor": exps.next_cursor})
            return
        for exp in exps:
            out_console.print(_line(exp), highlight=False, soft_wrap=True)
        if not exps:
            of_kind = "" if kind is None else f" of kind {kind.strip().lower()}"
            out_console.print(f"no {status} experiences{of_kind}")
        print_next_cursor(exps.next_cursor)


@experiences_app.command("show")
def experiences_show(
    ctx: typer.Context,
    experience_id: Annotated[str, typer.Argument(help="Experience id.")],
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    as_json: JsonOpt = False,
) -> None:
    """One experience with all its fields."""
    with guarded(), open_memory(state(ctx)) as mem:
        exp = mem.get_experience(experience_id, tenant_id=tenant)
        if as_json:
            print_json(_doc(exp))
            return
        for key, value in _doc(exp).items():
            out_console.print(f"{key}: {escape(str(value))}", highlight=False)


@experiences_app.command("history")
def experiences_history(
    ctx: typer.Context,
    experience_id: Annotated[str, typer.Argument(help="Experience id.")],
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    as_json: JsonOpt = False,
) -> None:
    """Every version of an experience, oldest first, the current one last."""
    with guarded(), open_memory(state(ctx)) as mem:
        versions = list(
            walk(lambda cursor: mem.history(experience_id, tenant_id=tenant, cursor=cursor))
        )
        if as_json:
            print_json([{**v, "experience": _doc(v["experience"])} for v in versions])
            return
        for v in versions:
            exp = v["experience"]
            what = "current" if v["current"] else f"replaced by {v['change']} ({v['actor']})"
            out_console.print(
                f"v{v['version']} [{exp.status.value}, conf {exp.confidence:.2f}] {what}: "
                f"{escape(one_line(exp.content))}",
                highlight=False,
                soft_wrap=True,
            )


@experiences_app.command("rollback")
def experiences_rollback(
    ctx: typer.Context,
    experience_id: Annotated[str, typer.Argument(help="Experience id.")],
    version: Annotated[int, typer.Argument(help="The version to go back to.", min=1)],
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    reason: Annotated[str | None, typer.Option("--reason")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Restore what an earlier version said (written as a new version)."""
    with guarded(), open_memory(state(ctx)) as mem:
        exp = mem.rollback(experience_id, version, tenant_id=tenant, reason=reason)
        if as_json:
            print_json(_doc(exp))
        else:
            out_console.print(f"rolled back to v{version}: now " + _line(exp), highlight=False)


@experiences_app.command("restore")
def experiences_restore(
    ctx: typer.Context,
    experience_id: Annotated[str, typer.Argument(help="Experience id.")],
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    as_json: JsonOpt = False,
) -> None:
    """Bring back an archived, superseded or soft-deleted experience."""
    with guarded(), open_memory(state(ctx)) as mem:
        exp = mem.restore(experience_id, tenant_id=tenant)
        if as_json:
            print_json(_doc(exp))
        else:
            out_console.print("restored: " + _line(exp), highlight=False)


@app.command("confidence")
def confidence(
    ctx: typer.Context,
    experience_id: Annotated[str, typer.Argument(help="Experience id.")],
    delta: Annotated[str, typer.Argument(help="Change in [-1, 1], e.g. -0.2.")],
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    reason: Annotated[str | None, typer.Option("--reason")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Adjust an experience's confidence by DELTA (clamped to [0, 1], audited)."""
    with guarded():
        from hindsight._contract import ConfidenceDelta, check

        change = check(ConfidenceDelta, delta)  # the contract's words, before opening
    with guarded(), open_memory(state(ctx)) as mem:
        before = mem.get_experience(experience_id, tenant_id=tenant).confidence
        exp = mem.adjust_confidence(
            experience_id, change, tenant_id=tenant, reason=reason, actor="cli"
        )
        if as_json:
            print_json({"id": exp.id, "old": before, "new": exp.confidence})
        else:
            out_console.print(f"{exp.id}: confidence {before:.2f} -> {exp.confidence:.2f}")


@app.command("outcome")
def outcome(
    ctx: typer.Context,
    trajectory_id: Annotated[str, typer.Argument(help="The run that recalled experiences.")],
    result: Annotated[str, typer.Argument(help="success | failure")],
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    as_json: JsonOpt = False,
) -> None:
    """Credit (success) or blame (failure) what a run recalled; counted once per run."""
    if result not in ("success", "failure"):
        raise fail(f"RESULT must be success or failure, got {result!r}", 2)
    with guarded(), open_memory(state(ctx)) as mem:
        changed = mem.record_outcome(trajectory_id, result == "success", tenant_id=tenant)
        if as_json:
            print_json(
                {
                    "trajectory_id": trajectory_id,
                    "result": result,
                    "updated": [
                        {"id": e.id, "confidence": e.confidence, "misled_count": e.misled_count}
                        for e in changed
                    ],
                }
            )
        else:
            out_console.print(f"{len(changed)} experience(s) updated", highlight=False)


@app.command("forget")
def forget(
    ctx: typer.Context,
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    trajectory: Annotated[str | None, typer.Option("--trajectory", help="Forget one run.")] = None,
    experience: Annotated[
        str | None, typer.Option("--experience", help="Forget one experience.")
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Forget everything of the tenant.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Hard-delete (rows, history and vectors): one experience, one run, or --all of a tenant.

    Exactly one filter is required: an empty filter is never "everything"."""
    with guarded(), open_memory(state(ctx)) as mem:
        n = mem.forget(
            tenant_id=tenant,
            experience_id=experience,
            trajectory_id=trajectory,
            everything=everything,
        )
        if as_json:
            print_json({"tenant_id": tenant, "experiences_removed": n})
        else:
            out_console.print(f"{n} experience(s) forgotten", highlight=False)
