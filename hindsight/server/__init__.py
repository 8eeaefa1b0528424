"""hindsight as a service: the HTTP API (FastAPI), API keys, and MCP over HTTP (issue 9).

Needs the ``server`` extra: ``pip install 'hindsight-memory[server]'``. Run it with
``hindsight serve``; see docs/http.md.
"""

from __future__ import annotations

try:
    import fastapi  # noqa: F401
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "hindsight.server needs FastAPI: pip install 'hindsight-memory[server]'"
    ) from exc

from hindsight.server._app import DEFAULT_MAX_BODY_BYTES, create_app
from hindsight.server._keys import KeyRing, create_key, key_from_headers, revoke_keys
from hindsight.server._mcp import build_mcp_server, create_mcp_http, fixed_tenant

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "KeyRing",
    "build_mcp_server",
    "create_app",
    "create_key",
    "create_mcp_http",
    "fixed_tenant",
    "key_from_headers",
    "revoke_keys",
]
