"""What one review reads from the store (hindsight.review.run.ReviewRun).

A review loads the runs of its run's task group only when a part of the reviewer compares runs
(a ``contrast`` method, the LLM reviewer's); the heuristic reviewer writes no contrastive rule
(docs/review.md#condition-mining), so its reviews only settle the run's task key (assigned by
intent when the run has none: condition mining counts task groups). Which of the run's lessons
and its episode an earlier review stored is read once, for all of them; a review done again
stores nothing twice and returns the same experiences.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Container, Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight import Memory
from hindsight.models import (
    Event,
    EventStatus,
    EventType,
    ExperienceKind,
    Outcome,
    Trajectory,
)
from hindsight.ports import Lesson
from hindsight.review import HeuristicReviewer
from hindsight.review.episodes import episode_id
from hindsight.testing import FakeEmbedder


def _run(outcome: Outcome, status: EventStatus, result: str) -> Trajectory:
    return Trajectory(
        tenant_id="t",
        task="refund order 1234 to the card it was paid with",
        outcome=outcome,
        events=[
            Event(event_type=EventType.USER_MESSAGE, content="Refund order 1234, please."),
            Event(
                event_type=EventType.TOOL_CALL,
                tool_name="refund",
                tool_args={"order_id": "1234", "amount": 40},
                tool_call_id="c1",
            ),
            Event(
                event_type=EventType.TOOL_RESULT,
                tool_name="refund",
                tool_call_id="c1",
                content=result,
                status=status,
            ),
            Event(event_type=EventType.FINAL_ANSWER, content="I have tried the refund."),
        ],
    )


FAILED = (Outcome.FAILURE, EventStatus.TIMEOUT, "timeout: the payment service did not answer")
WORKED = (Outcome.SUCCESS, EventStatus.SUCCESS, "refunded 40 to the card")


class Comparing:
    """A reviewer part that compares runs: one rule per (failed, reference) pair."""

    name = "comparing"

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    async def review(self, trajectory: Trajectory) -> list[Lesson]:
        return []

    async def contrast(self, failed: Trajectory, reference: Any) -> list[Lesson]:
        self.pairs.append((failed.id, getattr(reference, "id", "")))
        return [
            Lesson(
                kind=ExperienceKind.RULE,
                content="Before a refund, check that the payment service answers.",
                confidence=0.6,
                tools=["refund"],
            )
        ]


class Spy:
    """Counts calls of some store methods (and the ids each ``get_experiences`` asked)."""

    def __init__(self, mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, Any]] = []
        store = mem.aio.store
        for name in ("runs_of_task", "get_experiences", "get_trajectory", "trajectory_tasks"):
            real = getattr(store, name)

            def counted(*args: Any, _name: str = name, _real: Any = real, **kw: Any) -> Any:
                self.calls.append((_name, args, sys._getframe(1).f_code.co_name))
                return _real(*args, **kw)

            monkeypatch.setattr(store, name, counted)

    def count(self, name: str) -> int:
        return sum(1 for n, _, _ in self.calls if n == name)

    def asked(self, wanted: str, callers: Container[str]) -> int:
        """``get_experiences`` calls made by functions named in ``callers`` whose ids held
        ``wanted``."""
        return sum(
            1
            for n, a, caller in self.calls
            if n == "get_experiences" and caller in callers and wanted in list(a[1])
        )


@pytest.fixture
def open_memory(tmp_path: Path) -> Iterator[Any]:
    opened: list[Memory] = []

    def make(reviewer: Any) -> Memory:
        mem = Memory(
            data_dir=tmp_path / f"data{len(opened)}",
            embedder=FakeEmbedder(32),
            reviewer=reviewer,
            background_review=False,
        )
        opened.append(mem)
        return mem

    yield make
    for mem in opened:
        mem.close()


@pytest.mark.parametrize("order", [(WORKED, FAILED), (FAILED, WORKED)])
def test_a_heuristic_review_settles_the_task_key_and_loads_no_group(
    open_memory: Any, monkeypatch: pytest.MonkeyPatch, order: Any
) -> None:
    mem = open_memory(HeuristicReviewer())
    first, second = (mem.store_episode(_run(*o), review=False).trajectory_id for o in order)
    mem.review_now(first, tenant_id="t")
    spy = Spy(mem, monkeypatch)
    stored = mem.review_now(second, tenant_id="t")
    assert stored and spy.count("runs_of_task") == 0
    # the task key is still settled: the second run joins the first one's group by intent,
    # read as the earlier runs' requests and keys in one query, none of them with its events
    # (the review reads its own run once)
    assert spy.count("trajectory_tasks") == 1 and spy.count("get_trajectory") == 1
    keys = {mem.get_trajectory(t, tenant_id="t").task_key for t in (first, second)}
    assert len(keys) == 1 and next(iter(keys)).startswith("intent:")


@pytest.mark.parametrize("order", [(WORKED, FAILED), (FAILED, WORKED)])
def test_a_part_that_compares_runs_reads_the_group_and_writes_its_rule(
    open_memory: Any, monkeypatch: pytest.MonkeyPatch, order: Any
) -> None:
    part = Comparing()
    mem = open_memory(part)
    ids = [mem.store_episode(_run(*o), review=False).trajectory_id for o in order]
    mem.review_now(ids[0], tenant_id="t")
    spy = Spy(mem, monkeypatch)
    mem.review_now(ids[1], tenant_id="t")
    assert spy.count("runs_of_task") == 1
    failed = ids[order.index(FAILED)]
    assert part.pairs and part.pairs[-1][0] == failed
    rules = [
        e
        for e in mem.aio.store.all_experiences()
        if e.kind is ExperienceKind.RULE and failed in e.source_trajectory_ids
    ]
    assert len(rules) == 1


def test_a_review_reads_once_which_of_its_experiences_are_stored(
    open_memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = open_memory(HeuristicReviewer())
    run = mem.store_episode(_run(*FAILED), review=False).trajectory_id
    spy = Spy(mem, monkeypatch)
    first = mem.review_now(run, tenant_id="t")
    episode = episode_id(run)
    kinds = {e.kind for e in first}
    assert ExperienceKind.EPISODE in kinds and len(kinds) > 1  # lessons and the episode
    # before the write, one read of which of the lessons and the episode are stored (it was
    # one for the episode, then one for all)
    assert spy.asked(episode, {"_write_all", "_episode", "write"}) == 1
    before = sorted((e.id, e.content) for e in mem.aio.store.all_experiences())
    again = mem.review_now(run, tenant_id="t")
    assert sorted(e.id for e in again) == sorted(e.id for e in first)
    assert sorted((e.id, e.content) for e in mem.aio.store.all_experiences()) == before


@pytest.mark.parametrize(("kind", "searched"), [("episode", False), ("rule", True)])
def test_an_episode_is_written_without_looking_up_neighbours(
    open_memory: Any, monkeypatch: pytest.MonkeyPatch, kind: str, searched: bool
) -> None:
    """An episode is never folded into another experience (docs/concepts.md): nothing is
    decided from its neighbours, so none are looked up; a lesson's are."""
    mem = open_memory(HeuristicReviewer())
    text = "The agent refunded order 1234 after the payment service timed out twice."
    first = mem.add_experience(text, kind=kind, tenant_id="t")
    index = mem.aio.index
    queries: list[str] = []
    for name in ("search", "search_many"):
        real = getattr(index, name)

        def counted(*args: Any, _name: str = name, _real: Any = real, **kw: Any) -> Any:
            queries.append(_name)
            return _real(*args, **kw)

        monkeypatch.setattr(index, name, counted)
    second = mem.add_experience(text, kind=kind, tenant_id="t")
    assert bool(queries) is searched
    stored = {e.id for e in mem.aio.store.all_experiences()}
    if kind == "episode":  # two records of runs, both kept, word for word
        assert {first.id, second.id} <= stored and first.id != second.id
        assert second.content == text
    else:  # the same lesson again: folded into the first
        assert second.id == first.id and stored == {first.id}


