"""One lesson per subject in what recall returns and in the run-start checks
(docs/concepts.md#recall): the lessons about one tool error (the failure with its advice, the
repeated call, the fix) take one place of a block, not three, and the one shown is the one
more runs stand on (a tie: the better ranked); lessons without a subject are never folded,
whatever their wording."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from hindsight import Memory
from hindsight.checks import RiskCheck, render_risk_section
from hindsight.models import (
    Event,
    EventStatus,
    EventType,
    Experience,
    Outcome,
    RecallHit,
    ScoreBreakdown,
    Trajectory,
)
from hindsight.recall.scoring import one_per_subject
from hindsight.review.heuristic import HeuristicReviewer
from hindsight.testing import test_memory

TENANT = "acme"
ERROR = "export_report:failure:quota exceeded"
QUERY = "export the monthly report for the finance team"

#: three lessons about one error, the most specific (the fix) least confident
SAME_ERROR = {
    "anti_pattern": (
        "When export_report fails with 'quota exceeded', change the arguments before calling "
        "it again: repeating the same export report call failed the same way.",
        0.9,
    ),
    "tool_reliability": (
        "export_report can fail with 'quota exceeded': export the monthly report in smaller "
        "parts for the finance team.",
        0.8,
    ),
    "improvement": (
        "When export_report fails with 'quota exceeded', calling it again with a smaller "
        "report range for the monthly export worked.",
        0.6,
    ),
}
OTHERS = [
    "Confirm the monthly report period with the finance team before the export.",
    "The export of a monthly report needs the finance team's cost centre.",
    "Attach the export of the report to the finance team's ticket.",
    "A monthly report export lists every invoice of the month for finance.",
    "Check that the report export is for the finance team's ledger, not the sales one.",
]


@pytest.fixture
def memory() -> Iterator[tuple[Memory, dict[str, str]]]:
    mem = test_memory()
    ids = {}
    try:
        for kind, (text, confidence) in SAME_ERROR.items():
            ids[kind] = mem.add_experience(
                text, tenant_id=TENANT, kind=kind, tools=["export_report"],
                confidence=confidence, metadata={"subject": ERROR},
            ).id  # fmt: skip
        for i, text in enumerate(OTHERS):
            ids[f"other{i}"] = mem.add_experience(
                text, tenant_id=TENANT, kind="rule", confidence=0.5
            ).id
        yield mem, ids
    finally:
        mem.close()


def _from_rows(mem: Memory, **kw: Any) -> Any:
    """The recall with every candidate scored from its SQL row (the reference path)."""
    fast = mem.aio._recall
    mem.aio._recall = dataclasses.replace(fast, score_from_payload=False)
    try:
        return mem.recall(QUERY, tenant_id=TENANT, record=False, **kw)
    finally:
        mem.aio._recall = fast


@pytest.mark.parametrize("top_k", [1, 2, 3, 5, 8])
def test_one_lesson_per_subject_the_most_specific_in_its_place(
    memory: tuple[Memory, dict[str, str]], top_k: int
) -> None:
    mem, ids = memory
    same = {ids[k] for k in SAME_ERROR}
    result = mem.recall(QUERY, tenant_id=TENANT, top_k=top_k, explain=True, record=False)
    shown = [h.experience.id for h in result.hits]
    assert len(shown) == min(top_k, 1 + len(OTHERS)), shown  # the places are filled
    assert len(set(shown) & same) <= 1, shown
    reasons = {e.experience_id: e.reason for e in result.excluded}
    for lesson in same - set(shown):
        assert reasons[lesson].startswith(("about the same subject as", "below the top")), reasons
    # the same answer, and the same reasons, from the payloads and from the rows
    slow = _from_rows(mem, top_k=top_k, explain=True)
    assert [h.experience.id for h in slow.hits] == shown
    assert slow.excluded == result.excluded


def test_the_subject_takes_the_place_of_its_best_ranked_lesson(
    memory: tuple[Memory, dict[str, str]],
) -> None:
    """Lessons written by hand stand on no run: equal runs, so the fix is shown, in the place
    of the subject's best-ranked lesson."""
    mem, ids = memory
    with_subject = mem.recall(QUERY, tenant_id=TENANT, top_k=5, record=False)
    for kind in SAME_ERROR:
        mem.edit_experience(ids[kind], tenant_id=TENANT, metadata={})
    without = mem.recall(QUERY, tenant_id=TENANT, top_k=5, record=False)
    same = [ids[k] for k in SAME_ERROR]
    first = next(i for i, h in enumerate(without.hits) if h.experience.id in same)
    assert with_subject.hits[first].experience.id == ids["improvement"]
    # without a subject, lessons that read alike are separate lessons, each recalled
    every = mem.recall(QUERY, tenant_id=TENANT, top_k=8, record=False)
    assert set(same) <= {h.experience.id for h in every.hits}


