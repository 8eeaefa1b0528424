"""Context for the review and task groups
(docs/concepts.md#context-for-the-review-system-prompt-outcome-evidence-task-key): the trajectory's
system prompt, outcome evidence and task key, from the model to the store and every interface."""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from _tau_bench import tau_file, tau_trajectories
from alembic import command
from pydantic import ValidationError
from store_fixtures import store_url  # noqa: F401  (fixture)

from hindsight import (
    BLOCK_START,
    EventType,
    ExpectedAction,
    InvalidTextWarning,
    InvalidTrajectoryError,
    NotFoundError,
    Outcome,
    OutcomeEvidence,
    TenantRequiredError,
    Trajectory,
    UsageError,
)
from hindsight.capture.ingest import iter_trajectories
from hindsight.capture.ingest.records import trajectories_from_record
from hindsight.models import TASK_KEY_MAX_CHARS
from hindsight.store import JobState, SqlStore
from hindsight.store.codec import trajectory_row
from hindsight.store.migrate import alembic_config
from hindsight.store.schema import trajectories
from hindsight.testing import ScriptedReviewer, test_memory
from tests.cli_helpers import assert_one_line_error, cli_json, run_cli
from tests.helpers import lesson

POLICY = "# Policy\nYou are a support agent.\n- Check that payments add up to the total.\n"
OTHER_POLICY = "# Policy\nYou are a travel agent.\n"

__all__ = ["tau_file", "tau_trajectories"]  # fixtures imported for pytest

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


# -- the store ----------------------------------------------------------------------------------


@pytest.fixture
def store(store_url: str) -> Iterator[SqlStore]:  # noqa: F811
    with SqlStore(store_url) as opened:
        yield opened


def run(tenant: str = "acme", **fields: object) -> Trajectory:
    """A one-message run with ``fields`` set."""
    return Trajectory.model_validate(
        {
            "tenant_id": tenant,
            "task": "Where is my order?",
            "events": [{"event_type": "user_message", "content": "Where is my order?"}],
            **fields,
        }
    )


def prompt_rows(store: SqlStore) -> list[tuple[str, str]]:
    with store._tx() as conn:
        return sorted(
            (row[0], row[1])
            for row in conn.execute(sa.text("SELECT tenant_id, sha256 FROM prompts"))
        )


def test_runs_with_one_policy_store_it_once(store: SqlStore) -> None:
    first, second = run(system_prompt=POLICY), run(system_prompt=POLICY)
    third = run(system_prompt=OTHER_POLICY)
    for traj in (first, second, third, run()):
        assert store.add_trajectory(traj)
    sha = hashlib.sha256(POLICY.encode()).hexdigest()
    assert prompt_rows(store) == sorted(
        [("acme", sha), ("acme", hashlib.sha256(OTHER_POLICY.encode()).hexdigest())]
    )
    assert store.get_trajectory("acme", first.id).system_prompt == POLICY
    assert store.get_trajectory("acme", second.id).system_prompt == POLICY
    assert store.get_trajectory("acme", third.id).system_prompt == OTHER_POLICY
    assert store.get_prompt("acme", sha) == POLICY
    listed = {s.id: s.system_prompt_sha256 for s in store.list_trajectories("acme")}
    assert listed[first.id] == listed[second.id] == sha
    assert store.count_prompts("acme") == 2


def test_another_tenant_with_the_same_policy_gets_its_own_row(store: SqlStore) -> None:
    mine, theirs = run("acme", system_prompt=POLICY), run("globex", system_prompt=POLICY)
    store.add_trajectory(mine)
    store.add_trajectory(theirs)
    sha = hashlib.sha256(POLICY.encode()).hexdigest()
    assert prompt_rows(store) == [("acme", sha), ("globex", sha)]
    with pytest.raises(NotFoundError):
        store.get_prompt("initech", sha)
    store.forget("acme", everything=True)
    assert prompt_rows(store) == [("globex", sha)]
    assert store.get_trajectory("globex", theirs.id).system_prompt == POLICY


