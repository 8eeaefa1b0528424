"""The heuristic reviewer on real tau-bench runs and on crafted ones (issue 2 item 6, C05, C06)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _tau_bench import tau_file, tau_trajectories

from hindsight.capture.ingest import iter_trajectories
from hindsight.models import Event, EventType, ExperienceKind, Outcome, Trajectory
from hindsight.ports import Lesson, Reviewer
from hindsight.review import HeuristicReviewer
from hindsight.review._text import task_summary
from hindsight.review.heuristic._lessons import MAX_LESSON_CHARS

__all__ = ["tau_file", "tau_trajectories"]  # fixtures imported for pytest

REVIEWER = HeuristicReviewer()
CJK = re.compile(r"[\u4e00-\u9fff]")
PAYMENT_QUERY = "book a one-way flight paying with a travel certificate and a credit card"


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def ev(event_type: str, content: str = "", **kw: Any) -> Event:
    return Event(event_type=EventType(event_type), content=content, **kw)


def run(*events: Event, task: str = "", outcome: Outcome = Outcome.UNKNOWN) -> Trajectory:
    return Trajectory(tenant_id="t1", task=task, outcome=outcome, events=list(events))


def tool(name: str, args: dict[str, Any], status: str, output: str) -> list[Event]:
    return [
        ev("tool_call", tool_name=name, tool_args=args),
        ev("tool_result", output, tool_name=name, status=status),
    ]


def of_kind(lessons: list[Lesson], kind: ExperienceKind) -> list[Lesson]:
    return [lesson for lesson in lessons if lesson.kind is kind]


# --- tau-bench -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tau_lessons(tau_trajectories: list[Trajectory]) -> list[tuple[Trajectory, Lesson]]:
    return [(t, lesson) for t in tau_trajectories for lesson in REVIEWER.review_sync(t)]


def test_tau_bench_yields_many_distinct_lessons(
    tau_trajectories: list[Trajectory], tau_lessons: list[tuple[Trajectory, Lesson]]
) -> None:
    distinct = {norm(lesson.content) for _, lesson in tau_lessons}
    assert len(distinct) > 150
    assert len(distinct) / len(tau_trajectories) > 1.0
    per_run = Counter(t.id for t, _ in tau_lessons)
    assert all(per_run[t.id] >= 1 for t in tau_trajectories)
    kinds = Counter(lesson.kind for _, lesson in tau_lessons)
    for kind in (
        ExperienceKind.OUTCOME,
        ExperienceKind.KEY_STEP,
        ExperienceKind.TOOL_RELIABILITY,
        ExperienceKind.IMPROVEMENT,
        ExperienceKind.ANTI_PATTERN,
        ExperienceKind.TASK_SCOPE,
    ):
        assert kinds[kind] > 0, kind
    assert kinds[ExperienceKind.OUTCOME] == 200  # every tau-bench run has a reward


def test_tau_bench_lessons_are_well_formed(tau_lessons: list[tuple[Trajectory, Lesson]]) -> None:
    for traj, lesson in tau_lessons:
        text = lesson.content
        assert text.strip() and norm(text) not in {"none", "null"}
        assert len(text) <= MAX_LESSON_CHARS
        assert "\n" not in text
        assert 0.0 < lesson.confidence <= 1.0 and 0.0 < lesson.importance <= 1.0
        # absolute words make the write guard suspicious; only the quoted task may hold them
        own_words = text.replace(task_summary(traj.task), "").lower().split()
        assert "never" not in own_words and "always" not in own_words
        # personal data of the synthetic users stays out of the lessons
        assert "mia_li_3668" not in text and "1990-04-05" not in text
    reliability = [
        lesson
        for _, lesson in tau_lessons
        if lesson.kind in (ExperienceKind.TOOL_RELIABILITY, ExperienceKind.IMPROVEMENT)
    ]
    assert all(lesson.tools for lesson in reliability)


def payment_lessons(lessons: list[Lesson]) -> list[Lesson]:
    return [
        lesson
        for lesson in lessons
        if "book_reservation" in lesson.content
        and "does not add up" in lesson.content
        and "book_reservation" in lesson.tools
    ]


def test_payment_split_lesson_exists(tau_lessons: list[tuple[Trajectory, Lesson]]) -> None:
    lessons = [lesson for _, lesson in tau_lessons]
    found = [
        lesson
        for lesson in of_kind(payment_lessons(lessons), ExperienceKind.TOOL_RELIABILITY)
        if "certificate" in lesson.content and "credit_card" in lesson.content
    ]
    assert found, "no tool_reliability lesson about book_reservation payment splits"
    text = found[0].content
    assert "payment_methods=[certificate" in text
    assert "add up exactly to the total" in text  # the advice, not only the symptom
    assert "flight_type=one_way" in text


def test_payment_lesson_is_findable_by_the_query(
    tau_lessons: list[tuple[Trajectory, Lesson]],
) -> None:
    """With the offline default embedder, the query ranks a payment-split lesson in the top 5."""
    from hindsight.embedders import HashEmbedder

    unique = list({norm(lesson.content): lesson for _, lesson in tau_lessons}.values())
    embedder = HashEmbedder()
    vectors = embedder.embed([lesson.content for lesson in unique])
    scores = vectors @ embedder.embed([PAYMENT_QUERY])[0]
    top = [unique[i] for i in scores.argsort()[::-1][:5]]
    assert payment_lessons(top), [lesson.content for lesson in top]


def test_review_is_deterministic(tau_file: Path) -> None:
    first = next(iter_trajectories(tau_file, tenant_id="t1"))
    again = next(iter_trajectories(tau_file, tenant_id="t1"))
    assert REVIEWER.review_sync(first) == REVIEWER.review_sync(again)


# --- port ----------------------------------------------------------------------------------------


def test_implements_the_reviewer_port() -> None:
    assert isinstance(REVIEWER, Reviewer)
    assert REVIEWER.name == "heuristic"
    traj = run(ev("user_message", "hi"), *tool("lookup", {"q": "x"}, "failure", "Error: down"))
    assert asyncio.run(REVIEWER.review(traj)) == REVIEWER.review_sync(traj) != []


# --- case C05 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "events",
    [
        [],
        [ev("user_message", "")],
        [ev("user_message", "   \n\t")],
        [ev("user_message", [{"type": "text", "text": ""}])],  # type: ignore[arg-type]
        [ev("user_message", None), ev("final_answer", "")],  # type: ignore[arg-type]
        [ev("model_call", "some chatter"), ev("final_answer", "bye")],  # no user, no tools
    ],
    ids=["empty", "empty-user", "whitespace", "empty-parts", "none", "no-user-no-tools"],
)
def test_content_free_runs_yield_nothing(events: list[Event]) -> None:
    assert REVIEWER.review_sync(run(*events, outcome=Outcome.FAILURE)) == []


def test_none_content_with_tool_calls_is_reviewed() -> None:
    traj = run(
        ev("user_message", "find my order"),
        ev("model_thought", None),  # type: ignore[arg-type]
        *tool("order_query", {}, "success", "shipped"),
        outcome=Outcome.SUCCESS,
    )
    lessons = REVIEWER.review_sync(traj)
    assert lessons and all(lesson.content.strip() for lesson in lessons)
    assert any("order_query" in lesson.content for lesson in lessons)


# --- crafted runs --------------------------------------------------------------------------------


def test_chinese_run_gives_chinese_lessons() -> None:
    task = "用户偏好用 pnpm 而不是 npm"
    traj = run(
        ev("user_message", task + "，请帮我安装依赖"),
        *tool("run_shell", {"cmd": "npm install"}, "failure", "Error: npm is not allowed here"),
        *tool("run_shell", {"cmd": "pnpm install"}, "success", "done"),
        ev("final_answer", "已用 pnpm 安装依赖"),
        task=task,
        outcome=Outcome.SUCCESS,
    )
    lessons = REVIEWER.review_sync(traj)
    assert all(CJK.search(lesson.content) for lesson in lessons)
    assert any(task in lesson.content for lesson in lessons)
    (improvement,) = of_kind(lessons, ExperienceKind.IMPROVEMENT)
    assert "cmd 从 npm install 改为 pnpm install" in improvement.content


def test_failure_then_recovery_gives_improvement_naming_the_change() -> None:
    traj = run(
        ev("user_message", "Book the 9am flight for me"),
        *tool(
            "book_flight",
            {"flight": "UA12", "payment_method": "gift_card_123456", "amount": 80},
            "failure",
            "Error: not enough balance in payment method gift_card_123456",
        ),
        *tool(
            "book_flight",
            {"flight": "UA12", "payment_method": "credit_card_654321", "amount": 80},
            "success",
            '{"booking": "OK1"}',
        ),
        outcome=Outcome.SUCCESS,
    )
    lessons = REVIEWER.review_sync(traj)
    (improvement,) = of_kind(lessons, ExperienceKind.IMPROVEMENT)
    assert improvement.content == (
        "When book_flight failed with 'not enough balance in payment method gift_card_123456', "
        "calling it again with payment_method gift_card -> credit_card worked."
    )
    assert improvement.tools == ["book_flight"]
    (key_step,) = of_kind(lessons, ExperienceKind.KEY_STEP)
    assert "book_flight with flight=UA12, payment_method=credit_card, amount=80" in key_step.content


def test_recovery_with_another_tool() -> None:
    traj = run(
        ev("user_message", "weather in Paris"),
        *tool("search_web", {"query": "paris weather", "lang": "en"}, "failure", "Error: 503"),
        *tool("search_news", {"query": "paris weather", "lang": "en"}, "success", "sunny"),
    )
    (improvement,) = of_kind(REVIEWER.review_sync(traj), ExperienceKind.IMPROVEMENT)
    assert "calling search_news with query=paris weather" in improvement.content
    assert improvement.tools == ["search_web", "search_news"]


def test_repeated_identical_failures_give_anti_pattern() -> None:
    failing = tool("pay", {"amount": 5, "currency": "XYZ"}, "failure", "Error: invalid currency")
    traj = run(ev("user_message", "pay the bill"), *failing, *failing, *failing)
    lessons = REVIEWER.review_sync(traj)
    (anti,) = of_kind(lessons, ExperienceKind.ANTI_PATTERN)
    assert anti.content.startswith(
        "pay was called 3 times with identical arguments (currency=XYZ) and failed "
        "with 'invalid currency' each time"
    )
    (reliability,) = of_kind(lessons, ExperienceKind.TOOL_RELIABILITY)
    assert "pay failed 3 times with 'invalid currency'" in reliability.content
    assert reliability.confidence > 0.7  # repeated evidence raises it
    assert of_kind(lessons, ExperienceKind.IMPROVEMENT) == []


def test_changed_retries_are_not_anti_patterns() -> None:
    traj = run(
        ev("user_message", "pay the bill"),
        *tool("pay", {"amount": 5}, "failure", "Error: invalid amount"),
        *tool("pay", {"amount": 6}, "failure", "Error: invalid amount"),
    )
    assert of_kind(REVIEWER.review_sync(traj), ExperienceKind.ANTI_PATTERN) == []


def test_timeout_gives_tool_reliability_lesson() -> None:
    traj = run(
        ev("user_message", "Where is my order?"),
        *tool("order_query", {"region": "eu"}, "timeout", "request timed out after 30s"),
        *tool("order_query", {"region": "eu"}, "success", '{"status": "shipped"}'),
    )
    lessons = REVIEWER.review_sync(traj)
    (reliability,) = of_kind(lessons, ExperienceKind.TOOL_RELIABILITY)
    assert reliability.content.startswith("order_query timed out when called with region=eu")
    assert "retry" in reliability.content
    (improvement,) = of_kind(lessons, ExperienceKind.IMPROVEMENT)
    assert "retrying it with the same arguments worked" in improvement.content


def test_unrecovered_failure_is_the_failure_cause() -> None:
    traj = run(
        ev("user_message", "Cancel reservation ABC"),
        *tool("cancel_reservation", {"reservation_id": "ABC"}, "failure", "Error: not found"),
        task="Cancel reservation ABC",
        outcome=Outcome.FAILURE,
    )
    lessons = REVIEWER.review_sync(traj)
    (cause,) = of_kind(lessons, ExperienceKind.FAILURE_CAUSE)
    assert cause.content == (
        "For tasks like 'Cancel reservation ABC', the run failed; the direct cause seen was "
        "that cancel_reservation failed with 'not found' and was not recovered."
    )
    (outcome,) = of_kind(lessons, ExperienceKind.OUTCOME)
    assert "the run failed after 1 tool call (1 failed): cancel_reservation." in outcome.content
    (scope,) = of_kind(lessons, ExperienceKind.TASK_SCOPE)
    assert "'Cancel reservation ABC'" in scope.content and "cancel_reservation" in scope.content


def test_results_without_status_are_classified() -> None:
    traj = run(
        ev("user_message", "lookup"),
        ev("tool_call", tool_name="lookup", tool_args={"q": "a"}),
        ev("tool_result", "Traceback (most recent call last):\nKeyError: 'q'", tool_name="lookup"),
    )
    (reliability,) = of_kind(REVIEWER.review_sync(traj), ExperienceKind.TOOL_RELIABILITY)
    assert "lookup failed with 'KeyError: 'q''" in reliability.content


def test_secrets_personal_data_and_huge_outputs_stay_out() -> None:
    args = {
        "api_key": "sk-secret-123",
        "email": "a@b.example",
        "first_name": "Mia",
        "note": "x" * 500,
        "mode": "fast",
    }
    traj = run(
        ev("user_message", "send it"),
        *tool("send_message", args, "failure", "Error: " + "quota exceeded " * 200),
    )
    for lesson in REVIEWER.review_sync(traj):
        for secret in ("sk-secret", "a@b.example", "Mia", "xxxxx"):
            assert secret not in lesson.content
        assert len(lesson.content) <= MAX_LESSON_CHARS
    (reliability,) = of_kind(REVIEWER.review_sync(traj), ExperienceKind.TOOL_RELIABILITY)
    assert "mode=fast" in reliability.content
