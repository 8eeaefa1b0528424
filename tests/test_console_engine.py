"""Engine additions made for the console (issue 21): dry-run recall and archiving by hand."""

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