def test_forget_removes_prompts_no_run_references(store: SqlStore) -> None:
    a, b = run(system_prompt=POLICY), run(system_prompt=POLICY)
    c = run(system_prompt=OTHER_POLICY)
    for traj in (a, b, c):
        store.add_trajectory(traj)
    other = run("globex", system_prompt=OTHER_POLICY)
    store.add_trajectory(other)
    store.forget("acme", trajectory_id=a.id)
    assert store.count_prompts("acme") == 2  # b still uses POLICY
    assert store.get_trajectory("acme", b.id).system_prompt == POLICY
    store.forget("acme", trajectory_id=b.id)
    store.forget("acme", trajectory_id=c.id)
    assert store.count_prompts("acme") == 0
    assert store.count_prompts("globex") == 1  # never shared across tenants
    # A run stored again after its prompt was forgotten brings the prompt back.
    again = run(system_prompt=POLICY)
    store.add_trajectory(again)
    assert store.get_trajectory("acme", again.id).system_prompt == POLICY


def test_forget_waits_for_a_run_being_stored_with_the_same_prompt(store: SqlStore) -> None:
    """PostgreSQL: a forget that would orphan a prompt while another transaction stores a run
    with it waits for that transaction and keeps the prompt (SQLite has one writer)."""
    if store.backend != "postgresql":
        pytest.skip("SQLite serialises writers; the race needs concurrent transactions")
    old, new = run(system_prompt=POLICY), run(system_prompt=POLICY)
    store.add_trajectory(old)
    errors: list[BaseException] = []

    def forget_old() -> None:
        try:
            store.forget("acme", trajectory_id=old.id)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with store._tx(write=True) as conn:
        row = trajectory_row(new, store._now())
        conn.execute(sa.insert(trajectories), row)
        store._keep_prompt(conn, "acme", row["system_prompt_sha256"], new, store._now())
        adder = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        forgetting = threading.Thread(target=forget_old)
        forgetting.start()
        # Commit only once the forget is blocked by this transaction (or has finished).
        blocked = sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE :adder = ANY(pg_blocking_pids(pid))"
        )
        with store._info.engine.connect() as probe:
            probe = probe.execution_options(isolation_level="AUTOCOMMIT")
            while forgetting.is_alive() and not probe.execute(blocked, {"adder": adder}).scalar():
                forgetting.join(0.01)
    forgetting.join()
    assert not errors
    assert store.get_trajectory("acme", new.id).system_prompt == POLICY
    assert store.count_prompts("acme") == 1


def test_merging_a_part_with_another_prompt_drops_the_orphan(store: SqlStore) -> None:
    first = run(system_prompt=POLICY, metadata={"paused": True})
    store.add_trajectory(first)
    resumed = first.model_copy(update={"system_prompt": OTHER_POLICY})
    assert store.add_trajectory(resumed, merge=True)
    assert store.get_trajectory("acme", first.id).system_prompt == OTHER_POLICY
    assert store.count_prompts("acme") == 1
    # A part without a prompt keeps the stored one.
    assert store.add_trajectory(first.model_copy(update={"system_prompt": None}), merge=True)
    assert store.get_trajectory("acme", first.id).system_prompt == OTHER_POLICY
    assert store.count_prompts("acme") == 1


def test_reingest_of_a_stored_run_adds_no_prompt(store: SqlStore) -> None:
    traj = run()
    assert store.add_trajectory(traj)
    # Same id, now with a system prompt (e.g. an old file ingested again by a newer version).
    assert not store.add_trajectory(traj.model_copy(update={"system_prompt": POLICY}))
    assert store.count_prompts("acme") == 0
    assert store.get_trajectory("acme", traj.id).system_prompt is None


def test_evidence_and_task_key_round_trip(store: SqlStore) -> None:
    evidence = OutcomeEvidence(
        reason="reward 0.0; r_actions 0.0",
        expected_actions=[ExpectedAction(tool="refund", args={"order_id": "8812", "amount": 12.5})],
        final_state={"orders": {"8812": {"status": "refunded"}}},
        details={"r_outputs": 1.0, "outputs": ["x"]},
    )
    traj = run(system_prompt=POLICY, evidence=evidence, task_key="7", outcome="failure", reward=0.0)
    store.add_trajectory(traj)
    back = store.get_trajectory("acme", traj.id)
    assert back.model_dump(exclude={"events"}) == traj.model_dump(exclude={"events"})
    assert back.evidence == evidence
    (summary,) = store.list_trajectories("acme")
    assert (summary.task_key, summary.task_key_source) == ("7", "explicit")
    assert summary.has_evidence and summary.reason == "reward 0.0; r_actions 0.0"
    assert summary.review_state is JobState.PENDING and not summary.reviewed
    assert summary.to_json()["outcome"] == "failure"


