"""An existing LangChain agent, plus one line: every run is captured and reviewed
(docs/integrations/langchain.md#an-existing-agent-plus-one-line).

The agent below is ordinary LangChain code. The only hindsight line is the handler passed in
``config={"callbacks": [...]}``; the run is stored as one trajectory of structured events
(the carrier tool's timeout has status ``timeout``) and reviewed in the background.

    python examples/langchain_callback.py                            # offline, scripted model
    python examples/langchain_callback.py --model openai:gpt-4o-mini # a real model
    python examples/langchain_callback.py --data-dir ./mem           # where the memory lives

Needs: pip install "hindsight-memory[langchain]" (and the provider's package for --model).
"""

from __future__ import annotations

import argparse
from typing import Any

from hindsight_langchain import HindsightCallbackHandler
from hindsight_langchain.testing import ScriptedChatModel, ai, call
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import ToolException, tool

from hindsight import Memory

QUESTION = "Where is my order A1?"


# -- the existing agent: nothing here knows about hindsight --------------------------------------
@tool
def get_order(order_id: str) -> str:
    """Look up an order: items and payment."""
    return f"order {order_id}: 2 items, paid"


@tool
def carrier_status(order_id: str) -> str:
    """Ask the carrier where the parcel of an order is."""
    raise ToolException(f"carrier API timed out after 5 s (order {order_id})")


carrier_status.handle_tool_error = True  # the timeout is reported to the model


@tool
def tracking_cache(order_id: str) -> str:
    """The last tracking state we saw for an order (may be a few hours old)."""
    return f"order {order_id}: out for delivery"


def build_agent(model: Any) -> Any:
    return create_agent(
        model,
        [get_order, carrier_status, tracking_cache],
        system_prompt="You are a parcel support agent. Check the order, then where it is.",
    )


def offline_model() -> ScriptedChatModel:
    """A scripted stand-in for a real model: order, carrier, then the cache when it failed."""

    def script(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if not isinstance(last, ToolMessage):
            return ai("", call("get_order", {"order_id": "A1"}, "call-1"))
        if last.name == "get_order":
            return ai("", call("carrier_status", {"order_id": "A1"}, "call-2"))
        if last.name == "carrier_status":
            return ai("", call("tracking_cache", {"order_id": "A1"}, "call-3"))
        return ai(f"Your order A1 is paid and {str(last.content).split(': ')[-1]}.")

    return ScriptedChatModel(script=script)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="provider:model for init_chat_model (default: offline)")
    parser.add_argument("--data-dir", help="memory folder (default: HINDSIGHT_DATA_DIR)")
    args = parser.parse_args(argv)
    if args.model:
        from langchain.chat_models import init_chat_model

        model: Any = init_chat_model(args.model)
    else:
        model = offline_model()

    with Memory(**({"data_dir": args.data_dir} if args.data_dir else {})) as memory:
        agent = build_agent(model)
        handler = HindsightCallbackHandler(memory, tenant_id="demo")  # <- the one line
        result = agent.invoke({"messages": [("user", QUESTION)]}, {"callbacks": [handler]})
        print(f"answer: {result['messages'][-1].content}")

        handler.wait()  # the trajectory is written by a background thread, off the agent's path
        traj = memory.get_trajectory(handler.last_trajectory_id, tenant_id="demo")
        print(f"stored trajectory {traj.id}: {len(traj.events)} events, outcome {traj.outcome}")
        for event in traj.events:
            status = event.status.value if event.status else ""
            text = " ".join(event.content.split())[:60]
            print(f"  {event.event_type.value:13} {event.tool_name or '':15} {status:8} {text}")
        memory.flush(timeout=30)  # the review runs in the background; wait for it here
        print("lessons:")
        for exp in memory.list_experiences(tenant_id="demo", limit=5):
            print(f"  [{exp.kind.value}] {exp.content}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
