"""The error shape of the HTTP API, shared by the server and the client (docs/http.md).

Every error response body is ``{"error": {"type": <str>, "message": <one line>, "field":
<str | None>}}``. :data:`ERROR_TYPES` is the one table from exception class to HTTP status and
``type``; the client maps a ``type`` back to the same exception class (:func:`exception_for`),
so code written against the embedded engine catches the same errors through the service.
No web framework needed here.
"""

from __future__ import annotations

import re
from typing import Any

from hindsight._errors import (
    AuthenticationError,
    EmbedderMismatchError,
    EmbeddingError,
    HindsightError,
    InvalidTrajectoryError,
    NotFoundError,
    ReviewError,
    ServiceError,
    StoreError,
    StoreLockedError,
    TenantRequiredError,
    UsageError,
)

__all__ = ["ERROR_TYPES", "client_message", "error_body", "exception_for", "status_and_type"]

ERROR_TYPES: tuple[tuple[type[BaseException], int, str], ...] = (
    # Most specific first: the first class an exception is an instance of wins.
    (AuthenticationError, 401, "unauthorized"),
    (TenantRequiredError, 400, "tenant_required"),
    (InvalidTrajectoryError, 422, "invalid_trajectory"),
    (UsageError, 400, "invalid_request"),
    (NotFoundError, 404, "not_found"),
    (StoreLockedError, 503, "store_locked"),
    (EmbedderMismatchError, 503, "embedder_mismatch"),
    (StoreError, 503, "store_unavailable"),
    (EmbeddingError, 502, "embedding_failed"),
    (ReviewError, 502, "review_failed"),
    (ServiceError, 500, "internal_error"),
)
"""(exception class, HTTP status, error type). Types the server adds without an exception
class: ``validation_error`` (422, a request field is invalid), ``forbidden`` (403, a body names
another tenant), ``method_not_allowed`` (405), ``payload_too_large`` (413), ``review_timeout``
(504), ``not_ready`` (503); the client raises :class:`UsageError` for the 4xx ones,
:class:`ReviewError` for ``review_timeout`` and :class:`ServiceError` for the rest."""

_EXTRA_TYPES: dict[str, type[HindsightError]] = {
    "validation_error": UsageError,
    "forbidden": UsageError,
    "method_not_allowed": UsageError,
    "payload_too_large": UsageError,
    "review_timeout": ReviewError,
    "not_ready": ServiceError,
}


_STORE_MESSAGES: tuple[tuple[type[StoreError], str], ...] = (
    (
        StoreLockedError,
        "the store is locked by another process on the server (the server log has the details)",
    ),
    (
        EmbedderMismatchError,
        "the server's store was built with another embedding model than the server uses (the "
        "server log has the details)",
    ),
    (StoreError, "the store is unavailable (the server log has the details); retry later"),
)


def client_message(exc: BaseException) -> str:
    """The message a client of the service sees for ``exc`` (one line).

    A store error's own message names database URLs, hosts, users, ports and files of the deployment
    (useful in the server's log, not to a client): a client gets a fixed message of its class
    instead, or the error's own ``client_message`` when it defines one (docs/http.md#errors). Every
    other error keeps its message.
    """
    if isinstance(exc, StoreError):
        own = getattr(exc, "client_message", None)
        if isinstance(own, str) and own:
            return own
        for cls, text in _STORE_MESSAGES:
            if isinstance(exc, cls):
                return text
    return str(exc) or type(exc).__name__


def status_and_type(exc: BaseException) -> tuple[int, str]:
    """HTTP status and error type of an exception (500 ``internal_error`` when unknown)."""
    if type(exc).__name__ == "ReviewTimeoutError":
        return 504, "review_timeout"
    for cls, status, name in ERROR_TYPES:
        if isinstance(exc, cls):
            return status, name
    return 500, "internal_error"


_BREAKS = re.compile(r"\s*(?:\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029])\s*")
"""A line break and the spaces around it (a message is one line; its other spaces stay,
as in a quoted value: ``got '   '``)."""


def error_body(type_: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The JSON error body; ``message`` made one line (each line break and the spaces around
    it become one space)."""
    return {
        "error": {"type": type_, "message": _BREAKS.sub(" ", str(message)).strip(), "field": field}
    }


_FRAME = re.compile(r"^(?:body|query|path) field [^\s:]+: ")
"""How the HTTP service frames a refusal of one field (``body field top_k: ...``)."""
_ITEM = re.compile(r"^items\.(\d+)\.")


def exception_for(status: int, body: Any) -> HindsightError:
    """The exception a client raises for an error response (``body``: parsed JSON or text).

    Known ``type`` -> its class (:data:`ERROR_TYPES`); otherwise 401 -> AuthenticationError,
    404 -> NotFoundError, other 4xx -> UsageError, 5xx -> ServiceError. A refusal that names
    its ``field`` keeps it (``UsageError.field``), its message without the HTTP frame, so the
    client says what the local memory says.
    """
    err = body.get("error") if isinstance(body, dict) else None
    field: str | None = None
    if isinstance(err, dict):
        type_ = str(err.get("type", ""))
        message = str(err.get("message", "")) or f"HTTP {status}"
        if isinstance(err.get("field"), str) and err["field"]:
            field = err["field"]
            # the words of the local memory: "top_k must be ...", not "body field top_k: ...";
            # an item of a batch as "item 1: ..."
            bare = _FRAME.sub("", message, count=1)
            if bare != message and bare:
                item = _ITEM.match(field)
                message = f"item {item.group(1)}: {bare}" if item else bare
    else:
        type_, message = "", (str(body)[:300] if body else f"HTTP {status}")
    cls: type[HindsightError] | None = _EXTRA_TYPES.get(type_)
    for known, _, name in ERROR_TYPES:
        if name == type_ and issubclass(known, HindsightError):
            cls = known
    if cls is None:
        if status == 401:
            cls = AuthenticationError
        elif status == 404:
            cls = NotFoundError
        elif 400 <= status < 500:
            cls = UsageError
        else:
            cls = ServiceError
    if issubclass(cls, ServiceError):
        return ServiceError(f"{message} (HTTP {status})", status)
    if issubclass(cls, UsageError):
        return cls(message, field=field)
    return cls(message)