def test_set_task_key_by_intent_never_replaces_an_explicit_key(store: SqlStore) -> None:
    explicit, loose = run(task_key="task-1"), run()
    store.add_trajectory(explicit)
    store.add_trajectory(loose)
    assert not store.set_task_key("acme", explicit.id, "intent:x", "intent")
    assert store.get_trajectory("acme", explicit.id).task_key == "task-1"
    assert store.set_task_key("acme", loose.id, "task-1", "intent")
    group = store.runs_of_task("acme", "task-1")
    assert [(r.id, r.task_key_source) for r in group] == [
        (explicit.id, "explicit"),
        (loose.id, "intent"),
    ]
    assert store.set_task_key("acme", explicit.id, "task-2", "explicit")
    assert [r.id for r in store.runs_of_task("acme", "task-2")] == [explicit.id]
    with pytest.raises(NotFoundError):
        store.set_task_key("globex", loose.id, "k", "intent")  # another tenant's run
    with pytest.raises(UsageError, match="source must be one of"):
        store.set_task_key("acme", loose.id, "k", "guess")
    with pytest.raises(UsageError, match="blank"):
        store.set_task_key("acme", loose.id, " ", "intent")


def test_list_trajectories_filters_and_is_tenant_scoped(store: SqlStore) -> None:
    runs = [
        run(task_key="A", outcome="success", task_type="refund"),
        run(task_key="A", outcome="failure", task_type="refund"),
        run(task_key="B", outcome="failure", task_type="billing"),
        run(outcome="success"),
    ]
    for traj in runs:
        store.add_trajectory(traj)
    store.add_trajectory(run("globex", task_key="A", outcome="failure", task_type="refund"))
    ids = [t.id for t in runs]

    def listed(**filters: object) -> list[str]:
        return [s.id for s in store.list_trajectories("acme", **filters)]  # type: ignore[arg-type]

    assert listed() == ids
    assert listed(task_key="A") == ids[:2]
    assert listed(task_key="A", outcome=Outcome.FAILURE) == [ids[1]]
    assert listed(outcome="failure") == ids[1:3]
    assert listed(task_type="billing") == [ids[2]]
    assert listed(task_key="nope") == []
    assert listed(limit=2, offset=1) == ids[1:3]
    assert [s.id for s in store.runs_of_task("globex", "A")] != ids[:2]
    assert len(store.runs_of_task("globex", "A")) == 1
    job = store.claim_review_job("worker", lease_seconds=60)
    assert job is not None and job.trajectory_id == ids[0]
    store.complete_review_job(job.id)
    group = store.runs_of_task("acme", "A")
    assert [(g.outcome, g.reviewed) for g in group] == [
        (Outcome.SUCCESS, True),
        (Outcome.FAILURE, False),
    ]
    for bad, words in (
        ({"outcome": "won"}, "outcome must be one of"),
        ({"limit": 0}, "limit must be"),
        ({"offset": -1}, "offset must be"),
        ({"task_key": "x" * 201}, "at most 200"),
    ):
        with pytest.raises(UsageError, match=words):
            store.list_trajectories("acme", **bad)  # type: ignore[arg-type]
    with pytest.raises(TenantRequiredError):
        store.list_trajectories("")


