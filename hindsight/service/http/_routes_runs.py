"""Routes for runs: store episodes, list and read them, review now, recall, outcomes
(docs/http.md)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from hindsight._contract import Cursor, Limit, Offset
from hindsight.models import Experience, Outcome, Trajectory
from hindsight.service._offload import offload
from hindsight.service.http._deps import Memory, Tenant
from hindsight.service.http._errors import error_response
from hindsight.service.http._openapi import V1_ERRORS, errors, json_body, parse_body
from hindsight.service.http._schemas import (
    CheckBody,
    CheckResponse,
    EpisodeBody,
    EpisodesResponse,
    OutcomeBody,
    RecallBody,
    RecalledBody,
    RecallResponse,
    TrajectoryPage,
    page_doc,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["runs"], responses={**V1_ERRORS, **errors(502)})


def _foreign_tenant(body: EpisodeBody, tenant: str) -> str | None:
    """The tenant a trajectory body names when it is not the caller's (-> 403)."""
    given = body.trajectory.get("tenant_id") if isinstance(body.trajectory, dict) else None
    if given is None or body.format not in ("auto", "trajectory"):
        return None
    if isinstance(given, str) and given.strip() == tenant:
        return None
    return repr(given)[:80]


@router.post(
    "/episodes",
    status_code=201,
    response_model=EpisodesResponse,
    summary="Store a finished run (and queue its review)",
    responses=errors(403),
    openapi_extra=json_body(EpisodeBody),
)
async def store_episode(request: Request, tenant: Tenant, memory: Memory) -> Any:
    """Store the run(s) in ``trajectory`` for the key's tenant; idempotent (the same record
    twice is stored once, ``stored: false``). A ``tenant_id`` in the body must be the key's
    tenant (else 403 ``forbidden``): data is never written to a tenant the caller did not
    authenticate as. The body (up to the server's limit) is parsed, converted and stored off
    the event loop, a bounded number at a time (docs/deploy.md), so a large run never holds
    up other requests."""
    from hindsight.capture.ingest.records import record_format, trajectories_from_record

    raw = await request.body()
    body = await offload(parse_body, EpisodeBody, raw, request.headers.get("content-type"))
    foreign = _foreign_tenant(body, tenant)
    if foreign is not None:
        return error_response(
            403,
            "forbidden",
            f"trajectory.tenant_id {foreign} is not the tenant of this API key; leave it out",
            "trajectory.tenant_id",
        )
    fmt = record_format(body.trajectory) if body.format == "auto" else body.format
    trajectories = await offload(
        trajectories_from_record,
        body.trajectory,
        tenant_id=tenant,
        format=fmt,
        namespace=body.namespace,
        task_type=body.task_type,
        where="request body trajectory",
    )
    receipts = [
        dict(await memory.store_episode(t, review=body.review, merge=body.merge))
        for t in trajectories
    ]
    return JSONResponse({"format": fmt, "episodes": receipts}, status_code=201)


@router.get("/episodes/{trajectory_id}", response_model=Trajectory, summary="A stored run")
async def get_episode(trajectory_id: str, tenant: Tenant, memory: Memory) -> Any:
    """The stored trajectory with its events; 404 when this tenant has no such run."""
    return await memory.get_trajectory(trajectory_id, tenant_id=tenant)


@router.get("/trajectories", response_model=TrajectoryPage, summary="List stored runs")
async def list_trajectories(
    tenant: Tenant,
    memory: Memory,
    task_key: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    outcome: Outcome | None = None,
    task_type: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    limit: Limit = 100,
    offset: Offset | None = None,
    cursor: Cursor = None,
) -> Any:
    """The tenant's runs, oldest stored first, a page at a time, without their events: each
    with its outcome, reward, task key (and whether it was given or assigned by intent), the
    hash of its system prompt, its outcome reason and its review state. Filters: ``task_key``
    (a task group), ``outcome``, ``task_type``. Paging as ``GET /v1/experiences``
    (``next_cursor``, or ``offset``)."""
    items = await memory.list_trajectories(
        tenant_id=tenant,
        task_key=task_key,
        outcome=outcome,
        task_type=task_type,
        limit=limit,
        offset=offset,
        cursor=cursor,
    )
    return page_doc(items, limit, offset, cursor)


