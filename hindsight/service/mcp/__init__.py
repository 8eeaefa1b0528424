"""The MCP server: hindsight's memory as tools any agent can call (docs/mcp.md).

:func:`build_mcp_server` (stdio, ``hindsight mcp``, with :func:`fixed_tenant`) and
:func:`create_mcp_http` (streamable HTTP, mounted at ``/mcp`` by ``hindsight serve``) are in
:mod:`._server`; the tools' typed outputs in :mod:`._models`, their error handling in
:mod:`._tooling`. Needs the ``mcp`` SDK (the ``server`` extra).
"""

from hindsight.service.mcp._server import (
    TOOL_NAMES,
    build_mcp_server,
    create_mcp_http,
    fixed_tenant,
)

__all__ = ["TOOL_NAMES", "build_mcp_server", "create_mcp_http", "fixed_tenant"]
