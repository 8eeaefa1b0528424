"""Episodes: one short, recallable summary per reviewed run (docs/review.md#episodes).

A trajectory is the raw episodic record of a run; lessons are the semantic memory drawn from
it. Between the two sits the *episode*: a few sentences saying what the run tried (goal), what
it did (steps and tools in order), how it ended (outcome) and what decided it (turning point).
Every review writes one per trajectory as an experience of kind
:attr:`~hindsight.models.ExperienceKind.EPISODE`, embedded like any lesson. Recall leaves
episodes out unless asked (``include_episodes=True``), and then lists the most similar ones
after the lessons, in their own section with their own share of the token budget.

The summary is :func:`summarize_episode` (deterministic, offline) unless the reviewer wrote one
(the LLM reviewer's ``episode`` answer), which then wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hindsight._ids import stable_id
from hindsight.models import (
    Event,
    EventStatus,
    EventType,
    Experience,
    ExperienceKind,
    Outcome,
    Trajectory,
)
from hindsight.review._calls import ToolCall, collect_calls, is_read_only
from hindsight.review._describe import describe_args
from hindsight.review._text import error_text, is_mostly_cjk, one_line, shorten, task_summary
from hindsight.review.contrast import Action, diff_actions
from hindsight.review.masking import masker_for
from hindsight.tokens import estimate_tokens, truncate_to_tokens

__all__ = [
    "EPISODE_CONFIDENCE",
    "EPISODE_MAX_TOKENS",
    "answer_start",
    "episode_experience",
    "episode_id",
    "summarize_episode",
]

EPISODE_MAX_TOKENS = 300
"""Longest episode summary, in estimated tokens (a few hundred at most: an episode is recalled
next to the lessons, in their token budget)."""

EPISODE_CONFIDENCE = 0.5
"""Confidence of an episode: neutral. An episode reports what happened; it claims no rule, so
recall ranks episodes by similarity and recency rather than by a reviewer's self-rating."""

MAX_SHOWN_STEPS = 8
"""Steps listed in full; a longer run shows its first 5 and last 3 around ``… N more``."""

_STEP_HEAD, _STEP_TAIL = 5, 3
_WHY_DIFFS = 3

_EN: dict[str, Any] = {
    "goal": "Goal",
    "steps": "Steps",
    "outcome": "Outcome",
    "turn": "Turning point",
    "answer": "Answer",
    "no_tools": "answered without calling a tool",
    "more": "… {n} more steps",
    "times": " ×{n}",
    "no_result": "no result",
    "recovered": "after {tool} {status}, {next} worked",
    "retried": "{tool} {status}{error}; calling it again worked",
    "not_recovered": "{tool} {status}{error} and the run did not recover",
    "key_step": "{call} succeeded",
    "answer_only": "the answer itself",
    "sep": "; ",
    "end": ".",
    "colon": ": ",
    "reward": " (reward {reward:g})",
    "calls": " ({n} tool calls, {failed} failed)",
    "calls_one": " (1 tool call, {failed} failed)",
    "why": "Why",
    "differs": "compared with the expected actions: {diffs}",
    "diff_missing": "{tool} not called",
    "diff_fewer": "{tool} called fewer times than expected",
    "diff_extra": "{tool} called, not expected",
    "diff_arg": "{tool} {key}: {actual} instead of {expected}",
    "diff_higher": "{tool} {key} higher than expected",
    "diff_lower": "{tool} {key} lower than expected",
    "diff_amounts": "{tool} {key} with other amounts",
    "diff_other": "{tool} with another {key}",
    "went_through_failed": "{tool} {status}{error}; a later call went through but the run failed",
    "got_past": "{tool} {status}{error}; the run went on past it",
    "raised": "raised",
    "the_run": "the run",
    "the_model": "the model",
    "space": " ",
    "status": {"success": "success", "failure": "failed", "timeout": "timed out"},
    "outcome_word": {
        "success": "success",
        "failure": "failure",
        "partial": "partial success",
        "unknown": "unknown",
    },
}
_ZH: dict[str, Any] = {
    "goal": "目标",
    "steps": "步骤",
    "outcome": "结果",
    "turn": "转折点",
    "answer": "回答",
    "no_tools": "未调用工具，直接回答",
    "more": "…… 另有 {n} 步",
    "times": " ×{n}",
    "no_result": "无结果",
    "recovered": "{tool}{status}之后，改用 {next} 成功",
    "retried": "{tool}{status}{error}，再次调用后成功",
    "not_recovered": "{tool}{status}{error}，之后没有恢复",
    "key_step": "{call} 成功",
    "answer_only": "直接给出的回答",
    "sep": "；",
    "end": "。",
    "colon": "：",
    "reward": "（奖励 {reward:g}）",
    "calls": "（{n} 次工具调用，{failed} 次失败）",
    "calls_one": "（1 次工具调用，{failed} 次失败）",
    "why": "原因",
    "differs": "与预期操作相比：{diffs}",
    "diff_missing": "未调用 {tool}",
    "diff_fewer": "{tool} 的调用次数少于预期",
    "diff_extra": "调用了不在预期中的 {tool}",
    "diff_arg": "{tool} 的 {key} 为 {actual}，预期为 {expected}",
    "diff_higher": "{tool} 的 {key} 高于预期",
    "diff_lower": "{tool} 的 {key} 低于预期",
    "diff_amounts": "{tool} 的 {key} 金额与预期不同",
    "diff_other": "{tool} 的 {key} 与预期不同",
    "went_through_failed": "{tool}{status}{error}；之后的调用成功了，但运行仍然失败",
    "got_past": "{tool}{status}{error}，运行随后继续",
    "raised": "抛出异常",
    "the_run": "运行",
    "the_model": "模型",
    "space": "",
    "status": {"success": "成功", "failure": "失败", "timeout": "超时"},
    "outcome_word": {
        "success": "成功",
        "failure": "失败",
        "partial": "部分成功",
        "unknown": "未知",
    },
}