@router.get("/trajectories/{trajectory_id}", response_model=Trajectory, summary="A stored run")
async def get_trajectory(trajectory_id: str, tenant: Tenant, memory: Memory) -> Any:
    """The stored trajectory with its events, its full system prompt, its outcome evidence and
    its task key (the same document as ``GET /v1/episodes/{id}``); 404 when this tenant has
    no such run."""
    return await memory.get_trajectory(trajectory_id, tenant_id=tenant)


@router.post(
    "/episodes/{trajectory_id}/review",
    response_model=list[Experience],
    summary="Review a stored run now",
    responses=errors(504),
)
async def review_now(trajectory_id: str, tenant: Tenant, memory: Memory) -> Any:
    """Review the run now and return the experiences written (its episode summary last).
    502 ``review_failed`` / 504 ``review_timeout`` when the reviewer fails."""
    return await memory.review_now(trajectory_id, tenant_id=tenant)


@router.post("/recall", response_model=RecallResponse, summary="Recall experiences for a task")
async def recall(body: RecallBody, tenant: Tenant, memory: Memory) -> Any:
    """Ranked experiences with score breakdowns and ``rendered``, the block for the tail of the
    system prompt. Only the key's tenant is ever searched."""
    result = await memory.recall(
        body.query,
        tenant_id=tenant,
        namespace=body.namespace,
        include_shared=body.include_shared,
        task_type=body.task_type,
        tags=body.tags,
        tools=body.tools,
        top_k=body.top_k,
        mode=body.mode,
        similarity_floor=body.similarity_floor,
        trajectory_id=body.trajectory_id,
        token_budget=body.token_budget,
        include_episodes=body.include_episodes,
        explain=body.explain,
        record=body.record,
        risk_checks=body.risk_checks,
    )
    doc: dict[str, Any] = result.model_dump(mode="json")
    doc["rendered"] = result.render()
    doc["truncated"] = result.truncated
    return JSONResponse(doc)


@router.post("/checks", response_model=CheckResponse, summary="Risk checks of a proposed call")
async def check_action(body: CheckBody, tenant: Tenant, memory: Memory) -> Any:
    """The risk checks matching a proposed tool call (docs/checks.md): exact lookup by tool,
    arguments matched by class, conditions tested against ``state``, each with its ``score``
    and ``match``; ``rendered`` is the advice block for the model. Only the key's tenant is
    ever read."""
    result = await memory.check_action(
        body.tool,
        body.args,
        tenant_id=tenant,
        namespace=body.namespace,
        include_shared=body.include_shared,
        task_type=body.task_type,
        top_k=body.top_k,
        trajectory_id=body.trajectory_id,
        record=body.record,
        state=body.state,
    )
    doc: dict[str, Any] = result.model_dump(mode="json")
    doc["rendered"] = result.render(body.token_budget)
    return JSONResponse(doc)


@router.post("/recalls", summary="Count a recall made with record: false")
async def record_recall(body: RecalledBody, tenant: Tenant, memory: Memory) -> Any:
    """The run ``trajectory_id`` recalled ``experience_ids`` (its model saw them): their
    ``recall_count`` rises and ``POST /v1/outcomes`` for that run credits or blames them.
    Answers ``{"counted": n}`` (ids of other tenants are ignored)."""
    counted = await memory.record_recall(body.trajectory_id, body.experience_ids, tenant_id=tenant)
    return {"counted": counted}


@router.get("/threads/{thread_id}/paused", summary="The paused run of a thread")
async def paused_run(
    thread_id: str, tenant: Tenant, memory: Memory, namespace: str = "default"
) -> Any:
    """``{"trajectory_id": id}`` of the tenant's latest run stored as paused (an interrupt)
    on the thread ``thread_id``, ``{"trajectory_id": null}`` when there is none: a run resumed
    in another process continues it (``POST /v1/episodes`` with ``merge: true``)."""
    found = await memory.paused_trajectory(thread_id, tenant_id=tenant, namespace=namespace)
    return {"trajectory_id": found}


@router.post("/outcomes", response_model=list[Experience], summary="Record how a run ended")
async def record_outcome(body: OutcomeBody, tenant: Tenant, memory: Memory) -> Any:
    """Credit (success) or blame (failure) the experiences the run recalled; counted once
    per run. Returns the experiences updated (``[]`` when none, or already counted)."""
    return await memory.record_outcome(body.trajectory_id, body.success, tenant_id=tenant)