def test_upgrade_from_the_previous_revision_keeps_runs(store_url: str) -> None:  # noqa: F811
    if store_url == "sqlite://":
        pytest.skip("an in-memory database does not outlive its engine")
    url = sa.engine.make_url(store_url)
    if url.drivername.startswith("sqlite"):
        Path(str(url.database)).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(store_url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0003_lesson_links")
        conn.execute(
            sa.text(
                "INSERT INTO trajectories (id, tenant_id, namespace, task, tags, outcome, source,"
                " trust, started_at, metadata, event_count, stored_at) VALUES ("
                "'00000000-0000-4000-8000-000000000001', 'acme', 'default', 'old run', '[]',"
                " 'success', 'user', 1.0, :now, '{}', 0, :now)"
            ),
            {"now": "2026-01-01 00:00:00"},
        )
    engine.dispose()
    with SqlStore(store_url) as store:
        old = store.get_trajectory("acme", "00000000-0000-4000-8000-000000000001")
        assert (old.system_prompt, old.evidence, old.task_key) == (None, None, None)
        assert [s.task_key for s in store.list_trajectories("acme")] == [None]


# -- ingest -------------------------------------------------------------------------------------


def test_tau_bench_ingest_keeps_policy_evidence_and_task_key(
    tau_file: Path, tau_trajectories: list[Trajectory]
) -> None:
    records = json.loads(tau_file.read_text(encoding="utf-8"))
    assert len(records) == len(tau_trajectories) == 200
    for record, traj in zip(records, tau_trajectories, strict=True):
        system = [m["content"] for m in record["traj"] if m["role"] == "system"]
        assert traj.system_prompt == "\n\n".join(system)
        assert traj.metadata["system_prompt_head"] == system[0][:200]  # kept for compatibility
        digest = hashlib.sha256(traj.system_prompt.encode()).hexdigest()[:8]
        assert traj.task_key == f"{record['task_id']}@{digest}"  # task ids are per domain
        info = record["info"]
        actions = info["task"]["actions"]
        assert traj.evidence is not None
        assert [(a.tool, a.args) for a in traj.evidence.expected_actions] == [
            (a["name"], a["kwargs"]) for a in actions
        ]
        reward_info = info.get("reward_info") or {}
        assert traj.evidence.details == (reward_info.get("info") or {})
        if reward_info:
            assert traj.evidence.reason is not None
            assert traj.evidence.reason.startswith(f"reward {reward_info['reward']}")
            for key, value in reward_info["info"].items():
                assert (f"{key} {value}" in traj.evidence.reason) is isinstance(value, float)
    # Ids are derived from the whole record, as before the task key existed: re-ingest adds
    # nothing.
    assert tau_trajectories[0].id == "e55a4d05-382e-5a91-b162-ae25a88cd684"


def test_tau_bench_evidence_is_generic() -> None:
    """Another domain's record: actions only under reward_info, other reward components."""
    record = {
        "task_id": "retail-12",
        "trial": 0,
        "reward": 1.0,
        "info": {
            "task": {"instruction": "..."},
            "reward_info": {
                "reward": 1.0,
                "info": {"r_outputs": 1.0, "outputs": {"10 items": True}, "note": "x"},
                "actions": [{"name": "return_items", "kwargs": {"order_id": "#W1"}}],
            },
        },
        "traj": [
            {"role": "system", "content": "Retail policy."},
            {"role": "user", "content": "Return my order."},
        ],
    }
    (traj,) = trajectories_from_record(record, tenant_id="acme")
    assert traj.task_key.startswith("retail-12@") and traj.system_prompt == "Retail policy."
    assert traj.evidence == OutcomeEvidence(
        reason="reward 1.0; r_outputs 1.0",
        expected_actions=[ExpectedAction(tool="return_items", args={"order_id": "#W1"})],
        details={"r_outputs": 1.0, "outputs": {"10 items": True}, "note": "x"},
    )
    bare = {k: v for k, v in record.items() if k != "info"}
    (plain,) = trajectories_from_record(bare, tenant_id="acme")
    assert plain.evidence is None and plain.task_key == traj.task_key  # same task, same policy


def test_tau_bench_file_stores_one_policy(tau_trajectories: list[Trajectory]) -> None:
    with SqlStore("sqlite://") as store:
        assert all(store.add_trajectory(t) for t in tau_trajectories)
        assert store.count_prompts("t1") == 1
        back = store.get_trajectory("t1", tau_trajectories[7].id)
        assert back.system_prompt == tau_trajectories[7].system_prompt
        assert back.evidence == tau_trajectories[7].evidence
        assert not any(store.add_trajectory(t) for t in tau_trajectories)
        group = store.runs_of_task("t1", tau_trajectories[7].task_key)
        assert len(group) == sum(t.task_key == back.task_key for t in tau_trajectories) > 1


def openai_record(**fields: object) -> dict[str, object]:
    return {
        "messages": [
            {"role": "system", "content": "You are a refund agent."},
            {"role": "developer", "content": [{"type": "text", "text": "Never refund twice."}]},
            {"role": "user", "content": "Refund order 8812."},
            {"role": "assistant", "content": "Done."},
        ],
        **fields,
    }


def test_openai_record_context_fields() -> None:
    (traj,) = trajectories_from_record(
        openai_record(
            task_key="refunds/8812",
            reason="the refund went to the wrong card",
            evidence={
                "expected_actions": [
                    {"tool": "refund", "args": {"order_id": "8812"}},
                    {"name": "notify", "arguments": '{"channel": "email"}'},
                ],
                "final_state": {"refunds": 1},
            },
        ),
        tenant_id="acme",
    )
    assert traj.system_prompt == "You are a refund agent.\n\nNever refund twice."
    assert traj.task_key == "refunds/8812"
    assert traj.evidence == OutcomeEvidence(
        reason="the refund went to the wrong card",
        expected_actions=[
            ExpectedAction(tool="refund", args={"order_id": "8812"}),
            ExpectedAction(tool="notify", args={"channel": "email"}),
        ],
        final_state={"refunds": 1},
    )
    (by_id,) = trajectories_from_record(openai_record(task_id=7), tenant_id="acme")
    assert (by_id.task_key, by_id.metadata["task_id"], by_id.evidence) == ("7", 7, None)
    (odd,) = trajectories_from_record(openai_record(task_id={"n": 1}), tenant_id="acme")
    assert odd.task_key is None and odd.metadata["task_id"] == {"n": 1}


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"task_key": "  "}, "task_key must not be blank"),
        ({"task_key": "k" * 201}, "at most 200"),
        ({"reason": 3}, "reason must be a string"),
        ({"evidence": "failed"}, "evidence must be an object"),
        ({"evidence": {"why": "x"}}, "evidence.why"),
        ({"evidence": {"expected_actions": [{"args": {}}]}}, "has no tool name"),
        ({"evidence": {"expected_actions": [{"tool": "t", "args": [1]}]}}, "must be an object"),
    ],
)
def test_openai_record_bad_context_is_one_clear_line(fields: dict[str, object], words: str) -> None:
    with pytest.raises(InvalidTrajectoryError, match=words) as caught:
        trajectories_from_record(openai_record(**fields), tenant_id="acme", where="request body")
    assert "\n" not in str(caught.value) and "request body" in str(caught.value)


