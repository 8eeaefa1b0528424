"""The heuristic reviewer on real tau-bench runs and on crafted ones (empty, odd, malformed)."""

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


def test_tau_bench_lessons_are_general_not_restatements(
    tau_trajectories: list[Trajectory], tau_lessons: list[tuple[Trajectory, Lesson]]
) -> None:
    kinds = Counter(lesson.kind for _, lesson in tau_lessons)
    # what only restates a run is its episode, not a lesson
    for kind in (ExperienceKind.OUTCOME, ExperienceKind.KEY_STEP, ExperienceKind.TASK_SCOPE):
        assert kinds[kind] == 0, kind
    for kind in (
        ExperienceKind.TOOL_RELIABILITY,
        ExperienceKind.IMPROVEMENT,
        ExperienceKind.ANTI_PATTERN,
    ):
        assert kinds[kind] > 0, kind
    keys = {str(lesson.metadata["lesson_key"]) for _, lesson in tau_lessons}
    # the same failure seen in many runs is one lesson key, not one lesson per run
    assert len(keys) < len(tau_lessons) / 2
    for traj, lesson in tau_lessons:
        opener = task_summary(traj.task)
        assert opener.lower() not in lesson.content.lower()
        assert lesson.metadata["support"][0]["trajectory_id"] == traj.id


def test_tau_bench_lessons_are_well_formed(tau_lessons: list[tuple[Trajectory, Lesson]]) -> None:
    for _, lesson in tau_lessons:
        text = lesson.content
        assert text.strip() and norm(text) not in {"none", "null"}
        assert len(text) <= MAX_LESSON_CHARS
        assert "\n" not in text
        assert 0.0 < lesson.confidence <= 1.0 and 0.0 < lesson.importance <= 1.0
        words = text.lower().split()
        assert "never" not in words and "always" not in words
        # personal data and ids of the synthetic users stay out of the lessons
        assert "mia_li_3668" not in text and "1990-04-05" not in text
        assert not re.search(r"\b[A-Z0-9]{6}\b", text.replace("<", " ")), text
        assert not re.search(r"(?<![<\w])\d{2,}(?![\w>])", text), text
        assert lesson.tools


def payment_lessons(lessons: list[Lesson]) -> list[Lesson]:
    return [
        lesson
        for lesson in lessons
        if "book_reservation" in lesson.content
        and "does not add up" in lesson.content
        and "book_reservation" in lesson.tools
    ]


def test_payment_split_lesson_exists_once_per_key(
    tau_lessons: list[tuple[Trajectory, Lesson]],
) -> None:
    lessons = [lesson for _, lesson in tau_lessons]
    found = of_kind(payment_lessons(lessons), ExperienceKind.TOOL_RELIABILITY)
    assert found, "no tool_reliability lesson about book_reservation payment splits"
    assert len({lesson.metadata["lesson_key"] for lesson in found}) == 1
    text = found[0].content
    assert "total price is <amount>, but paid <amount>" in text
    assert "add up exactly to the total" in text  # the advice, not only the symptom
    # one run cannot tell which of its arguments the error was about: the conditions are
    # condition mining's, from many runs (docs/review.md#condition-mining)
    assert "when called with" not in text and "payment_methods=" not in text, text


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


def test_no_run_alone_teaches_a_rule(
    tau_lessons: list[tuple[Trajectory, Lesson]],
) -> None:
    """A rule needs a condition that separates outcomes across runs (condition mining,
    docs/review.md#condition-mining); one run's review gives tool lessons only."""
    assert tau_lessons
    kinds = {lesson.kind for _, lesson in tau_lessons}
    assert ExperienceKind.RULE not in kinds
    assert kinds <= {
        ExperienceKind.TOOL_RELIABILITY, ExperienceKind.ANTI_PATTERN, ExperienceKind.IMPROVEMENT,
    }  # fmt: skip


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


# --- empty and odd content ------------------------------------------------------------------------


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
        *tool("order_query", {}, "failure", "Error: service down"),
        outcome=Outcome.FAILURE,
    )
    lessons = REVIEWER.review_sync(traj)
    assert lessons and all(lesson.content.strip() for lesson in lessons)
    assert any("order_query" in lesson.content for lesson in lessons)


