"""The lesson builders of the heuristic reviewer, one function per question of MISSION S2.

Every builder takes a :class:`Context` (the run's calls, language and task phrase) and returns
:class:`~hindsight.ports.Lesson` objects whose content is one sentence.

Initial confidences (the reviewer's self-assessment, MISSION S3) are module constants; they are
higher where the lesson restates what the run observed and lower where it infers a cause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hindsight.models import EventStatus, ExperienceKind, Outcome
from hindsight.ports import Lesson
from hindsight.review._calls import ToolCall, is_read_only
from hindsight.review._describe import ArgChange, describe_args, diff_args
from hindsight.review._text import error_text, shorten, tokens
from hindsight.review.heuristic._templates import Lang, advice_for, render

__all__ = [
    "ANTI_PATTERN_CONFIDENCE",
    "FAILURE_CAUSE_CONFIDENCE",
    "IMPORTANCE",
    "IMPROVEMENT_CONFIDENCE",
    "IMPROVEMENT_OTHER_TOOL_CONFIDENCE",
    "KEY_STEP_FAILED_RUN_CONFIDENCE",
    "KEY_STEP_SUCCESS_CONFIDENCE",
    "KEY_STEP_UNKNOWN_CONFIDENCE",
    "MAX_LESSON_CHARS",
    "OUTCOME_CONFIDENCE",
    "TASK_SCOPE_CONFIDENCE",
    "TOOL_RELIABILITY_CONFIDENCE",
    "TOOL_RELIABILITY_MAX_CONFIDENCE",
    "Context",
    "anti_patterns",
    "improvements",
    "outcome_and_key_step",
    "task_scope",
    "tool_reliability",
]

#: The tool's own error text is observed; the conditions and advice drawn from it are inferred.
TOOL_RELIABILITY_CONFIDENCE = 0.7
#: Each further occurrence of the same error in the run adds 0.05, up to this cap.
TOOL_RELIABILITY_MAX_CONFIDENCE = 0.85
#: Fully observed: the same call with the same arguments failed the same way more than once.
ANTI_PATTERN_CONFIDENCE = 0.75
#: The later success is observed; that the argument change caused it is inferred.
IMPROVEMENT_CONFIDENCE = 0.6
#: A substitute tool is guessed from shared argument names, a weaker inference.
IMPROVEMENT_OTHER_TOOL_CONFIDENCE = 0.45
#: The outcome comes from the environment (reward / outcome field), not from the reviewer.
OUTCOME_CONFIDENCE = 0.8
#: The last state-changing success of a successful run is likely, not surely, its key step.
KEY_STEP_SUCCESS_CONFIDENCE = 0.6
#: In a failed run without errors, the last state-changing call is only a suspect.
KEY_STEP_FAILED_RUN_CONFIDENCE = 0.35
#: Outcome unknown: the step is described, its value is not known.
KEY_STEP_UNKNOWN_CONFIDENCE = 0.4
#: An unrecovered error in a failed run is a plausible, not a proven, direct cause.
FAILURE_CAUSE_CONFIDENCE = 0.55
#: Descriptive and low-risk, but of little use on its own.
TASK_SCOPE_CONFIDENCE = 0.5

#: Importance in [0,1] per kind: how much a lesson of this kind can change a future run.
IMPORTANCE: dict[ExperienceKind, float] = {
    ExperienceKind.IMPROVEMENT: 0.8,
    ExperienceKind.TOOL_RELIABILITY: 0.7,
    ExperienceKind.FAILURE_CAUSE: 0.7,
    ExperienceKind.ANTI_PATTERN: 0.6,
    ExperienceKind.KEY_STEP: 0.6,
    ExperienceKind.OUTCOME: 0.5,
    ExperienceKind.TASK_SCOPE: 0.3,
}

#: Upper bound of a lesson's length in characters (one sentence).
MAX_LESSON_CHARS = 300
_ERROR_CHARS = 120
_MIN_ARGS_CHARS = 30
_MAX_CHANGES = 3
_SEQUENCE_STEPS = 8
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Context:
    """What the builders need to know about one run.

    Attributes:
        lang: template language.
        subject: the task phrase that opens task lessons (``"For tasks like '...'"``).
        task: task summary (may be ``""``).
        task_type: the run's task_type, if any.
        calls: the run's tool calls in order.
        outcome: the run's outcome.
        reward: the run's reward, if any.
        final_answer: the last final answer text (may be ``""``).
    """

    lang: Lang
    subject: str
    task: str
    task_type: str | None
    calls: list[ToolCall]
    outcome: Outcome
    reward: float | None
    final_answer: str


def _lesson(
    kind: ExperienceKind,
    content: str,
    confidence: float,
    tools: list[str],
    **metadata: Any,
) -> Lesson:
    return Lesson(
        kind=kind,
        content=shorten(content, MAX_LESSON_CHARS),
        confidence=round(confidence, 3),
        importance=IMPORTANCE[kind],
        tools=list(dict.fromkeys(tools)),
        metadata={k: v for k, v in metadata.items() if v is not None},
    )


def _error(call: ToolCall, lang: Lang) -> str:
    text = error_text(call.output, _ERROR_CHARS)
    if text:
        return text
    return "no error message" if lang == "en" else "无错误信息"


def _failure_phrase(call: ToolCall, lang: Lang) -> str:
    if call.status is EventStatus.TIMEOUT:
        return render("timed_out", lang)
    return render("failed_with", lang, error=_error(call, lang))


def _fit(key: str, lang: Lang, call: ToolCall, slot: str, focus: str = "", **values: Any) -> str:
    """Render template ``key`` with ``call``'s salient arguments in the slot ``slot``
    (``with_args`` / ``paren_args`` / ``args_paren``), given as many characters as the rest of
    the sentence leaves within :data:`MAX_LESSON_CHARS`; the slot stays empty when fewer than
    30 characters are left or nothing of the arguments is visible."""
    bare = render(key, lang, **values, **{slot: ""})
    budget = MAX_LESSON_CHARS - len(bare) - len(render(slot, lang, args=""))
    args = ""
    if budget >= _MIN_ARGS_CHARS:
        args = describe_args(call.args, focus=tokens(focus) if focus else None, limit=budget)
    filled = render(slot, lang, args=args) if args else ""
    return render(key, lang, **values, **{slot: filled})


def _changes(changes: list[ArgChange], lang: Lang) -> str:
    phrases: list[str] = []
    for change in changes[:_MAX_CHANGES]:
        if change.op == "value":
            phrases.append(
                render("change_value", lang, key=change.key, old=change.old, new=change.new)
            )
        elif change.op == "added":
            value = f"={change.new}" if change.new else ""
            phrases.append(render("change_added", lang, key=change.key, value=value))
        elif change.op == "dropped":
            phrases.append(render("change_dropped", lang, key=change.key))
        else:
            phrases.append(render("change_other", lang, key=change.key))
    if len(changes) > _MAX_CHANGES:
        phrases.append(render("change_more", lang, n=len(changes) - _MAX_CHANGES))
    return render("change_join", lang).join(phrases)


def _shape(call: ToolCall) -> tuple[str, str, str]:
    """Group key: same tool, status and error text up to its numbers."""
    error = _DIGITS.sub("#", error_text(call.output, _ERROR_CHARS).lower())
    return (call.tool, str(call.status), error)


def tool_reliability(ctx: Context) -> list[Lesson]:
    """Question 3: which tool failed or timed out, under what conditions, how often."""
    groups: dict[tuple[str, str, str], list[ToolCall]] = {}
    for call in ctx.calls:
        if call.failed:
            groups.setdefault(_shape(call), []).append(call)
    lessons: list[Lesson] = []
    for group in groups.values():
        first, count = group[0], len(group)
        times = render("times", ctx.lang, n=count) if count > 1 else ""
        error = _error(first, ctx.lang)
        if first.status is EventStatus.TIMEOUT:
            content = _fit(
                "tool_timeout",
                ctx.lang,
                first,
                "with_args",
                first.output,
                tool=first.tool,
                times=times,
            )
        else:
            content = _fit(
                "tool_failure",
                ctx.lang,
                first,
                "with_args",
                error,
                tool=first.tool,
                times=times,
                error=error,
                advice=advice_for(error, ctx.lang),
            )
        confidence = min(
            TOOL_RELIABILITY_MAX_CONFIDENCE, TOOL_RELIABILITY_CONFIDENCE + 0.05 * (count - 1)
        )
        lessons.append(
            _lesson(
                ExperienceKind.TOOL_RELIABILITY,
                content,
                confidence,
                [first.tool],
                occurrences=count,
                status=str(first.status),
                error=error_text(first.output),
            )
        )
    return lessons


def anti_patterns(ctx: Context) -> list[Lesson]:
    """Question 4: the same failing call (same tool, same arguments) repeated unchanged."""
    repeats: dict[str, list[ToolCall]] = {}
    for call in ctx.calls:
        if call.failed:
            repeats.setdefault(call.signature, []).append(call)
    lessons: list[Lesson] = []
    for group in repeats.values():
        if len(group) < 2:
            continue
        first = group[0]
        failure = _failure_phrase(first, ctx.lang)
        content = _fit(
            "anti_pattern",
            ctx.lang,
            first,
            "args_paren",
            first.output,
            tool=first.tool,
            n=len(group),
            failure=failure,
        )
        lessons.append(
            _lesson(
                ExperienceKind.ANTI_PATTERN,
                content,
                ANTI_PATTERN_CONFIDENCE,
                [first.tool],
                occurrences=len(group),
            )
        )
    return lessons


def _substitute(ctx: Context, failed: ToolCall) -> ToolCall | None:
    """A later successful call of another tool of the same sort sharing most argument names."""
    keys = set(failed.args)
    if not keys:
        return None
    for call in ctx.calls:
        if call.position <= failed.position or not call.succeeded or call.tool == failed.tool:
            continue
        if is_read_only(call.tool) != is_read_only(failed.tool):
            continue
        other = set(call.args)
        if other and len(keys & other) / len(keys | other) >= 0.5:
            return call
    return None


def improvements(ctx: Context) -> list[Lesson]:
    """Question 5: a failure followed by a call that worked, and what changed."""
    lessons: list[Lesson] = []
    seen: set[tuple[str, str, str]] = set()
    for failed in ctx.calls:
        if not failed.failed or _shape(failed) in seen:
            continue
        seen.add(_shape(failed))
        failure = _failure_phrase(failed, ctx.lang)
        fix = next(
            (
                c
                for c in ctx.calls
                if c.position > failed.position and c.tool == failed.tool and c.succeeded
            ),
            None,
        )
        if fix is not None:
            changes = diff_args(failed.args, fix.args)
            if changes:
                content = render(
                    "improvement_changed",
                    ctx.lang,
                    tool=failed.tool,
                    failure=failure,
                    changes=_changes(changes, ctx.lang),
                )
            else:
                content = render("improvement_retry", ctx.lang, tool=failed.tool, failure=failure)
            lessons.append(
                _lesson(ExperienceKind.IMPROVEMENT, content, IMPROVEMENT_CONFIDENCE, [failed.tool])
            )
            continue
        other = _substitute(ctx, failed)
        if other is not None:
            content = _fit(
                "improvement_other",
                ctx.lang,
                other,
                "paren_args",
                tool=failed.tool,
                failure=failure,
                other=other.tool,
            )
            lessons.append(
                _lesson(
                    ExperienceKind.IMPROVEMENT,
                    content,
                    IMPROVEMENT_OTHER_TOOL_CONFIDENCE,
                    [failed.tool, other.tool],
                )
            )
    return lessons


def _sequence(ctx: Context) -> str:
    steps: list[str] = []
    for call in ctx.calls:
        if not steps or steps[-1] != call.tool:
            steps.append(call.tool)
    if len(steps) > _SEQUENCE_STEPS:
        steps = [*steps[: _SEQUENCE_STEPS - 1], "…", steps[-1]]
    return " -> ".join(steps)


def _key_step(ctx: Context) -> Lesson | None:
    """Question 2: the key step of a success, or the direct cause of a failure."""
    changing = [c for c in ctx.calls if c.succeeded and not is_read_only(c.tool)]
    last_ok = changing[-1] if changing else None
    lang, subject = ctx.lang, ctx.subject

    def step(key: str, call: ToolCall, confidence: float) -> Lesson:
        content = _fit(key, lang, call, "paren_args", subject=subject, tool=call.tool)
        return _lesson(ExperienceKind.KEY_STEP, content, confidence, [call.tool])

    if ctx.outcome is Outcome.SUCCESS:
        if last_ok is not None:
            return step("key_step_success", last_ok, KEY_STEP_SUCCESS_CONFIDENCE)
        if ctx.final_answer:
            content = render(
                "key_step_answer", lang, subject=subject, answer=shorten(ctx.final_answer, 100)
            )
            return _lesson(ExperienceKind.KEY_STEP, content, KEY_STEP_SUCCESS_CONFIDENCE, [])
        return None
    if ctx.outcome is Outcome.UNKNOWN:
        return step("key_step_unknown", last_ok, KEY_STEP_UNKNOWN_CONFIDENCE) if last_ok else None
    unrecovered = [
        c
        for c in ctx.calls
        if c.failed
        and not any(o.position > c.position and o.tool == c.tool and o.succeeded for o in ctx.calls)
    ]
    if unrecovered:
        cause = unrecovered[-1]
        content = _fit(
            "failure_cause",
            lang,
            cause,
            "with_args",
            cause.output,
            subject=subject,
            tool=cause.tool,
            failure=_failure_phrase(cause, lang),
        )
        return _lesson(
            ExperienceKind.FAILURE_CAUSE, content, FAILURE_CAUSE_CONFIDENCE, [cause.tool]
        )
    if last_ok is not None:
        return step("key_step_failure", last_ok, KEY_STEP_FAILED_RUN_CONFIDENCE)
    return None


def outcome_and_key_step(ctx: Context) -> list[Lesson]:
    """Questions 1 and 2: how the run ended (known outcomes only) and its key step or cause."""
    lessons: list[Lesson] = []
    if ctx.outcome is not Outcome.UNKNOWN:
        reward = (
            render("reward", ctx.lang, reward=f"{ctx.reward:g}") if ctx.reward is not None else ""
        )
        if ctx.calls:
            content = render(
                f"outcome_{ctx.outcome.value}",
                ctx.lang,
                subject=ctx.subject,
                reward=reward,
                sequence=_sequence(ctx),
                n=len(ctx.calls),
                plural="" if len(ctx.calls) == 1 else "s",
                failures=sum(c.failed for c in ctx.calls),
            )
        else:
            content = render(
                "outcome_no_tools",
                ctx.lang,
                subject=ctx.subject,
                reward=reward,
                ended=render(f"ended_{ctx.outcome.value}", ctx.lang),
            )
        lessons.append(
            _lesson(
                ExperienceKind.OUTCOME,
                content,
                OUTCOME_CONFIDENCE,
                [c.tool for c in ctx.calls],
                outcome=ctx.outcome.value,
            )
        )
    key_step = _key_step(ctx)
    if key_step is not None:
        lessons.append(key_step)
    return lessons


def task_scope(ctx: Context) -> list[Lesson]:
    """Question 6: what class of task this was (needs a task text)."""
    if not ctx.task:
        return []
    tools = list(dict.fromkeys(c.tool for c in ctx.calls))
    kind = f"{ctx.task_type} " if ctx.task_type else ""
    if tools:
        content = render(
            "task_scope", ctx.lang, kind=kind, task=ctx.task, tools=", ".join(tools[:8])
        )
    else:
        content = render("task_scope_no_tools", ctx.lang, kind=kind, task=ctx.task)
    return [_lesson(ExperienceKind.TASK_SCOPE, content, TASK_SCOPE_CONFIDENCE, tools)]
