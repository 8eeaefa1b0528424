"""hindsight as a service: the HTTP API (FastAPI), API keys, and MCP (docs/http.md, docs/mcp.md).

The public door to :mod:`hindsight.service.http` and :mod:`hindsight.service.mcp` (the
documented import path, e.g. ``from hindsight.server import build_mcp_server, fixed_tenant``).
Needs the ``server`` extra: ``pip install 'hindsight-memory[server]'``. Run it with
``hindsight serve``.
"""

from hindsight.service.http import (
    DEFAULT_MAX_BODY_BYTES,
    KeyRing,
    create_app,
    create_key,
    key_from_headers,
    revoke_keys,
)
from hindsight.service.mcp import build_mcp_server, create_mcp_http, fixed_tenant

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
