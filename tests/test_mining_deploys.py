"""Condition mining on one scenario of another domain, production deploys refused below two
approvals (docs/review.md#condition-mining):

* a rule never names who did something: a key naming a person in a role (``author``,
  ``owner``, ``created_by``...) is personal, so when the refused deploys share one author the
  miner writes the condition that held (the approvals), and no lesson quotes the handle;
* a mined error rule quotes the error as the runs returned it, masked of the runs' values, its
  case kept, and of its numbers only those the runs differ in shown as ``<number>``: a policy's
  constant ("2 approvals required") stays, a run's count goes."""

from __future__ import annotations

import json

import pytest

from hindsight import Experience, ExperienceKind
from hindsight.review.masking import personal_key
from hindsight.testing import test_memory

AUTHORS = ["jdoe", "asmith", "kpatel"]


def _deploys(refused_approvals: list[int], key: str = "author") -> list[Experience]:
    """12 deploy runs, the first ones refused with these approvals (all by ``mgarcia``, under
    ``key``), the others deployed with 2 or 3 by other authors; every lesson learned."""
    with test_memory() as mem:
        for i in range(12):
            refused = i < len(refused_approvals)
            approvals = refused_approvals[i] if refused else 2 + i % 2
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
                        f"Error: Deploy to production refused: 2 approvals required, "
                        f"pipeline {pid} has {approvals}",
                    )
                    run.set_outcome("failure")
                else:
                    run.tool_result("deploy", json.dumps({"deployment_id": f"dep-{i}"}))
                    run.set_outcome("success")
        mem.flush()
        return list(mem.iter_experiences(tenant_id="ci"))


@pytest.mark.parametrize("key", ["author", "owner", "created_by", "approvedBy", "assignee"])
def test_a_failure_shared_by_one_author_is_mined_on_what_held(key: str) -> None:
    lessons = _deploys([0, 1, 1, 0], key)
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


@pytest.mark.parametrize(
    ("approvals", "said"),
    [
        ([0, 1, 1, 0], "has <number>"),  # the runs differ: a run's value
        ([1, 1, 1, 1], "has 1"),  # the same in every run: part of the error
    ],
)
def test_an_error_rule_quotes_what_the_runs_share(approvals: list[int], said: str) -> None:
    (rule,) = [
        e.content
        for e in _deploys(approvals)
        if e.kind is ExperienceKind.RULE and "the call returned" in e.content
    ]
    quote = rule.split("the call returned '")[1].split("'")[0]
    assert quote == f"Deploy to production refused: 2 approvals required, pipeline <pl_id> {said}"
