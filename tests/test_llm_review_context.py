"""What the LLM reviewer sends and keeps (docs/review.md): the policy passages and the outcome
evidence in the single-run request, both runs in the contrastive request, the replies as
general lessons with the write-back contract, and malformed replies failing visibly.

The model is a real OpenAI-compatible HTTP server on loopback (``tests/llm_server.py``, its own
process, scripted replies); the requests it received are read back from it. The policy is of an
invented domain (a library's lending desk) so that nothing can pass by airline vocabulary.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from hindsight.models import (
    Event,
    EventType,
    ExpectedAction,
    ExperienceKind,
    Outcome,
    OutcomeEvidence,
    Trajectory,
)
from hindsight.review import CombinedReviewer, HeuristicReviewer, ReportParseError
from hindsight.review.llm.contrast import CONTRAST_PROMPT_VERSION, CONTRAST_SYSTEM_PROMPT
from hindsight.review.llm.prompts import PROMPT_VERSION, SYSTEM_PROMPT
from hindsight.review.llm.reviewer import DEFAULT_MAX_TOKENS, LLMReviewer
from hindsight.review.masking import masker_for
from hindsight.writeback.text import dedup_key
from tests.helpers import tool_step
from tests.llm_server import Server, contrast_report_for, report_for, serve

MODEL = "openai/review-model"

# A policy long enough that a small budget shows only part of it: filler sections that no run
# below touches, and the two passages the runs are about.
FILLER = "\n\n".join(
    f"## Branch {name}\n\n- The {name} branch opens at nine and closes at six on weekdays.\n"
    f"- Study rooms at {name} are booked at the front desk, never by phone."
    for name in (
        "Northgate",
        "Riverside",
        "Old Town",
        "Harbour",
        "Hillcrest",
        "Meadow",
        "Southbank",
        "Eastfield",
        "Westbrook",
        "Lakeside",
        "Castle Hill",
        "Mill Lane",
        "Station Road",
        "Queensway",
        "Parkside",
        "Brookvale",
    )
)
POLICY = f"""\
# Lending desk policy

You help members borrow, renew and return items.

## Renewals

- A loan can be renewed at most twice: a third renewal must be refused and the member told
  to return the item.
- Before renew_loan, check get_holds: a title on hold by another member cannot be renewed.

{FILLER}

## Damaged items

- Log damage with report_damage before check_in, and never waive the replacement fee yourself.
"""
RENEWAL_PASSAGE = "A loan can be renewed at most twice"
HOLDS_PASSAGE = "Before renew_loan, check get_holds"
UNTOUCHED = "Study rooms at Harbour"


def masked(*runs: Any) -> Any:
    """The lesson masker of ``runs``: the LLM reviewer stores its lessons masked, like the
    heuristic reviewer's (docs/review.md#masking)."""
    masker = masker_for(list(runs))
    return lambda text: masker.mask(text).strip()


def renewal(ticket: str, *, ok: bool, marker: str = "") -> Trajectory:
    """A renewal run about ``ticket``: the failed one renews without checking holds."""
    ask = f"Ticket {ticket}: please renew my loan L-4471 again. {marker}".strip()
    events = [Event(event_type=EventType.USER_MESSAGE, content=ask)]
    if ok:
        events += tool_step("get_holds", {"loan_id": "L-4471"}, "success", '{"holds": 1}')
        events += [Event(event_type=EventType.FINAL_ANSWER, content="It is on hold; return it.")]
    else:
        events += tool_step(
            "renew_loan",
            {"loan_id": "L-4471", "member_id": "M-20931"},
            "failure",
            "Error: renewal refused: the title is on hold",
        )
        events += [Event(event_type=EventType.FINAL_ANSWER, content="Renewal failed, sorry.")]
    evidence = OutcomeEvidence(
        reason="reward 0.0 (r_actions 0.0): the loan was renewed against policy",
        expected_actions=[ExpectedAction(tool="get_holds", args={"loan_id": "L-4471"})],
        final_state={"loans": {"L-4471": {"renewals": 2, "on_hold": True}}},
    )
    return Trajectory(
        tenant_id="acme",
        task=ask,
        outcome=Outcome.SUCCESS if ok else Outcome.FAILURE,
        reward=1.0 if ok else 0.0,
        events=events,
        system_prompt=POLICY,
        evidence=None if ok else evidence,
    )


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve() as running:
        yield running


