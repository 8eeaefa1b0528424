"""Experiences: search and filter, detail (sources, evidence, confidence history, audit trail),
versions with diff and rollback, edit (guard-owned fields read-only), archive and restore."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from hindsight._errors import UsageError
from hindsight.guard.screening import GUARD_METADATA_KEYS, check_user_metadata
from hindsight.models import Experience, ExperienceKind, ExperienceStatus
from hindsight.service.console._deps import (
    Engine,
    Form,
    Viewer,
    form_float,
    form_int,
    form_list,
    form_text,
)
from hindsight.service.console._diff import field_changes, word_diff
from hindsight.service.console._pages import redirect, render
from hindsight.store.browse import ExperienceFilter
from hindsight.writeback.forgetting import RESTORABLE

__all__ = ["PAGE_SIZE", "router"]

router = APIRouter()

PAGE_SIZE = 50
"""Rows per page of the experiences list."""
FILTERS = (
    "status",
    "kind",
    "task_type",
    "task_key",
    "namespace",
    "min_confidence",
    "max_confidence",
    "q",
    "source",
)


def _filters(request: Request) -> tuple[ExperienceFilter, dict[str, str]]:
    """The store filter of the list's query string, and the query values to echo back."""
    params = request.query_params
    shown = {name: params.get(name, "") for name in FILTERS}
    where: ExperienceFilter = {}
    status = form_text(params, "status", max_length=20)
    if status is not None:
        if status not in _STATUSES:
            raise UsageError(f"status must be one of {', '.join(_STATUSES)}, got {status!r}")
        where["statuses"] = [status]
    kind = form_text(params, "kind", max_length=40)
    if kind is not None:
        if kind not in _KINDS:
            raise UsageError(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}")
        where["kinds"] = [kind]
    where["task_type"] = form_text(params, "task_type", max_length=200)
    where["namespace"] = form_text(params, "namespace", max_length=200)
    where["min_confidence"] = form_float(params, "min_confidence")
    where["max_confidence"] = form_float(params, "max_confidence")
    where["text"] = form_text(params, "q", max_length=500)
    where["source_trajectory_id"] = form_text(params, "source", max_length=100)
    where["task_key"] = form_text(params, "task_key", max_length=1000)
    return where, shown


_STATUSES = [s.value for s in ExperienceStatus]
_KINDS = [k.value for k in ExperienceKind]


