"""Helpers of the MCP server tests (tests/server/test_mcp_*.py)."""

from __future__ import annotations

import json
from typing import Any

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
