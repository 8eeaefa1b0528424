"""Shared builders for the LangChain integration tests (real LangChain objects only).

Skips the importing test module when LangChain is missing, except under CI=true, where a
missing optional package is a failure.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

if (
    importlib.util.find_spec("langchain") is None
    or importlib.util.find_spec("langchain_core") is None
):  # pragma: no cover - depends on the environment
    if os.environ.get("CI"):
        raise ImportError('LangChain is missing: pip install -e ".[dev,langchain]"')
    pytest.skip("langchain not installed", allow_module_level=True)

from hindsight_langchain.testing import ScriptedChatModel, ai, call
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import ToolException, tool

from hindsight import Lesson, Memory, Trajectory
from hindsight.testing import FakeEmbedder, ScriptedReviewer, test_memory

TENANT = "acme"


_OPENED: list[Memory] = []
_HERE = Path(__file__).resolve().parent


def resume_phase(kind: str, phase: str, data: Path, checkpoint: Path) -> str:
    """Run one half of ``resume_script.py`` in a fresh interpreter; its last output line."""
    done = subprocess.run(
        [sys.executable, str(_HERE / "resume_script.py"), kind, phase, str(data), str(checkpoint)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=_HERE.parents[1],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def memory(**kwargs: Any) -> Memory:
    """An in-memory :class:`Memory` (real SQL on SQLite, fakes for vectors/embedder) whose
    review is scripted (no lessons unless given); closed after the test by :func:`closing`."""
    kwargs.setdefault("reviewer", ScriptedReviewer([]))
    kwargs.setdefault("embedder", FakeEmbedder(64))
    mem = test_memory(**kwargs)
    _OPENED.append(mem)
    return mem


@pytest.fixture(autouse=True)
def closing() -> Iterator[None]:
    """Close the memories a test opened (stops their review workers)."""
    yield
    while _OPENED:
        mem = _OPENED.pop()
        # Let queued reviews finish first: closing while a review thread writes to the
        # in-memory SQLite store can crash the process (an engine issue, reported).
        with contextlib.suppress(Exception):
            mem.flush(timeout=30)
        mem.close()


def counting_checks(mem: Memory) -> list[str]:
    """The tools of every ``check_action`` call made on ``mem`` from now on (the integrations
    read the memory's method on each call)."""
    asked: list[str] = []
    real = mem.check_action

    def counted(tool: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(tool)
        return real(tool, *args, **kwargs)

    mem.check_action = counted  # type: ignore[method-assign]
    return asked


def stored(mem: Memory, trajectory_id: str | None, tenant: str = TENANT) -> Trajectory:
    """The trajectory ``trajectory_id``, once the memory's background writer stored it (an
    invoke does not wait for its write)."""
    assert trajectory_id is not None, "nothing was stored"
    assert mem.writer.wait(30)
    return mem.get_trajectory(trajectory_id, tenant_id=tenant)


def last_id(handler: Any) -> str | None:
    """The handler's last stored trajectory id, once its background writes are done."""
    assert handler.wait(timeout=30)
    return handler.last_trajectory_id  # type: ignore[no-any-return]


def all_trajectories(mem: Memory, tenant: str = TENANT) -> int:
    """The tenant's stored trajectories, once the memory's background writer stored what it
    was handed (an invoke does not wait for its write)."""
    assert mem.writer.wait(30)
    return int(mem.stats(tenant_id=tenant)["trajectories"])


def steps(trajectory: Trajectory) -> list[tuple[str, str | None, str | None]]:
    """``(event_type, tool_name, status)`` of each event: the captured steps."""
    return [
        (e.event_type.value, e.tool_name, e.status.value if e.status else None)
        for e in trajectory.events
    ]


def tool_steps(trajectory: Trajectory) -> list[tuple[str, str | None, str | None]]:
    return [s for s in steps(trajectory) if s[0] in ("tool_call", "tool_result")]


# -- tools -------------------------------------------------------------------------------
@tool
def get_order(order_id: str) -> str:
    """Look up an order by id."""
    return f"order {order_id}: paid, 2 items"


@tool
def carrier_status(order_id: str) -> str:
    """Ask the carrier where a parcel is (the carrier API is slow at peak hours)."""
    raise TimeoutError(f"carrier API timed out after 5 s for order {order_id}")


@tool
def carrier_status_handled(order_id: str) -> str:
    """Like carrier_status, but the timeout is reported to the model instead of raised."""
    raise ToolException(f"carrier API timed out after 5 s for order {order_id}")


carrier_status_handled.handle_tool_error = True


@tool
def tracking_cache(order_id: str) -> str:
    """Read the last known tracking state from the cache."""
    return f"order {order_id}: delivered yesterday"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


def scripted(*replies: Any) -> ScriptedChatModel:
    """A model replying with ``replies`` in order (the last one repeats)."""
    return ScriptedChatModel(replies=list(replies))


def three_tool_agent(timeout_tool: Any = carrier_status, **kw: Any) -> Any:
    """An agent that calls get_order, then the timing-out carrier tool, then the cache, then
    answers: three tools, one of which times out."""
    model = scripted(
        ai("", call("get_order", {"order_id": "A1"}, "c1")),
        ai("", call(timeout_tool.name, {"order_id": "A1"}, "c2")),
        ai("", call("tracking_cache", {"order_id": "A1"}, "c3")),
        ai("Order A1 was delivered yesterday."),
    )
    tools = [get_order, timeout_tool, tracking_cache]
    return create_agent(model, tools, system_prompt="You are a support agent.", **kw)


def last_tool_message(messages: Sequence[BaseMessage]) -> ToolMessage | None:
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            return message
        if isinstance(message, HumanMessage):
            return None
    return None


def lessons(*texts: str) -> ScriptedReviewer:
    """A reviewer that writes ``texts`` as rule lessons about the flaky carrier tool."""
    return ScriptedReviewer(
        [Lesson(kind="rule", content=t, confidence=0.8, tools=["carrier_status"]) for t in texts]  # type: ignore[arg-type]
    )


def record_build_threads(monkeypatch: Any) -> list[int]:
    """The thread ids ``EventBuffer.build`` (building and validating a captured trajectory)
    runs on from now on, in call order (the build itself unchanged)."""
    import threading

    from hindsight_langchain._buffer import EventBuffer

    threads: list[int] = []
    build = EventBuffer.build

    def recording(self: EventBuffer, *args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return build(self, *args, **kwargs)

    monkeypatch.setattr(EventBuffer, "build", recording)
    return threads