def episode_id(trajectory_id: str) -> str:
    """The id of a trajectory's episode: one per trajectory, whichever reviewer wrote it."""
    return stable_id(trajectory_id, "episode")


@dataclass(slots=True)
class _Raised:
    """A step of the run that raised and is not a tool call (an ``error`` event of no tool:
    a node, a chain, the run itself; or a failed model call), listed among the tool calls at
    its position."""

    position: int
    step: str  # the step's name, "" when the event does not say
    output: str
    status: EventStatus | None = None  # a model call's (failed, timed out); None: raised

    @property
    def signature(self) -> str:
        return f"raised:{self.step}:{self.output}"

    def verb(self, words: dict[str, Any]) -> str:
        if self.status is None:
            return str(words["raised"])
        return str(words["status"][self.status.value])

    def name(self, words: dict[str, Any]) -> str:
        step = one_line(self.step).strip()
        if step:
            return shorten(step, 60)
        return str(words["the_run"] if self.status is None else words["the_model"])


def _raised(events: Sequence[Event]) -> list[_Raised]:
    """The ``error`` events no tool call claims and the failed model calls (not those cut
    off by the run's end), in order; a step's name from the event's ``run``, ``node`` or
    ``model`` metadata."""
    out = []
    for position, event in enumerate(events):
        meta = event.metadata or {}
        if event.event_type is EventType.ERROR and not event.tool_name:
            step = next((str(meta[k]) for k in ("run", "node") if meta.get(k)), "")
            out.append(_Raised(position, step, event.content))
        elif (
            event.event_type is EventType.MODEL_CALL
            and event.status in (EventStatus.FAILURE, EventStatus.TIMEOUT)
            and not meta.get("incomplete")
        ):
            out.append(_Raised(position, str(meta.get("model") or ""), event.content, event.status))
    return out


def _status_word(call: ToolCall, words: dict[str, Any]) -> str:
    if call.status is None:
        return str(words["no_result"])
    return str(words["status"][call.status.value])


def _call_text(call: ToolCall, before: ToolCall | None = None) -> str:
    """``tool(key=value, ...)`` within 60 characters of arguments; after an earlier call of
    the same tool (``before``), the arguments that changed since come first, so that a retry
    that added or changed one does not read as the same call again."""
    args = call.args
    if before is not None and args and before.tool == call.tool:
        changed = [k for k, v in args.items() if k not in before.args or before.args[k] != v]
        args = {k: args[k] for k in changed} | {k: v for k, v in args.items() if k not in changed}
    text = describe_args(args, limit=60) if args else ""
    return f"{call.tool}({text})"