@pytest.mark.parametrize("outcome", [Outcome.SUCCESS, Outcome.FAILURE, Outcome.UNKNOWN])
def test_a_run_without_errors_or_reference_restates_nothing(outcome: Outcome) -> None:
    traj = run(
        ev("user_message", "Cancel reservation ABC"),
        *tool("cancel_reservation", {"reservation_id": "ABC"}, "success", "done"),
        ev("final_answer", "Cancelled."),
        task="Cancel reservation ABC",
        outcome=outcome,
    )
    assert REVIEWER.review_sync(traj) == []  # its episode says how it went


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
    assert lessons and all(CJK.search(lesson.content) for lesson in lessons)
    assert not any(task in lesson.content for lesson in lessons)
    (improvement,) = of_kind(lessons, ExperienceKind.IMPROVEMENT)
    assert "run_shell" in improvement.content and "奏效" in improvement.content


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
        "When book_flight fails with 'not enough balance in payment method <gift_card_id>', "
        "calling it again with payment_method gift_card -> credit_card worked."
    )
    assert improvement.tools == ["book_flight"]
    assert of_kind(lessons, ExperienceKind.KEY_STEP) == []


def test_recovery_with_another_tool() -> None:
    traj = run(
        ev("user_message", "weather in Paris"),
        *tool("search_web", {"query": "paris weather", "lang": "en"}, "failure", "Error: 503"),
        *tool("search_news", {"query": "paris weather", "lang": "en"}, "success", "sunny"),
    )
    (improvement,) = of_kind(REVIEWER.review_sync(traj), ExperienceKind.IMPROVEMENT)
    assert "calling search_news" in improvement.content
    assert "paris" not in improvement.content.lower()  # free text stays out
    assert improvement.tools == ["search_web", "search_news"]


def test_repeated_identical_failures_give_anti_pattern() -> None:
    failing = tool("pay", {"amount": 5, "currency": "XYZ"}, "failure", "Error: invalid currency")
    traj = run(ev("user_message", "pay the bill"), *failing, *failing, *failing)
    lessons = REVIEWER.review_sync(traj)
    (anti,) = of_kind(lessons, ExperienceKind.ANTI_PATTERN)
    assert anti.content == (
        "When pay fails with 'invalid currency', do not repeat the same call (it failed the "
        "same way again): validate the arguments against the tool's schema before calling."
    )  # the advice of its error, as the failure lesson gives it
    assert anti.metadata["occurrences"] == 3
    (reliability,) = of_kind(lessons, ExperienceKind.TOOL_RELIABILITY)
    assert reliability.content == (
        "pay can fail with 'invalid currency': validate the arguments against the tool's "
        "schema before calling."
    )  # XYZ may be an id: only classes reach a lesson
    assert of_kind(lessons, ExperienceKind.IMPROVEMENT) == []


@pytest.mark.parametrize(
    ("user", "error", "advice"),
    [
        ("pay the bill", "Error: not enough balance on card", "check the balance left first"),
        ("reserve room 4", "Error: room 4 not available on 2024-05-02", "confirm availability"),
        ("ship it", "ValueError: warehouse W-17 does not exist", "look the id up first"),
        ("send the file", "PermissionError: cannot write to /srv/out", "respect the restriction"),
        ("sum it", "total mismatch: 30 vs 31", "make the amounts add up"),
        ("fetch the rates", "Error: No such host is known (rates.example)", "service's address"),
        ("refill it", "Error: prior authorization required", "get the authorization or approval"),
        ("do it", "something odd happened", "what earlier results showed against the error"),
        ("请付款", "错误：余额不足 balance too low", "先查询还剩多少"),
    ],
)
def test_a_repeated_failure_carries_the_advice_of_its_error(
    user: str, error: str, advice: str
) -> None:
    """The repeated-call lesson gives the same advice as the failure lesson of its error, so
    the one of the two that recall shows (one lesson per subject) says what to do instead."""
    failing = tool("act", {"x": 1}, "failure", error)
    lessons = REVIEWER.review_sync(run(ev("user_message", user), *failing, *failing))
    (anti,) = of_kind(lessons, ExperienceKind.ANTI_PATTERN)
    (failure,) = of_kind(lessons, ExperienceKind.TOOL_RELIABILITY)
    assert advice in anti.content and advice in failure.content, (anti.content, failure.content)
    assert anti.metadata["subject"] == failure.metadata["subject"]