def reviewer(server: Server, **kw: Any) -> LLMReviewer:
    kw.setdefault("backoff", 0.0)
    kw.setdefault("timeout", 20.0)
    return LLMReviewer(MODEL, api_base=server.base, **kw)


def last_body(server: Server) -> dict[str, Any]:
    return server.bodies()[-1]


def user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def between(text: str, tag: str) -> str:
    return text[text.index(f"<{tag}>\n") + len(tag) + 3 : text.index(f"\n</{tag}>")]


# -- the single-run request ------------------------------------------------------------------


def test_single_run_request_shows_the_touched_policy_passages_and_the_evidence(
    server: Server,
) -> None:
    run = renewal("T-101", ok=False)
    rev = reviewer(server, max_input_tokens=700)
    lessons = rev.review_sync(run)

    body = last_body(server)
    assert body["response_format"]["json_schema"]["name"] == "ReviewReport"
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS and body["temperature"] == 0.2
    assert body["messages"][0]["content"] == SYSTEM_PROMPT
    text = user_text(body)
    policy = between(text, "policy")
    assert RENEWAL_PASSAGE in policy and HOLDS_PASSAGE in policy  # what the run touched
    assert "## Lending desk policy > Renewals" in policy
    assert UNTOUCHED not in policy  # the budget went to passages by rank
    outcome = between(text, "outcome")
    assert outcome.startswith("Recorded outcome: failure (reward 0)")
    assert "Reason: reward 0.0 (r_actions 0.0): the loan was renewed against policy" in outcome
    assert '1. get_holds {"loan_id": "L-4471"}' in outcome
    assert 'Final state: {"loans": {"L-4471": {"on_hold": true, "renewals": 2}}}' in outcome
    assert "renew_loan" in between(text, "trajectory")
    # the three blocks fit the reviewer's budget, counted with its tokenizer
    shown = [policy, outcome, between(text, "trajectory")]
    assert sum(rev.count_tokens(block) for block in shown) <= 700

    # the reply: general answers as lessons with the write-back contract, the rest in the
    # episode
    report = report_for("T-101", chinese=False)
    kinds = [le.kind for le in lessons]
    assert kinds[-1] is ExperienceKind.EPISODE
    assert not {ExperienceKind.OUTCOME, ExperienceKind.KEY_STEP, ExperienceKind.TASK_SCOPE} & set(
        kinds
    )
    mask = masked(run)
    assert {le.content for le in lessons[:-1]} == {
        mask(report["failing_tools"]["text"]),
        mask(report["repeated_attempts"]["text"]),
        mask(report["do_differently"]["text"]),
        *(mask(r["text"]) for r in report["rules"]),
    }
    for lesson in lessons[:-1]:
        assert lesson.metadata["prompt_version"] == PROMPT_VERSION
        assert lesson.metadata["lesson_key"] == "text:" + dedup_key(lesson.content)
        assert lesson.metadata["support"] == [
            {"trajectory_id": run.id, "polarity": 1, "role": "reviewed_run"}
        ]
    episode = lessons[-1].content
    assert episode.startswith(report["episode"])
    assert f"Outcome: {report['outcome']['text']}" in episode


def test_short_policy_is_sent_whole(server: Server) -> None:
    short = "# Desk\n\n- Renew at most twice.\n- Check holds first."
    run = renewal("T-102", ok=False).model_copy(update={"system_prompt": short})
    reviewer(server).review_sync(run)
    assert between(user_text(last_body(server)), "policy") == short


