"""A LlamaIndex FunctionAgent that learns from a flaky tool across two runs.

``order_query`` times out (peak hours); ``order_query_cached`` works. Run 1 tries
``order_query``, gets the timeout, falls back to the cache and answers. hindsight captures the
run, reviews it in the background and stores the lessons ("when order_query timed out,
order_query_cached worked"). Run 2 gets those lessons through ``HindsightMemoryBlock`` at the
tail of its system prompt and goes to the cache straight away.

Offline (default): a scripted LLM (llama-index-core's ``MockFunctionCallingLLM`` with a
response generator) picks its tool calls from the system message it receives, so the recalled
lesson really changes run 2.

    python examples/llamaindex_agent.py                       # offline, temporary data dir
    python examples/llamaindex_agent.py --data-dir ./mem      # keep the memory
    python examples/llamaindex_agent.py --model openai:gpt-4o-mini
    python examples/llamaindex_agent.py --model litellm:anthropic/claude-haiku-4-5

``--model openai:<name>`` needs ``pip install llama-index-llms-openai`` and OPENAI_API_KEY;
``--model litellm:<name>`` needs ``pip install llama-index-llms-litellm`` and the provider's
key. Needs ``pip install "hindsight-memory[llamaindex]"``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from hindsight_llamaindex import MemoryRun, run_with_memory
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import LLM, ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLM

from hindsight import BLOCK_START, AsyncMemory

TENANT = "demo"
TASK_TYPE = "order_status"
QUESTION = "Where is my order 42?"
SYSTEM_PROMPT = (
    "You are a support agent. Look orders up with the tools; answer in one sentence with the "
    "order's status."
)


# -- the tools ------------------------------------------------------------------------------
def order_query(order_id: str) -> str:
    """Look up an order's status in the live order service."""
    raise TimeoutError(f"order service timed out after 30 s looking up order {order_id}")


def order_query_cached(order_id: str) -> str:
    """Look up an order's status in the order cache (updated every 5 minutes)."""
    return f"order {order_id}: shipped on Monday, arriving Thursday"


# -- the offline scripted LLM ---------------------------------------------------------------
def _system_text(messages: Sequence[ChatMessage]) -> str:
    return "\n".join(m.content or "" for m in messages if m.role == MessageRole.SYSTEM)


def _call(tool: str, order_id: str, n: int) -> ChatMessage:
    block = ToolCallBlock(
        tool_call_id=f"call-{n}", tool_name=tool, tool_kwargs={"order_id": order_id}
    )
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])


def decide(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """The scripted model: answer after a tool worked; fall back to the cache after a failure
    or when a recalled lesson says the cache worked; else try the live service."""
    results = [m for m in messages if m.role == MessageRole.TOOL]
    if results and "order service timed out" not in (results[-1].content or ""):
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"Your {results[-1].content}.")
    system = _system_text(messages)
    learned = BLOCK_START in system and "order_query_cached" in system.split(BLOCK_START, 1)[1]
    if results or learned:
        return _call("order_query_cached", "42", len(results) + 1)
    return _call("order_query", "42", 1)


def scripted_llm() -> MockFunctionCallingLLM:
    """The offline model (see :func:`decide`)."""
    return MockFunctionCallingLLM(response_generator=decide)


def real_llm(spec: str) -> LLM:
    """``openai:<model>`` or ``litellm:<model>`` through LlamaIndex's own LLM classes."""
    provider, _, model = spec.partition(":")
    if not model:
        raise SystemExit(f"--model must look like openai:gpt-4o-mini, got {spec!r}")
    try:
        if provider == "openai":
            from llama_index.llms.openai import OpenAI

            return OpenAI(model=model, temperature=0.0)
        if provider == "litellm":
            from llama_index.llms.litellm import LiteLLM

            return LiteLLM(model=model, temperature=0.0)
    except ImportError:
        msg = f"--model {provider}:... needs: pip install llama-index-llms-{provider}"
        raise SystemExit(msg) from None
    raise SystemExit(f"unknown provider {provider!r}: use openai:<model> or litellm:<model>")


def build_agent(llm: LLM) -> FunctionAgent:
    return FunctionAgent(
        name="support",
        tools=[order_query, order_query_cached],
        llm=llm,
        system_prompt=SYSTEM_PROMPT,
    )


def answered(result: Any) -> bool:
    """The run succeeded when the answer gives a status (the success judge)."""
    return "shipped" in str(result).lower() or "arriv" in str(result).lower()


# -- the demo -------------------------------------------------------------------------------
async def demo(
    memory: AsyncMemory,
    llm_factory: Callable[[], LLM] = scripted_llm,
    *,
    say: Callable[[str], Any] = print,
) -> tuple[MemoryRun, MemoryRun]:
    """Run the agent twice on the same question; returns both runs."""
    runs: list[MemoryRun] = []
    for n in (1, 2):
        run = await run_with_memory(
            build_agent(llm_factory()),
            QUESTION,
            memory=memory,
            tenant_id=TENANT,
            task_type=TASK_TYPE,
            success=answered,
        )
        runs.append(run)
        steps = [
            f"{e.event_type.value}({e.tool_name}: {e.status.value if e.status else ''})"
            if e.tool_name
            else e.event_type.value
            for e in (run.trajectory.events if run.trajectory else [])
        ]
        say(f"run {n}: {run.result}")
        say(f"  steps: {' -> '.join(steps)}")
        if run.recall is not None and run.recall.hits:
            say(f"  recalled {len(run.recall.hits)} experience(s):")
            for hit in run.recall.hits:
                say(f"    - {hit.experience.content}")
        if n == 1:
            # Review runs in the background; wait for it here so run 2 can use the lessons.
            await memory.flush(30)
    return runs[0], runs[1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="openai:<model> or litellm:<model>; default offline")
    parser.add_argument("--data-dir", help="memory folder (default: a temporary one)")
    args = parser.parse_args(argv)
    factory: Callable[[], LLM] = scripted_llm
    if args.model:
        factory = lambda: real_llm(args.model)  # noqa: E731
        factory()  # fail early on a missing package
    with tempfile.TemporaryDirectory() as tmp:

        async def go() -> None:
            async with AsyncMemory(data_dir=args.data_dir or tmp) as memory:
                await demo(memory, factory)

        asyncio.run(go())
    return 0


if __name__ == "__main__":
    sys.exit(main())
