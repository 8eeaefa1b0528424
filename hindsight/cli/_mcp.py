"""``hindsight mcp``: the MCP server over stdio, for one tenant (docs/mcp.md).

stdout carries the MCP protocol and nothing else; logs and errors go to stderr.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, Any

import typer

from hindsight._errors import TenantRequiredError
from hindsight.cli._common import app, fail, guarded, path_value, state


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)  # close the memory on SIGTERM too (pending reviews stay pending)


@app.command("mcp")
def mcp_command(
    ctx: typer.Context,
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            envvar="HINDSIGHT_MCP_TENANT",
            help="Tenant every tool call is scoped to (required; never a tool argument).",
        ),
    ] = None,
    namespace: Annotated[
        str, typer.Option("--namespace", help="Namespace used when a tool call names none.")
    ] = "default",
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            parser=path_value,
            help="Embedded store folder (default: the global --data-dir / HINDSIGHT_DATA_DIR).",
        ),
    ] = None,
) -> None:
    """Serve the memory to an MCP host (Claude Desktop, Claude Code, Cursor, VS Code) over
    stdio. The process owns the embedded store while it runs; to share one store between
    several agents, run `hindsight serve` and connect them to its /mcp endpoint instead."""
    try:
        import anyio

        from hindsight.service.mcp import build_mcp_server, fixed_tenant
    except ImportError as exc:
        raise fail(f"{exc} (pip install 'hindsight-memory[server]')", 1) from None
    from hindsight.config import load_config
    from hindsight.engine import AsyncMemory

    if tenant is None:
        raise fail("--tenant is required (or set HINDSIGHT_MCP_TENANT)", 2)
    directory = data_dir if data_dir is not None else state(ctx).data_dir
    overrides: dict[str, Any] = {} if directory is None else {"data_dir": directory}
    try:
        who = fixed_tenant(tenant)  # an empty tenant is refused here
    except TenantRequiredError as exc:
        raise fail(f"--tenant: {exc}", 2) from None
    with guarded():
        memory = AsyncMemory(load_config(**overrides))
    try:
        with guarded():
            server = build_mcp_server(memory, tenant=who, namespace=namespace)
        signal.signal(signal.SIGTERM, _stop)
        anyio.run(server.run_stdio_async)
    finally:
        memory.close()
