"""The write-back lifecycle (docs/lifecycle.md): dedup and supersede, confidence from outcomes,
forgetting, versions, compression, doctor, explain - on SQLite and PostgreSQL with the embedded
Qdrant Edge index."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight import NotFoundError, UsageError
from hindsight.embedders import HashEmbedder
from hindsight.ports import VectorPoint
from hindsight.testing import ManualClock, ScriptedReviewer
from hindsight.writeback.dedup import Op, decide
from hindsight.writeback.text import compare_texts, dedup_key
from tests.helpers import lesson, make_memory, trajectory


def hash_memory(tmp_path: Path, database_url: str, **kw: object):  # type: ignore[no-untyped-def]
    kw.setdefault("embedder", HashEmbedder(384))
    return make_memory(tmp_path, database_url, guard=False, **kw)


# -- text rules (pure) ---------------------------------------------------------------------------


def test_dedup_key_folds_case_space_and_punctuation() -> None:
    assert dedup_key("Retry  order_query ONCE.") == dedup_key("retry, ORDER_QUERY once")
    assert dedup_key("Retry order_query once.") != dedup_key("retry order query once")
    assert dedup_key("use retry=3") != dedup_key("use retry=5")


@pytest.mark.parametrize(
    ("old", "new", "update", "aligned"),
    [
        ("use retry=3 for API X", "use retry=5 for API X; 3 failed", True, True),
        (
            "The rate limit of the orders API is 100/min",
            "The rate limit of the orders API is 1000/min",
            True,
            True,
        ),
        ("Use pandas 1.5 for the report job", "Use pandas 2.1 for the report job", False, True),
        ("Project Zephyr deploys with Helm", "Project Zephyr deploys with Terraform", False, True),
        ("lesson 1 of the batch", "lesson 2 of the batch", False, True),
        ("retry the payment API once", "check the cache before the payment API", False, False),
    ],
)
def test_compare_texts_tells_updates_from_other_values(
    old: str, new: str, update: bool, aligned: bool
) -> None:
    diff = compare_texts(old, new)
    assert diff.is_update is update
    assert diff.aligned is aligned


# -- dedup on write ------------------------------------------------------------------------------


def test_same_trajectory_twice_and_case_whitespace_variants_leave_one(
    tmp_path: Path, database_url: str
) -> None:
    texts = [
        "order_query times out at peak hours: retry once, then fall back.",
        "ORDER_QUERY times out at   peak hours -- retry once then fall back",
        "order_query Times Out At Peak Hours; Retry Once, Then Fall Back!",
        "Order_query times out at peak hours. Retry once; then fall back",  # re-review
    ]
    reviewer = ScriptedReviewer(lambda t: [lesson(texts.pop(0), confidence=0.6)])
    with hash_memory(tmp_path, database_url, reviewer=reviewer) as mem:
        first = trajectory("t", "look up order 1")
        mem.store_episode(first)
        mem.flush(30)
        assert mem.store_episode(first)["stored"] is False  # same trajectory again: nothing
        others = [trajectory("t", "look up order 2"), trajectory("t", "look up order 3")]
        for traj in others:
            mem.store_episode(traj)
            mem.flush(30)
        rules = [e for e in mem.list_experiences(tenant_id="t") if e.kind.value == "rule"]
        assert len(rules) == 1
        exp = rules[0]
        assert exp.support_count == 3
        assert set(exp.source_trajectory_ids) == {first.id, *(t.id for t in others)}
        # Beta posterior (writeback.confidence): prior 0.6 worth K=2 runs, three distinct
        # user-sourced runs of trust 0.9 each: (2*0.6 + 3*0.9) / (2 + 3*0.9).
        assert exp.confidence == pytest.approx((1.2 + 2.7) / (2 + 2.7), abs=1e-6)
        log = mem.audit_log(tenant_id="t", experience_id=exp.id)
        assert [r["action"] for r in log].count("support") == 2
        mem.review_now(first.id, tenant_id="t")  # the same run again: no more support
        again = mem.get_experience(exp.id, tenant_id="t")
        assert (again.confidence, again.support_count) == (exp.confidence, 3)
        assert mem.aio.index.count("t") == mem.stats(tenant_id="t")["experiences"]["total"]


def test_retry_3_then_retry_5_supersedes_and_can_be_restored(
    tmp_path: Path, database_url: str
) -> None:
    with hash_memory(tmp_path, database_url) as mem:
        old = mem.add_experience("use retry=3 for API X", tenant_id="t", confidence=0.6)
        new = mem.add_experience("use retry=5 for API X; 3 failed", tenant_id="t")
        assert new.id != old.id and new.metadata["supersedes"] == [old.id]
        stored_old = mem.get_experience(old.id, tenant_id="t")
        assert stored_old.status.value == "superseded"
        assert stored_old.metadata["superseded_by"] == new.id
        # the newer lesson (a user-sourced add, trust 0.9) counts against the older one:
        # (2 * 0.6) / (2 + 0.9)
        assert stored_old.confidence == pytest.approx(1.2 / 2.9, abs=1e-6)
        assert stored_old.version == 2
        hits = mem.recall("retry for API X", tenant_id="t", similarity_floor=-1).hits
        assert [h.experience.id for h in hits] == [new.id]
        explained = mem.recall("retry for API X", tenant_id="t", similarity_floor=-1, explain=True)
        reasons = {e.experience_id: e.reason for e in explained.excluded}
        assert reasons[old.id].startswith(f"status superseded by {new.id}")
        history = mem.history(old.id, tenant_id="t")
        assert [v["version"] for v in history] == [1, 2]
        assert history[0]["experience"].status.value == "active"
        assert history[0]["change"] == "supersede"
        back = mem.rollback(old.id, 1, tenant_id="t")
        assert back.status.value == "active" and back.confidence == pytest.approx(0.6)
        assert back.version == 3 and back.content == "use retry=3 for API X"


def test_other_values_without_correction_are_flagged_not_superseded(
    tmp_path: Path, database_url: str
) -> None:
    with hash_memory(tmp_path, database_url) as mem:
        a = mem.add_experience("Use pandas 1.5 for the report job", tenant_id="t")
        b = mem.add_experience("Use pandas 2.1 for the report job", tenant_id="t")
        assert b.metadata["conflicts_with"] == [a.id]
        assert mem.get_experience(a.id, tenant_id="t").status.value == "active"
        c = mem.add_experience("never cache the order lookups", tenant_id="t")
        d = mem.add_experience("always cache the order lookups", tenant_id="t")
        assert d.metadata["conflicts_with"] == [c.id]
        assert len(mem.list_experiences(tenant_id="t")) == 4


def test_near_duplicate_merges_with_a_new_version_and_both_sources(
    tmp_path: Path, database_url: str
) -> None:
    reviewer = ScriptedReviewer(
        lambda t: (
            [lesson("order_query times out at peak hours: retry once, then fall back")]
            if t.task.endswith("1")
            else [lesson("order_query times out at peak hours; retry once and then fall back")]
        )
    )
    with hash_memory(tmp_path, database_url, reviewer=reviewer) as mem:
        one, two = trajectory("t", "run 1"), trajectory("t", "run 2")
        for traj in (one, two):
            mem.store_episode(traj)
            mem.flush(30)
        rules = [e for e in mem.list_experiences(tenant_id="t") if e.kind.value == "rule"]
        assert len(rules) == 1
        assert rules[0].version == 2 and rules[0].support_count == 2
        assert set(rules[0].source_trajectory_ids) == {one.id, two.id}
        assert mem.history(rules[0].id, tenant_id="t")[0]["change"] == "merge"


def test_episodic_lessons_of_two_runs_never_supersede_each_other() -> None:
    from hindsight.models import Experience

    old = Experience(tenant_id="t", kind="outcome", content="the payment API needs retry=3")
    new = Experience(tenant_id="t", kind="outcome", content="the payment API needs retry=5")
    assert decide(new, [(old, 0.95)], 0.8).op is Op.ADD
    rule_old = old.model_copy(update={"kind": "rule"})
    rule_new = new.model_copy(update={"kind": "rule"})
    assert decide(rule_new, [(rule_old, 0.95)], 0.8).op is Op.SUPERSEDE
    established = rule_old.model_copy(update={"support_count": 3})
    assert decide(rule_new, [(established, 0.95)], 0.8).op is Op.CONFLICT


# -- confidence from outcomes --------------------------------------------------------------------


def test_failures_demote_until_excluded_then_maintain_archives(
    tmp_path: Path, database_url: str
) -> None:
    clock = ManualClock()
    with hash_memory(tmp_path, database_url, clock=clock) as mem:
        bad = mem.add_experience("call refund_api twice to be sure", tenant_id="t", confidence=0.6)
        good = mem.add_experience(
            "check the order status before a refund", tenant_id="t", confidence=0.5
        )
        rounds = 0
        while True:
            run = str(uuid.uuid4())
            hits = mem.recall(
                "refund twice", tenant_id="t", trajectory_id=run, top_k=1, similarity_floor=-1
            ).hits
            if not hits or hits[0].experience.id != bad.id:
                break
            mem.record_outcome(run, False, tenant_id="t")
            assert mem.record_outcome(run, False, tenant_id="t") == []  # once per run
            rounds += 1
            assert rounds < 20
        demoted = mem.get_experience(bad.id, tenant_id="t")
        # Beta posterior: prior 0.6 worth two runs, n failed runs -> 1.2 / (2 + n); under the
        # recall floor 0.1 from n = 11 (n = 10 gives exactly 0.1, still recalled).
        assert demoted.confidence == pytest.approx(1.2 / 13, abs=1e-6)
        assert demoted.misled_count == rounds == 11
        result = mem.recall("refund twice", tenant_id="t", similarity_floor=-1)
        assert bad.id not in [h.experience.id for h in result.hits]
        assert any(
            e.experience_id == bad.id and "min_confidence" in e.reason for e in result.excluded
        )
        for _ in range(3):
            run = str(uuid.uuid4())
            mem.recall(
                "order status before a refund",
                tenant_id="t",
                trajectory_id=run,
                top_k=1,
                similarity_floor=-1,
            )
            mem.record_outcome(run, True, tenant_id="t")
        raised = mem.get_experience(good.id, tenant_id="t")
        # (2 * 0.5 + 3 successes) / (2 + 3)
        assert raised.confidence == pytest.approx(0.8) and raised.helped_count == 3
        report = mem.maintain(tenant_id="t", as_of=clock.now() + timedelta(days=29))
        assert report["archived"] == []
        report = mem.maintain(tenant_id="t", as_of=(clock.now() + timedelta(days=31)).isoformat())
        assert report["archived"] == [bad.id]
        assert mem.get_experience(bad.id, tenant_id="t").status.value == "archived"
        assert mem.get_experience(good.id, tenant_id="t").status.value == "active"
        restored = mem.restore(bad.id, tenant_id="t")
        assert restored.status.value == "active"
        with pytest.raises(UsageError, match="already active"):
            mem.restore(bad.id, tenant_id="t")
        trail = mem.audit_log(tenant_id="t", experience_id=bad.id, limit=100)
        assert {r["actor"].split(":")[0] for r in trail} >= {"outcome", "maintain", "user"}


def test_concurrent_outcomes_add_up(tmp_path: Path, database_url: str) -> None:
    with hash_memory(tmp_path, database_url) as mem:
        exp = mem.add_experience("prefer the batch endpoint", tenant_id="t", confidence=0.1)
        runs = [str(uuid.uuid4()) for _ in range(8)]
        for run in runs:
            mem.recall("batch endpoint", tenant_id="t", trajectory_id=run, similarity_floor=-1)
        errors: list[BaseException] = []

        def report(run: str) -> None:
            try:
                for _ in range(3):  # repeated reports of one run count once
                    mem.record_outcome(run, True, tenant_id="t")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=report, args=(r,)) for r in runs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        after = mem.get_experience(exp.id, tenant_id="t")
        # eight distinct runs, each counted once: (2 * 0.1 + 8) / (2 + 8)
        assert after.confidence == pytest.approx(0.82) and after.helped_count == 8


def test_adjust_confidence_clamps_and_is_audited(tmp_path: Path, database_url: str) -> None:
    with hash_memory(tmp_path, database_url) as mem:
        exp = mem.add_experience("a lesson", tenant_id="t", confidence=0.9)
        assert mem.adjust_confidence(exp.id, 0.5, tenant_id="t", reason="x").confidence == 1.0
        assert mem.adjust_confidence(exp.id, -1, tenant_id="t").confidence == 0.0
        for bad in (2, float("nan"), "0.1x", True):
            with pytest.raises(UsageError, match=r"^delta must be a number from -1 to 1, got"):
                mem.adjust_confidence(exp.id, bad, tenant_id="t")  # type: ignore[arg-type]
        with pytest.raises(NotFoundError):
            mem.adjust_confidence(exp.id, 0.1, tenant_id="other")
        log = mem.audit_log(tenant_id="t", experience_id=exp.id)
        assert [(r["old_value"], r["new_value"], r["reason"]) for r in log][:2] == [
            ("1.0", "0.0", None),
            ("0.9", "1.0", "x"),
        ]


def test_edit_and_rollback_keep_every_version(tmp_path: Path, database_url: str) -> None:
    with hash_memory(tmp_path, database_url) as mem:
        exp = mem.add_experience("the limit is 100/min", tenant_id="t")
        mem.edit_experience(exp.id, tenant_id="t", content="the limit is 1000/min", reason="docs")
        hits = mem.recall("limit 1000/min", tenant_id="t", similarity_floor=-1).hits
        assert hits[0].experience.content == "the limit is 1000/min"
        back = mem.rollback(exp.id, 1, tenant_id="t")
        assert back.content == "the limit is 100/min" and back.version == 3
        assert [v["version"] for v in mem.history(exp.id, tenant_id="t")] == [1, 2, 3]
        with pytest.raises(NotFoundError, match="no version 7"):
            mem.rollback(exp.id, 7, tenant_id="t")
        with pytest.raises(UsageError, match="already"):
            mem.rollback(exp.id, 3, tenant_id="t")
        mem.forget(tenant_id="t", experience_id=exp.id)
        with pytest.raises(NotFoundError):
            mem.history(exp.id, tenant_id="t")


def test_compression_over_the_cap(tmp_path: Path, database_url: str) -> None:
    with hash_memory(tmp_path, database_url, active_cap=4) as mem:
        made = [
            mem.add_experience(
                f"refund_api {i} needs the order id and the reason {i}",
                tenant_id="t",
                task_type="refunds",
            )
            for i in range(6)
        ]
        mem.add_experience("deploys use helm charts", tenant_id="t", task_type="ops")
        report = mem.maintain(tenant_id="t")
        assert report["compressed"]
        active = mem.list_experiences(tenant_id="t", task_type="refunds")
        assert len(active) <= 3
        rep = next(e for e in active if "compressed_from" in e.metadata)
        assert rep.support_count >= 2 and len(rep.source_trajectory_ids) == 0
        archived = mem.list_experiences(tenant_id="t", status="archived")
        assert {e.id for e in archived} <= {e.id for e in made}
        assert len(mem.list_experiences(tenant_id="t", task_type="ops")) == 1


# -- troubleshooting -------------------------------------------------------------------------------


def test_doctor_finds_and_repairs_vectors(tmp_path: Path, database_url: str) -> None:
    """An index kept apart from SQL (the embedded Edge shard) that lost a point, holds an
    orphan and a stale payload; with pgvector (the points are the rows) a row whose
    embedding is missing."""
    with hash_memory(tmp_path, database_url) as mem:
        a = mem.add_experience("check the cache first", tenant_id="t")
        b = mem.add_experience("retry the payment API once", tenant_id="t")
        assert all(f.ok for f in mem.doctor())
        if database_url.startswith("postgresql"):
            _doctor_embeds_a_row_without_its_vector(mem, a.id)
            return
        index = mem.aio.index
        index.delete([a.id])  # a lost vector
        orphan = str(uuid.uuid4())
        vec = np.ones(384, dtype=np.float32) / np.sqrt(384)
        index.upsert(
            [
                VectorPoint(
                    orphan,
                    vec,
                    {
                        "tenant_id": "t",
                        "namespace": "default",
                        "task_type": None,
                        "status": "active",
                        "kind": "rule",
                        "tags": [],
                    },
                )
            ]
        )
        index.set_status([b.id], "archived")  # payload out of step with SQL
        found = {f.name: f for f in mem.doctor()}
        assert found["missing_vectors"].ids == [a.id]
        assert found["orphan_points"].ids == [orphan]
        assert found["payload_mismatch"].ids == [b.id]
        lost = mem.recall("check the cache first", tenant_id="t", similarity_floor=-1).hits
        assert a.id not in [h.experience.id for h in lost]  # "recalled nothing"
        fixed = {f.name: f for f in mem.doctor(repair=True)}
        assert fixed["missing_vectors"].repaired == 1 and fixed["orphan_points"].repaired == 1
        assert all(f.ok for f in mem.doctor())
        hits = mem.recall("check the cache first", tenant_id="t", similarity_floor=-1).hits
        assert a.id in [h.experience.id for h in hits]
        assert index.count("t") == 2


def _doctor_embeds_a_row_without_its_vector(mem: Any, exp_id: str) -> None:
    import sqlalchemy as sa

    found = {f.name: f for f in mem.doctor()}
    assert found["vector_index"].message.startswith("pgvector 0.8"), found["vector_index"]
    assert "missing_vectors" not in found  # nothing to compare: the vectors are the rows
    with mem.aio.store._tx(write=True) as conn:  # a row as a hand edit could leave it
        conn.execute(
            sa.text("UPDATE experiences SET embedding = NULL WHERE id = :i"), {"i": exp_id}
        )
    found = {f.name: f for f in mem.doctor()}
    assert not found["embedding_model"].ok and found["embedding_model"].ids == [exp_id]
    lost = mem.recall("check the cache first", tenant_id="t", similarity_floor=-1).hits
    assert exp_id not in [h.experience.id for h in lost]
    fixed = {f.name: f for f in mem.doctor(repair=True)}
    assert fixed["embedding_model"].repaired == 1
    assert all(f.ok for f in mem.doctor())
    hits = mem.recall("check the cache first", tenant_id="t", similarity_floor=-1).hits
    assert exp_id in [h.experience.id for h in hits]


def test_explain_names_filters_but_never_other_tenants(tmp_path: Path, database_url: str) -> None:
    with hash_memory(tmp_path, database_url) as mem:
        mem.add_experience("Project Zephyr deploys with Helm", tenant_id="A", task_type="ops")
        other_ns = mem.add_experience(
            "Project Zephyr deploys with Helm charts v3",
            tenant_id="A",
            namespace="agent-b",
            task_type="ops",
        )
        other_tt = mem.add_experience(
            "Zephyr deploys are rolled back with helm rollback",
            tenant_id="A",
            task_type="incidents",
        )
        mem.add_experience("Project Zephyr deploys with Terraform", tenant_id="B", task_type="ops")
        result = mem.recall(
            "how does Project Zephyr deploy",
            tenant_id="A",
            task_type="ops",
            include_shared=False,
            similarity_floor=-1,
            explain=True,
        )
        reasons = {e.experience_id: e.reason for e in result.excluded}
        assert "namespace 'agent-b' not searched" in reasons[other_ns.id]
        assert "task_type 'incidents' is not 'ops'" in reasons[other_tt.id]
        text = str(result.to_json(explain=True))
        assert "Terraform" not in text and "'B'" not in text
        for e in result.excluded:
            assert mem.get_experience(e.experience_id, tenant_id="A")