def _steps(calls: Sequence[ToolCall | _Raised], words: dict[str, Any]) -> list[str]:
    """One entry per call (or step that raised); consecutive identical calls with the same
    status are merged."""
    merged: list[tuple[ToolCall | _Raised, int]] = []
    for call in calls:
        if (
            merged
            and merged[-1][0].signature == call.signature
            and merged[-1][0].status == call.status
        ):
            merged[-1] = (merged[-1][0], merged[-1][1] + 1)
        else:
            merged.append((call, 1))
    steps = []
    last: dict[str, ToolCall] = {}  # the previous call of each tool
    for i, (call, count) in enumerate(merged, 1):  # numbered before any are left out
        times = str(words["times"]).format(n=count) if count > 1 else ""
        if isinstance(call, _Raised):
            err = error_text(call.output, 80)
            said = f"{call.name(words)}{words['space']}{call.verb(words)}"
            said += f" ({err})" if err else ""
            steps.append(f"{i}) {said}{times}")
            continue
        text = _call_text(call, last.get(call.tool))
        steps.append(f"{i}) {text} → {_status_word(call, words)}{times}")
        last[call.tool] = call
    if len(steps) > MAX_SHOWN_STEPS:
        hidden = len(steps) - _STEP_HEAD - _STEP_TAIL
        steps = [
            *steps[:_STEP_HEAD],
            str(words["more"]).format(n=hidden),
            *steps[-_STEP_TAIL:],
        ]
    return steps


def _turning_point(
    calls: Sequence[ToolCall],
    raised: Sequence[_Raised],
    outcome: Outcome,
    words: dict[str, Any],
    went_on: int = -1,
    answered: int = -1,
) -> str:
    """What decided the run: the last step that raised (not a tool call) when no tool call
    answered after it: a run that ended on it (``went_on``: the position of the last model or
    tool call that worked; ``answered``: of the last answer) and did not succeed, or one that
    went on past it (a model or tool call worked after it) with no failed tool call and did not
    fail; else a recovery after a failure (another call, or
    the same call again), an unrecovered failure, or the key (state-changing, else last)
    successful call."""
    if raised:
        last = raised[-1]
        err = error_text(last.output, 80)
        parts = {
            "tool": last.name(words),
            "status": last.verb(words),
            "error": f" ({err})" if err else "",
        }
        # what the tool calls after it did decides, else the step itself did
        if not any(c.status is not None and c.position > last.position for c in calls):
            if max(went_on, answered) < last.position:  # the run ended on it
                if outcome is not Outcome.SUCCESS:
                    return str(words["not_recovered"]).format(**parts)
            # went on: a model or tool call worked after it, or the run was judged a success
            # (an answer alone may be a retry that worked or an apology for the error)
            elif (
                (went_on > last.position or outcome is Outcome.SUCCESS)
                and outcome is not Outcome.FAILURE
                and not any(c.failed for c in calls)
            ):
                return str(words["got_past"]).format(**parts)
    first_failed = next((i for i, c in enumerate(calls) if c.failed), None)
    if first_failed is not None:
        failed = calls[first_failed]
        later = [c for c in calls[first_failed + 1 :] if c.succeeded]
        fix = next((c for c in later if c.signature != failed.signature), None)
        retry = next((c for c in later if c.signature == failed.signature), None)
        err = error_text(failed.output, 80)
        # The same call again is what worked, unless a call that changes state came first
        # (a lookup in between is not the fix).
        again = retry is not None and not any(
            c.signature != failed.signature and not is_read_only(c.tool)
            for c in later[: later.index(retry)]
        )
        if again and outcome is not Outcome.FAILURE:
            return str(words["retried"]).format(
                tool=failed.tool,
                status=_status_word(failed, words),
                error=f" ({err})" if err else "",
            )
        if fix is not None and outcome is not Outcome.FAILURE:
            return str(words["recovered"]).format(
                tool=failed.tool,
                status=_status_word(failed, words),
                next=_call_text(fix, failed),
            )
        if fix is None or outcome is Outcome.FAILURE:
            template = "not_recovered" if fix is None else "went_through_failed"
            return str(words[template]).format(
                tool=failed.tool,
                status=_status_word(failed, words),
                error=f" ({err})" if err else "",
            )
    succeeded = [c for c in calls if c.succeeded]
    if succeeded:
        key = next((c for c in reversed(succeeded) if not is_read_only(c.tool)), succeeded[-1])
        return str(words["key_step"]).format(call=_call_text(key))
    return str(words["answer_only"])