@router.get("/experiences")
async def experiences(request: Request, session: Viewer, memory: Engine) -> Response:
    """The tenant's experiences, filtered, most recently changed first, a page at a time."""
    where, shown = _filters(request)
    page = form_int(request.query_params, "page", low=1, high=10**6) or 1
    items, total = await asyncio.to_thread(
        memory.store.browse_experiences,
        session.tenant,
        where,
        limit=PAGE_SIZE,
        offset=(page - 1) * PAGE_SIZE,
    )
    return render(
        request,
        "experiences.html",
        nav="experiences",
        items=items,
        total=total,
        page=page,
        pages=max(1, -(-total // PAGE_SIZE)),
        params=shown,
        statuses=_STATUSES,
        kinds=_KINDS,
    )


def _user_metadata(exp: Experience) -> dict[str, Any]:
    return {k: v for k, v in exp.metadata.items() if k not in GUARD_METADATA_KEYS}


def _guard_metadata(exp: Experience) -> dict[str, Any]:
    return {k: v for k, v in exp.metadata.items() if k in GUARD_METADATA_KEYS}


def _versions(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """History entries, newest first, each with what changed from the version before it."""
    out: list[dict[str, Any]] = []
    for i, entry in enumerate(history):
        exp: Experience = entry["experience"]
        before: Experience | None = history[i - 1]["experience"] if i else None
        out.append(
            {
                **entry,
                "diff": word_diff(before.content, exp.content) if before else None,
                "fields": field_changes(before, exp) if before else [],
                "cause": history[i - 1] if i else None,
            }
        )
    return out[::-1]


@router.get("/experiences/{experience_id}")
async def experience(
    request: Request, experience_id: str, session: Viewer, memory: Engine
) -> Response:
    """One experience: content, fields, sources, evidence and guard verdicts, confidence
    history, versions with diffs, the audit trail, and the forms that change it."""
    tenant = session.tenant
    exp = await memory.get_experience(experience_id, tenant_id=tenant)
    history, trail = await asyncio.gather(
        memory.history(exp.id, tenant_id=tenant, limit=10_000),
        memory.audit_log(tenant_id=tenant, experience_id=exp.id, limit=1000),
    )
    confidence = [row for row in reversed(trail) if row["action"] == "confidence"]
    return render(
        request,
        "experience.html",
        nav="experiences",
        exp=exp,
        versions=_versions(history),
        trail=trail,
        confidence=confidence,
        user_metadata=json.dumps(_user_metadata(exp), ensure_ascii=False, indent=2),
        guard_metadata=_guard_metadata(exp),
        other_metadata=_user_metadata(exp),
        kinds=_KINDS,
        restorable=exp.status.value in RESTORABLE,
    )


def _edits(exp: Experience, form: Any) -> dict[str, Any]:
    """The fields of the edit form that differ from ``exp``; ``metadata`` is the caller's part
    only (the guard's keys are kept by the edit and may not be sent)."""
    text = form_text(form, "metadata", max_length=200_000) or "{}"
    try:
        given = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"metadata is not valid JSON: {err.msg} (line {err.lineno})") from None
    metadata = check_user_metadata(given)  # the guard's keys stay as they are (edited())
    wanted: dict[str, Any] = {
        "content": form_text(form, "content"),
        "kind": form_text(form, "kind", max_length=40),
        "task_type": form_text(form, "task_type", max_length=200),
        "tools": form_list(form, "tools"),
        "tags": form_list(form, "tags"),
        "importance": form_float(form, "importance"),
        "metadata": metadata,
    }
    current = {
        "content": exp.content,
        "kind": exp.kind.value,
        "task_type": exp.task_type,
        "tools": exp.tools,
        "tags": exp.tags,
        "importance": exp.importance,
        "metadata": _user_metadata(exp),
    }
    return {k: v for k, v in wanted.items() if v is not None and v != current[k]}


@router.post("/experiences/{experience_id}/edit")
async def edit(
    request: Request, experience_id: str, session: Viewer, memory: Engine, form: Form
) -> Response:
    """Edit content, kind, task_type, tools, tags, importance or the non-guard metadata: a new
    version (the memory guard checks a new text first)."""
    exp = await memory.get_experience(experience_id, tenant_id=session.tenant)
    if form_int(form, "version", low=1, high=10**9) != exp.version:
        raise UsageError(
            f"experience {exp.id} changed meanwhile (now version {exp.version}): reload the page"
        )
    changes = _edits(exp, form)
    if not changes:
        session.flash("nothing changed")
    else:
        saved = await memory.edit_experience(
            exp.id,
            tenant_id=session.tenant,
            reason=form_text(form, "reason", max_length=2000),
            actor="console",
            **changes,
        )
        note = (
            f" and quarantined: {saved.metadata.get('quarantine_reasons')}"
            if (saved.status is ExperienceStatus.QUARANTINED)
            else ""
        )
        session.flash(f"saved as version {saved.version}{note}")
    return redirect(request, f"/experiences/{exp.id}")


@router.post("/experiences/{experience_id}/rollback")
async def rollback(
    request: Request, experience_id: str, session: Viewer, memory: Engine, form: Form
) -> Response:
    """Roll back to an earlier version (written as a new version, so it can be undone)."""
    version = form_int(form, "version", low=1, high=10**9)
    if version is None:
        raise UsageError("choose the version to roll back to")
    saved = await memory.rollback(
        experience_id,
        version,
        tenant_id=session.tenant,
        reason=form_text(form, "reason", max_length=2000),
        actor="console",
    )
    session.flash(f"rolled back to what version {version} said (now version {saved.version})")
    return redirect(request, f"/experiences/{saved.id}")


@router.post("/experiences/{experience_id}/archive")
async def archive(
    request: Request, experience_id: str, session: Viewer, memory: Engine, form: Form
) -> Response:
    """Archive: never recalled until restored (audited)."""
    saved = await memory.archive(
        experience_id,
        tenant_id=session.tenant,
        reason=form_text(form, "reason", max_length=2000),
        actor="console",
    )
    session.flash("archived")
    return redirect(request, f"/experiences/{saved.id}")


@router.post("/experiences/{experience_id}/restore")
async def restore(
    request: Request, experience_id: str, session: Viewer, memory: Engine, form: Form
) -> Response:
    """Bring back an archived, superseded or deleted experience (audited)."""
    del form
    saved = await memory.restore(experience_id, tenant_id=session.tenant)
    session.flash("restored: recalled again")
    return redirect(request, f"/experiences/{saved.id}")
