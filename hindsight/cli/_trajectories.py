"""``hindsight trajectories list|show``: the stored runs, with their task group, outcome,
outcome evidence and system prompt (docs/cli.md#hindsight-trajectories-list). Each takes
``--tenant`` (required) and ``--json``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hindsight.cli._common import (
    CursorOpt,
    HindsightTyper,
    JsonOpt,
    TenantOpt,
    app,
    escape,
    guarded,
    open_memory,
    out_console,
    print_json,
    print_next_cursor,
    state,
)
from hindsight.review._text import shorten

trajectories_app = HindsightTyper(
    help="List and show stored runs (trajectories).", no_args_is_help=True
)
app.add_typer(trajectories_app, name="trajectories")

#: Characters of the system prompt ``show`` prints without ``--json`` (the rest is counted).
PROMPT_PREVIEW_CHARS = 400


def _line(run: Any) -> str:
    reward = "" if run.reward is None else f" reward {run.reward:g}"
    key = f"  task {run.task_key} ({run.task_key_source})" if run.task_key else ""
    reviewed = "reviewed" if run.reviewed else (run.review_state.value if run.review_state else "-")
    return (
        f"{run.id}  {run.outcome.value:<7}{reward}  {reviewed:<9}{escape(key)}  "
        f"{escape(' '.join(run.task.split())[:80])}"
    )


@trajectories_app.command("list")
def trajectories_list(
    ctx: typer.Context,
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    task_key: Annotated[
        str | None, typer.Option("--task-key", help="Only runs of this task group.")
    ] = None,
    outcome: Annotated[
        str | None, typer.Option("--outcome", help="success|failure|partial|unknown")
    ] = None,
    task_type: Annotated[str | None, typer.Option("--task-type")] = None,
    limit: Annotated[str, typer.Option("--limit", help="1..10000.")] = "50",
    offset: Annotated[
        str | None, typer.Option("--offset", help="Rows to skip (>= 0; not with --cursor).")
    ] = None,
    cursor: CursorOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Stored runs of a tenant, oldest first: outcome, reward, review, task group, task; one
    page (--cursor: the next one)."""
    with guarded(), open_memory(state(ctx)) as mem:
        runs = mem.list_trajectories(
            tenant_id=tenant,
            task_key=task_key,
            outcome=outcome,
            task_type=task_type,
            limit=limit,
            offset=offset,
            cursor=cursor,
        )
        if as_json:
            print_json({"items": [run.to_json() for run in runs], "next_cursor": runs.next_cursor})
            return
        for run in runs:
            out_console.print(_line(run), highlight=False)
        if not runs:
            out_console.print("no trajectories")
        print_next_cursor(runs.next_cursor)


@trajectories_app.command("show")
def trajectories_show(
    ctx: typer.Context,
    trajectory_id: Annotated[str, typer.Argument(help="Trajectory id.")],
    tenant: TenantOpt = ...,  # type: ignore[assignment]
    as_json: JsonOpt = False,
) -> None:
    """One run: its fields, task group, outcome evidence, system prompt (the start of it;
    ``--json`` for all) and events."""
    with guarded(), open_memory(state(ctx)) as mem:
        traj = mem.get_trajectory(trajectory_id, tenant_id=tenant)
        if as_json:
            print_json(traj.model_dump(mode="json"))
            return
        say = out_console.print
        say(f"id: {traj.id}", highlight=False)
        say(f"task: {escape(traj.task)}", highlight=False)
        for name in ("namespace", "task_type", "task_key", "outcome", "reward", "started_at"):
            value = getattr(traj, name)
            say(f"{name}: {escape(str(getattr(value, 'value', value)))}", highlight=False)
        if traj.evidence is not None:
            ev = traj.evidence
            if ev.reason:
                say(f"reason: {escape(ev.reason)}", highlight=False)
            for action in ev.expected_actions:
                say(f"expected: {escape(action.tool)} {escape(str(action.args))}", highlight=False)
            if ev.final_state is not None:
                say(f"final_state: {escape(str(ev.final_state)[:400])}", highlight=False)
            if ev.details:
                say(f"details: {escape(str(ev.details)[:400])}", highlight=False)
        if traj.system_prompt is not None:
            prompt = traj.system_prompt
            more = len(prompt) - PROMPT_PREVIEW_CHARS
            say(f"system_prompt ({len(prompt)} chars):", highlight=False)
            say(escape(prompt[:PROMPT_PREVIEW_CHARS]), highlight=False)
            if more > 0:
                say(f"[... {more} more chars; --json shows all]", highlight=False, markup=False)
        say(f"events ({len(traj.events)}):", highlight=False)
        for ev in traj.events:
            status = f" [{ev.status.value}]" if ev.status else ""
            tool = f" {ev.tool_name}" if ev.tool_name else ""
            text = shorten(ev.content, 120)
            say(f"  {ev.event_type.value}{tool}{status}: {escape(text)}", highlight=False)
