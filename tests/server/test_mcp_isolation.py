"""The isolation property suite (tests/isolation_suite.py) through MCP.

:class:`McpClient` sends what MCP can do through the MCP tools of one in-process server per
tenant (``fixed_tenant``, as ``hindsight mcp --tenant`` does): store + review, recall,
delete (``forget_experience``), ``adjust_confidence`` and ``record_outcome``. What MCP has no
tool for (adding a lesson by hand, get, listings, counts, forget-all) goes through the Python
API of the same memory, so the workloads keep their shape and the checks stay complete.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client

from hindsight import HindsightError, Memory
from hindsight.service._wire import exception_for
from hindsight.service.mcp import build_mcp_server, fixed_tenant
from hindsight.testing import ScriptedReviewer, test_memory
from tests.helpers import make_memory
from tests.isolation_suite import (
    IsolationClient,
    PythonClient,
    Seen,
    run_isolation_suite,
    scripted_lessons,
)
from tests.server.mcp_support import ToolCall

IN_MEMORY_EXAMPLES = 30
REAL_STACK_EXAMPLES = 6


class McpClient(PythonClient):
    """:class:`IsolationClient` over MCP tools (one in-process server per tenant)."""

    def __init__(self, mem: Memory, portal: BlockingPortal) -> None:
        super().__init__(mem)
        self.portal = portal
        self.stack = contextlib.ExitStack()
        self.clients: dict[str, Any] = {}

    def close(self) -> None:
        self.stack.close()

    def _tool(self, tenant: Any, name: str, args: dict[str, Any]) -> ToolCall | Seen:
        """Call ``name`` as ``tenant``; a refused tenant or an error result as a Seen."""
        try:
            who = fixed_tenant(tenant)(None)  # type: ignore[arg-type]
        except HindsightError as exc:
            return Seen(text=str(exc), error=exc)
        if who not in self.clients:
            server = build_mcp_server(self.mem.aio, tenant=fixed_tenant(who))
            cm = self.portal.wrap_async_context_manager(Client(server))
            self.clients[who] = self.stack.enter_context(cm)
        done = ToolCall(self.portal.call(self.clients[who].call_tool, name, args))
        if done.is_error:
            assert done.error is not None, done.text
            return Seen(text=done.error["message"], error=exception_for(400, done.data))
        return done

    def review(
        self,
        tenant: str,
        namespace: str,
        task: str,
        task_type: str | None,
        lessons: int,
        task_key: str | None = None,
    ) -> Seen:
        traj = {
            "namespace": namespace,
            "task": task,
            "task_type": task_type,
            "task_key": task_key,
            "outcome": "failure",
            "metadata": {"lessons": lessons},
            "events": [
                {"event_type": "user_message", "content": task},
                {"event_type": "tool_call", "tool_name": "order_lookup", "tool_args": {"q": task}},
                {
                    "event_type": "tool_result",
                    "tool_name": "order_lookup",
                    "status": "timeout",
                    "content": f"{task} timed out",
                },
            ],
        }
        stored = self._tool(tenant, "store_episode", {"trajectory": traj, "review": False})
        if isinstance(stored, Seen):
            return stored
        tid = stored.data["trajectory_id"]
        review = self._tool(tenant, "summarize_trajectory", {"trajectory_id": tid})
        if isinstance(review, Seen):
            return review
        exps = [
            *review.data["lessons"],
            *([review.data["episode"]] if review.data["episode"] else []),
        ]
        text = stored.text + review.text
        return Seen(text=text, ids=[e["id"] for e in exps], value=tid)

    def task_group(self, tenant: str, task_key: str) -> Seen:
        done = self._tool(tenant, "list_trajectories", {"task_key": task_key, "limit": 1000})
        if isinstance(done, Seen):
            return done
        runs = [item["id"] for item in done.data["items"]]
        return Seen(text=done.text, value={"runs": runs, "experiences": False})

    def recall(
        self,
        tenant: Any,
        query: str,
        *,
        namespaces: list[str],
        include_shared: bool,
        task_type: str | None,
        mode: str,
        trajectory_id: str | None,
        episodes: bool,
    ) -> Seen:
        args = {
            "query": query,
            "namespace": namespaces[0],
            "task_type": task_type,
            "top_k": 100,
            "trajectory_id": trajectory_id,
            "include_episodes": episodes,
        }
        done = self._tool(tenant, "recall_similar", args)
        if isinstance(done, Seen):
            return done
        ids = [h["id"] for h in [*done.data["hits"], *done.data["episodes"]]]
        return Seen(text=json.dumps(done.data, ensure_ascii=False) + done.text, ids=ids)

    def check(
        self,
        tenant: Any,
        tool: str,
        args: dict[str, Any],
        *,
        namespaces: list[str],
        include_shared: bool,
        task_type: str | None,
        trajectory_id: str | None,
    ) -> Seen:
        call = {
            "tool": tool,
            "args": args,
            "namespace": namespaces[0],
            "task_type": task_type,
            "trajectory_id": trajectory_id,
        }
        done = self._tool(tenant, "check_action", call)
        if isinstance(done, Seen):
            return done
        ids = list(dict.fromkeys(c["lesson_id"] for c in done.data["checks"]))
        return Seen(text=json.dumps(done.data, ensure_ascii=False) + done.text, ids=ids)

    def delete(self, tenant: str, experience_id: str) -> Seen:
        done = self._tool(tenant, "forget_experience", {"experience_id": experience_id})
        return done if isinstance(done, Seen) else Seen(text=done.text)

    def record_outcome(self, tenant: str, trajectory_id: str, success: bool) -> Seen:
        args = {"trajectory_id": trajectory_id, "success": success}
        done = self._tool(tenant, "record_outcome", args)
        if isinstance(done, Seen):
            return done
        updated = done.data["updated"]
        return Seen(
            text=done.text,
            ids=[e["id"] for e in updated],
            value={e["id"]: e["status"] for e in updated},
        )

    def adjust(self, tenant: str, experience_id: str, delta: float) -> Seen | None:
        args = {"experience_id": experience_id, "delta": delta}
        done = self._tool(tenant, "adjust_confidence", args)
        return done if isinstance(done, Seen) else Seen(text=done.text, ids=[done.data["id"]])


@contextlib.contextmanager
def mcp_clients(
    make: Callable[[], Memory] | None = None, shared: Memory | None = None
) -> Iterator[Callable[[], tuple[IsolationClient, str]]]:
    """A client factory for :func:`run_isolation_suite`: a fresh memory per example
    (``make``), or one ``shared`` memory with a new tenant prefix per example."""
    current: list[tuple[McpClient, Memory | None]] = []
    count = [0]
    with start_blocking_portal(backend="asyncio") as portal:

        def close() -> None:
            while current:
                client, own = current.pop()
                client.close()
                if own is not None:
                    own.close()

        def factory() -> tuple[IsolationClient, str]:
            close()
            count[0] += 1
            mem = shared if shared is not None else make()  # type: ignore[misc]
            current.append((McpClient(mem, portal), None if shared is not None else mem))
            return current[-1][0], f"m{count[0]}·" if shared is not None else ""

        try:
            yield factory
        finally:
            close()


def test_isolation_holds_through_mcp_on_the_fakes() -> None:
    make = lambda: test_memory(reviewer=ScriptedReviewer(scripted_lessons))  # noqa: E731
    with mcp_clients(make) as factory:
        run_isolation_suite(factory, max_examples=IN_MEMORY_EXAMPLES)


def test_isolation_holds_through_mcp_on_qdrant_edge_and_sql(
    tmp_path: Path, database_url: str
) -> None:
    reviewer = ScriptedReviewer(scripted_lessons)
    with (
        make_memory(tmp_path, database_url, reviewer=reviewer) as mem,
        mcp_clients(shared=mem) as factory,
    ):
        run_isolation_suite(factory, max_examples=REAL_STACK_EXAMPLES)
