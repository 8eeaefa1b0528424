"""Context for the review and task groups (issue 15): the trajectory's system prompt, outcome
evidence and task key, from the model to the store and every interface."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hindsight import ExpectedAction, OutcomeEvidence, Trajectory
from hindsight.models import TASK_KEY_MAX_CHARS

# -- the model ----------------------------------------------------------------------------------


def test_trajectory_context_fields_default_to_none() -> None:
    traj = Trajectory(tenant_id="acme", task="t")
    assert (traj.system_prompt, traj.evidence, traj.task_key) == (None, None, None)


def test_trajectory_keeps_context_fields_as_given() -> None:
    policy = "You are an agent.\n  Rule 1: check the total.  "
    evidence = {
        "reason": "reward 0.0; r_actions 0.0",
        "expected_actions": [{"tool": "book", "args": {"amount": 12.5, "ids": ["a"]}}],
        "final_state": {"orders": {"1": {"status": "open"}}},
        "details": {"r_outputs": 1.0},
    }
    traj = Trajectory.model_validate(
        {"tenant_id": "acme", "system_prompt": policy, "evidence": evidence, "task_key": "T 7"}
    )
    assert traj.system_prompt == policy
    assert traj.task_key == "T 7"
    assert isinstance(traj.evidence, OutcomeEvidence)
    assert traj.evidence.expected_actions == [
        ExpectedAction(tool="book", args={"amount": 12.5, "ids": ["a"]})
    ]
    assert traj.model_dump(mode="json")["evidence"] == evidence


def test_task_key_from_int_and_limits() -> None:
    assert Trajectory(tenant_id="a", task_key=12).task_key == "12"  # type: ignore[arg-type]
    assert Trajectory(tenant_id="a", task_key="k" * TASK_KEY_MAX_CHARS).task_key
    for bad, words in (("  ", "blank"), ("k" * (TASK_KEY_MAX_CHARS + 1), "at most 200")):
        with pytest.raises(ValidationError, match=words):
            Trajectory(tenant_id="a", task_key=bad)
    with pytest.raises(ValidationError, match="must be a string"):
        Trajectory(tenant_id="a", task_key=True)  # type: ignore[arg-type]


def test_blank_system_prompt_is_none_and_parts_are_flattened() -> None:
    assert Trajectory(tenant_id="a", system_prompt=" \n").system_prompt is None
    parts = [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Check totals."}]
    traj = Trajectory(tenant_id="a", system_prompt=parts)  # type: ignore[arg-type]
    assert traj.system_prompt == "Be brief.\nCheck totals."


def test_evidence_rejects_unknown_fields_and_blank_tools() -> None:
    with pytest.raises(ValidationError, match="extra"):
        OutcomeEvidence.model_validate({"why": "x"})
    with pytest.raises(ValidationError, match="tool"):
        ExpectedAction(tool="  ")
    assert OutcomeEvidence().is_empty()
    assert not OutcomeEvidence(reason="timeout").is_empty()
