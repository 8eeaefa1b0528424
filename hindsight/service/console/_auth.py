"""Console sessions: an API key is exchanged once for a session cookie; CSRF tokens.

* ``POST /console/login`` takes an API key (the same keys as the HTTP API: the key decides the
  tenant) and answers with a session cookie ``hindsight_console``: a random id (256 bits) of a
  session kept **in the server's memory** only (a restart logs everyone out). The cookie is
  ``HttpOnly``, ``SameSite=Strict``, ``Path=/console`` and ``Secure`` when the request came
  over TLS.
* The session keeps the key and checks it against the key ring on every request, so a revoked
  key ends its sessions at once; a session idle for :data:`IDLE_SECONDS` ends too.
* Every state-changing form carries the session's CSRF token (a hidden ``csrf`` field, compared
  in constant time); the login form has its own token, bound to a short-lived
  ``hindsight_console_login`` cookie (login CSRF). A POST whose ``Origin`` header names another
  site is refused as well.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

__all__ = [
    "COOKIE",
    "IDLE_SECONDS",
    "LOGIN_COOKIE",
    "CsrfError",
    "LoginRequired",
    "Session",
    "SessionStore",
    "check_csrf",
    "set_cookie",
]

COOKIE = "hindsight_console"
LOGIN_COOKIE = "hindsight_console_login"
IDLE_SECONDS = 8 * 3600
"""A session unused for 8 hours ends (a working day); the next request goes to the login."""
MAX_SESSIONS = 10_000
"""Sessions kept at once; past that the least recently used one ends."""
COOKIE_PATH = "/console"


class LoginRequired(Exception):
    """No valid session: the console answers with a redirect to its login page."""


class CsrfError(Exception):
    """A state-changing request without the right CSRF token (or from another origin)."""


@dataclass
class Session:
    """One signed-in browser: its tenant, the key it signed in with (checked on every
    request), its CSRF token and messages to show on the next page."""

    id: str
    tenant: str
    key: str
    csrf: str
    seen: float
    flashes: list[tuple[str, str]] = field(default_factory=list)

    def flash(self, message: str, kind: str = "ok") -> None:
        """Show ``message`` on the next page (``kind``: ``ok`` or ``error``)."""
        self.flashes.append((kind, message))

    def pop_flashes(self) -> list[tuple[str, str]]:
        out, self.flashes = self.flashes, []
        return out


class SessionStore:
    """The console's sessions, in memory, thread-safe (see the module docstring)."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS, max_sessions: int = MAX_SESSIONS):
        self.idle_seconds = idle_seconds
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def create(self, tenant: str, key: str) -> Session:
        session = Session(
            id=secrets.token_urlsafe(32),
            tenant=tenant,
            key=key,
            csrf=secrets.token_urlsafe(32),
            seen=time.monotonic(),
        )
        with self._lock:
            self._sessions[session.id] = session
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id (its idle clock restarts), else ``None``."""
        if not session_id:
            return None
        now = time.monotonic()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            if now - session.seen > self.idle_seconds:
                del self._sessions[session_id]
                return None
            session.seen = now
            self._sessions.move_to_end(session_id)
            return session

    def drop(self, session_id: str | None) -> None:
        with self._lock:
            self._sessions.pop(session_id or "", None)


def set_cookie(
    response: Response, request: Request, name: str, value: str, max_age: int | None = None
) -> None:
    """Set a console cookie: HttpOnly, SameSite=Strict, Path=/console, Secure under TLS."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def same_origin(request: Request) -> bool:
    """False when the request's ``Origin`` (or, without one, ``Referer``) names another
    host than the one the request was sent to; True when neither header is there."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin or origin == "null":
        return origin != "null"
    return urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()


def check_csrf(form: FormData, expected: str, request: Request) -> None:
    """Raise :class:`CsrfError` unless ``form["csrf"]`` equals ``expected`` and the request
    comes from this site."""
    given: Any = form.get("csrf")
    if not isinstance(given, str) or not given:
        raise CsrfError("the form has no CSRF token: reload the page and try again")
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise CsrfError("the form's CSRF token is wrong or expired: reload the page")
    if not same_origin(request):
        raise CsrfError("the request came from another site")
