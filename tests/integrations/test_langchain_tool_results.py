"""What a tool returned is what the trajectory keeps (docs/integrations/langchain.md): the
handler and ``HindsightMiddleware`` read a tool result's text when the tool returns; only
the classification of that text (its status) waits until the trajectory is built, off the
agent's path. A middleware that later edits the message in place (trimming old tool results
before a model call), or the caller editing the returned state, does not change what is
stored, and a status that cannot be classified loses only the status, not the run.
"""

from __future__ import annotations

from typing import Any

from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)

# isort: split

import pytest
from hindsight_langchain import HindsightCallbackHandler, HindsightMiddleware
from hindsight_langchain.testing import ScriptedChatModel, ai, call
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool

from tests.integrations.langchain_support import (
    TENANT,
    closing,  # noqa: F401  (autouse fixture)
    memory,
    stored,
)

RETURNED = "order 42 shipped; customer email bob@example.com"


@tool
def lookup(q: str) -> str:
    """Look an order up."""
    return RETURNED


class TrimToolResults(AgentMiddleware):
    """Shrinks the tool results of the state in place before each model call."""

    def before_model(self, state: Any, runtime: Any) -> None:
        for message in state["messages"]:
            if isinstance(message, ToolMessage):
                message.content = "[trimmed]"


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(replies=[ai("", call("lookup", {"q": "42"}, "c1")), "done"])


def _run(way: str, *, edit_after: bool) -> tuple[Any, str]:
    mem = memory()
    if way == "handler":
        capture: Any = HindsightCallbackHandler(mem, tenant_id=TENANT)
        agent = create_agent(_model(), [lookup], middleware=[TrimToolResults()])
        result = agent.invoke(
            {"messages": [("user", "where is order 42")]}, {"callbacks": [capture]}
        )
    else:
        capture = HindsightMiddleware(mem, tenant_id=TENANT)
        agent = create_agent(_model(), [lookup], middleware=[capture, TrimToolResults()])
        result = agent.invoke({"messages": [("user", "where is order 42")]})
    if edit_after:  # the caller redacts the returned state before the writer stored the run
        for message in result["messages"]:
            if isinstance(message, ToolMessage):
                message.content = "REDACTED"
    capture.wait()
    return mem, capture.last_trajectory_id


@pytest.mark.parametrize("edit_after", [False, True], ids=["as-run", "edited-after"])
@pytest.mark.parametrize("way", ["handler", "middleware"])
def test_a_tool_result_is_stored_as_the_tool_returned_it(way: str, edit_after: bool) -> None:
    mem, trajectory_id = _run(way, edit_after=edit_after)
    results = [e for e in stored(mem, trajectory_id).events if e.event_type.value == "tool_result"]
    assert [(e.content, e.status.value if e.status else None) for e in results] == [
        (RETURNED, "success")
    ]
    assert results[0].tool_call_id == "c1"


@pytest.mark.parametrize("way", ["handler", "middleware"])
def test_a_status_that_cannot_be_classified_loses_only_the_status(
    way: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import hindsight_langchain._convert as convert

    def broken(text: str, hint: Any = None) -> Any:
        raise RuntimeError("classifier broke")

    monkeypatch.setattr(convert, "classify_tool_result", broken)
    mem, trajectory_id = _run(way, edit_after=False)
    events = stored(mem, trajectory_id).events
    kinds = [e.event_type.value for e in events]
    assert "tool_call" in kinds and "final_answer" in kinds
    [result] = [e for e in events if e.event_type.value == "tool_result"]
    assert (result.content, result.status) == (RETURNED, None)
    assert "could not classify a tool result's status" in caplog.text
