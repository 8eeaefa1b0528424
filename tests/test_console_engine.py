"""Engine additions made for the console (docs/console.md): dry-run recall and archiving by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight import NotFoundError, UsageError
from tests.helpers import make_memory

TENANT = "console-engine"


def test_a_dry_run_recall_changes_nothing(tmp_path: Path, database_url: str) -> None:
    with make_memory(tmp_path / "d", database_url) as mem:
        exp = mem.add_experience("order_query times out at peak: retry once", tenant_id=TENANT)
        run = "8f0b7c7e-1b9e-4c39-9a55-0f3c1d2a9e10"
        dry = mem.recall("order_query timeout", tenant_id=TENANT, trajectory_id=run,
                         record=False)
        assert [h.experience.id for h in dry.hits] == [exp.id]
        after = mem.get_experience(exp.id, tenant_id=TENANT)
        assert after.recall_count == 0 and after.last_recalled_at is None
        assert mem.record_outcome(run, True, tenant_id=TENANT) == []  # nothing to credit
        live = mem.recall("order_query timeout", tenant_id=TENANT)
        assert live.render() == dry.render()
        assert mem.get_experience(exp.id, tenant_id=TENANT).recall_count == 1


def test_archive_by_hand_is_audited_and_undone_by_restore(
    tmp_path: Path, database_url: str
) -> None:
    with make_memory(tmp_path / "d", database_url) as mem:
        exp = mem.add_experience("deploy with helm 3", tenant_id=TENANT)
        archived = mem.archive(exp.id, tenant_id=TENANT, reason="audit: wrong")
        assert archived.status.value == "archived"
        assert mem.recall("deploy with helm", tenant_id=TENANT).hits == []
        trail = mem.audit_log(tenant_id=TENANT, experience_id=exp.id)
        assert (trail[0]["action"], trail[0]["new_value"], trail[0]["reason"]) == (
            "status", "archived", "audit: wrong"
        )
        with pytest.raises(UsageError, match="only active ones are archived"):
            mem.archive(exp.id, tenant_id=TENANT)
        with pytest.raises(NotFoundError):
            mem.archive(exp.id, tenant_id="someone-else")
        assert mem.restore(exp.id, tenant_id=TENANT).status.value == "active"


def test_console_reads_filter_count_and_stay_in_their_tenant(
    tmp_path: Path, database_url: str
) -> None:
    from datetime import timedelta

    from hindsight.testing import ScriptedReviewer
    from tests.helpers import lesson, trajectory

    reviewer = ScriptedReviewer([lesson("order_query times out: retry once", confidence=0.8)])
    with make_memory(tmp_path / "d", database_url, reviewer=reviewer) as mem:
        store, now = mem.aio.store, mem.aio.clock.now()
        run = trajectory(TENANT, "find order 1", task_type="support")
        mem.store_episode(run, review=False)
        learned = mem.review_now(run.id, tenant_id=TENANT)
        low = mem.add_experience("50% of refunds need a manager", tenant_id=TENANT,
                                 confidence=0.15, task_type="billing")
        mem.add_experience("never shown to the other tenant", tenant_id="other", confidence=0.15)
        asking = "3c9d1e7a-5b6f-4a8e-9d2c-1f0e9b8a7c6d"
        mem.recall("order_query timeout", tenant_id=TENANT, trajectory_id=asking)
        mem.store_episode(trajectory(TENANT, "find order 2", id=asking), review=False)
        mem.record_outcome(asking, True, tenant_id=TENANT)

        page, total = store.browse_experiences(TENANT, {"text": "50%"})
        assert ([e.id for e in page], total) == ([low.id], 1)
        page, total = store.browse_experiences(TENANT, {"max_confidence": 0.2})
        assert [e.id for e in page] == [low.id]
        page, total = store.browse_experiences(TENANT, {"source_trajectory_id": run.id})
        assert {e.id for e in page} == {e.id for e in learned} and total == len(learned)
        page, total = store.browse_experiences(TENANT, {"kinds": ["episode"]}, limit=1)
        assert total == 1 and page[0].kind.value == "episode"
        assert store.browse_experiences(TENANT, {"task_type": "billing"})[1] == 1
        assert store.browse_experiences(TENANT, {"statuses": ["archived"]})[1] == 0
        everything = store.browse_experiences(TENANT)[1]
        assert everything == len(learned) + 1
        with pytest.raises(UsageError, match="min_confidence"):
            store.browse_experiences(TENANT, {"min_confidence": 2})

        hist = store.confidence_histogram(TENANT)
        assert sum(hist) == everything and hist[1] == 1  # 0.15 -> [0.1, 0.2)
        assert store.confidence_histogram("other") == [0, 1, 0, 0, 0, 0, 0, 0, 0, 0]

        since = now - timedelta(days=1)
        day = now.strftime("%Y-%m-%d")
        assert store.runs_by_day(TENANT, since) == {day: (2, 1)}
        assert store.runs_by_day("other", since) == {}
        attribution = store.outcomes_by_day(TENANT, since)[day]
        assert attribution == {"success": 1, "failure": 0, "credited": 1, "blamed": 0}
        assert store.review_job_of(TENANT, run.id) is None
        queued = trajectory(TENANT, "find order 3")
        mem.store_episode(queued)
        job = store.review_job_of(TENANT, queued.id)
        assert job is not None and job.trajectory_id == queued.id
        assert store.review_job_of("other", queued.id) is None


def test_audit_runs_are_reproducible_and_wrong_lessons_go_through_lifecycle_actions(
    tmp_path: Path, database_url: str
) -> None:
    with make_memory(tmp_path / "d", database_url) as mem:
        made = [
            mem.add_experience(f"lesson {i}: check the order id before order_query",
                               tenant_id=TENANT, confidence=0.6)
            for i in range(8)
        ]
        first = mem.start_audit(tenant_id=TENANT, size=5, seed=7)
        assert len(first["experience_ids"]) == 5 and first["seed"] == 7
        mem.adjust_confidence(made[0].id, 0.3, tenant_id=TENANT)  # order by confidence changes
        again = mem.start_audit(tenant_id=TENANT, size=5, seed=7)
        assert again["experience_ids"] == first["experience_ids"] and again["id"] != first["id"]
        drawn = mem.start_audit(tenant_id=TENANT)  # default 20 (all 8), a seed is chosen
        assert drawn["size"] == 20 and sorted(drawn["experience_ids"]) == sorted(
            e.id for e in made
        )
        assert isinstance(drawn["seed"], int)

        run = first["id"]
        a, b, c, d, e = first["experience_ids"]
        mem.audit_verdict(run, a, "correct", tenant_id=TENANT)
        mem.audit_verdict(run, b, "wrong", tenant_id=TENANT, note="order ids are checked upstream")
        before = mem.get_experience(c, tenant_id=TENANT).confidence
        mem.audit_verdict(run, c, "wrong", tenant_id=TENANT, action="demote")
        mem.audit_verdict(run, d, "wrong", tenant_id=TENANT, action="quarantine", note="harmful")
        done = mem.audit_verdict(run, e, "needs_edit", tenant_id=TENANT, note="too vague")

        assert done["counts"] == {"correct": 1, "wrong": 3, "needs_edit": 1}
        assert done["unmarked"] == 0
        assert done["verdicts"][b]["action"] == "archive"
        assert mem.get_experience(b, tenant_id=TENANT).status.value == "archived"
        assert mem.get_experience(c, tenant_id=TENANT).confidence == pytest.approx(before - 0.2)
        held = mem.get_experience(d, tenant_id=TENANT)
        assert held.status.value == "quarantined"
        assert "harmful" in held.metadata["quarantine_reasons"][-1]
        assert mem.get_experience(e, tenant_id=TENANT).status.value == "active"
        trail = mem.audit_log(tenant_id=TENANT, experience_id=b)
        assert [(r["actor"], r["action"]) for r in trail[:2]] == [
            (f"audit:{run}", "verdict"),
            (f"audit:{run}", "status"),
        ]
        assert trail[0]["reason"] == "order ids are checked upstream"

        changed = mem.audit_verdict(run, a, "needs_edit", tenant_id=TENANT)
        assert changed["counts"] == {"correct": 0, "wrong": 3, "needs_edit": 2}
        with pytest.raises(UsageError, match="only active ones are archived"):
            mem.audit_verdict(run, b, "wrong", tenant_id=TENANT)
        outsider = next(x.id for x in made if x.id not in first["experience_ids"])
        with pytest.raises(UsageError, match="not in the sample"):
            mem.audit_verdict(run, outsider, "correct", tenant_id=TENANT)
        with pytest.raises(UsageError, match="verdict must be one of"):
            mem.audit_verdict(run, a, "maybe", tenant_id=TENANT)
        with pytest.raises(NotFoundError):
            mem.audit_verdict(run, a, "correct", tenant_id="someone-else")
        with pytest.raises(NotFoundError):
            mem.audit_run(run, tenant_id="someone-else")
        assert mem.audit_runs(tenant_id="someone-else") == []

        runs = mem.audit_runs(tenant_id=TENANT)
        assert {r["id"] for r in runs} == {run, again["id"], drawn["id"]}  # one clock tick
        assert mem.audit_run(run, tenant_id=TENANT)["verdicts"][a]["verdict"] == "needs_edit"
        with pytest.raises(UsageError, match="no active lesson"):
            mem.start_audit(tenant_id="empty-tenant")
        mem.forget(tenant_id=TENANT, everything=True)
        assert mem.audit_runs(tenant_id=TENANT) == []
