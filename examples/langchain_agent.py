"""A ``create_agent`` agent with HindsightMiddleware that learns across two runs
(docs/integrations/langchain.md#an-agent-that-learns-the-middleware).

Run 1 asks the carrier, whose API times out at peak hours, and ends with an apology: a failed
run. Its post-hoc review stores the lesson. Run 2 starts with that lesson recalled into the
tail of its system prompt (behind the original prompt, inside the delimited block) and takes
the tracking cache instead. The offline model is scripted: it reads its system prompt and
avoids the carrier when a lesson says the carrier timed out, as a real model would.

    python examples/langchain_agent.py                             # offline, scripted model
    python examples/langchain_agent.py --model openai:gpt-4o-mini  # a real model
    python examples/langchain_agent.py --data-dir ./mem            # where the memory lives

Needs: pip install "hindsight-memory[langchain]" (and the provider's package for --model).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from hindsight_langchain import HindsightMiddleware
from hindsight_langchain.testing import ScriptedChatModel, ai, call, system_prompt_of
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import ToolException, tool

from hindsight import BLOCK_START, Memory

SYSTEM_PROMPT = "You are a parcel support agent. Tell the customer where their parcel is."
QUESTION = "Where is my parcel A1?"


@tool
def carrier_status(order_id: str) -> str:
    """Live parcel position from the carrier (slow at peak hours)."""
    raise ToolException(f"carrier API timed out after 5 s (order {order_id})")


carrier_status.handle_tool_error = True  # the timeout is reported to the model


@tool
def tracking_cache(order_id: str) -> str:
    """The last tracking state we saw for an order (may be a few hours old)."""
    return f"order {order_id}: out for delivery"


def offline_model() -> ScriptedChatModel:
    """Scripted model: asks the carrier unless its system prompt says the carrier timed out."""

    def script(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            if re.search(
                r"carrier_status (?:can time|times|timed) out", system_prompt_of(messages)
            ):
                return ai("", call("tracking_cache", {"order_id": "A1"}, "call-cache"))
            return ai("", call("carrier_status", {"order_id": "A1"}, "call-carrier"))
        if isinstance(last, ToolMessage) and last.status == "error":
            return ai("Sorry, I cannot reach the carrier right now. Please try again later.")
        return ai(f"Your parcel is {str(last.content).split(': ')[-1]}.")

    return ScriptedChatModel(script=script)


def located(state: dict[str, Any]) -> bool:
    """The outcome of a run: did the customer learn where the parcel is?"""
    return "Sorry" not in str(state["messages"][-1].content)


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
        middleware = HindsightMiddleware(memory, tenant_id="demo", outcome=located)
        agent = create_agent(
            model,
            [carrier_status, tracking_cache],
            system_prompt=SYSTEM_PROMPT,
            middleware=[middleware],
        )
        for run in (1, 2):
            result = agent.invoke({"messages": [("user", QUESTION)]})
            # the run is written in the background, and reviewed after it: wait for both (in a
            # real app the next run comes later)
            memory.flush(timeout=30)
            traj = memory.get_trajectory(middleware.last_trajectory_id, tenant_id="demo")
            tools = [
                f"{e.tool_name}={e.status.value if e.status else '?'}"
                for e in traj.events
                if e.event_type.value == "tool_result"
            ]
            print(f"run {run}: {result['messages'][-1].content}")
            print(f"  tools: {', '.join(tools)}; outcome: {traj.outcome}")
            if isinstance(model, ScriptedChatModel):
                system = system_prompt_of(model.prompts[-1])
                tail = system[system.find(BLOCK_START) :] if BLOCK_START in system else "(none)"
                print(
                    f"  system prompt starts with the original: {system.startswith(SYSTEM_PROMPT)}"
                )
                print("  recalled into its tail:")
                print("    " + tail.replace("\n", "\n    "))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
