"""Routes for experiences, hard deletes and the quarantine (docs/http.md).

Ids are accepted in every form the engine accepts (upper-case, braces, ``urn:uuid:``).
Another tenant's id answers exactly like an unknown one: 404 ``not_found`` (never 403).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from hindsight._contract import Cursor, ExperienceOrder, Kind, Limit, Offset
from hindsight._errors import UsageError
from hindsight._paging import NEXT_CURSOR_HEADER
from hindsight.models import Experience, ExperienceStatus
from hindsight.service.http._deps import Memory, Tenant
from hindsight.service.http._openapi import V1_ERRORS, errors
from hindsight.service.http._schemas import (
    AddExperienceBody,
    AddExperiencesBody,
    AddExperiencesResponse,
    EditExperienceBody,
    ExperiencePage,
    ForgetBody,
    ForgetResponse,
    NoteBody,
    RescanBody,
    RescanResponse,
    RollbackBody,
    page_doc,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["experiences"], responses={**V1_ERRORS, **errors(502)})

Namespace = Annotated[str | None, Query(min_length=1, max_length=200)]


@router.get("/experiences", response_model=ExperiencePage, summary="List experiences")
async def list_experiences(
    tenant: Tenant,
    memory: Memory,
    namespace: Namespace = None,
    task_type: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    status: ExperienceStatus = ExperienceStatus.ACTIVE,
    task_key: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    kind: Kind | None = None,
    limit: Limit = 100,
    offset: Offset | None = None,
    cursor: Cursor = None,
    order: ExperienceOrder = "confidence",
) -> Any:
    """The tenant's experiences of one status, most confident first (then the latest
    updated, then id), a page at a time; ``order=created``: oldest created first (then id;
    its cursor never repeats or skips a row, even when confidences change between pages);
    ``task_key``: only those learned from a run of this task group; ``kind``: only lessons of
    this kind (``rule``, ``improvement``, ..., ``episode``). Paging: ``cursor`` = the
    previous page's ``next_cursor`` (stable while others write), or ``offset``
    (compatibility); not both."""
    items = await memory.list_experiences(
        tenant_id=tenant,
        namespace=namespace,
        task_type=task_type,
        status=status.value,
        task_key=task_key,
        kind=kind,
        limit=limit,
        offset=offset,
        cursor=cursor,
        order=order,
    )
    return page_doc(items, limit, offset, cursor)


@router.post(
    "/experiences", status_code=201, response_model=Experience, summary="Add a lesson directly"
)
async def add_experience(body: AddExperienceBody, tenant: Tenant, memory: Memory) -> Any:
    """Store a lesson without a review. The memory guard checks it first: a suspicious one
    comes back with status ``quarantined`` and its reasons in ``metadata``."""
    return await memory.add_experience(
        body.content,
        tenant_id=tenant,
        namespace=body.namespace,
        kind=body.kind,
        task_type=body.task_type,
        tools=body.tools,
        tags=body.tags,
        confidence=body.confidence,
        importance=body.importance,
        source=body.source,
        metadata=body.metadata,
    )


@router.post(
    "/experiences:batch",
    response_model=AddExperiencesResponse,
    summary="Add lessons directly, as one batch",
)
async def add_experiences(body: AddExperiencesBody, tenant: Tenant, memory: Memory) -> Any:
    """Store 1..1000 lessons without a review, as one batch (docs/lifecycle.md): each item
    is the body of ``POST /v1/experiences``; the guard screens every item, dedup compares it
    with the stored lessons and the earlier items, and the batch is written in one
    transaction. ``items``: what became of each, in input order (``index``, ``id``,
    ``result``: created / merged / quarantined, ``experience``). An invalid item refuses the
    whole batch (400/422 naming ``items.<index>.<field>``): nothing is written."""
    payload = [item.model_dump(exclude_unset=True) for item in body.items]
    return {"items": await memory.add_experiences(payload, tenant_id=tenant)}


@router.get("/experiences/{experience_id}", response_model=Experience, summary="An experience")
async def get_experience(experience_id: str, tenant: Tenant, memory: Memory) -> Any:
    return await memory.get_experience(experience_id, tenant_id=tenant)


@router.patch("/experiences/{experience_id}", response_model=Experience, summary="Adjust or edit")
async def patch_experience(
    experience_id: str, body: EditExperienceBody, tenant: Tenant, memory: Memory
) -> Any:
    """``confidence_delta`` adds to the confidence (clamped to [0, 1], audited; as MCP's
    ``adjust_confidence``); the other fields edit the lesson as a new version (see history and
    rollback). One kind of change per request."""
    edits = body.model_dump(exclude_unset=True, exclude={"confidence_delta", "reason"})
    if body.confidence_delta is not None:
        if edits:
            raise UsageError("send confidence_delta or edits of other fields, not both")
        return await memory.adjust_confidence(
            experience_id, body.confidence_delta, tenant_id=tenant, reason=body.reason
        )
    if not edits:
        raise UsageError("nothing to change: send confidence_delta or fields to edit")
    return await memory.edit_experience(
        experience_id, tenant_id=tenant, reason=body.reason, **edits
    )


@router.delete("/experiences/{experience_id}", status_code=204, summary="Soft-delete")
async def delete_experience(experience_id: str, tenant: Tenant, memory: Memory) -> Response:
    """Never recalled again; the row stays for audit, the vector is removed. 404 when it is
    unknown or deleted already."""
    await memory.delete_experience(experience_id, tenant_id=tenant)
    return Response(status_code=204)


@router.get("/experiences/{experience_id}/history", summary="Every version, oldest first")
async def history(
    experience_id: str,
    tenant: Tenant,
    memory: Memory,
    response: Response,
    limit: Limit = 100,
    cursor: Cursor = None,
) -> list[dict[str, Any]]:
    """The versions, oldest first (by version number), the current one last; a page of at
    most ``limit``. Paging as ``GET /v1/jobs``: the answer is a JSON list (as before
    cursors); when more versions may follow, the ``Next-Cursor`` header holds the cursor to
    send as ``cursor`` for the next page."""
    rows = await memory.history(experience_id, tenant_id=tenant, limit=limit, cursor=cursor)
    if rows.next_cursor is not None:
        response.headers[NEXT_CURSOR_HEADER] = rows.next_cursor
    out: list[dict[str, Any]] = []
    for row in rows:
        doc = dict(row)
        exp = doc.get("experience")
        if isinstance(exp, Experience):
            doc["experience"] = exp.model_dump(mode="json")
        out.append(doc)
    return out


@router.post(
    "/experiences/{experience_id}/rollback", response_model=Experience, summary="Roll back"
)
async def rollback(experience_id: str, body: RollbackBody, tenant: Tenant, memory: Memory) -> Any:
    """Restore what an earlier version said, as a new version (undoable)."""
    return await memory.rollback(experience_id, body.version, tenant_id=tenant, reason=body.reason)


@router.post("/experiences/{experience_id}/restore", response_model=Experience, summary="Restore")
async def restore(experience_id: str, tenant: Tenant, memory: Memory) -> Any:
    """Bring back an archived, superseded or soft-deleted experience."""
    return await memory.restore(experience_id, tenant_id=tenant)


@router.post("/forget", response_model=ForgetResponse, summary="Hard-delete")
async def forget(body: ForgetBody, tenant: Tenant, memory: Memory) -> Any:
    """Remove rows and vectors for good: one experience, what one run taught, or
    ``everything`` of the key's tenant. Exactly one of the three (an empty filter is never
    "all")."""
    removed = await memory.forget(
        tenant_id=tenant,
        experience_id=body.experience_id,
        trajectory_id=body.trajectory_id,
        everything=body.everything,
    )
    return {"removed": removed}


@router.get("/quarantine", response_model=ExperiencePage, summary="Quarantined experiences")
async def list_quarantined(
    tenant: Tenant,
    memory: Memory,
    namespace: Namespace = None,
    kind: Kind | None = None,
    limit: Limit = 100,
    offset: Offset | None = None,
    cursor: Cursor = None,
) -> Any:
    """Most confident first; ``kind`` and paging as ``GET /v1/experiences``."""
    items = await memory.list_quarantined(
        tenant_id=tenant,
        namespace=namespace,
        kind=kind,
        limit=limit,
        offset=offset,
        cursor=cursor,
    )
    return page_doc(items, limit, offset, cursor)


@router.post("/quarantine/{experience_id}/approve", response_model=Experience, summary="Approve")
async def approve(
    experience_id: str, tenant: Tenant, memory: Memory, body: NoteBody | None = None
) -> Any:
    """A human approves a quarantined experience: it is recalled again."""
    return await memory.approve(experience_id, tenant_id=tenant, note=body.note if body else None)


@router.post("/quarantine/{experience_id}/reject", response_model=Experience, summary="Reject")
async def reject(
    experience_id: str, tenant: Tenant, memory: Memory, body: NoteBody | None = None
) -> Any:
    """A human rejects a quarantined experience: soft-deleted."""
    return await memory.reject(experience_id, tenant_id=tenant, note=body.note if body else None)


@router.post("/quarantine/rescan", response_model=RescanResponse, summary="Rescan")
async def rescan(tenant: Tenant, memory: Memory, body: RescanBody | None = None) -> Any:
    """Run the memory guard again on stored experiences: an active one it now flags is
    quarantined, a quarantined one gains the new reasons (only approve releases it)."""
    body = body or RescanBody()
    if body.experience_id is not None and body.namespace is not None:
        raise UsageError("send experience_id or namespace, not both")
    items = await memory.rescan(body.experience_id, tenant_id=tenant, namespace=body.namespace)
    return {"items": items}
