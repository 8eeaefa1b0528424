"""What the OpenAPI schema says beyond the routes' own models.

* :data:`V1_ERRORS` and :func:`errors`: every status a route may answer besides its success,
  with the one error body (:class:`ErrorResponse`), so that a generated client and schemathesis
  know each of them (400 and 404 were missing: "the OpenAPI schema omits the 400/404 answers").
* :func:`json_body`: a route that reads its body itself (to parse a large one off the event
  loop, :mod:`hindsight.service._offload`) still documents it, and :func:`parse_body` fails
  exactly as FastAPI's own parsing does (422 ``validation_error`` naming the field).
"""

from __future__ import annotations

import email.message
import json
from typing import Any, TypeVar

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from hindsight.service.http._errors import not_utf8

__all__ = [
    "V1_ERRORS",
    "ErrorDetail",
    "ErrorResponse",
    "errors",
    "json_body",
    "parse_body",
]

M = TypeVar("M", bound=BaseModel)


class ErrorDetail(BaseModel):
    """``type`` (e.g. ``invalid_request``, ``not_found``), a one-line ``message`` and the
    request ``field`` it is about, when one is."""

    type: str
    message: str
    field: str | None = None


class ErrorResponse(BaseModel):
    """The body of every error answer (docs/http.md)."""

    error: ErrorDetail


_DESCRIPTIONS = {
    400: "invalid_request / tenant_required: an argument is invalid (one-line reason)",
    401: "unauthorized: no API key, or one no tenant owns",
    403: "forbidden: the body names another tenant than the key's",
    404: "not_found: no such object in the key's tenant",
    413: "payload_too_large: the body is over the server's limit",
    422: "validation_error / invalid_trajectory: the body or a parameter does not validate",
    502: "embedding_failed / review_failed: the embedding or review model failed",
    503: "store_unavailable / store_locked / embedder_mismatch / not_ready: retry later",
    504: "review_timeout: the review model did not answer in time",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for these error statuses, with the error body."""
    return {code: {"model": ErrorResponse, "description": _DESCRIPTIONS[code]} for code in codes}


V1_ERRORS = errors(400, 401, 404, 413, 422, 503)
"""What any ``/v1`` route may answer besides success: a bad argument, no key, an unknown id,
a body over the limit, a body that does not validate, the store unavailable."""


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` documenting ``model`` as the JSON request body of a route that reads
    the body itself (the model must be in the schema's components: :func:`add_components`)."""
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}


def add_components(schema: dict[str, Any], *models: type[BaseModel]) -> dict[str, Any]:
    """Add ``models`` (and the models they use) to ``schema['components']['schemas']``."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in models:
        doc = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, sub in doc.pop("$defs", {}).items():
            components.setdefault(name, sub)
        components.setdefault(model.__name__, doc)
    return schema


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return True  # FastAPI parses a body without a content type as JSON too
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


def parse_body(model: type[M], raw: bytes, content_type: str | None) -> M:
    """The request body ``raw`` as ``model``, validated as FastAPI does it (same errors: JSON
    syntax, not an object, a missing body, a bad field; all 422 ``validation_error``).

    Raises:
        RequestValidationError: the body does not parse or validate.
    """
    if not raw:
        raise RequestValidationError(
            [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
        )
    data: Any = raw
    if _is_json(content_type):
        try:
            data = json.loads(raw)
        except ValueError as exc:
            position = getattr(exc, "pos", 0)
            detail = getattr(exc, "msg", None) or str(exc)
            if isinstance(exc, UnicodeDecodeError):  # JSON is UTF-8 text (RFC 8259)
                position, detail = exc.start, not_utf8(exc)
            raise RequestValidationError(
                [
                    {
                        "type": "json_invalid",
                        "loc": ("body", position),
                        "msg": "JSON decode error",
                        "input": {},
                        "ctx": {"error": detail},
                    }
                ]
            ) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        found = [{**err, "loc": ("body", *err.get("loc", ()))} for err in exc.errors()]
        raise RequestValidationError(found) from None
