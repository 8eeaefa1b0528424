"""A script that never closes its memory still stores its runs when it exits
(docs/integrations/langchain.md#lifecycle-when-runs-are-written).

The integrations hand a finished run to the memory's background writer; at interpreter exit
:mod:`atexit` closes the memory, which waits for those writes. By then the interpreter's thread
pools take no more work, and the writes run through ``asyncio.to_thread``: the memory's loop
runs them inline then, so the run is in the store when the process ends, not left in the unsaved
area for the next open with "cannot schedule new futures after interpreter shutdown" on stderr.
A thread still running an agent when the main thread ends is waited for first (the memory stays
open for it), and a forked child process runs none of this. Each case runs in a fresh
interpreter on a file store, the way a user's script does.
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
    "thread-still-running": """
import threading, time
from hindsight_langchain import HindsightCallbackHandler
from hindsight_langchain.testing import ScriptedChatModel
def work():
    time.sleep(1.0)  # still running when the main thread ends
    model = ScriptedChatModel(replies=["Order 7 shipped."])
    model.invoke("Where is order 7?", {"callbacks": [HindsightCallbackHandler(mem, tenant_id="t")]})
threading.Thread(target=work).start()
""",
    "forked-child": """
import multiprocessing
from langchain_core.runnables import RunnableLambda
from hindsight_langchain import HindsightCallbackHandler
from hindsight_langchain.testing import ScriptedChatModel
def export(order):  # a step that forks a worker process (the children exit on their own)
    ctx = multiprocessing.get_context("fork")
    worker = ctx.Process(target=print, args=("exported",))
    worker.start()
    worker.join(60)
    with ctx.Pool(2) as pool:
        pool.map(abs, [1, -2])
    return order
chain = RunnableLambda(export, name="export") | ScriptedChatModel(replies=["Order 7 exported."])
chain.invoke("Export order 7", {"callbacks": [HindsightCallbackHandler(mem, tenant_id="t")]})
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
        [tid] = mem.aio.store.list_trajectory_ids("t")
        traj = mem.get_trajectory(tid, tenant_id="t")
    assert stats["trajectories"] == 1
    assert stats["review_jobs"]["pending"] + stats["review_jobs"]["succeeded"] == 1
    assert not traj.metadata.get("incomplete"), traj.metadata  # the whole run, as it ended
    assert traj.events[-1].event_type.value == "final_answer"
    assert traj.outcome.value == "success"


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
