"""The lifecycle of hindsight_llamaindex with real LlamaIndex agents
(docs/integrations/llamaindex.md): a memory closed right after the run loses nothing, a failing
store costs one warning (not one per model call), and the default outcome detector judges runs
nobody judged (a recovered tool error is a success)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from hindsight_llamaindex import HindsightMemoryBlock, instrument
from llama_index.core.memory import Memory as ChatMemory
from llamaindex_support import call, order_agent, plan, run_agent, say

from hindsight import Memory, Outcome
from hindsight.capture.unsaved import UnsavedArea
from tests.helpers import file_memory

TENANT = "acme"


def all_runs(mem: Memory) -> list[Any]:
    assert mem.writer.wait(30)
    return [
        mem.get_trajectory(t, tenant_id=TENANT) for t in mem.aio.store.list_trajectory_ids(TENANT)
    ]


def test_a_run_ended_just_before_the_memory_closes_is_stored(
    tmp_path: Path, opened: list[Memory]
) -> None:
    with file_memory(tmp_path) as mem:  # `with Memory() as memory:`, the docs' pattern
        capture = instrument(mem, tenant_id=TENANT)
        try:
            run_agent(order_agent(), user_msg="Where is order 42?")
            assert capture in mem.integrations
        finally:
            capture.uninstall()
    again = file_memory(tmp_path)
    opened.append(again)
    [traj] = all_runs(again)
    assert traj.task == "Where is order 42?" and traj.outcome is Outcome.SUCCESS


def test_a_run_ending_after_the_memory_closed_waits_in_the_unsaved_area(
    tmp_path: Path, opened: list[Memory]
) -> None:
    mem = file_memory(tmp_path)
    capture = instrument(mem, tenant_id=TENANT)
    mem.close()
    try:
        result = run_agent(order_agent(), user_msg="Where is order 42?")  # never raises
    finally:
        capture.uninstall()
    assert "shipped" in str(result)
    assert len(UnsavedArea(tmp_path / "unsaved")) == 1
    again = file_memory(tmp_path)
    opened.append(again)
    assert [t.task for t in all_runs(again)] == ["Where is order 42?"]


def test_a_failing_store_is_one_warning_not_one_per_model_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mem = file_memory(tmp_path)
    block = HindsightMemoryBlock(memory=mem, tenant_id=TENANT)
    mem.close()  # every recall now fails
    with caplog.at_level(logging.WARNING, logger="hindsight.llamaindex"):
        for question in ("Where is order 42?", "And order 43?"):
            agent = order_agent(plan(call("order_query_cached", 1, order_id="42"), say("ok")))
            chat = ChatMemory.from_defaults(session_id=question, memory_blocks=[block])
            assert "ok" in str(run_agent(agent, user_msg=question, memory=chat))
    warnings = [r for r in caplog.records if "recall failed" in r.getMessage()]
    assert len(warnings) == 1 and "skipped for 30 s" in warnings[0].getMessage()
    assert block.errors == 1


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        ([call("order_query", 1, order_id="42"), say("Sorry, try later.")], Outcome.FAILURE),
        (
            [
                call("order_query", 1, order_id="42"),
                call("order_query_cached", 2, order_id="42"),
                say("Order 42 shipped."),
            ],
            Outcome.SUCCESS,
        ),
        ([say("   ")], Outcome.UNKNOWN),
    ],
    ids=["tool-error-unresolved", "tool-error-recovered", "no-answer"],
)
def test_the_default_outcome_detector(decisions: list[Any], expected: Outcome) -> None:
    from hindsight.testing import test_memory

    mem = test_memory()
    capture = instrument(mem, tenant_id=TENANT)
    try:
        agent = order_agent(plan(*decisions))
        run_agent(agent, user_msg="Where is order 42?")
        assert capture.flush(30)
        [traj] = all_runs(mem)
        assert traj.outcome is expected
    finally:
        capture.close()
        mem.close()


def test_a_locked_store_does_not_hold_the_agent(tmp_path: Path, opened: list[Memory]) -> None:
    import asyncio
    import sqlite3

    from hindsight_llamaindex import run_with_memory

    mem = file_memory(tmp_path)
    opened.append(mem)
    mem.add_experience("order_query times out: use order_query_cached", tenant_id=TENANT)
    blocker = sqlite3.connect(tmp_path / "hindsight.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
    try:
        run = asyncio.run(
            run_with_memory(order_agent(), "Where is order 42?", memory=mem, tenant_id=TENANT)
        )
        assert "shipped" in str(run.result) and run.success is True
        assert run.receipt is None and not mem.writer.wait(0)  # the write waits, not the agent
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    [traj] = all_runs(mem)
    assert traj.id == run.trajectory_id and traj.outcome is Outcome.SUCCESS