def test_a_run_without_policy_or_evidence_gets_no_empty_blocks(server: Server) -> None:
    run = renewal("T-103", ok=False).model_copy(update={"system_prompt": None, "evidence": None})
    reviewer(server).review_sync(run)
    text = user_text(last_body(server))
    assert "<policy>" not in text
    assert between(text, "outcome") == "Recorded outcome: failure (reward 0)"


# -- the contrastive request -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_contrast_request_holds_both_runs_and_the_rules_become_lessons(
    server: Server, mode: str
) -> None:
    failed, success = renewal("T-201", ok=False), renewal("T-202", ok=True)
    rev = reviewer(server, max_input_tokens=900)
    if mode == "sync":
        lessons = rev.contrast_sync(failed, success)
    else:
        lessons = asyncio.run(rev.contrast(failed, success))

    body = last_body(server)
    assert body["response_format"]["json_schema"]["name"] == "ContrastReport"
    assert body["messages"][0]["content"] == CONTRAST_SYSTEM_PROMPT
    assert len(body["messages"]) == 2 and body["max_tokens"] == DEFAULT_MAX_TOKENS
    text = user_text(body)
    failed_text, success_text = between(text, "failed_run"), between(text, "successful_run")
    assert "renew_loan" in failed_text and "renewal refused" in failed_text
    assert "T-201" in failed_text and "T-202" not in failed_text
    assert "get_holds" in success_text and "T-202" in success_text
    policy = between(text, "policy")
    assert HOLDS_PASSAGE in policy  # the differing calls: renew_loan vs get_holds
    assert UNTOUCHED not in policy
    assert "Reason: reward 0.0" in between(text, "outcome")  # the failed run's evidence
    assert (
        sum(rev.count_tokens(between(text, t)) for t in ("policy", "outcome"))
        + sum(rev.count_tokens(t) for t in (failed_text, success_text))
        <= 900
    )

    report = contrast_report_for("T-201")  # the server answers about the failed run
    mask = masked(failed, success)
    assert [(le.kind, le.content, le.confidence) for le in lessons] == [
        (ExperienceKind.RULE, mask(r["text"]), r["confidence"]) for r in report["rules"]
    ]
    [rule] = lessons
    assert rule.sources == [failed.id, success.id]
    assert rule.tools == []  # the scripted rule names tools of neither run
    assert rule.metadata["prompt_version"] == CONTRAST_PROMPT_VERSION
    assert rule.metadata["question"] == "contrast"
    assert rule.metadata["lesson_key"] == "text:" + dedup_key(rule.content)
    assert rule.metadata["support"] == [
        {"trajectory_id": failed.id, "polarity": 1, "role": "failed_with_difference"},
        {"trajectory_id": success.id, "polarity": 1, "role": "reference_success"},
    ]
    assert rule.metadata["reference"] == "run"
    assert rule.metadata["contrast"] == {
        "differences": [mask(d) for d in report["differences"]],
        "turning_point": mask(report["turning_point"]),
    }


def test_contrast_with_the_expected_actions(server: Server) -> None:
    failed = renewal("T-301", ok=False)
    expected = [
        ExpectedAction(tool="get_holds", args={"loan_id": "L-4471"}),
        ExpectedAction(tool="notify_member", args={"member_id": "M-20931", "template": "hold"}),
    ]
    [rule] = reviewer(server).contrast_sync(failed, expected)
    text = user_text(last_body(server))
    assert "<successful_run>" not in text
    assert between(text, "expected_actions") == (
        '1. get_holds {"loan_id": "L-4471"}\n'
        '2. notify_member {"member_id": "M-20931", "template": "hold"}'
    )
    assert "Expected actions" not in between(text, "outcome")  # shown once, as the reference
    assert rule.sources == [failed.id]
    assert rule.metadata["reference"] == "expected_actions"
    assert rule.metadata["support"] == [
        {"trajectory_id": failed.id, "polarity": 1, "role": "failed_with_difference"}
    ]