def _uid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def _hit(
    lesson: str, subject: str | None, runs: int, score: float, kind: str = "tool_reliability"
) -> RecallHit:
    exp = Experience(
        id=_uid(lesson), tenant_id=TENANT, kind=kind, content=f"lesson {lesson}",
        source_trajectory_ids=[f"run-{i}" for i in range(runs)],
        metadata={} if subject is None else {"subject": subject},
    )  # fmt: skip
    breakdown = ScoreBreakdown(
        similarity=0.5, confidence=0.5, recency=1.0, trust=1.0, boost=0.0, weights={},
        age_days=0.0, namespace="default", mode="vector",
    )  # fmt: skip
    return RecallHit(experience=exp, score=score, breakdown=breakdown)


@pytest.mark.parametrize(
    ("hits", "top_k", "shown", "reasons"),
    [
        # the lesson more runs stand on, in the place of its subject's first
        (
            [("fix", "s", 1), ("plain", None, 0), ("failure", "s", 5), ("other", "t", 2)],
            3,
            ["failure", "plain", "other"],
            {"fix": "about the same subject as failure"},
        ),
        # a tie: the better ranked
        (
            [("a", "s", 2), ("b", "s", 2), ("c", None, 0)],
            3,
            ["a", "c"],
            {"b": "about the same subject as a"},
        ),
        # repeats free places for the next lessons; what is left is below the top
        (
            [("a", "s", 1), ("b", "s", 1), ("c", "s", 1), ("d", None, 0), ("e", None, 0)],
            2,
            ["a", "d"],
            {"b": "about the same subject", "c": "about the same subject", "e": "below the"},
        ),
        # no subjects: the first top_k, as before
        ([("a", None, 1), ("b", None, 9), ("c", None, 3)], 2, ["a", "b"], {"c": "below the"}),
    ],
)
def test_one_per_subject_keeps_the_lesson_more_runs_stand_on(
    hits: list[tuple[str, str | None, int]],
    top_k: int,
    shown: list[str],
    reasons: dict[str, str],
) -> None:
    given = [
        _hit(name, subject, runs, 1.0 - i / 10) for i, (name, subject, runs) in enumerate(hits)
    ]
    kept, excluded = one_per_subject(given, top_k, lambda more: list(more))
    names = {_uid(name): name for name, _, _ in hits}
    assert [names[h.experience.id] for h in kept] == shown
    why = {names[e.experience_id]: e.reason for e in excluded}
    for uid, name in names.items():
        why = {k: v.replace(uid, name) for k, v in why.items()}
    assert set(why) == set(reasons)
    for lesson, reason in reasons.items():
        assert why[lesson].startswith(reason), why


@pytest.mark.parametrize(
    ("fix_runs", "repeat_runs", "shown"),
    [
        (3, 3, "fix"), (2, 3, "fix"), (4, 3, "fix"), (2, 2, "fix"), (1, 3, "repeat"),
        (1, 1, "failure"), (1, 2, "failure"),
    ],
    ids=["tie", "two-of-three", "more", "fewer-repeats", "one-of-three", "one-each", "one-two"],
)  # fmt: skip
def test_the_fix_stands_for_the_subject_when_half_the_runs_found_it(
    fix_runs: int, repeat_runs: int, shown: str
) -> None:
    """The failure (3 runs) is seen by every run that met the error, a fix only by those that
    got through: a fix that at least half of them found is shown; fewer: the repeated call when
    every run that saw the error called again in vain (it has the failure's advice, and says
    that calling again did not help), else the failure (with its advice)."""
    hits = [
        _hit("repeat", "s", repeat_runs, 0.9, kind="anti_pattern"),
        _hit("failure", "s", 3, 0.8, kind="tool_reliability"),
        _hit("fix", "s", fix_runs, 0.7, kind="improvement"),
    ]
    kept, _ = one_per_subject(hits, 3, lambda more: list(more))
    assert [h.experience.id for h in kept] == [_uid(shown)]


