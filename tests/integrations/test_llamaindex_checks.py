"""Decision-time risk checks for a real LlamaIndex FunctionAgent (issue 16): the advice
reaches the model before the tool runs; a failing memory leaves the run untouched."""

from __future__ import annotations

from typing import Any

import pytest
from hindsight_llamaindex import checked_tools
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms import MessageRole
from llamaindex_support import ChunkedLLM, call, plan, run_agent, say

from hindsight import UsageError
from hindsight.checks import ADVICE_START
from hindsight.testing import test_memory

CANCELLED: list[str] = []


def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    CANCELLED.append(order_id)
    return f"order {order_id} cancelled"


def _run(mem: Any, **options: Any) -> ChunkedLLM:
    CANCELLED.clear()
    llm = ChunkedLLM(
        plan(call("cancel_order", 1, order_id="A1"), call("cancel_order", 2, order_id="A1"),
             say("Cancelled."))
    )  # fmt: skip
    tools = checked_tools([cancel_order], mem, tenant_id="acme", **options)
    agent = FunctionAgent(tools=tools, llm=llm, system_prompt="You cancel orders.")
    run_agent(agent, user_msg="cancel order A1")
    return llm


def test_advise_holds_the_first_call_with_the_advice() -> None:
    with test_memory() as mem:
        mem.add_experience("Before calling cancel_order, confirm which order the user means.",
                           tenant_id="acme", tools=["cancel_order"], confidence=0.8)  # fmt: skip
        llm = _run(mem)
        told = [m for m in llm.seen[1] if m.role == MessageRole.TOOL]
        assert told and ADVICE_START in str(told[0].content)
        assert "NOT executed" in str(told[0].content)
        assert CANCELLED == ["A1"]  # the second call ran, as proposed
        _run(mem, checks="off")
        assert CANCELLED == ["A1", "A1"]


def test_a_failing_memory_leaves_the_run_untouched() -> None:
    mem = test_memory()
    mem.add_experience("Before calling cancel_order, confirm which order the user means.",
                       tenant_id="acme", tools=["cancel_order"], confidence=0.8)  # fmt: skip
    mem.close()
    _run(mem)
    assert CANCELLED == ["A1", "A1"]  # nothing held


def test_confirm_is_refused_in_one_line() -> None:
    with test_memory() as mem, pytest.raises(UsageError, match="not available"):
        checked_tools([cancel_order], mem, tenant_id="acme", checks="confirm")
