"""Parsing review replies (docs/review.md#replies-that-are-not-clean-json): every malformed kind
is repaired or rejected clearly.

The fixtures are OpenAI chat-completion replies as a provider sends them; ``test_llm_reviewer``
serves the same ones over HTTP.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map

import copy
import json
from typing import Any

import pytest

from hindsight import ReviewError
from hindsight.models import ExperienceKind, Outcome
from hindsight.review.llm._parse import ReportParseError, parse_reply, parse_report, reply_text
from hindsight.review.llm.prompts import (
    PROMPT_VERSION,
    ReviewReport,
    is_blank_answer,
    report_to_lessons,
    trajectory_language,
)
from hindsight.writeback.text import dedup_key
from tests.llm_server import completion  # one OpenAI chat.completion body for all tests

# -- fixtures ------------------------------------------------------------------------------------

REPORT: dict[str, Any] = {
    "outcome": {
        "result": "failure",
        "text": "The flight change failed: the reservation still has the old flights.",
        "confidence": 0.85,
    },
    "cause": {
        "text": "update_reservation_flights was given flight HAT999, which the search for that "
        "date had not returned.",
        "confidence": 0.8,
    },
    "failing_tools": {
        "tools": ["update_reservation_flights"],
        "text": "update_reservation_flights failed with 'flight not available' for a flight "
        "number taken from the user rather than from the search results.",
        "confidence": 0.9,
    },
    "repeated_attempts": {
        "text": "update_reservation_flights was called three times with the same arguments after "
        "the same error.",
        "confidence": 0.9,
    },
    "do_differently": {
        "text": "Run search_direct_flight for the new date first and offer only flights it "
        "returns.",
        "confidence": 0.75,
    },
    "task_class": {
        "text": "Changing the flights of an existing airline reservation.",
        "confidence": 0.7,
    },
    "rules": [
        {
            "text": "When changing a reservation's flights, search that date first and use only "
            "flight numbers the search returned.",
            "confidence": 0.8,
        },
        {
            "text": "When a booking tool fails twice with the same error, stop retrying and "
            "explain the error to the user.",
            "confidence": 0.7,
        },
    ],
}

TOOL = "update_reservation_flights"
# Only the general answers are lessons; outcome, cause and task class restate the run and are
# folded into its episode (EPISODE_TEXT), which report_to_lessons returns last.
EXPECTED: list[tuple[ExperienceKind, str, float, list[str]]] = [
    (ExperienceKind.TOOL_RELIABILITY, REPORT["failing_tools"]["text"], 0.9, [TOOL]),
    (ExperienceKind.ANTI_PATTERN, REPORT["repeated_attempts"]["text"], 0.9, [TOOL]),
    (ExperienceKind.IMPROVEMENT, REPORT["do_differently"]["text"], 0.75, ["search_direct_flight"]),
    (ExperienceKind.RULE, REPORT["rules"][0]["text"], 0.8, []),
    (ExperienceKind.RULE, REPORT["rules"][1]["text"], 0.7, []),
]
EPISODE_TEXT = (
    f"Outcome: {REPORT['outcome']['text']} Cause: {REPORT['cause']['text']} "
    f"Task class: {REPORT['task_class']['text']}"
)
KNOWN_TOOLS = ["get_reservation_details", "search_direct_flight", TOOL]

CN_REPORT: dict[str, Any] = {
    "outcome": {
        "result": "success",
        "text": "代理按用户偏好用 pnpm 安装了依赖，任务成功完成。",
        "confidence": 0.9,
    },
    "cause": {"text": "关键一步是改用 pnpm install 而不是 npm install。", "confidence": 0.85},
    "failing_tools": {"tools": [], "text": None, "confidence": 0.9},
    "repeated_attempts": {"text": "无", "confidence": 0.8},
    "do_differently": {
        "text": "下次一开始就用 pnpm，不要先尝试 npm。",
        "confidence": 0.8,
    },
    "task_class": {"text": "在用户偏好 pnpm 的前端项目中安装或更新依赖。", "confidence": 0.75},
    "rules": [
        {"text": "当用户偏好 pnpm 时，用 pnpm 代替 npm 执行所有包管理命令。", "confidence": 0.9}
    ],
}
CN_EXPECTED: list[tuple[ExperienceKind, str]] = [
    (ExperienceKind.IMPROVEMENT, CN_REPORT["do_differently"]["text"]),
    (ExperienceKind.RULE, CN_REPORT["rules"][0]["text"]),
]


GOOD_JSON = json.dumps(REPORT, ensure_ascii=False)
PRETTY_JSON = json.dumps(REPORT, ensure_ascii=False, indent=2)


def _python_literal(report: dict[str, Any]) -> str:
    return repr(report)  # single quotes, None, True: what a model imitating Python writes


def _with_surrogate() -> str:
    broken = copy.deepcopy(REPORT)
    broken["outcome"]["text"] = (
        "The flight change failed: PLACEHOLDER the reservation still has the old flights."
    )
    return json.dumps(broken).replace("PLACEHOLDER", "\\ud83d")


def _with_bad_escapes() -> str:
    # Markdown-escaped underscores, as models write them in chat mode.
    return GOOD_JSON.replace("search_direct_flight", "search\\_direct\\_flight")


def _with_trailing_commas() -> str:
    return PRETTY_JSON.replace('"confidence": 0.7\n    }\n  ]', '"confidence": 0.7\n    },\n  ],')


# The truncated reply stops inside the second rule's text (finish_reason "length").
TRUNCATED_JSON = GOOD_JSON[: GOOD_JSON.index("stop retrying") + len("stop retr")]

REPLIES: dict[str, dict[str, Any]] = {
    "good": completion(GOOD_JSON),
    "fenced": completion(f"Here is the review of the run:\n\n```json\n{PRETTY_JSON}\n```\n"),
    "prose_after": completion(
        GOOD_JSON + "\n\nNote: I rated {cause} lower because the logs were cut."
    ),
    "prose_before": completion("Sure! Based on the trajectory, here is my review:\n" + GOOD_JSON),
    "surrogate": completion(_with_surrogate()),
    "bad_escapes": completion(_with_bad_escapes()),
    "single_quotes": completion(_python_literal(REPORT)),
    "trailing_commas": completion(_with_trailing_commas()),
    "tool_call": completion(None, tool_arguments=GOOD_JSON),
    "reasoning": completion(
        GOOD_JSON,
        reasoning='The user wants JSON. Draft: {"outcome": {"result": "success"}} no, it failed.',
    ),
    "think_tags": completion(
        '<think>Draft: {"outcome": {"result": "success", "text": "wrong"}}</think>\n' + GOOD_JSON
    ),
}
TRUNCATED = completion(TRUNCATED_JSON, finish_reason="length")
EMPTY = completion("", finish_reason="stop")
NONE_CONTENT = completion(None, finish_reason="stop")
REASONING_ONLY = completion(None, reasoning=GOOD_JSON)
UNREPAIRABLE = completion("I'm sorry, but I can't review this conversation.")
WRONG_SHAPE = completion(json.dumps({"outcome": {"result": "maybe", "text": "x", "confidence": 1}}))


def lesson_tuples(lessons: list[Any]) -> list[tuple[ExperienceKind, str, float, list[str]]]:
    """The lessons other than the episode, as (kind, content, confidence, tools)."""
    return [
        (le.kind, le.content, le.confidence, le.tools)
        for le in lessons
        if le.kind is not ExperienceKind.EPISODE
    ]


# -- tests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(REPLIES))
def test_every_malformed_kind_yields_the_same_lessons(kind: str) -> None:
    report = parse_reply(REPLIES[kind])
    lessons = report_to_lessons(report, model="openai/test-model", known_tools=KNOWN_TOOLS)
    assert lesson_tuples(lessons) == EXPECTED
    assert (lessons[-1].kind, lessons[-1].content) == (ExperienceKind.EPISODE, EPISODE_TEXT)
    for le in lessons:
        assert le.metadata["prompt_version"] == PROMPT_VERSION == "review-v4"
        assert le.metadata["model"] == "openai/test-model"
        le.content.encode("utf-8")  # no lone surrogate survives


def test_lone_surrogate_is_dropped_not_kept() -> None:
    report = parse_reply(REPLIES["surrogate"])
    assert report.outcome.text == REPORT["outcome"]["text"]
    assert "\ud83d" not in json.dumps(report.model_dump(), ensure_ascii=False)


def test_valid_surrogate_pair_survives() -> None:
    text = GOOD_JSON.replace("old flights.", "old flights \\ud83d\\ude00.")
    assert parse_report(text).outcome.text.endswith("old flights \U0001f600.")


def test_truncated_reply_keeps_complete_answers_and_drops_the_cut_sentence() -> None:
    report = parse_reply(TRUNCATED)
    lessons = report_to_lessons(report, model="m", known_tools=KNOWN_TOOLS)
    # Everything before the cut survives; the half-written second rule is not stored.
    assert lesson_tuples(lessons) == EXPECTED[:-1]


def test_truncated_inside_an_answer_sets_only_that_answer_to_null() -> None:
    cut = GOOD_JSON[: GOOD_JSON.index("offer only") + 5]
    report = parse_report(cut)
    assert report.do_differently.text is None
    assert report.repeated_attempts.text == REPORT["repeated_attempts"]["text"]
    assert report.rules == []


def test_reasoning_is_ignored_and_never_parsed() -> None:
    assert reply_text(REPLIES["reasoning"]) == GOOD_JSON
    with pytest.raises(ReportParseError, match="no content and no tool call arguments"):
        parse_reply(REASONING_ONLY)


@pytest.mark.parametrize("reply", [EMPTY, NONE_CONTENT], ids=["empty", "none"])
def test_empty_content_is_an_error_naming_the_problem(reply: dict[str, Any]) -> None:
    with pytest.raises(ReportParseError) as info:
        parse_reply(reply)
    assert "no content" in info.value.problem
    assert "finish_reason 'stop'" in info.value.problem
    assert isinstance(info.value, ReviewError)


def test_prose_without_json_is_an_error() -> None:
    with pytest.raises(ReportParseError, match="holds no JSON object") as info:
        parse_reply(UNREPAIRABLE)
    assert info.value.reply == "I'm sorry, but I can't review this conversation."


def test_schema_violation_names_the_field() -> None:
    with pytest.raises(ReportParseError) as info:
        parse_reply(WRONG_SHAPE)
    assert "outcome.result" in info.value.problem
    assert "'success', 'failure', 'partial' or 'unknown'" in info.value.problem


def test_litellm_model_response_object_is_read_like_a_dict() -> None:
    litellm = pytest.importorskip("litellm")
    response = litellm.ModelResponse(**REPLIES["tool_call"])
    assert reply_text(response) == GOOD_JSON
    assert (
        lesson_tuples(report_to_lessons(parse_reply(response), model="m", known_tools=KNOWN_TOOLS))
        == EXPECTED
    )


def test_wrapped_report_is_unwrapped() -> None:
    report = parse_report(json.dumps({"review": REPORT}))
    assert report.task_class.text == REPORT["task_class"]["text"]


def test_blank_answers_never_become_lessons() -> None:
    data = copy.deepcopy(REPORT)
    data["cause"]["text"] = "None"
    data["failing_tools"] = {"tools": ["None"], "text": "N/A", "confidence": 0.5}
    data["repeated_attempts"]["text"] = "No."
    data["do_differently"] = None
    data["task_class"]["text"] = "  "
    data["rules"] = [{"text": "null", "confidence": 0.9}, REPORT["rules"][0]]
    lessons = report_to_lessons(ReviewReport.model_validate(data), model="m")
    assert [(le.kind, le.content) for le in lessons] == [
        (ExperienceKind.RULE, REPORT["rules"][0]["text"]),
        (ExperienceKind.EPISODE, f"Outcome: {REPORT['outcome']['text']}"),
    ]


@pytest.mark.parametrize(
    "text",
    [None, "", " ", "None", "none.", "N/A", "n/a", "null", "无", "无。", "没有", "不适用", "No"],
)
def test_is_blank_answer(text: str | None) -> None:
    assert is_blank_answer(text)


def test_is_blank_answer_keeps_real_sentences() -> None:
    assert not is_blank_answer("No retries were needed because the first call succeeded.")
    assert not is_blank_answer("无需重试。")


def test_lenient_shapes_are_normalised() -> None:
    report = ReviewReport.model_validate(
        {
            "outcome": {"result": "Failed", "text": "It failed.", "confidence": "80%"},
            "cause": "The order id was wrong.",
            "failing_tools": {
                "tools": "order_query, order_status",
                "text": "Both timed out.",
                "confidence": 85,
            },
            "rules": [
                "When an order id is rejected, ask the user to confirm it.",
                {
                    "when": "a tool times out twice",
                    "then": "fall back to the cached copy.",
                    "confidence": 1.7,
                },
                {"text": "When A, do B.", "confidence": 0.1},
                {"text": "When C, do D.", "confidence": 0.1},
            ],
        }
    )
    assert report.outcome.result == "failure"
    assert report.outcome.confidence == pytest.approx(0.8)
    assert report.cause.text == "The order id was wrong."
    assert report.cause.confidence == 0.5
    assert report.failing_tools.tools == ["order_query", "order_status"]
    assert report.failing_tools.confidence == pytest.approx(0.85)
    assert [r.text for r in report.rules] == [
        "When an order id is rejected, ask the user to confirm it.",
        "When a tool times out twice, fall back to the cached copy.",
        "When A, do B.",
    ]
    assert report.rules[1].confidence == 1.0  # 1.7 is not a percentage: clamped


def test_answers_that_restate_the_run_are_folded_into_the_episode_not_lessons() -> None:
    """Outcome, cause / key step and task class describe this one run."""
    data = copy.deepcopy(REPORT)
    data["outcome"]["result"] = "success"
    lessons = report_to_lessons(ReviewReport.model_validate(data), model="m")
    restating = {ExperienceKind.OUTCOME, ExperienceKind.KEY_STEP, ExperienceKind.TASK_SCOPE}
    assert not restating & {le.kind for le in lessons}
    assert ExperienceKind.FAILURE_CAUSE not in {le.kind for le in lessons}
    episode = lessons[-1]
    assert episode.kind is ExperienceKind.EPISODE
    assert f"Key step: {REPORT['cause']['text']}" in episode.content  # the verdict: success
    data["outcome"]["result"] = "unknown"
    report = ReviewReport.model_validate(data)
    episode = report_to_lessons(report, model="m", outcome=Outcome.FAILURE)[-1]
    assert f"Cause: {REPORT['cause']['text']}" in episode.content  # the recorded outcome


def test_the_reviewers_episode_comes_first_and_is_not_repeated() -> None:
    data = copy.deepcopy(REPORT)
    data["episode"] = f"Goal: move a reservation. {REPORT['task_class']['text']}"
    episode = report_to_lessons(ReviewReport.model_validate(data), model="m")[-1]
    assert episode.content == (
        f"{data['episode']} Outcome: {REPORT['outcome']['text']} Cause: {REPORT['cause']['text']}"
    )  # the task class is in the summary already


def test_lesson_metadata_carries_the_write_back_contract() -> None:
    report = ReviewReport.model_validate(REPORT)
    lessons = report_to_lessons(
        report,
        model="m",
        trajectory_id="run-1",
        mask=lambda text: text.replace("three times", "<number> times"),
    )
    anti = next(le for le in lessons if le.kind is ExperienceKind.ANTI_PATTERN)
    assert anti.content == REPORT["repeated_attempts"]["text"].replace("three", "<number>")
    assert anti.metadata["lesson_key"] == "text:" + dedup_key(anti.content)
    assert anti.metadata["support"] == [
        {"trajectory_id": "run-1", "polarity": 1, "role": "reviewed_run"}
    ]
    assert "lesson_key" not in lessons[-1].metadata  # the episode is no lesson


def test_chinese_report_stays_chinese() -> None:
    report = parse_reply(completion(json.dumps(CN_REPORT, ensure_ascii=False)))
    lessons = report_to_lessons(report, model="m")
    assert [(le.kind, le.content) for le in lessons[:-1]] == CN_EXPECTED
    assert lessons[-1].content.startswith(f"结果：{CN_REPORT['outcome']['text']}")  # Chinese labels


def test_strict_schema_litellm_sends() -> None:
    """The strict json_schema litellm derives: every property required, no extra keys."""
    from litellm.llms.base_llm.base_utils import type_to_response_format_param

    fmt = type_to_response_format_param(ReviewReport)
    assert fmt is not None and fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True and fmt["json_schema"]["name"] == "ReviewReport"
    schema = fmt["json_schema"]["schema"]
    objects = [schema, *schema["$defs"].values()]
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
        assert "description" not in obj  # class docstrings are not sent to the model
    assert sorted(schema["properties"]) == sorted(
        [
            "outcome",
            "cause",
            "failing_tools",
            "repeated_attempts",
            "do_differently",
            "task_class",
            "rules",
            "episode",
        ]
    )
    text = json.dumps(schema)
    assert '"default"' not in text


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("用户偏好用 pnpm 而不是 npm", "Chinese"),
        ("I want to change my flight to May 20.", "English"),
        ("pnpm を使ってください", "Japanese"),
        ("", "English"),
    ],
)
def test_trajectory_language(text: str, language: str) -> None:
    assert trajectory_language(text) == language


@pytest.mark.parametrize(
    "kind",
    [
        "fenced",
        "prose_after",
        "prose_before",
        "bad_escapes",
        "single_quotes",
        "trailing_commas",
        "think_tags",
    ],
)
def test_fixtures_are_really_malformed(kind: str) -> None:
    """Guard against a fixture that is accidentally valid JSON (the test would prove nothing)."""
    with pytest.raises(json.JSONDecodeError):
        json.loads(REPLIES[kind]["choices"][0]["message"]["content"])


def test_surrogate_fixture_decodes_to_a_lone_surrogate() -> None:
    raw = json.loads(REPLIES["surrogate"]["choices"][0]["message"]["content"])
    assert "\ud83d" in raw["outcome"]["text"]
    with pytest.raises(UnicodeEncodeError):
        raw["outcome"]["text"].encode("utf-8")
