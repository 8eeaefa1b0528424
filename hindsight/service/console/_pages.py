"""Rendering: the Jinja2 environment of the console's templates and its filters.

Autoescape is on for every template, and no template marks stored data ``|safe`` (a test
checks): stored ``<script>``, quotes and markup always render as text. Links built from stored
data go through :func:`http_url`, which lets only ``http(s)://`` through, so a stored
``javascript:`` URL is shown as text, never as a link.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

__all__ = ["TEMPLATES", "base_of", "env", "http_url", "redirect", "render"]

TEMPLATES = Path(__file__).with_name("templates")


def http_url(value: Any) -> str | None:
    """``value`` when it is an absolute ``http``/``https`` URL with a host, else ``None``."""
    if not isinstance(value, str) or len(value) > 2000 or any(c.isspace() for c in value):
        return None
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    return value if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def _when(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(value, str):
        try:
            return _when(datetime.fromisoformat(value))
        except ValueError:
            return value
    return "" if value is None else str(value)


def _num(value: Any, digits: int = 2) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str, sort_keys=True)


def _query(params: dict[str, Any], **changes: Any) -> str:
    """The query string of ``params`` with ``changes`` (empty values left out)."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")}, doseq=True)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


env = Environment(
    loader=FileSystemLoader(str(TEMPLATES)),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
env.filters.update(when=_when, num=_num, pretty=_pretty, http_url=http_url)
env.globals.update(query=_query)
env.tests.update(number=_is_number, mapping=lambda v: isinstance(v, dict))


def base_of(request: Request) -> str:
    """The path the console is mounted at (``/console``), without a trailing slash."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def redirect(request: Request, path: str) -> RedirectResponse:
    """303 to ``path`` inside the console (after a form post: the browser then GETs it)."""
    return RedirectResponse(base_of(request) + path, status_code=303)


def render(request: Request, name: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    """Render template ``name`` for ``request`` (its session's tenant, CSRF token and
    messages are filled in)."""
    session = getattr(request.state, "session", None)
    base = base_of(request)
    page = env.get_template(name).render(
        base=base,
        session=session,
        csrf=session.csrf if session is not None else "",
        flashes=session.pop_flashes() if session is not None else [],
        path=request.url.path,
        **context,
    )
    return HTMLResponse(page, status_code=status)
