"""The HTTP service: :func:`create_app` builds the FastAPI app (docs/http.md).

One process owns the store; agents in any language share it through this API (and through MCP
at ``/mcp``, :mod:`hindsight.service.mcp`). Every route but ``/health`` and ``/ready`` needs an
API key, and the key alone decides the tenant (:mod:`hindsight.service._keys`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hindsight._errors import UsageError
from hindsight._text import Replacements, clean_json, reporting_to
from hindsight.config import MemoryConfig, load_config
from hindsight.engine import AsyncMemory
from hindsight.service._keys import KeyRing, key_from_headers
from hindsight.service.http._deps import MISSING_KEY, UNKNOWN_KEY
from hindsight.service.http._errors import error_response, install_error_handlers

__all__ = ["DEFAULT_MAX_BODY_BYTES", "NO_KEYS_MESSAGE", "create_app"]

log = logging.getLogger("hindsight.server")

DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024
"""Request bodies above 2 MiB are refused with 413 (a tau-bench run is ~20-60 KB)."""
MCP_PATH = "/mcp"
CONSOLE_PATH = "/console"
NO_KEYS_MESSAGE = (
    "no API keys configured: create one with `hindsight keys create --tenant <tenant>`, or set "
    "HINDSIGHT_API_KEYS=tenant:key or HINDSIGHT_API_KEYS_FILE, or run a local single-user "
    "server with --insecure-single-tenant <tenant>"
)


def create_app(
    memory: AsyncMemory | None = None,
    *,
    keyring: KeyRing | None = None,
    config: MemoryConfig | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    mcp: bool = True,
    close_memory: bool = False,
    console: bool = True,
) -> FastAPI:
    """The FastAPI app of the hindsight service.

    Args:
        memory: the engine to serve; ``None``: the lifespan opens one from ``config`` at
            startup and closes it at shutdown (an interrupted review goes back to pending).
        keyring: API keys -> tenants; default :meth:`KeyRing.from_env` (keys file in the
            config's data dir when present).
        config: the engine's configuration when ``memory`` is ``None`` (default: from the
            environment, DATABASE_URL, VECTOR_DB_URL ... as everywhere, docs/deploy.md).
        max_body_bytes: request bodies above this many bytes get 413 (default 2 MiB).
        mcp: serve MCP (streamable HTTP) at ``/mcp`` when :mod:`hindsight.service.mcp._server` is
            there.
        close_memory: also close a given ``memory`` at shutdown (``hindsight serve`` opens
            it first, to report a locked store in one line, and hands it over).
        console: serve the audit console at ``/console`` (docs/console.md; same keys).

    Returns:
        The app; run it with uvicorn (``hindsight serve``) or any ASGI server.

    Raises:
        UsageError: no API key is configured (and the keyring is not single-tenant), or a
            bad ``max_body_bytes``.
    """
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int):
        raise UsageError("max_body_bytes must be an integer number of bytes")
    if max_body_bytes < 1024:
        raise UsageError(f"max_body_bytes must be at least 1024, got {max_body_bytes}")
    if keyring is None:
        data_dir = (memory.config if memory is not None else config or load_config()).data_dir
        keyring = KeyRing.from_env(data_dir=data_dir)
    if keyring.is_empty():
        raise UsageError(NO_KEYS_MESSAGE)
    from hindsight import __version__

    app = FastAPI(
        title="hindsight",
        version=__version__,
        summary="Experience memory for LLM agents: store runs, review them, recall lessons.",
        lifespan=_lifespan(memory, config, mcp, close_memory),
    )
    app.state.keyring = keyring
    app.state.memory = None
    app.state.mcp_app = None
    install_error_handlers(app)
    from hindsight.service.http import _routes_experiences, _routes_ops, _routes_runs

    app.include_router(_routes_ops.router)
    app.include_router(_routes_runs.router)
    app.include_router(_routes_experiences.router)
    if console:
        _mount_console(app)
    app.add_middleware(_Gate, max_body_bytes=max_body_bytes)
    _document_own_bodies(app)
    return app


def _mount_console(app: FastAPI) -> None:
    """The audit console at ``/console`` (``/console`` itself redirects to ``/console/``)."""
    from starlette.responses import RedirectResponse

    from hindsight.service.console import create_console

    @app.get(CONSOLE_PATH, include_in_schema=False)
    async def console_root() -> RedirectResponse:
        return RedirectResponse(CONSOLE_PATH + "/", status_code=307)

    app.mount(CONSOLE_PATH, create_console(lambda: app.state.memory, lambda: app.state.keyring))


def _document_own_bodies(app: FastAPI) -> None:
    """Put the bodies of routes that parse their body themselves (off the event loop) into
    the schema's components, where their ``openapi_extra`` points."""
    from hindsight.service.http._openapi import add_components
    from hindsight.service.http._schemas import EpisodeBody

    default = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            add_components(default(), EpisodeBody)
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]


