"""Helpers of the MCP server tests (tests/server/test_mcp_*.py)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
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