@pytest.mark.parametrize(
    ("error", "advice"),
    [
        ("HTTP 429 Too Many Requests", "slow down and retry after a delay"),
        ("HTTP 503 Service Unavailable", "wait briefly and retry once"),
    ],
)
def test_a_repeated_transient_failure_advises_a_fallback_not_another_retry(
    error: str, advice: str
) -> None:
    """The failure of a transient error advises a retry; once the same call failed the same
    way again, its repeated-call lesson advises what the retry could not do."""
    failing = tool("act", {"x": 1}, "failure", error)
    lessons = REVIEWER.review_sync(run(ev("user_message", "call the api"), *failing, *failing))
    (anti,) = of_kind(lessons, ExperienceKind.ANTI_PATTERN)
    (failure,) = of_kind(lessons, ExperienceKind.TOOL_RELIABILITY)
    assert advice in failure.content
    assert anti.content.endswith(
        "do not repeat the same call (it failed the same way again): fall back to another tool "
        "or tell the user it is unavailable."
    ), anti.content


def test_a_repeated_timeout_advises_a_fallback_not_another_wait() -> None:
    waiting = tool("order_query", {"region": "eu"}, "timeout", "request timed out after 30s")
    lessons = REVIEWER.review_sync(
        run(ev("user_message", "Where is my order?"), *waiting, *waiting)
    )
    (anti,) = of_kind(lessons, ExperienceKind.ANTI_PATTERN)
    assert anti.content == (
        "When order_query times out, do not repeat the same call (it failed the same way "
        "again): fall back to another tool or tell the user it is unavailable."
    )


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
        outcome=Outcome.SUCCESS,
    )
    lessons = REVIEWER.review_sync(traj)
    (reliability,) = of_kind(lessons, ExperienceKind.TOOL_RELIABILITY)
    assert reliability.content.startswith("order_query can time out")
    assert "retry" in reliability.content
    (improvement,) = of_kind(lessons, ExperienceKind.IMPROVEMENT)
    assert "one retry with the same arguments worked" in improvement.content


@pytest.mark.parametrize("status", ["timeout", "failure"])
@pytest.mark.parametrize(
    ("failures", "outcome", "said"),
    [
        (1, Outcome.SUCCESS, "one retry with the same arguments worked"),
        (2, Outcome.SUCCESS, "retrying with the same arguments worked on attempt 3 (the 2 "
                             "before failed the same way)"),
        (3, Outcome.SUCCESS, "worked on attempt 4 (the 3 before failed"),
        (3, Outcome.PARTIAL, "worked on attempt 4 (the 3 before failed"),
    ],
)  # fmt: skip
def test_a_retry_that_worked_says_how_many_it_took_and_is_no_anti_pattern(
    status: str, failures: int, outcome: Outcome, said: str
) -> None:
    """'one retry worked' only when one did; the same call going through in the end is not
    a repeated mistake (no 'do not repeat the same call')."""
    error = "request timed out after 30s" if status == "timeout" else "Error: backend busy"
    failing = tool("order_query", {"region": "eu"}, status, error)
    traj = run(
        ev("user_message", "Where is my order?"),
        *(failing * failures),
        *tool("order_query", {"region": "eu"}, "success", '{"status": "shipped"}'),
        outcome=outcome,
    )
    lessons = REVIEWER.review_sync(traj)
    (improvement,) = of_kind(lessons, ExperienceKind.IMPROVEMENT)
    assert said in improvement.content, improvement.content
    assert of_kind(lessons, ExperienceKind.ANTI_PATTERN) == []


@pytest.mark.parametrize("outcome", [Outcome.UNKNOWN, Outcome.FAILURE])
def test_a_call_that_went_through_in_the_end_is_no_anti_pattern_whatever_the_outcome(
    outcome: Outcome,
) -> None:
    failing = tool("order_query", {"region": "eu"}, "timeout", "request timed out after 30s")
    traj = run(
        ev("user_message", "Where is my order?"),
        *failing, *failing,
        *tool("order_query", {"region": "eu"}, "success", '{"status": "shipped"}'),
        outcome=outcome,
    )  # fmt: skip
    lessons = REVIEWER.review_sync(traj)
    assert of_kind(lessons, ExperienceKind.ANTI_PATTERN) == []
    assert of_kind(lessons, ExperienceKind.TOOL_RELIABILITY)  # the timeout itself stays