def test_malformed_contrast_reply_is_retried_once_then_fails_visibly(server: Server) -> None:
    failed = renewal("T-401", ok=False, marker="MALFORMED")
    before = server.requests()["count"]
    with pytest.raises(ReportParseError) as info:
        reviewer(server).contrast_sync(failed, renewal("T-402", ok=True))
    assert server.requests()["count"] - before == 2  # the one re-ask, with the error
    retry = last_body(server)["messages"]
    assert retry[-1]["content"].startswith("Your reply could not be used")
    assert retry[-2] == {
        "role": "assistant",
        "content": "I'm sorry, but I can't produce a review of this conversation.",
    }
    assert "also after a retry" in str(info.value)
    assert info.value.problem.endswith("(first reply: the reply holds no JSON object)")


def test_empty_sides_are_not_sent(server: Server) -> None:
    before = server.requests()["count"]
    empty = Trajectory(tenant_id="acme")
    assert reviewer(server).contrast_sync(empty, renewal("T-501", ok=True)) == []
    assert reviewer(server).contrast_sync(renewal("T-502", ok=False), []) == []
    assert server.requests()["count"] == before


def test_both_reviewer_contrasts_with_each_part_that_can(server: Server) -> None:
    failed, success = renewal("T-601", ok=False), renewal("T-602", ok=True)
    both = CombinedReviewer([HeuristicReviewer(), reviewer(server)])
    lessons = asyncio.run(both.contrast(failed, success))
    rules = [r["text"] for r in contrast_report_for("T-601")["rules"]]
    llm_rules = [masked(failed, success)(r) for r in rules]
    assert [le.content for le in lessons if le.metadata.get("model") == MODEL] == llm_rules
    assert all(le.kind is ExperienceKind.RULE for le in lessons)
    assert len({le.content for le in lessons}) == len(lessons)
    # expected actions: only the LLM part (the heuristic compares with them in its review)
    expected = [ExpectedAction(tool="get_holds", args={"loan_id": "L-4471"})]
    only_llm = asyncio.run(both.contrast(failed, expected))
    assert [le.content for le in only_llm] == [masked(failed)(r) for r in rules]


def test_through_the_memory_the_stored_policy_and_evidence_reach_the_model(
    server: Server, tmp_path: Any
) -> None:
    """The review job reads the run back from the store: its system prompt and evidence are
    what the model is shown; the general lessons are stored, the rest is the episode."""
    from hindsight import Memory
    from hindsight.testing import FakeEmbedder

    run = renewal("T-701", ok=False)
    with Memory(
        data_dir=tmp_path,
        reviewer=reviewer(server, max_input_tokens=700),
        embedder=FakeEmbedder(64),
    ) as mem:
        assert mem.store_episode(run)["review_queued"]
        assert mem.flush(timeout=60)
        [job] = mem.review_jobs()
        assert job.state.value == "succeeded", job.last_error
        text = user_text(last_body(server))
        assert HOLDS_PASSAGE in between(text, "policy")
        assert "Reason: reward 0.0 (r_actions 0.0)" in between(text, "outcome")
        stored = mem.list_experiences(tenant_id="acme", limit=100)
    report = report_for("T-701", chinese=False)
    kinds = {e.kind for e in stored}
    assert ExperienceKind.EPISODE in kinds and ExperienceKind.OUTCOME not in kinds
    rules = {e.content: e for e in stored if e.kind is ExperienceKind.RULE}
    single = {masked(run)(r["text"]) for r in report["rules"]}
    assert single <= set(rules)
    # the run's evidence lists the expected actions: the review run also compared them
    # (contrastive prompt), and only that comparison wrote the other rules
    contrasted = [rules[c] for c in set(rules) - single]
    assert contrasted and all(
        e.metadata["prompt_version"] == "contrast-v2"
        and e.metadata["reference"] == "expected_actions"
        for e in contrasted
    )
    for exp in stored:
        if exp.kind is not ExperienceKind.EPISODE:
            assert exp.metadata["lesson_key"] == "text:" + dedup_key(exp.content)
