"""Lessons across runs: extra sources (``Lesson.sources``), merge on ``metadata["lesson_key"]``
and evidence-based confidence through the review path
(docs/lifecycle.md#confidence-hindsightwritebackconfidence)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight import ExperienceKind, Lesson, Trajectory, UsageError
from hindsight.models import Experience
from hindsight.testing import ScriptedReviewer, test_memory
from hindsight.writeback import confidence as cf
from tests.helpers import make_memory, trajectory


def _traj(text: str, *, tenant: str = "t", outcome: str = "failure") -> Trajectory:
    return Trajectory.model_validate(
        {
            "tenant_id": tenant,
            "task_type": "booking",
            "outcome": outcome,
            "events": [{"event_type": "user_message", "content": text}],
        }
    )


def test_lesson_sources_become_source_trajectory_ids_in_order_without_repeats() -> None:
    ref, other = str(uuid.uuid4()), str(uuid.uuid4())

    def lessons(traj: Trajectory) -> list[Lesson]:
        return [
            Lesson(
                kind=ExperienceKind.RULE,
                content="Before booking, check that the payment methods cover the total.",
                confidence=0.6,
                sources=[ref.upper(), traj.id, ref, "{" + other + "}"],
            )
        ]

    with test_memory(reviewer=ScriptedReviewer(lessons)) as mem:
        run = mem.store_episode(_traj("book a flight"))
        mem.flush()
        rules = [e for e in mem.list_experiences(tenant_id="t") if e.kind == ExperienceKind.RULE]
        assert [e.source_trajectory_ids for e in rules] == [[run.trajectory_id, ref, other]]


def test_lesson_sources_default_empty() -> None:
    lesson = Lesson(kind=ExperienceKind.RULE, content="x", confidence=0.5)
    assert lesson.sources == []
    with pytest.raises(ValueError):
        Lesson(kind=ExperienceKind.RULE, content="x", confidence=0.5, sources=["run-1"])


# -- merge on the lesson key (one lesson per key, evidence from every run) -----------------------

KEY = "tool_error:book_reservation:payment amount does not add up"


def keyed(content: str, traj: Trajectory, *, confidence: float = 0.7, **kw: Any) -> Lesson:
    support = kw.pop(
        "support", [{"trajectory_id": traj.id, "polarity": 1, "role": "error_observed"}]
    )
    return Lesson(
        kind=ExperienceKind.TOOL_RELIABILITY,
        content=content,
        confidence=confidence,
        tools=["book_reservation"],
        metadata={"lesson_key": kw.pop("key", KEY), "support": support},
        **kw,
    )


def run_of(task: str, *, tenant: str = "t", trust: float = 1.0, **kw: Any) -> Trajectory:
    return trajectory(tenant, task, tool="book_reservation", trust=trust, **kw)


def rows(mem: Any, tenant: str = "t", status: str = "active") -> list[Experience]:
    return [
        e
        for e in mem.list_experiences(tenant_id=tenant, status=status, limit=1000)
        if e.kind is not ExperienceKind.EPISODE
    ]


def test_same_key_folds_runs_into_one_lesson_with_their_evidence(
    tmp_path: Path, database_url: str
) -> None:
    # Three runs teach the same lesson in words that share nothing; the third run is
    # low-trust (0.5 x user 0.9 = 0.45).
    texts = {
        "run a": "Payment of 120 was refused: the amounts must add up to the total.",
        "run b": "book_reservation rejects split payments whose sum differs from the price.",
        "run c": "Check the sum of the payment methods before booking.",
    }
    reviewer = ScriptedReviewer(lambda t: [keyed(texts[t.task], t)])
    with make_memory(tmp_path, database_url, reviewer=reviewer, guard=False) as mem:
        runs = [run_of("run a"), run_of("run b"), run_of("run c", trust=0.5)]
        for traj in runs:
            mem.store_episode(traj)
            assert mem.flush(60)
        [exp] = rows(mem)
        assert exp.content == texts["run a"]  # the first writer's text
        assert exp.source_trajectory_ids == [r.id for r in runs]
        assert exp.support_count == 3 and exp.version == 3
        entries = {e["trajectory_id"]: e["trust"] for e in exp.metadata["support"]}
        assert entries == {runs[0].id: 0.9, runs[1].id: 0.9, runs[2].id: 0.45}
        assert exp.confidence == pytest.approx((1.4 + 0.9 + 0.9 + 0.45) / (2 + 2.25), abs=1e-6)
        changes = [v["change"] for v in mem.history(exp.id, tenant_id="t")]
        assert changes == ["merge", "merge", None]
        log = mem.audit_log(tenant_id="t", experience_id=exp.id)
        assert {r["actor"] for r in log if r["action"] == "support"} == {"dedup:lesson_key"}
        # The same run reviewed again brings no new evidence.
        mem.review_now(runs[1].id, tenant_id="t")
        again = mem.get_experience(exp.id, tenant_id="t")
        assert (again.confidence, again.support_count, again.version) == (
            exp.confidence,
            3,
            3,
        )


def test_same_key_is_scoped_to_tenant_and_namespace_and_skips_inactive_targets(
    tmp_path: Path, database_url: str
) -> None:
    reviewer = ScriptedReviewer(lambda t: [keyed(f"Lesson from {t.task}.", t)])
    with make_memory(tmp_path, database_url, reviewer=reviewer, guard=False) as mem:

        def review(task: str, **kw: Any) -> None:
            mem.store_episode(run_of(task, **kw))
            assert mem.flush(60)

        review("first")
        review("other tenant", tenant="u")
        review("private", namespace="private")
        assert len(rows(mem)) == 2 and len(rows(mem, "u")) == 1
        [default] = [e for e in rows(mem) if e.namespace == "default"]
        mem.archive(default.id, tenant_id="t")
        review("after archive")  # an archived lesson is not a merge target
        fresh = [e for e in rows(mem) if e.namespace == "default"]
        assert [e.content for e in fresh] == ["Lesson from after archive."]
        mem.mark_wrong(fresh[0].id, tenant_id="t")  # quarantined by the audit
        review("after quarantine")
        assert [e.content for e in rows(mem) if e.namespace == "default"] == [
            "Lesson from after quarantine."
        ]


def test_a_contrastive_lesson_weighs_its_reference_run_by_that_runs_trust(
    tmp_path: Path, database_url: str
) -> None:
    reference = run_of("reference", trust=0.8, outcome="success")
    failed = run_of("failed", outcome="failure")
    lessons: dict[str, list[Lesson]] = {"reference": []}
    reviewer = ScriptedReviewer(lambda t: lessons[t.task])
    with make_memory(tmp_path, database_url, reviewer=reviewer, guard=False) as mem:
        mem.store_episode(reference, review=False)
        lessons["failed"] = [
            keyed(
                "Before booking, check that the payment methods cover the total.",
                failed,
                key="contrast:arg:book_reservation:payment_methods",
                sources=[reference.id],
                support=[
                    {"trajectory_id": failed.id, "polarity": 1, "role": "failed_with_diff"},
                    {"trajectory_id": reference.id, "polarity": 1, "role": "reference_success"},
                    {"trajectory_id": str(uuid.uuid4()), "polarity": 1, "role": "unknown run"},
                ],
            )
        ]
        mem.store_episode(failed, review=False)
        [exp] = [e for e in mem.review_now(failed.id, tenant_id="t") if e.kind.value != "episode"]
        trusts = sorted(e["trust"] for e in exp.metadata["support"])
        # unknown run: 0.5 (low); failed run: 1.0 x user 0.9; reference: 0.8 x 0.9
        assert trusts == [0.5, 0.72, 0.9]
        assert exp.source_trajectory_ids == [failed.id, reference.id]
        assert exp.confidence == pytest.approx((1.4 + 0.5 + 0.72 + 0.9) / (2 + 2.12), abs=1e-6)


def test_add_experience_with_a_lesson_key_folds_and_counts_each_source_once(
    tmp_path: Path, database_url: str
) -> None:
    with make_memory(tmp_path, database_url, guard=False) as mem:
        meta = {"lesson_key": "policy:refund-needs-receipt"}
        first = mem.add_experience("Ask for the receipt.", tenant_id="t", metadata=meta)
        second = mem.add_experience("Refunds need proof of purchase.", tenant_id="t", metadata=meta)
        assert second.id == first.id and second.content == "Ask for the receipt."
        # the second add is evidence from its source (user, 0.9): (2 * 0.5 + 0.9) / 2.9
        assert second.confidence == pytest.approx(1.9 / 2.9, abs=1e-6)
        third = mem.add_experience("Receipts first.", tenant_id="t", metadata=meta)
        assert (third.confidence, third.support_count) == (second.confidence, 2)
        system = mem.add_experience(
            "No receipt, no refund.", tenant_id="t", metadata=meta, source="system"
        )
        assert system.support_count == 3
        assert system.confidence == pytest.approx(2.9 / 3.9, abs=1e-6)
        assert len(rows(mem)) == 1
        with pytest.raises(UsageError, match="reserved"):
            mem.add_experience("x y", tenant_id="t", metadata={"support": []})


def test_outcome_is_evidence_once_per_run(tmp_path: Path, database_url: str) -> None:
    with make_memory(tmp_path, database_url, guard=False) as mem:
        mem.add_experience("Check the fare class first.", tenant_id="t", confidence=0.6)
        run = str(uuid.uuid4())
        for _ in range(3):  # recalled three times by the same run
            mem.recall("fare class", tenant_id="t", trajectory_id=run, similarity_floor=-1)
        [after] = mem.record_outcome(run, True, tenant_id="t")
        assert after.helped_count == 1
        assert after.confidence == pytest.approx((1.2 + 1) / 3, abs=1e-6)
        assert mem.record_outcome(run, False, tenant_id="t") == []  # the run is counted
        assert mem.aio.store.get_outcome("t", run)["delta"] == 1.0
        failed = str(uuid.uuid4())
        mem.recall("fare class", tenant_id="t", trajectory_id=failed, similarity_floor=-1)
        [down] = mem.record_outcome(failed, False, tenant_id="t")
        assert (down.helped_count, down.misled_count) == (1, 1)
        assert down.confidence == pytest.approx((1.2 + 1) / 4, abs=1e-6)


def test_concurrent_reviews_of_one_key_leave_one_lesson(tmp_path: Path, database_url: str) -> None:
    reviewer = ScriptedReviewer(lambda t: [keyed(f"Wording of {t.task}.", t)])
    with make_memory(tmp_path, database_url, reviewer=reviewer, guard=False) as mem:
        runs = [run_of(f"run {i}") for i in range(8)]
        for traj in runs:
            mem.store_episode(traj, review=False)
        errors: list[BaseException] = []

        def review(tid: str) -> None:
            try:
                mem.review_now(tid, tenant_id="t")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=review, args=(r.id,)) for r in runs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        [exp] = rows(mem)
        assert sorted(exp.source_trajectory_ids) == sorted(r.id for r in runs)
        assert exp.support_count == 8 and exp.version == 8


def test_maintain_folds_same_key_pairs_written_around_the_write_path(
    tmp_path: Path, database_url: str
) -> None:
    with make_memory(tmp_path, database_url, guard=False) as mem:
        runs = [run_of("one"), run_of("two")]
        for traj in runs:
            mem.store_episode(traj, review=False)
        exps = [
            Experience(
                tenant_id="t",
                kind="tool_reliability",
                content=text,
                confidence=0.7,
                source_trajectory_ids=[r.id],
                metadata={
                    "lesson_key": KEY,
                    "support": [{"trajectory_id": r.id, "polarity": 1, "role": "x", "trust": 1.0}],
                },
            )
            for text, r in zip(
                ["Totals must add up.", "Sum the payments first."], runs, strict=True
            )
        ]
        # as two processes would: both stored, neither saw the other
        store = mem.aio.store
        for e in exps:
            store.add_experiences([e], mem.aio.embedder.embed([e.content]))
        report = mem.maintain(tenant_id="t")
        assert {"kept": exps[0].id, "merged": exps[1].id} in report["merged"]
        [kept] = rows(mem)
        assert kept.id == exps[0].id and kept.support_count == 2
        assert kept.confidence == pytest.approx((1.4 + 2) / 4, abs=1e-6)
        merged = mem.get_experience(exps[1].id, tenant_id="t")
        assert merged.status.value == "superseded" and merged.metadata["merged_into"] == kept.id


# -- property: mixed-trust writes through the review path --------------------------------------

runs_st = st.lists(
    st.tuples(st.integers(0, 5), st.sampled_from([1.0, 0.9, 0.6, 0.5, 0.3])),
    min_size=1,
    max_size=12,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(writes=runs_st)
def test_review_path_confidence_counts_each_run_once_and_low_trust_saturates(
    writes: list[tuple[int, float]],
) -> None:
    """Reviews of one keyed lesson from up to six runs of various trusts, some runs reviewed
    several times (re-reviews, other wording): the stored confidence is the posterior of the
    distinct runs, whatever the repeats; all low-trust runs together weigh at most 1.0."""
    trust_of = {}
    for run, trust in writes:
        trust_of.setdefault(run, trust)  # a run's trust is fixed when it is first stored
    counter = iter(range(10_000))

    def lessons(traj: Trajectory) -> list[Lesson]:
        return [keyed(f"Wording {next(counter)} of the lesson.", traj, confidence=0.6)]

    with test_memory(reviewer=ScriptedReviewer(lessons), guard=False) as mem:
        trajs = {run: run_of(f"run {run}", trust=trust) for run, trust in trust_of.items()}
        for traj in trajs.values():
            mem.store_episode(traj, review=False)
        for run, _ in writes:
            mem.review_now(trajs[run].id, tenant_id="t")
        [exp] = rows(mem)
        # the reviewed run's evidence: trajectory trust x user provenance 0.9
        distinct = [
            {"trajectory_id": trajs[r].id, "polarity": 1, "trust": round(t * 0.9, 4)}
            for r, t in trust_of.items()
        ]
        assert exp.confidence == pytest.approx(cf.posterior(0.6, distinct), abs=1e-6)
        assert exp.support_count == len(trust_of)
        low = sum(e["trust"] for e in distinct if e["trust"] < cf.LOW_TRUST)
        high = sum(e["trust"] for e in distinct if e["trust"] >= cf.LOW_TRUST)
        assert cf.support_mass(exp)[0] == pytest.approx(high + min(low, 1.0), abs=1e-6)
