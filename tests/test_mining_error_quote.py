"""A mined error rule quotes the error as the runs returned it (docs/review.md#condition-mining):
masked of the runs' values, its case kept, and of its numbers only those the runs differ in
shown as ``<number>``: a policy's constant ("2 approvals required") stays, a run's count goes."""

from __future__ import annotations

import json

import pytest

from hindsight import ExperienceKind
from hindsight.testing import test_memory


def _rules(refused_approvals: list[int]) -> list[str]:
    with test_memory() as mem:
        for i in range(12):
            refused = i < len(refused_approvals)
            approvals = refused_approvals[i] if refused else 2 + i % 2
            pid = f"pl-{881 + i * 13}"
            pipeline = {"pipeline_id": pid, "status": "passed", "approvals": approvals}
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
        return [
            e.content
            for e in mem.iter_experiences(tenant_id="ci")
            if e.kind is ExperienceKind.RULE and "the call returned" in e.content
        ]


@pytest.mark.parametrize(
    ("approvals", "said"),
    [
        ([0, 1, 1, 0], "has <number>"),  # the runs differ: a run's value
        ([1, 1, 1, 1], "has 1"),  # the same in every run: part of the error
    ],
)
def test_an_error_rule_quotes_what_the_runs_share(approvals: list[int], said: str) -> None:
    (rule,) = _rules(approvals)
    quote = rule.split("the call returned '")[1].split("'")[0]
    assert quote == f"Deploy to production refused: 2 approvals required, pipeline <pl_id> {said}"
