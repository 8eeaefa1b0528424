"""Every error of the HTTP API in one shape (docs/http.md).

Body: ``{"error": {"type", "message", "field"}}`` (:mod:`hindsight.service._wire`). hindsight
errors map by :data:`hindsight.service._wire.ERROR_TYPES`; FastAPI's validation errors become 422
``validation_error`` naming the first bad field; Starlette's HTTP errors keep their status; any
other exception is logged with its traceback and answered 500 ``internal_error`` without
details.
"""

from __future__ import annotations

import logging
import typing
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from hindsight._contract import error_location, unknown_field
from hindsight._errors import HindsightError
from hindsight.guard.screening import GUARD_OWNED_FIELDS, owned_by_guard
from hindsight.service._wire import client_message, error_body, status_and_type

__all__ = ["error_response", "install_error_handlers", "not_utf8"]

log = logging.getLogger("hindsight.server")

AUTH_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="hindsight"'}
_HTTP_TYPES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def error_response(
    status: int, type_: str, message: str, field: str | None = None, headers: Any = None
) -> JSONResponse:
    """A JSON error response in the one shape (401s carry ``WWW-Authenticate``)."""
    if status == 401:
        headers = {**AUTH_CHALLENGE, **(headers or {})}
    return JSONResponse(error_body(type_, message, field), status_code=status, headers=headers)


_NOT_AN_OBJECT = frozenset({"dict_type", "model_type", "model_attributes_type", "mapping_type"})


def _field_of(loc: tuple[Any, ...]) -> str | None:
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return error_location(parts)


def _got(value: Any) -> str:
    return "a string" if isinstance(value, str | bytes) else type(value).__name__


def _model_at(request: Request, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The request model whose field ``loc`` names (``("body", "items", 0, "x")`` -> the
    model of one item), from the endpoint's annotations; ``None`` when there is none."""
    endpoint = getattr(request.scope.get("route"), "endpoint", None)
    if endpoint is None or not loc or loc[0] != "body":
        return None
    try:
        hints = typing.get_type_hints(endpoint)
    except Exception:  # an annotation that cannot be resolved: say less, not fail
        return None
    found = [t for t in hints.values() if isinstance(t, type) and issubclass(t, BaseModel)]
    model = found[0] if len(found) == 1 else None
    for part in loc[1:-1]:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        info = model.model_fields.get(str(part))
        model = _model_in(info.annotation) if info is not None else None
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    first = errors[0] if errors else {}
    loc = tuple(first.get("loc", ()))
    field = _field_of(loc)
    where = loc[0] if loc else "body"
    msg = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    if first.get("type") == "extra_forbidden" and field in GUARD_OWNED_FIELDS:
        msg = owned_by_guard(field)  # the guard's state is not editable (docs/security.md)
    elif first.get("type") == "extra_forbidden":  # the words of the local memory
        model = _model_at(request, loc)
        fields = list(model.model_fields) if model is not None else []
        msg = unknown_field(loc[-1], fields) if fields else "unknown field"
    elif first.get("type") == "json_invalid":
        field, detail = None, (first.get("ctx") or {}).get("error", "")
        msg = f"the request body is not valid JSON ({detail} at character {loc[-1]})"
    elif first.get("type") == "missing" and field is None:
        msg = "a JSON request body is required"
    elif first.get("type") in _NOT_AN_OBJECT:
        got = _got(first.get("input"))
        if field is None:  # the whole body: not JSON, or sent without a JSON content type
            msg = (
                f"the request body must be a JSON object (Content-Type: application/json), "
                f"got {got}"
            )
        else:
            msg = f"must be a JSON object, got {got}"
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    text = f"{where} field {field}: {msg}{more}" if field else f"{msg}{more}"
    return error_response(422, "validation_error", text, field)


def _hindsight(_: Request, exc: Exception) -> JSONResponse:
    status, type_ = status_and_type(exc)
    if status >= 500:
        log.warning("hindsight: %s: %s", type(exc).__name__, exc)  # the full message: the log
    field = getattr(exc, "field", None)  # the argument a UsageError is about (as MCP says)
    if type_ == "invalid_trajectory":
        field = "trajectory"  # as MCP store_episode
    return error_response(status, type_, client_message(exc), field)


def not_utf8(err: UnicodeDecodeError) -> str:
    """What is wrong with a request body that is not UTF-8 (JSON is UTF-8 text, RFC 8259)."""
    return f"it is not UTF-8 text: byte 0x{err.object[err.start]:02x}"


def _http(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    cause = exc.__cause__
    if isinstance(cause, UnicodeDecodeError):  # FastAPI's "error parsing the body": one answer
        msg = f"the request body is not valid JSON ({not_utf8(cause)} at character {cause.start})"
        return error_response(422, "validation_error", msg)
    type_ = _HTTP_TYPES.get(exc.status_code, "error" if exc.status_code < 500 else "internal_error")
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    return error_response(exc.status_code, type_, detail, headers=exc.headers)


def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("hindsight: unexpected error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "internal error (logged on the server)")


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that give every error the one JSON shape."""
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(HindsightError, _hindsight)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(Exception, _unexpected)
