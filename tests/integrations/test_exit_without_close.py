"""A script that never closes its memory still stores its runs when it exits
(docs/integrations/langchain.md#lifecycle-when-runs-are-written).

The integrations hand a finished run to the memory's background writer; at interpreter exit the
memory closes itself and waits for those writes. Its writes run through ``asyncio.to_thread``,
which an exiting interpreter refuses once its thread pools stopped, so the close must come
before: the run is in the store when the process ends, not left in the unsaved area for the next
open with "cannot schedule new futures after interpreter shutdown" on stderr. Each case runs in
a fresh interpreter on a file store, the way a user's script does.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)

# isort: split

import pytest

from hindsight import Memory

REPO = Path(__file__).resolve().parents[2]

_OPEN = """
import asyncio, sys
from hindsight import Memory
mem = Memory(data_dir=sys.argv[1])
"""

CASES = {
    "handler": """
from hindsight_langchain import HindsightCallbackHandler
from hindsight_langchain.testing import ScriptedChatModel
model = ScriptedChatModel(replies=["Order 7 shipped."])
model.invoke("Where is order 7?", {"callbacks": [HindsightCallbackHandler(mem, tenant_id="t")]})
""",
    "async-handler": """
from hindsight_langchain import AsyncHindsightCallbackHandler
from hindsight_langchain.testing import ScriptedChatModel
model = ScriptedChatModel(replies=["Order 7 shipped."])
handler = AsyncHindsightCallbackHandler(mem, tenant_id="t")
asyncio.run(model.ainvoke("Where is order 7?", {"callbacks": [handler]}))
""",
    "middleware": """
from langchain.agents import create_agent
from hindsight_langchain import HindsightMiddleware
from hindsight_langchain.testing import ScriptedChatModel
model = ScriptedChatModel(replies=["Order 7 shipped."])
agent = create_agent(model, [], middleware=[HindsightMiddleware(mem, tenant_id="t")])
asyncio.run(agent.ainvoke({"messages": [("user", "Where is order 7?")]}))
""",
    "langgraph": """
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from hindsight_langgraph import add_hindsight
builder = StateGraph(MessagesState)
builder.add_node("agent", lambda s: {"messages": [AIMessage("Order 7 shipped.")]})
builder.add_edge(START, "agent")
builder.add_edge("agent", END)
add_hindsight(builder, mem, tenant_id="t").compile().invoke(
    {"messages": [("user", "Where is order 7?")]}
)
""",
    "llamaindex": """
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms.mock import MockFunctionCallingLLM
from hindsight_llamaindex import instrument
def order_query(order_id: str = "7") -> str:
    \"\"\"Look up an order's status.\"\"\"
    return f"order {order_id}: shipped"
instrument(mem, tenant_id="t")
agent = FunctionAgent(tools=[order_query], llm=MockFunctionCallingLLM(), system_prompt="Orders.")
async def main():
    return await agent.run("Where is order 7?")
asyncio.run(main())
""",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_run_of_a_script_that_never_closes_its_memory_is_stored(
    case: str, tmp_path: Path
) -> None:
    if case == "llamaindex" and importlib.util.find_spec("llama_index.core") is None:
        pytest.skip("llama-index-core not installed")  # pragma: no cover
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(_OPEN) + textwrap.dedent(CASES[case]), encoding="utf-8")
    data = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, str(script), str(data)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
        env={**_env(), "PYTHONPATH": f"{REPO}:{REPO / 'integrations'}"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "hindsight:" not in done.stderr, done.stderr[-3000:]  # no write failed or was kept
    unsaved = data / "unsaved"
    left = [p for p in unsaved.rglob("*") if p.is_file()] if unsaved.exists() else []
    assert left == []  # stored by the exiting process, not left for the next open
    with Memory(data_dir=data, background_review=False) as mem:
        stats = mem.stats(tenant_id="t")
    assert stats["trajectories"] == 1
    assert stats["review_jobs"]["pending"] + stats["review_jobs"]["succeeded"] == 1


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