class _Episodes:
    """The real store, but its episodes point at the given run ids (any spelling): what an
    episode written by hand or by an older version may hold."""

    def __init__(self, real: Any, sources: list[str]) -> None:
        self.real, self.sources = real, sources

    def get_experiences(self, tenant: str, ids: list[str]) -> dict[str, Any]:
        from hindsight import Experience

        return {
            i: Experience(id=i, tenant_id=tenant, kind="episode", content="x",
                          source_trajectory_ids=[src])
            for i, src in zip(ids, self.sources, strict=False)
        }  # fmt: skip

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class _Nearest:
    def search(self, *args: Any, **kwargs: Any) -> list[Any]:
        from hindsight.ports import VectorHit

        return [VectorHit(f"00000000-0000-4000-8000-00000000000{i}", 0.9) for i in range(3)]


@pytest.mark.parametrize(
    "spell",
    [
        lambda a, b: [a],
        lambda a, b: [a.upper()],
        lambda a, b: ["{" + a + "}"],
        lambda a, b: [f"urn:uuid:{a}"],
        lambda a, b: ["run-42", a],  # not a run id: skipped, not the whole lookup
        lambda a, b: [a, a, a],
        lambda a, b: [b, a],  # the run itself is never its own group
        lambda a, b: [str(uuid.uuid4()), a],  # a run forgotten meanwhile
    ],
    ids=["canonical", "upper", "braces", "urn", "not-an-id", "repeated", "itself", "forgotten"],
)
def test_grouping_by_intent_reads_earlier_runs_by_any_spelling_of_their_id(
    tmp_path: Path, spell: Any
) -> None:
    from hindsight.embedders import HashEmbedder
    from hindsight.review.groups import TaskGroups

    task = "Refund order 1234 for the damaged blender and email the customer a confirmation"
    with Memory(data_dir=tmp_path, embedder=HashEmbedder(384), background_review=False,
                guard=False) as mem:  # fmt: skip
        earlier = _run(*FAILED).model_copy(update={"task": task, "task_key": "refunds"})
        untitled = _run(*FAILED).model_copy(update={"task": "", "task_key": "other"})
        now = _run(*FAILED).model_copy(update={"task": task})
        for run in (earlier, untitled, now):
            mem.store_episode(run, review=False)
        groups = TaskGroups(_Episodes(mem.aio.store, spell(earlier.id, now.id)), _Nearest(),
                            HashEmbedder(384), 0.9)  # fmt: skip
        assert groups._by_intent(now) == "refunds"
        # an earlier run with no opening request is never the group (nothing to compare)
        alone = TaskGroups(_Episodes(mem.aio.store, [untitled.id]), _Nearest(),
                           HashEmbedder(384), 0.9)  # fmt: skip
        assert alone._by_intent(now) is None