def test_events_format_context_fields(tmp_path: Path) -> None:
    lines = [
        {
            "trajectory_id": "r1",
            "event_type": "user_message",
            "content": "Refund order 8812.",
            "system_prompt": "You are a refund agent.",
            "task_key": "refunds",
            "reason": "timeout",
        },
        {"trajectory_id": "r1", "event_type": "final_answer", "content": "Done."},
        {
            "events": [{"event_type": "user_message", "content": "Refund 1."}],
            "task_id": 3,
            "evidence": {"reason": "ok", "details": {"score": 1}},
        },
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    whole, grouped = iter_trajectories(path, tenant_id="acme")
    assert grouped.system_prompt == "You are a refund agent."
    assert grouped.task_key == "refunds"
    assert grouped.evidence == OutcomeEvidence(reason="timeout")
    assert [e.event_type for e in grouped.events] == [
        EventType.USER_MESSAGE,
        EventType.FINAL_ANSWER,
    ]
    assert whole.task_key == "3"
    assert whole.evidence == OutcomeEvidence(reason="ok", details={"score": 1})


# -- capture ------------------------------------------------------------------------------------


def test_recorder_keeps_system_prompt_task_key_and_evidence() -> None:
    with test_memory() as mem:
        with mem.record(
            "Refund order 8812", tenant_id="acme", system_prompt=POLICY, task_key="refunds"
        ) as recorder:
            recorder.user_message("Refund order 8812")
            recorder.set_outcome(
                "failure",
                0.0,
                reason="refunded to the wrong card",
                expected_actions=[
                    ExpectedAction(tool="refund", args={"order_id": "8812"}),
                    {"name": "notify", "kwargs": {"channel": "email"}},
                ],
                final_state={"refunds": 1},
            )
        stored = mem.get_trajectory(recorder.trajectory_id, tenant_id="acme")
        assert stored.system_prompt == POLICY and stored.task_key == "refunds"
        assert stored.evidence == OutcomeEvidence(
            reason="refunded to the wrong card",
            expected_actions=[
                ExpectedAction(tool="refund", args={"order_id": "8812"}),
                ExpectedAction(tool="notify", args={"channel": "email"}),
            ],
            final_state={"refunds": 1},
        )
        with mem.record("x", tenant_id="acme") as plain:
            plain.system_prompt = OTHER_POLICY  # known only once the run is going on
            plain.set_outcome("success")
        again = mem.get_trajectory(plain.trajectory_id, tenant_id="acme")
        assert (again.system_prompt, again.evidence, again.task_key) == (OTHER_POLICY, None, None)


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda m: m.record("t", tenant_id="a", task_key=""), "task_key must not be blank"),
        (lambda m: m.record("t", tenant_id="a", system_prompt=3), "system_prompt must be a str"),
        (
            lambda m: m.record("t", tenant_id="a").set_outcome("failure", expected_actions="x"),
            "expected_actions must be a list",
        ),
        (
            lambda m: m.record("t", tenant_id="a").set_outcome(
                "failure", expected_actions=[{"args": {}}]
            ),
            "has no tool name",
        ),
        (
            lambda m: m.record("t", tenant_id="a").set_outcome("failure", final_state=[1]),
            "final_state must be a dict",
        ),
    ],
)
def test_recorder_refuses_bad_context(call: Any, words: str) -> None:
    with test_memory() as mem, pytest.raises(UsageError, match=words):
        call(mem)


