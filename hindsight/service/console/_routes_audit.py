"""The human audit (MISSION S12) and the quarantine (MISSION S8): review what the memory holds
and what the guard held back."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from starlette.responses import Response

from hindsight.guard.screening import GUARD_METADATA_KEYS
from hindsight.models import Experience
from hindsight.service.console._deps import Engine, Form, Viewer, form_int, form_text
from hindsight.service.console._pages import redirect, render

__all__ = ["QUARANTINE_PAGE", "router"]

router = APIRouter()

QUARANTINE_PAGE = 50
"""Quarantined experiences per page."""


def _verdicts(exp: Experience) -> dict[str, Any]:
    """What the guard wrote on the experience besides its reasons (layer verdicts, taint
    evidence, times): every key of :data:`GUARD_METADATA_KEYS` it carries."""
    return {
        k: v
        for k, v in exp.metadata.items()
        if k in GUARD_METADATA_KEYS and k != "quarantine_reasons"
    }


@router.get("/quarantine")
async def quarantine(request: Request, session: Viewer, memory: Engine) -> Response:
    """Every held lesson with each guard reason and the guard's other verdicts; approve or
    reject each."""
    page = form_int(request.query_params, "page", low=1, high=10**6) or 1
    items = await memory.list_quarantined(
        tenant_id=session.tenant, limit=QUARANTINE_PAGE + 1, offset=(page - 1) * QUARANTINE_PAGE
    )
    return render(
        request,
        "quarantine.html",
        nav="quarantine",
        items=[(e, _verdicts(e)) for e in items[:QUARANTINE_PAGE]],
        more=len(items) > QUARANTINE_PAGE,
        page=page,
    )


@router.post("/quarantine/{experience_id}/{decision}")
async def decide(
    request: Request,
    experience_id: str,
    decision: Literal["approve", "reject"],
    session: Viewer,
    memory: Engine,
    form: Form,
) -> Response:
    """A human approves a held lesson (recalled again) or rejects it (soft-deleted, kept for
    audit), with an optional note."""
    act = memory.approve if decision == "approve" else memory.reject
    note = form_text(form, "note", max_length=2000)
    exp = await act(experience_id, tenant_id=session.tenant, note=note)
    done = "approved: recalled again" if decision == "approve" else "rejected: deleted"
    session.flash(f"{exp.id[:8]} {done}")
    return redirect(request, "/quarantine")