def test_a_repeated_call_that_never_went_through_stays_an_anti_pattern() -> None:
    failing = tool("order_query", {"region": "eu"}, "timeout", "request timed out after 30s")
    traj = run(
        ev("user_message", "Where is my order?"),
        *failing, *failing,
        *tool("order_query", {"region": "us"}, "success", '{"status": "shipped"}'),
    )  # fmt: skip
    (anti,) = of_kind(REVIEWER.review_sync(traj), ExperienceKind.ANTI_PATTERN)
    assert "do not repeat the same call" in anti.content


def test_retries_in_chinese() -> None:
    failing = tool("查询订单", {"地区": "欧洲"}, "timeout", "请求超时")
    traj = run(
        ev("user_message", "我的订单在哪里？"),
        *failing, *failing,
        *tool("查询订单", {"地区": "欧洲"}, "success", '{"状态": "已发货"}'),
        outcome=Outcome.SUCCESS,
    )  # fmt: skip
    (improvement,) = of_kind(REVIEWER.review_sync(traj), ExperienceKind.IMPROVEMENT)
    assert "第 3 次即奏效（前 2 次同样失败）" in improvement.content, improvement.content


def test_an_unrecovered_failure_is_a_tool_lesson_not_a_restatement() -> None:
    traj = run(
        ev("user_message", "Cancel reservation ABC"),
        *tool("cancel_reservation", {"reservation_id": "ABC"}, "failure", "Error: not found"),
        task="Cancel reservation ABC",
        outcome=Outcome.FAILURE,
    )
    lessons = REVIEWER.review_sync(traj)
    (reliability,) = lessons
    assert reliability.kind is ExperienceKind.TOOL_RELIABILITY
    assert reliability.content == (
        "cancel_reservation can fail with 'not found': look the id up first and pass only ids "
        "that exist."
    )
    assert "ABC" not in reliability.content


def test_results_without_status_are_classified() -> None:
    traj = run(
        ev("user_message", "lookup"),
        ev("tool_call", tool_name="lookup", tool_args={"q": "a"}),
        ev("tool_result", "Traceback (most recent call last):\nKeyError: 'q'", tool_name="lookup"),
    )
    (reliability,) = of_kind(REVIEWER.review_sync(traj), ExperienceKind.TOOL_RELIABILITY)
    assert "lookup can fail with 'KeyError: 'q''" in reliability.content


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
        *tool("send_message", args, "failure", "Error: mode fast quota exceeded " * 100),
    )
    lessons = REVIEWER.review_sync(traj)
    for lesson in lessons:
        for secret in ("sk-secret", "a@b.example", "Mia", "xxxxx"):
            assert secret not in lesson.content
        assert len(lesson.content) <= MAX_LESSON_CHARS
    (reliability,) = of_kind(lessons, ExperienceKind.TOOL_RELIABILITY)
    assert "mode=fast" not in reliability.content  # no argument from one run as a condition


@pytest.mark.parametrize(
    ("error", "check"),
    [
        ("Error: not enough seats on flight HAT123", "check the seats left first"),
        ("Error: gift card balance is not enough", "check the balance left first"),
        ("insufficient stock for item 4411", "check the stock left first"),
        ("quota exceeded for project alpha", "check the quota left first"),
        ("There are not enough tickets available", "check the tickets left first"),
        ("balance too low", "check the balance left first"),
        ("Error: sold out", "check how much is left first"),  # the error names no quantity
        ("exceeds the limit of 5", "check how much is left first"),
        ("Error: not enough", "check how much is left first"),
    ],
)
def test_advice_on_running_short_fits_every_kind_of_shortage(error: str, check: str) -> None:
    traj = run(
        ev("user_message", "please do it"),
        *tool("reserve", {"item": "x1", "count": 4}, "failure", error),
        outcome=Outcome.FAILURE,
    )
    [lesson] = of_kind(HeuristicReviewer().review_sync(traj), ExperienceKind.TOOL_RELIABILITY)
    # one wording for seats, money, stock and quotas: ask for less or choose another option,
    # naming what ran short when the error says it (never a list of examples from a domain)
    assert check in lesson.content and "(" not in lesson.content, lesson.content
    assert "choose another option" in lesson.content and "split" not in lesson.content


