"""The human audit (docs/console.md#views) and the quarantine (docs/security.md#guard-owned-state):
review what the memory holds and what the guard held back."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, Request
from starlette.responses import Response

from hindsight._errors import UsageError
from hindsight.guard.screening import GUARD_METADATA_KEYS
from hindsight.models import Experience
from hindsight.service.console._deps import Engine, Form, Viewer, form_int, form_text
from hindsight.service.console._pages import redirect, render
from hindsight.writeback import audit

__all__ = ["QUARANTINE_PAGE", "router"]

router = APIRouter()

QUARANTINE_PAGE = 50
"""Quarantined experiences per page."""


@router.get("/audit")
async def audits(request: Request, session: Viewer, memory: Engine) -> Response:
    """Start an audit run (a reproducible random sample of active lessons) and the runs so
    far with their summaries."""
    runs = await memory.audit_runs(tenant_id=session.tenant, limit=100)
    return render(request, "audits.html", nav="audit", runs=runs, default_size=audit.DEFAULT_SAMPLE)


@router.post("/audit")
async def start_audit(request: Request, session: Viewer, memory: Engine, form: Form) -> Response:
    """Draw and save a new sample (``size``, default 20; ``seed`` to repeat a draw)."""
    size = form_int(form, "size", low=1, high=1000) or audit.DEFAULT_SAMPLE
    seed = form_int(form, "seed", low=0, high=2**63 - 1)
    run = await memory.start_audit(tenant_id=session.tenant, size=size, seed=seed)
    session.flash(f"drew {len(run['experience_ids'])} lesson(s) with seed {run['seed']}")
    return redirect(request, f"/audit/{run['id']}")


@router.get("/audit/{run_id}")
async def audit_run(request: Request, run_id: str, session: Viewer, memory: Engine) -> Response:
    """One run: each sampled lesson with its verdict form, and the summary."""
    run = await memory.audit_run(run_id, tenant_id=session.tenant)
    found = await asyncio.to_thread(
        memory.store.get_experiences, session.tenant, run["experience_ids"]
    )
    marked = sum(run["counts"].values())
    return render(
        request,
        "audit.html",
        nav="audit",
        run=run,
        items=[(eid, found.get(eid), run["verdicts"].get(eid)) for eid in run["experience_ids"]],
        accuracy=run["counts"]["correct"] / marked if marked else None,
        actions=audit.WRONG_ACTIONS,
        demote=audit.AUDIT_DEMOTE_DELTA,
    )


@router.post("/audit/{run_id}/verdict")
async def verdict(
    request: Request, run_id: str, session: Viewer, memory: Engine, form: Form
) -> Response:
    """Mark one lesson correct, wrong (then archived, demoted or quarantined) or needs edit."""
    eid = form_text(form, "experience_id", max_length=100)
    given = form_text(form, "verdict", max_length=20)
    if eid is None or given is None:
        raise UsageError("choose a verdict: correct, wrong or needs edit")
    run = await memory.audit_verdict(
        run_id,
        eid,
        given,
        tenant_id=session.tenant,
        note=form_text(form, "note", max_length=10_000),
        action=form_text(form, "action", max_length=20) or "archive",
    )
    mark = run["verdicts"][eid]
    what = f" and {mark['action']}d" if mark["action"] else ""
    session.flash(f"{eid[:8]} marked {given.replace('_', ' ')}{what}")
    return redirect(request, f"/audit/{run['id']}#item-{eid}")


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
