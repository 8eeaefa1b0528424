"""Capture overhead of the LangChain handler and of ``HindsightMiddleware`` for ``hindsight
bench goals`` (docs/benchmarks.md#capture-overhead): registered in the ``hindsight.bench`` entry
point group (pyproject.toml), so the framework-free core finds them only when this package
imports.

Each function builds a ``create_agent`` agent on a scripted fake chat model (real LangChain
objects, no network) that makes ``tools`` sequential tool calls and then answers, runs it with
and without hindsight on a real embedded memory (SQLite + Qdrant Edge in ``data_dir``, seeded
with ``seeded`` synthetic lessons of the tenant), and hands the two runs to
:func:`hindsight.bench._overhead.added_cost`: added CPU and wall ms per run **including the
background work** (the background writer storing the trajectory, then its review), and the
ratio. The middleware's recall (work the user asked for) is timed where the run makes it and
subtracted; its risk checks of each tool call are not (hindsight's work on the path).

``middleware_overhead`` also times the framework's part of the agent's path, ``"floor"``: the
same agent with a middleware that has the same hooks and state schema as ``HindsightMiddleware``
and empty bodies (LangChain runs a graph node per ``before_agent``/``after_agent`` hook and
wraps every model and tool call), run with a callback handler whose methods (those of the
process-wide watcher a ``HindsightMiddleware`` registers, :mod:`hindsight_langchain._seen`,
``run_inline`` like it) do nothing: LangChain's cost of reporting every run to one more
handler. So a reader can tell LangChain's cost from hindsight's.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import tool

from hindsight import Memory
from hindsight.bench import synthetic_lessons
from hindsight.bench._overhead import Requested, added_cost
from hindsight_langchain.callback import HindsightCallbackHandler
from hindsight_langchain.testing import ScriptedChatModel, ai, call

__all__ = [
    "QUESTION",
    "TENANT",
    "handler_overhead",
    "hindsight_hooks",
    "middleware_floor",
    "middleware_overhead",
    "no_hindsight_hooks",
    "scripted_model",
    "with_hooks",
]

TENANT = "bench"

#: The callback methods of the watcher (:mod:`hindsight_langchain._seen`) that LangChain calls
#: on every run once a ``HindsightMiddleware`` exists: the floor's stand-in has them, empty.
WATCHER_METHODS = (
    "on_chain_start",
    "on_chain_end",
    "on_chain_error",
    "on_chat_model_start",
    "on_llm_start",
    "on_llm_end",
    "on_llm_error",
)
QUESTION = "look up the keys; get_order timed out last time"


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def scripted_model(n_tools: int) -> ScriptedChatModel:
    """A fake chat model that calls ``lookup`` ``n_tools`` times, then answers."""

    def script(messages: list[BaseMessage]) -> Any:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < n_tools:
            return ai("", call("lookup", {"key": f"k{done}"}, f"c{done}"))
        return ai(f"looked up {done} keys")

    return ScriptedChatModel(script=script)


@contextlib.contextmanager
def hindsight_hooks(*, router: bool, watcher: bool) -> Iterator[None]:
    """Runs inside see only the process-wide callback handlers hindsight registers with
    LangChain's configure hook that are asked for: the LangGraph capture router (registered
    once ``add_hindsight`` ran) and the watcher of :mod:`hindsight_langchain._seen`
    (registered once a ``HindsightMiddleware`` was made). Once registered, each is in every
    run of the process, so each side of a row runs with the hooks its own integration
    registers and no other: the goals run measures every integration in one process."""
    wanted = (
        ("hindsight_langgraph._capture", router, "_ROUTER"),
        ("hindsight_langchain._seen", watcher, "_WATCHER"),
    )
    with contextlib.ExitStack() as stack:
        for name, on, handler in wanted:
            module = sys.modules.get(name)
            if module is not None:
                token = module._HOOK.set(getattr(module, handler) if on else None)
                stack.callback(module._HOOK.reset, token)
        yield


def no_hindsight_hooks() -> contextlib.AbstractContextManager[None]:
    """The without side: none of hindsight's process-wide handlers (:func:`hindsight_hooks`),
    as in a process that never imported hindsight."""
    return hindsight_hooks(router=False, watcher=False)


def with_hooks(run: Callable[[], Any], *, router: bool, watcher: bool) -> Callable[[], Any]:
    """``run`` inside :func:`hindsight_hooks` (the with side of a row)."""

    def hooked() -> Any:
        with hindsight_hooks(router=router, watcher=watcher):
            return run()

    return hooked


def seeded_memory(data_dir: Path, seeded: int) -> Memory:
    """An embedded memory in ``data_dir`` holding ``seeded`` lessons of :data:`TENANT`."""
    memory = Memory(data_dir=data_dir, background_review=True)
    texts = synthetic_lessons(seeded)
    for start in range(0, seeded, 500):
        memory.add_experiences(
            [
                {"content": t, "kind": "improvement", "confidence": 0.8}
                for t in texts[start : start + 500]
            ],
            tenant_id=TENANT,
        )
    return memory


def handler_overhead(
    *, runs: int, repeats: int, tools: int, seeded: int, data_dir: Path
) -> dict[str, Any]:
    """``HindsightCallbackHandler`` on a ``create_agent`` agent (module docstring).

    Returns :func:`~hindsight.bench._overhead.added_cost`'s dict plus ``"what"``.

    Raises:
        RuntimeError: a captured run was not stored (the figure would be wrong).
    """
    from langchain.agents import create_agent

    agent = create_agent(scripted_model(tools), [lookup], system_prompt="Look keys up.")
    question = {"messages": [("user", QUESTION)]}
    with seeded_memory(data_dir, seeded) as memory:
        handler = HindsightCallbackHandler(memory, tenant_id=TENANT)

        def background() -> None:
            handler.wait()
            memory.flush(timeout=300)

        result = added_cost(
            lambda: agent.invoke(question),
            with_hooks(
                lambda: agent.invoke(question, {"callbacks": [handler]}),
                router=False,
                watcher=False,
            ),
            background=background,
            runs=runs,
            repeats=repeats,
            quiet=no_hindsight_hooks,
        )
        _check_stored(handler, runs * repeats)
    return {"what": f"create_agent, {tools} tool calls, handler", **result}


def middleware_overhead(
    *, runs: int, repeats: int, tools: int, seeded: int, data_dir: Path
) -> dict[str, Any]:
    """``HindsightMiddleware`` on a ``create_agent`` agent (module docstring); its recall
    (the lessons put in the system prompt) is subtracted as ``side``.

    Raises:
        RuntimeError: a captured run was not stored.
    """
    from langchain.agents import create_agent

    from hindsight_langchain.middleware import HindsightMiddleware

    question = {"messages": [("user", QUESTION)]}
    plain = create_agent(scripted_model(tools), [lookup], system_prompt="Look keys up.")
    with seeded_memory(data_dir, seeded) as memory:
        middleware = HindsightMiddleware(memory, tenant_id=TENANT)
        hooked = create_agent(
            scripted_model(tools), [lookup], system_prompt="Look keys up.", middleware=[middleware]
        )

        def background() -> None:
            middleware.wait()
            memory.flush(timeout=300)

        recall = Requested()
        memory.recall = recall.wrap(memory.recall)  # type: ignore[method-assign]
        result = added_cost(
            lambda: plain.invoke(question),
            with_hooks(lambda: hooked.invoke(question), router=False, watcher=True),
            background=background,
            runs=runs,
            repeats=repeats,
            side=recall,
            quiet=no_hindsight_hooks,
        )
        _check_stored(middleware, runs * repeats)
    with no_hindsight_hooks():
        floor = middleware_floor(runs=runs, repeats=repeats, tools=tools)
    return {
        "what": f"create_agent, {tools} tool calls, middleware (its recall subtracted)",
        **result,
        "floor": floor,
        "floor_what": (
            "a middleware with the same four hooks and state schema, and a callback handler "
            "with the watcher's methods, empty bodies"
        ),
    }


def middleware_floor(*, runs: int, repeats: int, tools: int) -> dict[str, float]:
    """Added ``{"wall_ms", "cpu_ms"}`` per run of a middleware with ``HindsightMiddleware``'s
    hooks and state schema and empty bodies, and a callback handler with the watcher's methods
    and empty bodies (module docstring): LangChain's own cost of the hooks and of one more
    handler, the floor under any middleware that captures a run and sees its prompts."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.callbacks import BaseCallbackHandler

    from hindsight_langchain._seen import _Watcher
    from hindsight_langchain.middleware import HindsightState

    class EmptyWatcher(BaseCallbackHandler):
        run_inline = _Watcher.run_inline

        def _nothing(self, *args: Any, **kwargs: Any) -> None:
            return None

    for method in WATCHER_METHODS:
        setattr(EmptyWatcher, method, EmptyWatcher._nothing)

    class EmptyHooks(AgentMiddleware[HindsightState, Any, Any]):
        state_schema = HindsightState

        def before_agent(self, state: Any, runtime: Any) -> None:
            return None

        def after_agent(self, state: Any, runtime: Any) -> None:
            return None

        def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            return handler(request)

        def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            return handler(request)

    question: Any = {"messages": [("user", QUESTION)]}
    plain = create_agent(scripted_model(tools), [lookup], system_prompt="Look keys up.")
    empty = create_agent(
        scripted_model(tools), [lookup], system_prompt="Look keys up.", middleware=[EmptyHooks()]
    )
    result = added_cost(
        lambda: plain.invoke(question),
        lambda: empty.invoke(question, {"callbacks": [EmptyWatcher()]}),
        background=lambda: None,
        runs=runs,
        repeats=repeats,
        quiet=no_hindsight_hooks,
    )
    floor: dict[str, float] = result["on_path_added"]
    return floor


def _check_stored(capture: Any, timed: int) -> None:
    if capture.errors or capture.stored < timed:
        raise RuntimeError(
            f"{type(capture).__name__} stored {capture.stored} of at least {timed} runs "
            f"({capture.errors} errors: {capture.last_error})"
        )
