"""``hindsight demo``: an agent fails on a flaky tool, learns, and avoids the failure.

The agent is a small scripted policy standing in for a model that reads its system prompt: when
the prompt's past-experience block says ``order_query`` times out and ``order_query_cached``
worked, it goes to the cache first. Everything runs offline on the embedded store.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hindsight.cli._common import out_console, print_json
from hindsight.engine.memory import Memory
from hindsight.models import EventType, ExperienceKind
from hindsight.recall.render import BLOCK_START

TENANT = "demo"
TASK_TYPE = "customer_support"
TOOLS = ["order_query", "order_query_cached"]
BASE_PROMPT = "You are a support agent. Answer order questions using the tools."


def order_query(order_id: str) -> dict[str, Any]:
    """The live order API: at peak hours it times out (always, in this demo)."""
    raise TimeoutError(f"order_query timed out after 5 s for order {order_id} (peak hours)")


def order_query_cached(order_id: str) -> dict[str, Any]:
    """A read-only cache of orders, a few minutes stale."""
    return {"order_id": order_id, "status": "shipped", "carrier": "DHL", "source": "cache"}


def _agent_run(mem: Memory, question: str, order_id: str) -> dict[str, Any]:
    """One run of the scripted agent; returns what happened."""
    steps: list[str] = []
    with mem.record(question, tenant_id=TENANT, task_type=TASK_TYPE) as run:
        recalled = mem.recall(
            question,
            tenant_id=TENANT,
            task_type=TASK_TYPE,
            tools=TOOLS,
            trajectory_id=run.trajectory_id,
        )
        block = recalled.render()
        system_prompt = BASE_PROMPT + ("\n\n" + block if block else "")
        run.user_message(question)
        knows_cache = BLOCK_START in system_prompt and "order_query_cached" in block
        plan = (
            ["order_query_cached"]
            if knows_cache
            else ["order_query", "order_query", "order_query_cached"]
        )
        run.model_thought(
            "A past run says order_query times out; use the cache."
            if knows_cache
            else "Look the order up with order_query."
        )
        answer = None
        for tool in plan:
            call = run.tool_call(tool, {"order_id": order_id})
            try:
                data = (order_query if tool == "order_query" else order_query_cached)(order_id)
            except TimeoutError as exc:
                run.tool_result(tool, str(exc), status="timeout", tool_call_id=call.tool_call_id)
                steps.append(f"{tool} -> timeout")
                continue
            run.tool_result(tool, str(data), tool_call_id=call.tool_call_id)
            steps.append(f"{tool} -> ok")
            answer = f"Order {order_id} is {data['status']} ({data['carrier']})."
            break
        timeouts = sum(s.endswith("timeout") for s in steps)
        run.final_answer(answer or "Sorry, I could not reach the order system.")
        run.set_outcome("success" if answer and not timeouts else "failure")
    return {
        "trajectory_id": run.trajectory_id,
        "system_prompt": system_prompt,
        "recalled": recalled,
        "steps": steps,
        "timeouts": timeouts,
        "answer": answer,
        "outcome": "success" if answer and not timeouts else "failure",
    }


def run_demo(
    data_dir: Path | None, *, as_json: bool = False, reviewer: str | None = None
) -> dict[str, Any]:
    """Run the two-run demo in ``data_dir`` (default: a fresh temporary folder) with the
    ``reviewer`` named (``heuristic``, ``llm``, ``both``; default: the REVIEWER setting)."""
    tmp = None
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="hindsight-demo-")
        data_dir = Path(tmp.name)
    try:
        options: dict[str, Any] = {"reviewer": reviewer} if reviewer else {}
        with Memory(data_dir=data_dir, **options) as mem:
            run1 = _agent_run(mem, "Where is my order 8812? It was due yesterday.", "8812")
            mem.flush(timeout=60)
            stored = mem.list_experiences(tenant_id=TENANT)
            lessons = [e for e in stored if e.kind is not ExperienceKind.EPISODE]
            episodes = [e.content for e in stored if e.kind is ExperienceKind.EPISODE]
            run2 = _agent_run(mem, "Can you check on order 9907 for me?", "9907")
            mem.flush(timeout=60)
            traj2 = mem.get_trajectory(run2["trajectory_id"], tenant_id=TENANT)
    finally:
        if tmp is not None:
            tmp.cleanup()
    doc = {
        "run1": {k: v for k, v in run1.items() if k not in ("recalled", "system_prompt")},
        "lessons": [
            {"kind": e.kind.value, "content": e.content, "confidence": e.confidence}
            for e in lessons
        ],
        "episodes": episodes,
        "run2": {
            **{k: v for k, v in run2.items() if k not in ("recalled", "system_prompt")},
            "recall": run2["recalled"].to_json(explain=True),
            "system_prompt": run2["system_prompt"],
            "events": [e.event_type.value for e in traj2.events],
        },
    }
    if as_json:
        print_json(doc)
    else:
        _print(run1, lessons, run2, traj2)
        for text in episodes:
            out_console.print("\n[bold]Episode of run 1[/] (hindsight recall --episodes):")
            out_console.print(f"  {text}", markup=False, highlight=False)
    return doc


def _print(run1: dict[str, Any], lessons: list[Any], run2: dict[str, Any], traj2: Any) -> None:
    say = out_console.print
    say("[bold]Run 1[/] (no experience yet)")
    for s in run1["steps"]:
        say(f"  {s}")
    say(f"  outcome: [red]{run1['outcome']}[/] ({run1['timeouts']} timeouts)")
    say("\n[bold]Review of run 1[/] -> experiences written back:")
    for e in lessons:
        say(f"  [{e.kind.value}, confidence {e.confidence:.2f}] {e.content}", highlight=False)
    say("\n[bold]Run 2[/] recalled, and why:")
    for hit in run2["recalled"].hits:
        b = hit.breakdown
        say(
            f"  score {hit.score:.3f} = 0.6 x similarity {b.similarity:.3f} + 0.3 x confidence "
            f"{b.confidence:.2f} + 0.1 x recency {b.recency:.3f} + kind bonus {b.kind_bonus:.2f}: "
            f"{hit.experience.content}",
            highlight=False,
        )
    say("\n  tail of run 2's system prompt:")
    for line in run2["system_prompt"].splitlines():
        say(f"  | {line}", highlight=False, markup=False)
    for s in run2["steps"]:
        say(f"  {s}")
    tools = sum(e.event_type is EventType.TOOL_CALL for e in traj2.events)
    say(f"  outcome: [green]{run2['outcome']}[/] ({run2['timeouts']} timeouts, {tools} tool call)")