@pytest.mark.parametrize(
    "action",
    [
        {"name": "notify", "arguments": '{"channel": email}'},
        {"tool": "notify", "args": '{"channel": email}'},
        {"name": "notify", "kwargs": '{"channel": email}'},
    ],
)
def test_recorder_keeps_expected_arguments_that_are_not_json_and_says_so(
    action: dict[str, str],
) -> None:
    with test_memory() as mem:
        with mem.record("t", tenant_id="acme") as recorder:
            recorder.user_message("notify me")
            with pytest.warns(InvalidTextWarning) as caught:
                recorder.set_outcome("failure", expected_actions=[action])
            [said] = [str(w.message) for w in caught]
            assert said == (
                "hindsight: expected_actions[0]: the arguments of expected action 'notify' are "
                "not valid JSON (Expecting value at character 12); kept as text in args._raw"
            )
            assert caught[0].filename == __file__
            with warnings.catch_warnings():  # refused: nothing changed, nothing to say
                warnings.simplefilter("error")
                with pytest.raises(UsageError, match="has no tool name"):
                    recorder.set_outcome("failure", expected_actions=[action, {"args": {}}])
        stored = mem.get_trajectory(recorder.trajectory_id, tenant_id="acme").evidence
        assert stored == OutcomeEvidence(
            expected_actions=[ExpectedAction(tool="notify", args={"_raw": '{"channel": email}'})]
        )


def test_recalled_block_is_not_part_of_the_stored_policy() -> None:
    """Agents put recalled lessons at the tail of their system prompt: the policy is stored once,
    whatever was recalled."""
    with test_memory() as mem:
        mem.add_experience("Check that payments add up to the total.", tenant_id="acme")
        block = mem.recall("payments", tenant_id="acme").render()
        assert block.startswith(BLOCK_START)
        ids = []
        for prompt in (POLICY, f"{POLICY}\n\n{block}", f"{POLICY}\n\n{block}\n\n{block}\n"):
            with mem.record("pay", tenant_id="acme", system_prompt=prompt) as recorder:
                recorder.user_message("pay")
            ids.append(recorder.trajectory_id)
        only_block = run(system_prompt=block)
        mem.store_episode(only_block)
        assert [mem.get_trajectory(i, tenant_id="acme").system_prompt for i in ids] == [POLICY] * 3
        assert mem.get_trajectory(only_block.id, tenant_id="acme").system_prompt is None
        assert mem.aio.store.count_prompts("acme") == 1


# -- interfaces: Python and CLI (HTTP, MCP: tests/server; isolation: tests/isolation_suite.py) --


