"""Request dependencies of the console: the signed-in session (and so the tenant), the engine,
checked forms, and small parsers for the values of HTML forms."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.datastructures import FormData

from hindsight._errors import ServiceError, UsageError
from hindsight.engine import AsyncMemory
from hindsight.service.console._auth import COOKIE, LoginRequired, Session, check_csrf

__all__ = [
    "Engine",
    "Viewer",
    "checked_form",
    "engine_of",
    "form_float",
    "form_int",
    "form_list",
    "form_text",
    "viewer_of",
]


def viewer_of(request: Request) -> Session:
    """The signed-in session of the request; its key is checked against the key ring again
    (a revoked key ends the session at once).

    Raises:
        LoginRequired: no session, an expired one, or its key was revoked.
    """
    state = request.app.state
    session: Session | None = state.sessions.get(request.cookies.get(COOKIE))
    if session is None:
        raise LoginRequired()
    if state.keyring_of().authenticate(session.key) != session.tenant:
        state.sessions.drop(session.id)
        raise LoginRequired()
    request.state.session = session
    return session


def engine_of(request: Request) -> AsyncMemory:
    """The engine the service runs (503 while it starts or stops)."""
    memory: AsyncMemory | None = request.app.state.memory_of()
    if memory is None:
        raise ServiceError("the memory engine is not open (starting up or shutting down)")
    return memory


Viewer = Annotated[Session, Depends(viewer_of)]
Engine = Annotated[AsyncMemory, Depends(engine_of)]


async def checked_form(request: Request, session: Viewer) -> FormData:
    """The posted form, after its CSRF token and origin were checked (CsrfError -> 403)."""
    form = await request.form()
    check_csrf(form, session.csrf, request)
    return form


Form = Annotated[FormData, Depends(checked_form)]


def form_text(form: Any, name: str, *, max_length: int = 100_000) -> str | None:
    """A text field, stripped; ``None`` when absent or blank.

    Raises:
        UsageError: longer than ``max_length`` characters.
    """
    value = form.get(name)
    if not isinstance(value, str) or not value.strip():
        return None
    if len(value) > max_length:
        raise UsageError(f"{name} is longer than {max_length} characters")
    return value.strip()


def _number(form: Any, name: str, kind: type[float] | type[int], low: float, high: float) -> Any:
    text = form_text(form, name, max_length=50)
    if text is None:
        return None
    what = "a number" if kind is float else "an integer"
    try:
        value = kind(text)
    except ValueError:
        raise UsageError(f"{name} must be {what}, got {text!r}") from None
    if not low <= value <= high:
        raise UsageError(f"{name} must be between {low:g} and {high:g}, got {text}")
    return value


def form_float(form: Any, name: str, *, low: float = 0.0, high: float = 1.0) -> float | None:
    """A number field in ``[low, high]``; ``None`` when blank.

    Raises:
        UsageError: not a number or out of range (names the field).
    """
    value: float | None = _number(form, name, float, low, high)
    return value


def form_int(form: Any, name: str, *, low: int, high: int) -> int | None:
    """An integer field in ``[low, high]``; ``None`` when blank.

    Raises:
        UsageError: not an integer or out of range (names the field).
    """
    value: int | None = _number(form, name, int, low, high)
    return value


def form_list(form: Any, name: str) -> list[str]:
    """A comma-separated field as a list of non-empty, stripped items."""
    text = form_text(form, name, max_length=10_000) or ""
    return [item.strip() for item in text.split(",") if item.strip()]
