"""A rule never names who did something (docs/review.md#condition-mining): a key naming a
person in a role (``author``, ``owner``, ``created_by``...) is personal, so when the runs that
failed share one author, the miner writes the condition that held (the approvals), not the
author's handle, and no lesson quotes the handle."""

from __future__ import annotations

import json

import pytest

from hindsight import ExperienceKind
from hindsight.review.masking import personal_key
from hindsight.testing import test_memory

AUTHORS = ["jdoe", "asmith", "kpatel"]


@pytest.mark.parametrize("key", ["author", "owner", "created_by", "approvedBy", "assignee"])
def test_a_failure_shared_by_one_author_is_mined_on_what_held(key: str) -> None:
    with test_memory() as mem:
        for i in range(12):
            refused = i < 4  # every refused deploy happens to come from mgarcia
            approvals = [0, 1, 1, 0][i] if refused else 2 + i % 2
            pid = f"pl-{881 + i * 13}"
            pipeline = {
                "pipeline_id": pid,
                "status": "passed",
                "approvals": approvals,
                key: "mgarcia" if refused else AUTHORS[i % 3],
            }
            with mem.record(f"Deploy {pid}", tenant_id="ci", task_key=f"deploy-{pid}") as run:
                run.user_message(f"Deploy pipeline {pid} to production please.")
                run.tool_call("get_pipeline", {"pipeline_id": pid})
                run.tool_result("get_pipeline", json.dumps(pipeline))
                run.tool_call("deploy", {"pipeline_id": pid, "environment": "production"})
                if refused:
                    run.tool_result(
                        "deploy",
                        f"Error: deploy to production refused: 2 approvals required, "
                        f"pipeline {pid} has {approvals}",
                    )
                    run.set_outcome("failure")
                else:
                    run.tool_result("deploy", json.dumps({"deployment_id": f"dep-{i}"}))
                    run.set_outcome("success")
        mem.flush()
        lessons = list(mem.iter_experiences(tenant_id="ci"))
        assert not [e.content for e in lessons if "mgarcia" in e.content]
        rules = [e for e in lessons if e.kind is ExperienceKind.RULE]
        assert rules, [e.content for e in lessons]
        features = {p["feature"] for e in rules for p in e.metadata["condition"]["predicates"]}
        assert features == {"get_pipeline.approvals"}, features


@pytest.mark.parametrize(
    ("key", "personal"),
    [
        ("author", True),
        ("Owner", True),
        ("assigned_to", True),
        ("approved_by", True),
        ("writtenBy", True),
        ("sort_by", False),
        ("ordered_by", False),
        ("partitioned_by", False),
        ("need_by", False),
        ("delivered_by", False),
        ("operator", False),
        ("order_by", False),
        ("group_by", False),
        ("product_owner_team", False),
        ("author_count", False),
    ],
)
def test_keys_naming_a_person_in_a_role(key: str, personal: bool) -> None:
    assert (personal_key(key) is not None) is personal
