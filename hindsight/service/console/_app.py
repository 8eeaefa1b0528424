"""The console app: a FastAPI sub-application mounted at ``/console`` of the HTTP service.

It shares the service's engine and API keys (the key decides the tenant), renders HTML on the
server, and answers errors as HTML pages. Every response carries a strict
Content-Security-Policy (:data:`CSP`: scripts, styles and images from the console itself only;
no inline script, no inline style, no frames, forms post only to the console) and the usual
hardening headers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hindsight._errors import HindsightError
from hindsight.engine import AsyncMemory
from hindsight.service._keys import KeyRing
from hindsight.service._wire import status_and_type
from hindsight.service.console._auth import CsrfError, LoginRequired, SessionStore
from hindsight.service.console._pages import TEMPLATES, render

__all__ = ["CSP", "create_console"]

log = logging.getLogger("hindsight.server")

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The Content-Security-Policy of every console response."""
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
}


class _SecurityHeaders:
    """Adds :data:`HEADERS` to every response (pages, static files, errors); pages are
    ``Cache-Control: no-store`` (they show stored data of one tenant)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith(str(scope.get("root_path", "")) + "/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers[name] = value
                if not static:
                    headers["cache-control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_console(
    memory_of: Callable[[], AsyncMemory | None], keyring_of: Callable[[], KeyRing]
) -> FastAPI:
    """The console app; mount it at ``/console`` (:func:`hindsight.server.create_app` does).

    Args:
        memory_of: returns the engine (``None`` while the service starts or stops).
        keyring_of: returns the service's API keys.
    """
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.memory_of = memory_of
    app.state.keyring_of = keyring_of
    app.state.sessions = SessionStore()
    _install_error_pages(app)
    from hindsight.service.console import (
        _routes_audit,
        _routes_experiences,
        _routes_overview,
        _routes_runs,
    )

    for module in (_routes_overview, _routes_experiences, _routes_audit, _routes_runs):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=str(TEMPLATES.with_name("static"))), name="static")
    app.add_middleware(_SecurityHeaders)
    return app


def _error_page(request: Request, status: int, title: str, message: str) -> Response:
    return render(request, "error.html", status=status, title=title, message=message)


def _install_error_pages(app: FastAPI) -> None:
    def login(request: Request, _: Exception) -> Response:
        base = str(request.scope.get("root_path", "")).rstrip("/")
        return RedirectResponse(f"{base}/login", status_code=303)

    def csrf(request: Request, exc: Exception) -> Response:
        return _error_page(request, 403, "Refused", str(exc))

    def hindsight(request: Request, exc: Exception) -> Response:
        status, type_ = status_and_type(exc)
        if status >= 500:
            log.warning("hindsight console: %s: %s", type(exc).__name__, exc)
        return _error_page(request, status, type_.replace("_", " "), str(exc))

    def invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        first: dict[str, Any] = next(iter(exc.errors()), {})
        where = ".".join(str(p) for p in first.get("loc", ())[1:]) or "request"
        return _error_page(request, 422, "invalid request", f"{where}: {first.get('msg', '')}")

    def http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        detail = exc.detail if isinstance(exc.detail, str) else "error"
        return _error_page(request, exc.status_code, "error", detail)

    def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("hindsight console: unexpected error on %s", request.url.path)
        return _error_page(request, 500, "internal error", "internal error (logged on the server)")

    app.add_exception_handler(LoginRequired, login)
    app.add_exception_handler(CsrfError, csrf)
    app.add_exception_handler(HindsightError, hindsight)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(StarletteHTTPException, http)
    app.add_exception_handler(Exception, unexpected)
