"""Runs: the trajectories (list and the timeline of one run) and the recall playground."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from hindsight._errors import UsageError
from hindsight.models import Event, EventStatus, EventType, Outcome, Trajectory
from hindsight.service.console._deps import Engine, Viewer, form_float, form_int, form_list
from hindsight.service.console._deps import form_text as param
from hindsight.service.console._pages import render
from hindsight.service.console._plots import breakdown_bars

__all__ = ["router"]

router = APIRouter()

FAILED = (EventStatus.FAILURE, EventStatus.TIMEOUT)


def _is_error(event: Event) -> bool:
    return event.event_type is EventType.ERROR or event.status in FAILED


def _repeats_args(event: Event) -> bool:
    """Whether the event's content is only its tool arguments again (shown once, parsed)."""
    if not event.tool_args or not event.content.strip().startswith("{"):
        return False
    try:
        return bool(json.loads(event.content) == event.tool_args)
    except ValueError:
        return False


def _timeline(traj: Trajectory) -> list[dict[str, Any]]:
    """The run's events with their offset from the start (seconds), an error flag, and
    whether their content is worth showing besides the tool arguments."""
    start = traj.started_at
    return [
        {
            "event": e,
            "offset": (e.timestamp - start).total_seconds(),
            "error": _is_error(e),
            "content": bool(e.content) and not _repeats_args(e),
        }
        for e in traj.events
    ]


TRAJECTORY_PAGE = 50
"""Runs per page of the trajectories list."""


def _day(params: Any, name: str, *, end: bool = False) -> datetime | None:
    """A ``YYYY-MM-DD`` (or ISO 8601) field as a UTC datetime; ``None`` when blank. ``end``:
    a bare date means the end of that day (an inclusive "until")."""
    text = param(params, name, max_length=40)
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{name} must be a date like 2026-01-31, got {text!r}") from None
    if end and len(text) == len("2026-01-31"):
        when += timedelta(days=1)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


@router.get("/trajectories")
async def trajectories(request: Request, session: Viewer, memory: Engine) -> Response:
    """The tenant's runs, newest first, a page at a time; filters: outcome, task type, task
    group and the day the run started (from / until, inclusive)."""
    params = request.query_params
    shown = {n: params.get(n, "") for n in ("outcome", "task_type", "task_key", "since", "until")}
    page = form_int(params, "page", low=1, high=10**6) or 1
    runs = await asyncio.to_thread(
        memory.store.list_trajectories,
        session.tenant,
        task_key=param(params, "task_key", max_length=1000),
        outcome=param(params, "outcome", max_length=20),
        task_type=param(params, "task_type", max_length=200),
        since=_day(params, "since"),
        until=_day(params, "until", end=True),
        newest_first=True,
        limit=TRAJECTORY_PAGE + 1,
        offset=(page - 1) * TRAJECTORY_PAGE,
    )
    return render(
        request,
        "trajectories.html",
        nav="trajectories",
        runs=runs[:TRAJECTORY_PAGE],
        more=len(runs) > TRAJECTORY_PAGE,
        page=page,
        params=shown,
        outcomes=[o.value for o in Outcome],
    )


@router.get("/trajectories/{trajectory_id}")
async def trajectory(
    request: Request, trajectory_id: str, session: Viewer, memory: Engine
) -> Response:
    """One run: its events as a timeline (tool calls with status and latency, errors
    highlighted), the lessons derived from it, what it recalled, its outcome and review job."""
    tenant = session.tenant
    traj = await memory.get_trajectory(trajectory_id, tenant_id=tenant)
    store = memory.store
    (lessons, _), job, recalled_ids, outcome = await asyncio.gather(
        asyncio.to_thread(
            store.browse_experiences, tenant, {"source_trajectory_id": traj.id}, limit=500
        ),
        asyncio.to_thread(store.review_job_of, tenant, traj.id),
        asyncio.to_thread(store.recalled_ids, tenant, traj.id),
        asyncio.to_thread(store.get_outcome, tenant, traj.id),
    )
    recalled = await asyncio.to_thread(store.get_experiences, tenant, recalled_ids)
    return render(
        request,
        "trajectory.html",
        nav="trajectories",
        traj=traj,
        timeline=_timeline(traj),
        errors=sum(1 for e in traj.events if _is_error(e)),
        lessons=lessons,
        job=job,
        recalled=[recalled[i] for i in recalled_ids if i in recalled],
        outcome=outcome,
    )


RECALL_FIELDS = (
    "query",
    "namespace",
    "include_shared",
    "task_type",
    "tags",
    "tools",
    "top_k",
    "mode",
    "similarity_floor",
    "token_budget",
    "include_episodes",
    "explain",
)


@router.get("/recall")
async def recall(request: Request, session: Viewer, memory: Engine) -> Response:
    """The recall playground: the options of ``recall``, the hits with their score breakdown
    as bars, the exclusions with their reasons, and the block exactly as the agent gets it.
    A dry run (``record=False``): nothing is counted as recalled."""
    params = request.query_params
    shown = {name: params.get(name, "") for name in RECALL_FIELDS}
    asked = "query" in params or "task_type" in params
    if not asked:  # the form's defaults
        shown.update(include_shared="on", explain="on")
    result = None
    if asked:
        result = await memory.recall(
            params.get("query", ""),
            tenant_id=session.tenant,
            namespace=form_list(params, "namespace") or "default",
            include_shared=params.get("include_shared") == "on",
            task_type=param(params, "task_type", max_length=200),
            tags=form_list(params, "tags"),
            tools=form_list(params, "tools"),
            top_k=form_int(params, "top_k", low=1, high=1000),
            mode=param(params, "mode", max_length=20),  # type: ignore[arg-type]
            similarity_floor=form_float(params, "similarity_floor", low=-1.0, high=1.0),
            token_budget=form_int(params, "token_budget", low=1, high=1_000_000),
            include_episodes=params.get("include_episodes") == "on",
            explain=params.get("explain") == "on",
            record=False,
        )
    hits = []
    if result is not None:
        hits = [
            {"hit": h, "bars": breakdown_bars(h.breakdown.model_dump(mode="json"))}
            for h in [*result.hits, *result.episodes]
        ]
    return render(
        request,
        "recall.html",
        nav="recall",
        params=shown,
        result=result,
        hits=hits,
        rendered=result.render() if result is not None else "",
        truncated=result.truncated if result is not None else False,
    )