def _lifespan(
    memory: AsyncMemory | None, config: MemoryConfig | None, mcp: bool, close: bool
) -> Any:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = memory is None or close
        mem = memory if memory is not None else await asyncio.to_thread(AsyncMemory, config)
        try:
            async with AsyncExitStack() as stack:
                if mcp:
                    await _start_mcp(app, mem, stack)
                app.state.memory = mem
                yield
        finally:
            app.state.memory = None
            app.state.mcp_app = None
            if own:
                await mem.aclose()
                log.warning("hindsight: store closed; reviews not done yet stay queued")

    return lifespan


async def _start_mcp(app: FastAPI, memory: AsyncMemory, stack: AsyncExitStack) -> None:
    try:
        from hindsight.service.mcp import create_mcp_http  # type: ignore[import-not-found,unused-ignore]
    except ModuleNotFoundError as exc:
        if exc.name not in ("hindsight.service.mcp", "hindsight.service.mcp._server"):
            raise
        log.info("hindsight: MCP over HTTP is not available in this build")
        return
    keyring: KeyRing = app.state.keyring
    asgi, session_manager = create_mcp_http(memory, keyring.authenticate)
    await stack.enter_async_context(session_manager())
    app.state.mcp_app = asgi


def _warning(report: Replacements) -> tuple[bytes, bytes]:
    """The ``Warning`` header (RFC 7234 code 299, "miscellaneous persistent warning") that
    reports invalid values replaced in the request and notes of input kept in another form
    (:mod:`hindsight._text`; the first five notes). A header holds ASCII here: other
    characters are written as ``\\uXXXX`` escapes (a Chinese tool name stays readable)."""
    text = report.message().replace("\\", "\\\\").replace('"', '\\"')
    return b"warning", f'299 hindsight "{text}"'.encode("ascii", "backslashreplace")


_LONE_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")


async def _strict_json_body(receive: Receive) -> Receive:
    """``receive`` for the MCP app, with a JSON body holding ``\\ud800``-style escapes (lone
    surrogates, which the SDK's strict JSON parser refuses as a whole request) rewritten under
    the invalid-value policy (:mod:`hindsight._text`: each becomes U+FFFD, counted like every
    replacement of the request). Other bodies pass unchanged."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return _replay([message], receive)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    if _LONE_SURROGATE_ESCAPE.search(body):
        with contextlib.suppress(ValueError):
            body = json.dumps(clean_json(json.loads(body), "body"), ensure_ascii=False).encode()
    return _replay([{"type": "http.request", "body": body, "more_body": False}], receive)


def _replay(messages: list[Message], then: Receive) -> Receive:
    async def receive() -> Message:
        return messages.pop(0) if messages else await then()

    return receive


class _TooLarge(StarletteHTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is over the limit of {limit} bytes")


PUBLIC_PATHS = frozenset(
    {"/health", "/ready", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"}
)
"""Paths answered without an API key; every other request needs a valid one (the console,
:data:`CONSOLE_PATH`, signs its users in itself: a key for a session cookie)."""


class _Gate:
    """In front of every route: check the API key before anything reads the body (401 in the
    API's error shape, on every path but :data:`PUBLIC_PATHS`); refuse bodies over the limit
    with 413 ``payload_too_large`` (a declared ``Content-Length`` at once, a chunked body
    while it streams); send ``/mcp`` and ``/mcp/...`` to the MCP app (path unchanged); a
    method other than POST on ``/mcp`` is 405 with ``Allow: POST``."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.limit = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        path = scope.get("path", "")
        console = path == CONSOLE_PATH or path.startswith(CONSOLE_PATH + "/")
        if path not in PUBLIC_PATHS and not console:
            raw = key_from_headers(headers)
            if scope["app"].state.keyring.authenticate(raw) is None:
                message = MISSING_KEY if not raw else UNKNOWN_KEY
                await error_response(401, "unauthorized", message)(scope, receive, send)
                return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.limit:
            await self._refuse(scope, receive, send)
            return
        seen = 0
        started = False
        report = Replacements()

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(self.limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                # a refused request kept nothing the notes speak of: they go with a success
                if report and message.get("status", 200) < 400:
                    with_warning = [*message.get("headers", []), _warning(report)]
                    message = {**message, "headers": with_warning}
            await send(message)

        try:
            with reporting_to(report):
                await self._route(scope, headers, limited_receive, tracking_send)
        except _TooLarge:
            if started:
                raise
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"the request body is over the limit of {self.limit} bytes"
        await error_response(413, "payload_too_large", message)(scope, receive, send)

    async def _route(self, scope: Scope, headers: Headers, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if path != MCP_PATH and not path.startswith(MCP_PATH + "/"):
            await self.app(scope, receive, send)
            return
        state = scope["app"].state
        if scope.get("method") != "POST":
            # Stateless JSON responses (create_mcp_http): no SSE stream to GET, no session
            # to DELETE; without this a GET opened a stream that never ended (review finding).
            message = "MCP over HTTP here takes POST only (stateless JSON, no SSE stream)"
            response = error_response(405, "method_not_allowed", message, headers={"Allow": "POST"})
            await response(scope, receive, send)
            return
        mcp_app = state.mcp_app
        if mcp_app is None:
            response = error_response(404, "not_found", "MCP over HTTP is not enabled here")
            await response(scope, receive, send)
            return
        await mcp_app(scope, await _strict_json_body(receive), send)