@pytest.mark.parametrize("subject", [5, "", None, ["a"], {"x": 1}])
def test_only_a_non_empty_string_is_a_subject(subject: Any) -> None:
    with test_memory() as mem:
        for kind, (text, confidence) in SAME_ERROR.items():
            mem.add_experience(
                text, tenant_id=TENANT, kind=kind, tools=["export_report"],
                confidence=confidence, metadata={"subject": subject},
            )  # fmt: skip
        result = mem.recall(QUERY, tenant_id=TENANT, top_k=5, record=False)
        assert all(h.experience.subject is None for h in result.hits)
        assert len(result.hits) == 3  # none folded


def test_run_start_checks_show_a_subject_once_and_not_again_after_the_lessons(
    memory: tuple[Memory, dict[str, str]],
) -> None:
    mem, ids = memory
    same = {ids[k] for k in SAME_ERROR}
    # no hits (a floor nothing passes): the checks show the subject once
    only_checks = mem.recall(
        QUERY, tenant_id=TENANT, tools=["export_report"], similarity_floor=0.99, record=False
    )
    assert not only_checks.hits
    assert len(set(only_checks.risk_lesson_ids) & same) == 1
    assert only_checks.risk_section.count("quota exceeded") == 1
    # the subject among the lessons: no check repeats it
    both = mem.recall(QUERY, tenant_id=TENANT, tools=["export_report"], top_k=8, record=False)
    assert len({h.experience.id for h in both.hits} & same) == 1
    assert not set(both.risk_lesson_ids) & same
    assert "quota exceeded" not in both.risk_section


def _check(lesson: str, kind: str, subject: str | None, confidence: float, runs: int) -> RiskCheck:
    return RiskCheck(
        id=f"{lesson}:t", tool="t", advice=f"advice {lesson}", lesson_id=lesson,
        lesson_kind=kind, severity="medium", confidence=confidence, subject=subject,
        sources=[f"run-{i}" for i in range(runs)],
    )  # fmt: skip


@pytest.mark.parametrize("per_tool", [1, 2, 3])
def test_render_risk_section_one_check_per_subject(per_tool: int) -> None:
    checks = {
        "t": [
            _check("repeat", "anti_pattern", "s", 0.9, 2),
            _check("failure", "tool_reliability", "s", 0.8, 6),
            _check("plain", "rule", None, 0.7, 0),
            _check("fix", "improvement", "s", 0.5, 1),
            _check("other", "tool_reliability", "s2", 0.4, 1),
        ]
    }
    _, ids = render_risk_section(checks, token_budget=500, per_tool=per_tool)
    assert ids == ["failure", "plain", "other"][:per_tool]
    _, ids = render_risk_section(checks, token_budget=500, per_tool=3, shown_subjects=["s"])
    assert ids == ["plain", "other"]


def _export_run(calls: list[tuple[int, EventStatus, str]], outcome: Outcome) -> Trajectory:
    events = [Event(event_type=EventType.USER_MESSAGE, content="Export the monthly report")]
    for i, (rows, status, out) in enumerate(calls):
        events += [
            Event(event_type=EventType.TOOL_CALL, tool_name="export_report",
                  tool_args={"rows": rows}, tool_call_id=f"c{i}"),
            Event(event_type=EventType.TOOL_RESULT, tool_name="export_report",
                  tool_call_id=f"c{i}", status=status, content=out),
        ]  # fmt: skip
    return Trajectory(
        tenant_id=TENANT, task="Export the monthly report", events=events, outcome=outcome
    )


QUOTA = (5000, EventStatus.FAILURE, "Error: quota exceeded")


