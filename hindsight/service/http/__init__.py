"""The HTTP API (FastAPI; docs/http.md): :func:`create_app` serves ``/v1`` and mounts
MCP at ``/mcp``; the API keys (:class:`KeyRing`) decide each request's tenant.

Needs the ``server`` extra: ``pip install 'hindsight-memory[server]'``. Run it with
``hindsight serve``. Public door: :mod:`hindsight.server`.
"""

from __future__ import annotations

try:
    import fastapi  # noqa: F401
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "hindsight.server needs FastAPI: pip install 'hindsight-memory[server]'"
    ) from exc

from hindsight.service._keys import KeyRing, create_key, key_from_headers, revoke_keys
from hindsight.service.http._app import DEFAULT_MAX_BODY_BYTES, create_app

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "KeyRing",
    "create_app",
    "create_key",
    "key_from_headers",
    "revoke_keys",
]
