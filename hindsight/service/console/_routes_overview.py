"""Login, logout, the overview (counts and plots of the signed-in tenant) and review jobs."""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from hindsight.service.console._auth import (
    COOKIE,
    COOKIE_PATH,
    LOGIN_COOKIE,
    CsrfError,
    check_csrf,
    set_cookie,
)
from hindsight.service.console._deps import Engine, Form, Viewer, form_text
from hindsight.service.console._pages import redirect, render
from hindsight.service.console._plots import columns, days, hbars

__all__ = ["OVERVIEW_DAYS", "router"]

router = APIRouter()

OVERVIEW_DAYS = 30
"""The overview's time series cover the last 30 UTC days."""
HISTOGRAM_BINS = 10


def _login_page(request: Request, status: int = 200, error: str | None = None) -> Response:
    token = secrets.token_urlsafe(32)
    response = render(request, "login.html", status=status, login_csrf=token, error=error)
    set_cookie(response, request, LOGIN_COOKIE, token, max_age=1800)
    return response


@router.get("/login")
async def login_page(request: Request) -> Response:
    """The sign-in form: paste an API key (``hindsight console`` fills it in)."""
    return _login_page(request)


@router.post("/login")
async def login(request: Request) -> Response:
    """Exchange an API key for a session cookie (see :mod:`._auth`)."""
    form = await request.form()
    expected = request.cookies.get(LOGIN_COOKIE)
    if not expected:
        raise CsrfError("the sign-in form expired or cookies are off: reload the page")
    check_csrf(form, expected, request)
    raw = form.get("key")
    key = raw.strip() if isinstance(raw, str) else ""
    tenant = request.app.state.keyring_of().authenticate(key)
    if tenant is None:
        return _login_page(request, 401, "unknown or revoked API key")
    session = request.app.state.sessions.create(tenant, key)
    response = redirect(request, "/")
    set_cookie(response, request, COOKIE, session.id)
    response.delete_cookie(LOGIN_COOKIE, path=COOKIE_PATH)
    return response


@router.post("/logout")
async def logout(request: Request, session: Viewer, form: Form) -> Response:
    del form
    request.app.state.sessions.drop(session.id)
    response = redirect(request, "/login")
    response.delete_cookie(COOKIE, path=COOKIE_PATH)
    return response


@router.get("/")
async def overview(request: Request, session: Viewer, memory: Engine) -> Response:
    """Counts by status and kind, the confidence distribution, recall hit rate and outcome
    attribution per day, and the review jobs (failed ones retryable)."""
    tenant = session.tenant
    store = memory.store
    now = memory.clock.now()
    since = (now - timedelta(days=OVERVIEW_DAYS - 1)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    stats, hist, runs, outcomes, failed = await asyncio.gather(
        memory.stats(tenant_id=tenant),
        asyncio.to_thread(store.confidence_histogram, tenant, bins=HISTOGRAM_BINS),
        asyncio.to_thread(store.runs_by_day, tenant, since),
        asyncio.to_thread(store.outcomes_by_day, tenant, since),
        memory.review_jobs(state="failed", tenant_id=tenant, limit=100),
    )
    labels = days(now, OVERVIEW_DAYS)
    short = [d[5:] for d in labels]  # MM-DD on the axis
    empty = {"success": 0, "failure": 0, "credited": 0, "blamed": 0}
    series_runs = [runs.get(d, (0, 0)) for d in labels]
    rate: list[float | None] = [hit / n if n else None for n, hit in series_runs]
    plots: dict[str, Any] = {
        "status": hbars(list(stats["experiences"]["by_status"].items())),
        "kind": hbars(list(stats["experiences"]["by_kind"].items())),
        "confidence": columns(
            [f"{i / HISTOGRAM_BINS:.1f}" for i in range(HISTOGRAM_BINS)],
            {"active experiences": hist},
        ),
        "recall": columns(
            short,
            {
                "runs with a recall hit": [hit for _, hit in series_runs],
                "runs without": [n - hit for n, hit in series_runs],
            },
            line=rate,
        ),
        "outcomes": columns(
            short,
            {
                "credited (run succeeded)": [outcomes.get(d, empty)["credited"] for d in labels],
                "blamed (run failed)": [outcomes.get(d, empty)["blamed"] for d in labels],
            },
        ),
    }
    total_runs = sum(n for n, _ in series_runs)
    total_hits = sum(hit for _, hit in series_runs)
    return render(
        request,
        "overview.html",
        nav="overview",
        stats=stats,
        plots=plots,
        days=OVERVIEW_DAYS,
        hit_rate=(total_hits / total_runs) if total_runs else None,
        total_runs=total_runs,
        outcome_totals={k: sum(v[k] for v in outcomes.values()) for k in ("success", "failure")},
        failed=failed,
    )


@router.post("/jobs/retry")
async def retry_jobs(request: Request, session: Viewer, memory: Engine, form: Form) -> Response:
    """Retry one failed review job (``job_id``) or all of the tenant's (``all_failed``)."""
    job_id = form_text(form, "job_id", max_length=100)
    if job_id is None:
        jobs = await memory.retry_review_jobs(all_failed=True, tenant_id=session.tenant)
    else:
        jobs = await memory.retry_review_jobs([job_id], tenant_id=session.tenant)
    session.flash(f"{len(jobs)} review job(s) queued again")
    return redirect(request, "/#jobs")