def _why(traj: Trajectory, calls: Sequence[ToolCall], words: dict[str, Any]) -> str:
    """The outcome evidence in a few words: the reason given, and for a run that did not
    succeed, how its state-changing calls differ from the expected actions (as classes)."""
    evidence = traj.evidence
    if evidence is None:
        return ""
    parts = [one_line(evidence.reason)] if evidence.reason and evidence.reason.strip() else []
    if traj.outcome is not Outcome.SUCCESS and evidence.expected_actions:
        expected = [Action(a.tool, a.args) for a in evidence.expected_actions]
        diffs = diff_actions(expected, [Action(c.tool, c.args) for c in calls])
        shown = []
        for d in diffs[:_WHY_DIFFS]:
            if d.op == "arg":
                template = "diff_arg" if d.how == "class" else f"diff_{d.how}"
                shown.append(
                    str(words[template]).format(
                        tool=d.tool, key=d.key, actual=d.actual, expected=d.expected
                    )
                )
            else:
                # a missing call of a tool the run did call: it called it fewer times
                op = "fewer" if d.op == "missing" and d.how == "fewer" else d.op
                shown.append(str(words[f"diff_{op}"]).format(tool=d.tool))
        if shown:
            parts.append(str(words["differs"]).format(diffs=str(words["sep"]).join(shown)))
    return str(words["sep"]).join(parts)


def _went_on(events: Sequence[Event]) -> tuple[int, int]:
    """The positions of the last model or tool call that worked (a result or a reply that did
    not fail) and of the last non-blank answer; -1 for none."""
    worked = answered = -1
    for position, event in enumerate(events):
        kind = event.event_type
        if kind in (EventType.TOOL_RESULT, EventType.MODEL_CALL):
            if event.status in (EventStatus.FAILURE, EventStatus.TIMEOUT):
                continue
            if kind is EventType.MODEL_CALL and (event.metadata or {}).get("incomplete"):
                continue
            worked = position
        elif kind is EventType.FINAL_ANSWER and event.content.strip():
            answered = position
    return worked, answered


def _final_answer(traj: Trajectory) -> str:
    """The final answer, else the last model reply (not a failed call's error text)."""
    for event in reversed(traj.events):
        if (
            event.event_type in (EventType.FINAL_ANSWER, EventType.MODEL_CALL)
            and event.status not in (EventStatus.FAILURE, EventStatus.TIMEOUT)
            and event.content.strip()
        ):
            return event.content
    return ""


def _words(traj: Trajectory) -> tuple[str, dict[str, Any]]:
    """The run's task (its user messages when it has none) and the summary's words: Chinese
    when the task is mostly CJK text, else English."""
    user_text = " ".join(e.content for e in traj.events if e.event_type is EventType.USER_MESSAGE)
    task = traj.task if traj.task.strip() else user_text
    return task, _ZH if is_mostly_cjk(task or user_text) else _EN


