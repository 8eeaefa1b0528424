"""Helpers of the MCP server tests (tests/server/test_mcp_*.py)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import uvicorn

from hindsight import Lesson, Trajectory


def echo_lessons(traj: Trajectory) -> list[Lesson]:
    """Reviewer script: one rule repeating the run's task (so a test knows what to recall)."""
    return [Lesson(kind="rule", content=f"{traj.task}", confidence=0.6)]


def openai_run(task: str, *, tool: str = "deploy_service", status: str = "timeout") -> list[Any]:
    """An OpenAI chat transcript with one tool call that times out."""
    return [
        {"role": "user", "content": task},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps({"target": "prod"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": f"error: {status} after 30s"},
        {"role": "assistant", "content": "I could not finish the task."},
    ]


class ToolCall:
    """What one ``call_tool`` gave: ``error`` (the ``{"type", "message", "field"}`` of an error
    result, else ``None``), ``data`` (the structured content) and ``text``."""

    def __init__(self, result: Any) -> None:
        self.is_error = bool(result.is_error)
        self.text = "".join(getattr(block, "text", "") for block in result.content)
        self.data: dict[str, Any] = result.structured_content or {}
        self.error: dict[str, Any] | None = self.data.get("error") if self.is_error else None

    def ok(self) -> dict[str, Any]:
        assert not self.is_error, self.text
        return self.data


async def call(client: Any, name: str, args: dict[str, Any]) -> ToolCall:
    """Call a tool; an error result must be one line ``"<type>: <message>"``."""
    done = ToolCall(await client.call_tool(name, args))
    if done.is_error:
        assert "\n" not in done.text, done.text
        if done.error is not None:
            assert done.text == f"{done.error['type']}: {done.error['message']}"
    return done


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run ``app`` with uvicorn on a free loopback port; yields the base URL; always stops."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        assert not thread.is_alive(), "uvicorn did not stop"


@contextlib.asynccontextmanager
async def stdio_session(data_dir: Any, database_url: str, tenant: str = "t") -> AsyncIterator[Any]:
    """An initialized MCP client session with ``hindsight mcp --tenant T`` as an MCP host starts
    it, on ``database_url`` (a SQLite URL: the data dir's own file) with a clean environment;
    its stderr goes to ``<data_dir>.stderr.txt``."""
    import os
    import sys
    from pathlib import Path

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    drop = ("HINDSIGHT_", "DATABASE_URL", "VECTOR_DB_URL", "EMBEDDING_MODEL", "REFLECTION_MODEL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    if not database_url.startswith("sqlite"):
        env["DATABASE_URL"] = database_url
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hindsight", "mcp", "--tenant", tenant, "--data-dir", str(data_dir)],
        env=env,
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    with Path(f"{data_dir}.stderr.txt").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
