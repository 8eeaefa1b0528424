"""The client config snippets of docs/mcp.md work: every ```json block parses, its stdio
servers start from their exact command and args and answer tools, and its HTTP servers are
reached at their URL with their header (placeholders replaced by a real key)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from hindsight.server import KeyRing, create_app
from hindsight.testing import test_memory
from tests.server.mcp_support import call, serving

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "mcp.md"
_JSON = re.compile(r"^```json[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_PLACEHOLDER = re.compile(r"\$\{(env|input):[^}]+\}")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _servers() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for n, block in enumerate(_JSON.findall(PAGE.read_text(encoding="utf-8")), start=1):
        doc = json.loads(block)  # every snippet is valid JSON
        table = doc.get("mcpServers", doc.get("servers"))
        assert isinstance(table, dict) and table, f"snippet {n} names no server"
        for name, spec in table.items():
            found.append((f"snippet{n}-{name}", spec))
    return found


SERVERS = _servers()


def test_the_page_has_a_snippet_per_host() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for host in [
        "claude_desktop_config.json",
        "claude mcp add",
        ".cursor/mcp.json",
        ".vscode/mcp.json",
    ]:
        assert host in text, host
    kinds = {"url" in spec for _, spec in SERVERS}
    assert kinds == {True, False}  # stdio and HTTP snippets


@pytest.mark.parametrize(("where", "spec"), [s for s in SERVERS if "command" in s[1]])
async def test_stdio_snippets_start_a_working_server(
    where: str, spec: dict[str, Any], tmp_path: Path
) -> None:
    assert spec.get("type", "stdio") == "stdio"
    command = shutil.which(spec["command"], path=str(Path(sys.executable).parent))
    assert command is not None, f"{where}: {spec['command']} is not installed beside Python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(spec.get("env", {}))
    env["HINDSIGHT_DATA_DIR"] = str(tmp_path / "data")  # the snippet's folder, made local
    params = StdioServerParameters(command=command, args=spec["args"], env=env, cwd=str(tmp_path))
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "recall_similar" in names
        found = await call(client, "recall_similar", {"query": "deploy"})
        assert found.ok()["hits"] == []
    assert (tmp_path / "data" / "hindsight.db").exists()


async def test_http_snippets_reach_mcp_with_their_header() -> None:
    http_specs = [(w, s) for w, s in SERVERS if "url" in s]
    mem = test_memory()
    try:
        app = create_app(mem.aio, keyring=KeyRing.from_plain({"the-key": "my-team"}))
        with serving(app) as base:
            for where, spec in http_specs:
                assert spec.get("type", "http") == "http", where
                url = spec["url"].replace("http://127.0.0.1:8710", base)
                assert url == f"{base}/mcp", where
                headers = {k: _PLACEHOLDER.sub("the-key", v) for k, v in spec["headers"].items()}
                async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
                    transport = streamable_http_client(url, http_client=http)
                    async with Client(transport) as client:
                        done = await call(client, "recall_similar", {"query": "deploy"})
                        assert done.ok()["hits"] == [], where
    finally:
        mem.close()