def test_python_lists_runs_and_lessons_of_a_task_group() -> None:
    with test_memory(reviewer=ScriptedReviewer(lambda t: [lesson(f"Lesson of {t.task}")])) as mem:
        runs = [
            run(task="Refund 1", task_key="refunds", outcome="failure"),
            run(task="Refund 2", task_key="refunds"),
            run(task="Where is 3?"),
            run("globex", task="Refund 4", task_key="refunds"),
        ]
        for traj in runs:
            mem.store_episode(traj, review=False)
            mem.review_now(traj.id, tenant_id=traj.tenant_id)
        listed = mem.list_trajectories(tenant_id="acme", task_key="refunds")
        assert {r.id for r in listed} == {runs[0].id, runs[1].id}
        assert all(r.reviewed and r.task_key_source == "explicit" for r in listed)
        failed = mem.list_trajectories(tenant_id="acme", outcome="failure")
        assert [r.id for r in failed] == [runs[0].id]
        taught = mem.list_experiences(tenant_id="acme", task_key="refunds")
        assert taught and {s for e in taught for s in e.source_trajectory_ids} == {
            runs[0].id,
            runs[1].id,
        }
        # A key assigned later (by intent) applies at once.
        mem.aio.store.set_task_key("acme", runs[2].id, "refunds", "intent")
        again = mem.list_experiences(tenant_id="acme", task_key="refunds")
        assert runs[2].id in {s for e in again for s in e.source_trajectory_ids}
        for bad, words in (
            ({"task_key": ""}, "blank"),
            ({"outcome": "won"}, "outcome must be one of"),
            ({"limit": 0}, "limit must be"),
        ):
            with pytest.raises(UsageError, match=words):
                mem.list_trajectories(tenant_id="acme", **bad)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="blank"):
            mem.list_experiences(tenant_id="acme", task_key=" ")
        with pytest.raises(TenantRequiredError):
            mem.list_trajectories(tenant_id="")


def test_cli_trajectories_list_and_show(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = tmp_path / "runs.jsonl"
    records = [
        openai_record(task_key="refunds", reward=0.0, reason="refunded to the wrong card"),
        openai_record(task_key="refunds", reward=1.0, id="second"),
        openai_record(reward=1.0, id="third"),
    ]
    log.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    for tenant in ("A", "B"):
        done = run_cli("ingest", str(log), "--tenant", tenant, data_dir=data)
        assert done.returncode == 0, done.stderr  # (--no-wait exits 3 while reviews remain)
    listed = cli_json(
        "trajectories", "list", "--tenant", "A", "--task-key", "refunds", data_dir=data
    )["items"]
    # the third run has no key but the same request: the review put it in the group by intent
    assert [(r["task_key"], r["outcome"], r["task_key_source"]) for r in listed] == [
        ("refunds", "failure", "explicit"),
        ("refunds", "success", "explicit"),
        ("refunds", "success", "intent"),
    ]
    assert listed[0]["reason"] == "refunded to the wrong card"
    every = cli_json("trajectories", "list", "--tenant", "A", data_dir=data)["items"]
    assert len(every) == 3 and not {r["id"] for r in every} & {
        r["id"] for r in cli_json("trajectories", "list", "--tenant", "B", data_dir=data)["items"]
    }
    shown = cli_json("trajectories", "show", listed[0]["id"], "--tenant", "A", data_dir=data)
    assert shown["system_prompt"] == "You are a refund agent.\n\nNever refund twice."
    assert shown["evidence"]["reason"] == "refunded to the wrong card"
    text = run_cli("trajectories", "show", listed[0]["id"], "--tenant", "A", data_dir=data)
    assert text.returncode == 0, text.stderr
    for line in ("task_key: refunds", "reason: refunded to the wrong card", "Never refund twice."):
        assert line in text.stdout, text.stdout
    plain = run_cli("trajectories", "list", "--tenant", "A", "--outcome", "failure", data_dir=data)
    assert plain.returncode == 0 and listed[0]["id"] in plain.stdout
    assert "task refunds (explicit)" in plain.stdout
    other = run_cli("trajectories", "show", listed[0]["id"], "--tenant", "B", data_dir=data)
    assert "not found" in assert_one_line_error(other)
    bad = run_cli("trajectories", "list", "--tenant", "A", "--outcome", "won", data_dir=data)
    assert "outcome must be one of" in assert_one_line_error(bad)
