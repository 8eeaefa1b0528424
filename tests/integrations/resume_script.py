"""One half of a run that pauses at a human approval in one process and is resumed in another
(docs/integrations/langchain.md#interrupts-and-human-approval). Run as ``python resume_script.py
KIND PHASE DATA_DIR CHECKPOINT_FILE``:

* KIND: ``handler`` (HindsightCallbackHandler), ``middleware`` (HindsightMiddleware) or
  ``graph`` (hindsight_langgraph's nodes around a graph that calls ``interrupt()``);
* PHASE: ``pause`` (a fresh input; the run stops at the approval) or ``resume``
  (``Command(resume=...)`` on the same thread).

The checkpointer is LangGraph's ``InMemorySaver`` whose tables are pickled to
CHECKPOINT_FILE after every write and read back at start: a real checkpointer shared by two
processes. Prints ``PAUSED`` or ``DONE <answer>``.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
from pathlib import Path
from typing import Any

from hindsight_langchain import HindsightCallbackHandler, HindsightMiddleware
from hindsight_langchain.testing import ScriptedChatModel, ai, call
from hindsight_langgraph import add_hindsight
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from hindsight import Memory
from hindsight.testing import ScriptedReviewer

TENANT = "acme"
THREAD = {"configurable": {"thread_id": "order-7"}}


class FileSaver(InMemorySaver):
    """``InMemorySaver`` persisted to a pickle file (loaded at start, saved on every write)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.save_lock = threading.Lock()
        if path.exists():
            storage, writes, blobs = pickle.loads(path.read_bytes())
            self.storage.update(storage)
            self.writes.update(writes)
            self.blobs.update(blobs)

    def _save(self) -> None:
        """Write the tables whole (a temporary file renamed over the old one). LangGraph calls
        ``put`` and ``put_writes`` from several threads: each change and its save run under
        one lock, so the last file written holds every change (unlocked, an older snapshot
        could be written last and the pending approval's writes were lost under load)."""
        data = (
            {k: {n: dict(c) for n, c in v.items()} for k, v in self.storage.items()},
            dict(self.writes),
            dict(self.blobs),
        )
        part = self.path.with_suffix(".part")
        part.write_bytes(pickle.dumps(data))
        os.replace(part, self.path)

    def put(self, *args: Any, **kwargs: Any) -> Any:
        with self.save_lock:
            out = super().put(*args, **kwargs)
            self._save()
        return out

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        with self.save_lock:
            super().put_writes(*args, **kwargs)
            self._save()


@tool
def refund(order_id: str) -> str:
    """Refund an order (needs a human's approval)."""
    return f"order {order_id} refunded"


def script(messages: list[BaseMessage]) -> Any:
    if isinstance(messages[-1], ToolMessage):
        return ai("Order 7 is refunded.")
    return ai("", call("refund", {"order_id": "7"}, "c-refund"))


def agent_and_config(kind: str, memory: Memory, saver: FileSaver) -> tuple[Any, dict[str, Any]]:
    model = ScriptedChatModel(script=script)
    approval = HumanInTheLoopMiddleware(interrupt_on={"refund": True})
    if kind == "handler":
        handler = HindsightCallbackHandler(memory, tenant_id=TENANT)
        agent = create_agent(model, [refund], middleware=[approval], checkpointer=saver)
        return agent, {**THREAD, "callbacks": [handler]}
    if kind == "middleware":
        hindsight = HindsightMiddleware(memory, tenant_id=TENANT)
        agent = create_agent(model, [refund], middleware=[hindsight, approval], checkpointer=saver)
        return agent, dict(THREAD)
    return graph(memory, model, saver), dict(THREAD)


def graph(memory: Memory, model: ScriptedChatModel, saver: FileSaver) -> Any:
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def approve(state: MessagesState) -> dict[str, Any]:
        decision = interrupt({"action": "refund", "order_id": "7"})
        reply = refund.invoke({"order_id": "7"}) if decision == "approve" else "refused"
        request = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage(reply, tool_call_id=request["id"], name="refund")]}

    def route(state: MessagesState) -> str:
        return "approve" if state["messages"][-1].tool_calls else END

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("approve", approve)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["approve", END])
    builder.add_edge("approve", "agent")
    add_hindsight(builder, memory, tenant_id=TENANT)
    return builder.compile(checkpointer=saver)


def main(kind: str, phase: str, data_dir: str, checkpoint: str) -> None:
    saver = FileSaver(Path(checkpoint))
    with Memory(data_dir=data_dir, reviewer=ScriptedReviewer([])) as memory:
        agent, config = agent_and_config(kind, memory, saver)
        if phase == "pause":
            ask = {"messages": [("user", "Please refund order 7.")]}
            out = agent.invoke(ask, config, durability="sync")  # checkpoint saved before exit
            print("PAUSED" if "__interrupt__" in out else f"NOT PAUSED {out}")
            return
        value: Any = "approve" if kind == "graph" else {"decisions": [{"type": "approve"}]}
        out = agent.invoke(Command(resume=value), config, durability="sync")
        print("DONE", out["messages"][-1].content)


if __name__ == "__main__":
    main(*sys.argv[1:5])