@pytest.mark.parametrize("gave_up", [0, 3])
def test_the_heuristic_review_gives_the_lessons_of_one_error_one_subject(gave_up: int) -> None:
    """A run that repeated a failing call and then fixed it: its failure, repeat and fix
    lessons share the subject, and a recall shows one of them; when more runs saw the error
    (and gave up), the failure lesson they all stand on is the one."""
    fixed = _export_run([QUOTA, QUOTA, (500, EventStatus.SUCCESS, '{"ok": true}')], Outcome.SUCCESS)
    lessons = HeuristicReviewer().review_sync(fixed)
    kinds = {lesson.kind.value for lesson in lessons}
    assert {"tool_reliability", "anti_pattern", "improvement"} <= kinds, kinds
    assert {lesson.metadata["subject"] for lesson in lessons} == {ERROR}
    with test_memory() as mem:
        mem.store_episode(fixed)
        for _ in range(gave_up):
            mem.store_episode(_export_run([QUOTA], Outcome.FAILURE))
        assert mem.flush(timeout=60)
        result = mem.recall(
            "Export the monthly report", tenant_id=TENANT, tools=["export_report"], record=False
        )
        about = [
            line
            for line in [h.experience.content for h in result.hits] + [result.risk_section]
            if "quota exceeded" in line
        ]
        assert len(about) == 1, about
        if gave_up:
            assert "export_report can fail with 'quota exceeded'" in about[0], about


def test_a_check_that_outweighs_the_lesson_of_its_subject_takes_its_place() -> None:
    """The lesson recalled for a subject is the repeated call (its words fit the request), the
    fix is not a candidate (its words do not): the run-start check shows the fix, the
    repeated call is left out, and the block says the thing once."""
    with test_memory() as mem:
        repeat = mem.add_experience(
            "When export_report fails with 'quota exceeded', change the monthly report export "
            "arguments before calling it again.",
            tenant_id=TENANT, kind="anti_pattern", tools=["export_report"], confidence=0.9,
            metadata={"subject": ERROR},
        )  # fmt: skip
        fix = mem.add_experience(
            "When export_report fails with 'quota exceeded', calling export_csv instead worked.",
            tenant_id=TENANT, kind="improvement", tools=["export_report"], confidence=0.6,
            metadata={"subject": ERROR},
        )  # fmt: skip
        # a floor between the two: the repeated call is a candidate, the fix is not
        first = mem.recall(QUERY, tenant_id=TENANT, explain=True, record=False)
        near = {h.experience.id: h.breakdown.similarity for h in first.hits}
        near.update({e.experience_id: e.similarity for e in first.excluded})
        assert near[repeat.id] > near[fix.id], near  # the premise: its words fit better
        floor = (near[repeat.id] + near[fix.id]) / 2
        result = mem.recall(
            QUERY, tenant_id=TENANT, tools=["export_report"], explain=True, record=False,
            similarity_floor=floor,
        )  # fmt: skip
        assert fix.id in result.risk_lesson_ids, result.risk_section
        assert repeat.id not in [h.experience.id for h in result.hits]
        [why] = [e.reason for e in result.excluded if e.experience_id == repeat.id]
        assert why == f"about the same subject as the run-start check of {fix.id}"
        assert result.render().count("quota exceeded") == 1
        # without tools there are no checks: the repeated call is the subject's lesson
        plain = mem.recall(QUERY, tenant_id=TENANT, record=False, similarity_floor=floor)
        assert repeat.id in [h.experience.id for h in plain.hits]


@pytest.mark.parametrize(
    ("status", "reply", "wrong"),
    [
        ("timeout", "timed out contacting the insurer", "retry once"),
        (None, "Error: insurer gateway timed out", "retry once"),
        ("failure", "Error: insurer returned 503", None),
    ],
)
@pytest.mark.parametrize("runs", [1, 2])
def test_when_every_run_called_again_in_vain_the_block_says_so(
    status: str | None, reply: str, wrong: str | None, runs: int
) -> None:
    """Runs that called a failing tool again and failed the same way: the block holds the
    lesson that says so (do not repeat it, fall back), not advice those runs contradict."""
    with test_memory() as mem:
        for i in range(runs):
            with mem.record(f"Verify insurance of member {i}", tenant_id=TENANT) as run:
                run.user_message("Please verify my insurance before the refill")
                for _ in range(2):
                    call = run.tool_call("check_insurance", {"member": f"m-{i}"})
                    run.tool_result(
                        content=reply,
                        tool_call_id=call.tool_call_id,
                        **({"status": status} if status else {}),
                    )
                run.set_outcome("failure")
        assert mem.flush(timeout=60)
        block = mem.recall("verify the insurance of a member", tenant_id=TENANT).render()
        assert "check_insurance" in block and "do not repeat the same call" in block, block
        if wrong:
            assert wrong not in block, block
