"""Routes for operations: liveness, readiness, review jobs and stats (docs/http.md)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

from fastapi import APIRouter, Request, Response

from hindsight._contract import Cursor, Limit
from hindsight._paging import NEXT_CURSOR_HEADER
from hindsight.service._keys import key_from_headers
from hindsight.service._wire import client_message
from hindsight.service.http._deps import Memory, Tenant, keyring_of
from hindsight.service.http._errors import error_response
from hindsight.service.http._openapi import V1_ERRORS, ErrorResponse, errors
from hindsight.service.http._schemas import RetryJobsBody

__all__ = ["router"]

router = APIRouter(tags=["operations"])
log = logging.getLogger("hindsight.server")

NOT_READY = "not ready: the reason is in the server log (or send an API key to see it here)"
"""The reason ``/ready`` gives a caller without a valid key: the full reason may name files and
stores of the deployment (a keys file's path and parse error), so it only goes to the server log
and to authenticated callers (review finding)."""


def _not_ready(request: Request, reason: str) -> Any:
    log.warning("hindsight: not ready: %s", reason)
    known = keyring_of(request).authenticate(key_from_headers(request.headers)) is not None
    return error_response(503, "not_ready", reason if known else NOT_READY)


@router.get("/health", summary="Liveness (no key needed)")
async def health() -> dict[str, str]:
    """``{"status": "ok"}`` while the process serves requests (docs/deploy.md)."""
    return {"status": "ok"}


@router.get(
    "/ready",
    summary="Readiness (no key needed)",
    responses={
        503: {
            "model": ErrorResponse,
            "description": "not ready: the reason is in the error message for a valid key",
        }
    },
)
async def ready(request: Request) -> Any:
    """Touches the SQL store and the vector index, and checks that an index kept apart from
    SQL is not stuck behind it; 503 ``not_ready`` when one fails. The answer names the
    ``vector_index`` (``pgvector``: the vectors are in PostgreSQL; ``edge``, ``qdrant`` or
    ``memory``: kept apart) and ``vectors_pending`` (outbox rows not applied yet; 0 with
    pgvector). The message of a 503 names what failed for a caller with a valid key (never a
    host, URL or path of a store); without one it is :data:`NOT_READY` (the full reason is
    logged)."""
    memory = getattr(request.app.state, "memory", None)
    if memory is None:
        return _not_ready(request, "the memory engine is not open (starting up)")
    problem = keyring_of(request).problem()
    if problem is not None:
        return _not_ready(request, f"API keys: {problem}")

    def probe() -> dict[str, Any]:
        checks: dict[str, Any] = {}
        try:
            memory.store.get_meta("embedding_model")
            checks["sql"] = "ok"
        except Exception as exc:
            log.warning("hindsight: /ready: SQL: %s: %s", type(exc).__name__, exc)
            checks["sql"] = client_message(exc)
        try:
            memory.index.count(None)
            checks["vectors"] = "ok"
        except Exception as exc:
            log.warning("hindsight: /ready: vectors: %s: %s", type(exc).__name__, exc)
            checks["vectors"] = client_message(exc)
        if checks["sql"] == "ok":
            try:
                status = memory.vectors.status()
                checks["vector_index"] = status["kind"].split(" ", 1)[0]  # no URL
                checks["vectors_pending"] = status["pending"]
                if status["last_error"]:
                    log.warning("hindsight: /ready: vector index: %s", status["last_error"])
                    checks["index"] = "the vector index cannot be brought up to date"
            except Exception as exc:
                log.warning("hindsight: /ready: vector index: %s: %s", type(exc).__name__, exc)
                checks["index"] = client_message(exc)
        return checks

    try:
        checks = await asyncio.wait_for(asyncio.to_thread(probe), timeout=10.0)
    except TimeoutError:
        return _not_ready(request, "SQL or vector store did not answer in 10 s")
    failed = [
        f"{k}: {v}" for k, v in checks.items() if k in ("sql", "vectors", "index") and v != "ok"
    ]
    if failed:
        return _not_ready(request, "; ".join(failed))
    return {
        "status": "ready",
        "sql": "ok",
        "vectors": "ok",
        "vector_index": checks.get("vector_index"),
        "vectors_pending": checks.get("vectors_pending", 0),
    }


@router.get("/v1/stats", summary="Counts of the key's tenant", responses=V1_ERRORS)
async def stats(tenant: Tenant, memory: Memory) -> dict[str, Any]:
    """Trajectories, events, experiences (by status and kind), vectors and review jobs of the
    key's tenant only."""
    return await memory.stats(tenant_id=tenant)


@router.get("/v1/jobs", summary="Review jobs of the key's tenant", responses=V1_ERRORS)
async def list_jobs(
    tenant: Tenant,
    memory: Memory,
    response: Response,
    state: Literal["pending", "running", "succeeded", "failed"] | None = None,
    limit: Limit = 100,
    cursor: Cursor = None,
) -> list[dict[str, Any]]:
    """Oldest first (then by id); ``last_error`` says why a failed job failed. Paging: the
    answer is a JSON list (as before cursors); when more jobs may follow, the
    ``Next-Cursor`` header holds the cursor to send as ``cursor`` for the next page."""
    jobs = await memory.review_jobs(state=state, tenant_id=tenant, limit=limit, cursor=cursor)
    if jobs.next_cursor is not None:
        response.headers[NEXT_CURSOR_HEADER] = jobs.next_cursor
    return [j.to_json() for j in jobs]


@router.post("/v1/jobs/retry", summary="Retry failed review jobs", responses=V1_ERRORS)
async def retry_jobs(body: RetryJobsBody, tenant: Tenant, memory: Memory) -> list[dict[str, Any]]:
    """Put failed jobs back to pending: ``job_ids`` or ``all_failed`` (of this tenant)."""
    jobs = await memory.retry_review_jobs(
        body.job_ids, all_failed=body.all_failed, tenant_id=tenant
    )
    return [j.to_json() for j in jobs]


@router.get(
    "/metrics",
    summary="Prometheus metrics of this process (any valid key)",
    response_class=Response,
    responses={
        200: {
            "description": "the Prometheus text format (docs/deploy.md#metrics)",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        },
        **errors(401, 503),
    },
)
async def metrics(tenant: Tenant, memory: Memory) -> Response:
    """Latency histograms, write and failure counters of this process and the store's review
    job and vector outbox gauges, for every tenant together (no tenant label: one series per
    tenant would grow without bound; docs/deploy.md#metrics). Any valid API key may read it:
    the numbers are deployment-wide aggregates, never a tenant's content."""
    del tenant  # the key is checked like on every route; the metrics have no tenant
    body, content_type = await asyncio.to_thread(memory.metrics.exposition)
    return Response(content=body, headers={"Content-Type": content_type})