@pytest.mark.parametrize(
    ("task", "kept"),
    [
        ("Please mail mei.chen@northwind.com the May invoice.", "mei.chen@northwind.com"),
        ("Roll back to v1.2.3 on the staging cluster tonight.", "v1.2.3"),
        ("Move 3.5 TB from bucket eu.logs.archive to cold storage.", "eu.logs.archive"),
        ("Open https://example.org/a.b/c.html and fix the link.", "https://example.org/a.b/c.html"),
    ],
)
def test_a_task_summary_never_splits_inside_a_dotted_token(task: str, kept: str) -> None:
    assert kept in task_summary(task, limit=200)


@pytest.mark.parametrize(
    ("failed", "fallback", "works"),
    [
        # another tool doing the same job on the same host, with other argument names
        (
            ("restart_service", {"service": "web", "target": "host-7a"}),
            ("restart_service_via_ssh", {"host": "host-7a", "unit": "web.service"}),
            True,
        ),
        # a v2 in camelCase, the same order under another key
        (("getOrder", {"orderRef": "ORD-88123"}), ("getOrderV2", {"id": "ORD-88123"}), True),
        # a cached twin sharing most argument names
        (
            ("order_query", {"region": "eu", "order": "A-1"}),
            ("order_query_cached", {"region": "eu", "order": "A-1"}),
            True,
        ),
        # another job on the same booking is not a fallback
        (
            ("update_reservation_flights", {"reservation_id": "HXDUBJ", "cabin": "economy"}),
            ("update_reservation_baggages", {"reservation_id": "HXDUBJ", "total_baggages": 2}),
            False,
        ),
        # the same job on nothing the failed call named
        (
            ("restart_service", {"service": "web", "target": "host-7a"}),
            ("restart_service_via_ssh", {"host": "db-2", "unit": "db.service"}),
            False,
        ),
        # a broader tool is not a fallback of a narrower one
        (
            ("cancel_order_item", {"order_id": "W-1182", "item": "I-77"}),
            ("cancel_order", {"order_id": "W-1182"}),
            False,
        ),
        # names without ASCII words, and an everyday value in common
        (("查询订单", {"订单号": "A-1009"}), ("取消订单", {"编号": "A-1009", "原因": "x"}), False),
        (
            ("get_user", {"user_ref": "U-4410", "format": "json"}),
            ("get_user_orders", {"customer": "C-1", "format": "json"}),
            False,
        ),
    ],
)
def test_a_fallback_tool_is_found_by_its_name_and_the_object_it_acts_on(
    failed: tuple[str, dict[str, Any]], fallback: tuple[str, dict[str, Any]], works: bool
) -> None:
    (name, args), (other, other_args) = failed, fallback
    traj = run(
        ev("user_message", "please get this done"),
        *tool(name, args, "failure", "Error: agent unreachable on target"),
        *tool(other, other_args, "success", '{"ok": true}'),
        outcome=Outcome.SUCCESS,
    )
    fixes = of_kind(REVIEWER.review_sync(traj), ExperienceKind.IMPROVEMENT)
    if works:
        (fix,) = fixes
        assert fix.content.endswith(f"calling {other} instead worked."), fix.content
    else:
        assert fixes == [], [f.content for f in fixes]


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ('{"status": "failed", "failing_step": "lint"}', "status: failed, failing_step: lint"),
        ('{"error": {"code": 429, "type": "quota"}}', "code: <number>, type: quota"),
        ('{"ok": false, "reason": "card declined"}', "card declined"),  # a message field wins
        # an empty message is no message; booleans as JSON; keys ending in "id" that are not ids
        ('{"error": "", "status": "failed", "paid": false}', "status: failed, paid: false"),
    ],
)
def test_a_json_failure_is_quoted_by_its_message_or_its_plain_fields(reply: str, said: str) -> None:
    traj = run(
        ev("user_message", "rerun the job"),
        *tool("rerun_job", {"job": "build"}, "failure", reply),
        outcome=Outcome.FAILURE,
    )
    (failure,) = of_kind(REVIEWER.review_sync(traj), ExperienceKind.TOOL_RELIABILITY)
    assert f"rerun_job can fail with '{said}'" in failure.content, failure.content
