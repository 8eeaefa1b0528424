"""Recall ranking (docs/concepts.md#recall): the situation match (a lesson is found through the
episodes of the runs it was learned from) and the per-kind bonus that replaced "every semantic
lesson ahead of every episodic record" - on SQLite and PostgreSQL with the embedded vector index."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hindsight import Experience, ExperienceKind, Lesson, Trajectory
from hindsight.config import DEFAULT_KIND_BONUS, MemoryConfig
from hindsight.embedders import HashEmbedder
from hindsight.testing import ScriptedReviewer
from tests.helpers import make_memory, trajectory

TRIP = "Fly me from Boston to Denver next Tuesday with two checked bags, window seat please."
QUERY = "a flight from Boston to Denver next Tuesday with two checked bags and a window seat"
ADVICE = "Sum every payment method, compare the result against the fare total before booking."


def _run(task: str, *, tenant: str = "t", namespace: str = "default") -> Trajectory:
    return trajectory(
        tenant,
        task,
        tool="book_reservation",
        status="failure",
        namespace=namespace,
        outcome="failure",
    )


def _lessons(traj: Trajectory) -> list[Lesson]:
    if traj.task != TRIP:
        return []
    return [Lesson(kind=ExperienceKind.RULE, content=ADVICE, confidence=0.6)]


def _memory(tmp_path: Path, database_url: str, **kw: Any) -> Any:
    kw.setdefault("embedder", HashEmbedder(384))
    return make_memory(
        tmp_path, database_url, reviewer=ScriptedReviewer(_lessons), guard=False, **kw
    )


def _review(mem: Any, traj: Trajectory) -> None:
    mem.store_episode(traj)
    assert mem.flush(60)


def test_a_lesson_is_recalled_through_the_episode_of_its_run(
    tmp_path: Path, database_url: str
) -> None:
    with _memory(tmp_path, database_url) as mem:
        run = _run(TRIP)
        _review(mem, run)
        _review(mem, _run("Cancel my hotel in Rome for the weekend of the conference."))
        [lesson] = [e for e in mem.list_experiences(tenant_id="t") if e.kind.value == "rule"]
        assert not set(ADVICE.lower().split()) & set(QUERY.lower().split())  # no shared word
        [episode] = [
            e
            for e in mem.list_experiences(tenant_id="t")
            if e.kind.value == "episode" and e.source_trajectory_ids == [run.id]
        ]
        result = mem.recall(QUERY, tenant_id="t")
        [hit] = result.hits
        assert hit.experience.id == lesson.id
        b = hit.breakdown
        assert b.situation_episode == episode.id and b.situation is not None
        assert b.similarity == b.situation > HashEmbedder(384).similarity_floor
        assert f"learned from a run like this one: {episode.id}" in " ".join(b.reasons)
        # the lesson's own text is far from the query: without the situation match, nothing
        with_episodes = mem.recall(QUERY, tenant_id="t", include_episodes=True)
        assert [h.experience.id for h in with_episodes.episodes] == [episode.id]
        assert [h.experience.id for h in with_episodes.hits] == [lesson.id]
    with _memory(tmp_path, database_url, situation_match=False) as mem:
        assert mem.recall(QUERY, tenant_id="t").hits == []


def test_the_situation_match_never_crosses_tenants_or_namespaces(
    tmp_path: Path, database_url: str
) -> None:
    with _memory(tmp_path, database_url) as mem:
        _review(mem, _run(TRIP, tenant="a"))
        _review(mem, _run(TRIP, namespace="team-x"))
        assert mem.recall(QUERY, tenant_id="a").hits  # where it was learned
        assert mem.recall(QUERY, tenant_id="t", namespace="team-x").hits
        # another tenant, another namespace: the episodes and the lessons stay where they are
        assert mem.recall(QUERY, tenant_id="b").hits == []
        assert mem.recall(QUERY, tenant_id="t").hits == []
        assert mem.recall(QUERY, tenant_id="t", include_episodes=True).episodes == []


def test_a_lesson_of_another_task_type_is_not_added(tmp_path: Path, database_url: str) -> None:
    with _memory(tmp_path, database_url) as mem:
        traj = _run(TRIP).model_copy(update={"task_type": "booking"})
        _review(mem, traj)
        assert mem.recall(QUERY, tenant_id="t", task_type="booking").hits
        assert mem.recall(QUERY, tenant_id="t", task_type="refunds").hits == []


def test_kind_bonus_orders_equal_relevance_and_does_not_override_relevance(
    tmp_path: Path, database_url: str
) -> None:
    with make_memory(tmp_path, database_url, embedder=HashEmbedder(384), guard=False) as mem:
        text = "When the payment total does not match, split the payment differently."
        tool = mem.add_experience(text, tenant_id="t", kind="tool_reliability", confidence=0.6)
        rule = mem.add_experience(text, tenant_id="t", kind="rule", confidence=0.6)
        hits = mem.recall(text, tenant_id="t").hits
        assert [h.experience.id for h in hits] == [rule.id, tool.id]
        assert hits[0].breakdown.kind_bonus == DEFAULT_KIND_BONUS["rule"] == 0.05
        assert hits[1].breakdown.kind_bonus == DEFAULT_KIND_BONUS["tool_reliability"] == 0.03
        assert hits[0].score - hits[1].score == pytest.approx(0.02, abs=1e-6)
        # a much more relevant anti-pattern beats a barely related rule (no strict kind order)
        far = mem.add_experience(
            "Prefer aisle seats on long flights.", tenant_id="u", kind="rule", confidence=0.6
        )
        near = mem.add_experience(
            "Booking failed because the payment total did not match the price.",
            tenant_id="u",
            kind="anti_pattern",
            confidence=0.6,
        )
        ranked = mem.recall(
            "the payment total did not match the price when booking",
            tenant_id="u",
            similarity_floor=-1,
        ).hits
        assert [h.experience.id for h in ranked] == [near.id, far.id]
        # restatements of one run by earlier reviewers still come after the other lessons
        old = mem.add_experience(text, tenant_id="t", kind="outcome", confidence=0.9)
        hits = mem.recall(text, tenant_id="t").hits
        assert [h.experience.id for h in hits] == [rule.id, tool.id, old.id]
    bonus = {"tool_reliability": 0.2}
    with make_memory(  # the same database: a tenant of its own
        tmp_path / "b", database_url, embedder=HashEmbedder(384), guard=False, kind_bonus=bonus
    ) as mem:
        t = mem.add_experience(text, tenant_id="t2", kind="tool_reliability", confidence=0.6)
        r = mem.add_experience(text, tenant_id="t2", kind="rule", confidence=0.6)
        assert [h.experience.id for h in mem.recall(text, tenant_id="t2").hits] == [t.id, r.id]


def test_private_namespace_still_comes_before_shared_whatever_the_kind(
    tmp_path: Path, database_url: str
) -> None:
    with make_memory(tmp_path, database_url, embedder=HashEmbedder(384), guard=False) as mem:
        text = "Check the fare rules before changing a ticket."
        shared = mem.add_experience(text, tenant_id="t", namespace="shared", kind="rule")
        private = mem.add_experience(text, tenant_id="t", namespace="agent-1", kind="anti_pattern")
        hits = mem.recall(text, tenant_id="t", namespace="agent-1").hits
        assert [h.experience.id for h in hits] == [private.id, shared.id]


@pytest.mark.parametrize(
    ("bonus", "word"), [({"lesson": 0.1}, "unknown kind"), ({"rule": 0.9}, "must be in")]
)
def test_kind_bonus_is_checked(bonus: dict[str, float], word: str) -> None:
    with pytest.raises(ValueError, match=word):
        MemoryConfig(kind_bonus=bonus)


def test_a_lesson_of_many_runs_does_not_use_up_each_runs_share(
    tmp_path: Path, database_url: str
) -> None:
    """max_per_source (half of top_k) counts a hit learned from n runs 1/n for each run."""

    def lessons(traj: Trajectory) -> list[Lesson]:
        shared = Lesson(
            kind=ExperienceKind.RULE,
            content=f"Check the payment total before booking ({traj.task}).",
            confidence=0.6,
            metadata={"lesson_key": "rule:payment-total"},
        )
        own = Lesson(
            kind=ExperienceKind.IMPROVEMENT,
            content="Ask which payment methods to use before booking the flight.",
            confidence=0.6,
        )
        return [shared, own] if traj.task == "second" else [shared]

    with make_memory(
        tmp_path,
        database_url,
        embedder=HashEmbedder(384),
        guard=False,
        reviewer=ScriptedReviewer(lessons),
    ) as mem:
        for task in ("first", "second"):
            _review(mem, _run(task))
        query = "payment total and payment methods before booking"
        hits = mem.recall(query, tenant_id="t", top_k=2, similarity_floor=-1).hits
        assert sorted(len(h.experience.source_trajectory_ids) for h in hits) == [1, 2]


def _pair(sources: list[str], score: float) -> tuple[Any, Any]:
    from hindsight.recall.scoring import Candidate

    exp = Experience(
        tenant_id="t",
        kind=ExperienceKind.IMPROVEMENT,
        content="a lesson",
        source_trajectory_ids=[str(uuid.uuid5(uuid.NAMESPACE_URL, s)) for s in sources],
    )
    return Candidate(exp, 0.9, 0), SimpleNamespace(experience=exp, score=score)


@pytest.mark.parametrize(
    ("sources", "kept"),
    [
        (["a"], False),  # one run, and it supplies its share already
        (["a", "b"], True),  # half of it is another run's
        (["a", "b", "c"], True),
        (["a", "z"], False),  # each of its runs supplies its share already
        (["a", "z", "b"], False),  # most of its runs do
        (["a", "z", "b", "c", "d", "e"], True),  # a lesson of many runs, two crowded
    ],
)
def test_a_lesson_is_left_out_only_when_most_of_its_runs_are_crowded(
    sources: list[str], kept: bool
) -> None:
    from hindsight.recall.scoring import select_hits

    # runs a and z supply 2 hits each: the cap of top 6 at a third is 2
    crowding = [_pair([run], 0.9) for run in ("a", "a", "z", "z")]
    probe = _pair(sources, 0.1)
    hits, excluded = select_hits(
        [*crowding, probe], top_k=6, similarity_floor=None, max_per_source=1 / 3
    )
    assert len(hits) == 4 + kept
    assert (probe[1] in hits) is kept, [e.reason for e in excluded]
    if not kept:
        [reason] = [e.reason for e in excluded]
        assert "already supplies 2 of top 6" in reason