def summarize_episode(traj: Trajectory, *, max_tokens: int = EPISODE_MAX_TOKENS) -> str:
    """A deterministic episode summary of ``traj``: goal, steps and tools in order, outcome,
    turning point, and the start of the final answer.

    Written in Chinese when the run's task is mostly CJK text, else in English. Consecutive
    identical tool calls are merged (``×3``); a run with more than :data:`MAX_SHOWN_STEPS`
    distinct steps lists its first 5 and last 3. Personal fields and ids in arguments are left
    out (as in the heuristic reviewer's lessons).

    Args:
        traj: a finished trajectory.
        max_tokens: cap in estimated tokens (:func:`hindsight.tokens.estimate_tokens`);
            default :data:`EPISODE_MAX_TOKENS` (300).

    Returns:
        The summary, one paragraph; ``""`` for a trajectory without content.
    """
    if traj.is_empty():
        return ""
    task, words = _words(traj)
    colon, end, sep = str(words["colon"]), str(words["end"]), str(words["sep"])
    calls = collect_calls(traj.events)
    raised = _raised(traj.events)
    goal = task_summary(task, 160) or (traj.task_type or "")
    parts: list[str] = []
    if goal:
        stop = "" if goal[-1] in ".!?。！？" else end
        parts.append(f"{words['goal']}{colon}{goal}{stop}")
    done: list[ToolCall | _Raised] = sorted([*calls, *raised], key=lambda c: c.position)
    steps = _steps(done, words) if done else [str(words["no_tools"])]
    parts.append(f"{words['steps']}{colon}{sep.join(steps)}{end}")
    outcome = str(words["outcome_word"][traj.outcome.value])
    if traj.reward is not None:
        outcome += str(words["reward"]).format(reward=traj.reward)
    elif traj.outcome is Outcome.UNKNOWN and calls:
        said = words["calls_one"] if len(calls) == 1 else words["calls"]
        outcome += str(said).format(n=len(calls), failed=sum(c.failed for c in calls))
    parts.append(f"{words['outcome']}{colon}{outcome}{end}")
    turn = _turning_point(calls, raised, traj.outcome, words, *_went_on(traj.events))
    parts.append(f"{words['turn']}{colon}{turn}{end}")
    why = _why(traj, calls, words)
    if why:
        parts.append(f"{words['why']}{colon}{why}{end}")
    answer = _final_answer(traj)
    if answer:
        parts.append(f"{words['answer']}{colon}{shorten(answer, 160)}")
    text = " ".join(parts) if words is _EN else "".join(parts)
    text = masker_for([traj]).mask_personal(text)
    if estimate_tokens(text) > max_tokens:
        text = truncate_to_tokens(text, max_tokens, marker=" …")
    return text


def answer_start(traj: Trajectory, summary: str) -> int:
    """Where the final answer starts in ``summary``, :func:`summarize_episode`'s text for
    ``traj`` (masked or not): the first place its answer label (``Answer:``, ``回答：``)
    stands, so that everything before it is built from the run's record (goal, calls,
    outcome, evidence) and everything after it is the agent's own words; ``len(summary)``
    when it holds no answer. A label the goal or a call happens to contain only moves the
    start earlier."""
    words = _words(traj)[1]
    at = summary.find(f"{words['answer']}{words['colon']}")
    return len(summary) if at < 0 else at


def episode_experience(
    traj: Trajectory,
    content: str,
    *,
    source: str,
    trust: float,
    embedding_model: str,
    now: datetime,
    metadata: dict[str, Any] | None = None,
) -> Experience:
    """The episode of ``traj`` as an experience (kind ``episode``, id :func:`episode_id`).

    Args:
        traj: the reviewed trajectory (tenant, namespace, task_type, tags are copied).
        content: the summary (:func:`summarize_episode` or the reviewer's own).
        source: who wrote the summary: ``"trajectory"`` (deterministic) or a reviewer name;
            kept in ``metadata["summary_source"]`` and as ``reviewer``.
        trust: provenance trust in [0,1] (as for the run's lessons).
        embedding_model: recorded on the experience.
        now: creation time (UTC).
        metadata: extra metadata (e.g. ``prompt_version`` of an LLM summary).

    ``metadata`` also holds ``outcome`` (the run's recorded outcome) and ``event_count``.
    """
    tools = list(dict.fromkeys(e.tool_name for e in traj.events if e.tool_name))
    meta: dict[str, Any] = {
        "summary_source": source,
        "outcome": traj.outcome.value,
        "event_count": len(traj.events),
    }
    meta.update(metadata or {})
    return Experience(
        id=episode_id(traj.id),
        tenant_id=traj.tenant_id,
        namespace=traj.namespace,
        task_type=traj.task_type,
        kind=ExperienceKind.EPISODE,
        content=content,
        tools=tools,
        tags=sorted(set(traj.tags)),
        confidence=EPISODE_CONFIDENCE,
        importance=0.5,
        trust=trust,
        provenance=traj.source,
        source_trajectory_ids=[traj.id],
        created_at=now,
        updated_at=now,
        embedding_model=embedding_model,
        reviewer=source,
        metadata=meta,
    )
