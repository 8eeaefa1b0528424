"""Sentence templates of the heuristic reviewer, in English and in Chinese.

The Chinese set is used when the task text is mostly CJK, so that a Chinese query finds the
lessons of a Chinese run (case C06). Templates avoid absolute words ("never", "always"): the
write-time guard treats such statements as suspicious (MISSION S8).
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Lang", "advice_for", "render"]

Lang = Literal["en", "zh"]

_TEMPLATES: dict[str, dict[Lang, str]] = {
    "times": {"en": " {n} times", "zh": "（{n} 次）"},
    "with_args": {"en": " when called with {args}", "zh": "，调用参数：{args}"},
    "paren_args": {"en": " with {args}", "zh": "（{args}）"},
    "args_paren": {"en": " ({args})", "zh": "（{args}）"},
    "change_value": {"en": "{key} {old} -> {new}", "zh": " {key} 从 {old} 改为 {new}"},
    "change_added": {"en": "added {key}{value}", "zh": "增加参数 {key}{value}"},
    "change_dropped": {"en": "without {key}", "zh": "去掉参数 {key}"},
    "change_other": {"en": "a different {key}", "zh": "换用另一个 {key}"},
    "change_more": {"en": "+{n} more changes", "zh": "另有 {n} 处改动"},
    "change_join": {"en": "; ", "zh": "；"},
    "reward": {"en": " (reward {reward})", "zh": "（reward {reward}）"},
    "failed_with": {"en": "failed with '{error}'", "zh": "因“{error}”失败"},
    "timed_out": {"en": "timed out", "zh": "调用超时"},
    "subject_task": {"en": "For tasks like '{task}'", "zh": "对于“{task}”这类任务"},
    "subject_type": {"en": "For {task_type} tasks", "zh": "对于 {task_type} 类任务"},
    "subject_none": {"en": "For this kind of task", "zh": "对于这类任务"},
    "tool_failure": {
        "en": "{tool} failed{times} with '{error}'{with_args}: {advice}.",
        "zh": "{tool} 调用失败{times}，错误为“{error}”{with_args}；建议：{advice}。",
    },
    "tool_timeout": {
        "en": "{tool} timed out{times}{with_args}: retry once after a short wait, then fall "
        "back to another tool or tell the user it is unavailable.",
        "zh": "{tool} 调用超时{times}{with_args}；"
        "建议稍等后重试一次，仍超时则改用其他工具或告知用户。",
    },
    "anti_pattern": {
        "en": "{tool} was called {n} times with identical arguments{args_paren} and {failure} "
        "each time: after a failure change the arguments or the approach instead of "
        "repeating the same call.",
        "zh": "{tool} 以相同参数{args_paren}被重复调用了 {n} 次，每次都{failure}："
        "失败后应修改参数或换一种做法，而不是原样重试。",
    },
    "improvement_changed": {
        "en": "When {tool} {failure}, calling it again with {changes} worked.",
        "zh": "{tool} {failure}后，将{changes}，再次调用即成功。",
    },
    "improvement_retry": {
        "en": "When {tool} {failure}, retrying it with the same arguments worked: the failure "
        "was transient.",
        "zh": "{tool} {failure}后，用相同参数重试即成功，说明该失败是暂时性的。",
    },
    "improvement_other": {
        "en": "When {tool} {failure}, calling {other}{paren_args} instead worked.",
        "zh": "{tool} {failure}后，改用 {other}{paren_args} 即成功。",
    },
    "outcome_success": {
        "en": "{subject}, the run succeeded{reward} with the tool sequence {sequence}.",
        "zh": "{subject}，本次运行成功{reward}，工具调用顺序：{sequence}。",
    },
    "outcome_failure": {
        "en": "{subject}, the run failed{reward} after {n} tool call{plural} ({failures} failed): "
        "{sequence}.",
        "zh": "{subject}，本次运行失败{reward}，"
        "共调用工具 {n} 次（失败 {failures} 次）：{sequence}。",
    },
    "outcome_no_tools": {
        "en": "{subject}, the run {ended}{reward} without any tool call.",
        "zh": "{subject}，本次运行{ended}{reward}，未调用任何工具。",
    },
    "ended_success": {"en": "succeeded", "zh": "成功"},
    "ended_failure": {"en": "failed", "zh": "失败"},
    "ended_partial": {"en": "only partly succeeded", "zh": "部分成功"},
    "outcome_partial": {
        "en": "{subject}, the run only partly succeeded{reward} with the tool sequence {sequence}.",
        "zh": "{subject}，本次运行部分成功{reward}，工具调用顺序：{sequence}。",
    },
    "key_step_success": {
        "en": "{subject}, the run succeeded after calling {tool}{paren_args}.",
        "zh": "{subject}，调用 {tool}{paren_args}是成功的关键一步。",
    },
    "key_step_answer": {
        "en": "{subject}, the run succeeded by answering directly: '{answer}'.",
        "zh": "{subject}，直接回答即成功：“{answer}”。",
    },
    "key_step_failure": {
        "en": "{subject}, the run failed although its last state-changing call, {tool}"
        "{paren_args}, succeeded: verify that step against the user's request first.",
        "zh": "{subject}，运行失败，但最后一次改变状态的调用 {tool}{paren_args}本身成功了："
        "应先对照用户请求核对这一步。",
    },
    "key_step_unknown": {
        "en": "{subject}, the final key step was {tool}{paren_args}.",
        "zh": "{subject}，最后的关键一步是调用 {tool}{paren_args}。",
    },
    "failure_cause": {
        "en": "{subject}, the run failed; the direct cause seen was that {tool} {failure}"
        "{with_args} and was not recovered.",
        "zh": "{subject}，运行失败，直接原因是 {tool} {failure}{with_args}，且未能恢复。",
    },
    "task_scope": {
        "en": "Task class: {kind}'{task}', handled with the tools {tools}.",
        "zh": "任务类型：{kind}“{task}”，使用的工具：{tools}。",
    },
    "task_scope_no_tools": {
        "en": "Task class: {kind}'{task}', answered without tools.",
        "zh": "任务类型：{kind}“{task}”，未调用工具，直接回答。",
    },
}

# (pattern over the error text, English advice, Chinese advice); the first match wins.
_ADVICE: list[tuple[re.Pattern[str], str, str]] = [
    (
        re.compile(r"does not add up|do not add up|mismatch|does not match|total", re.I),
        "make the amounts add up exactly to the total before calling",
        "调用前先核对金额，使各项之和恰好等于总额",
    ),
    (
        re.compile(r"rate.?limit|too many requests|\b429\b|throttl", re.I),
        "slow down and retry after a delay",
        "降低调用频率，稍后再试",
    ),
    (
        re.compile(r"not enough|insufficient|balance|exceed|quota|no seats|sold out", re.I),
        "check the available balance or capacity first, then reduce or split the request",
        "先查询可用余额或容量，再减少或拆分请求",
    ),
    (
        re.compile(r"not available|unavailable|not open|closed", re.I),
        "confirm availability with a search right before calling and pick an available option",
        "调用前先查询确认可用，再选择可用的选项",
    ),
    (
        re.compile(r"not found|does not exist|no such|unknown", re.I),
        "look the id up first and pass only ids that exist",
        "先查询确认 ID 存在，只传入存在的 ID",
    ),
    (
        re.compile(
            r"cannot|can't|not allowed|not permitted|forbidden|denied|unauthori[sz]ed|permission",
            re.I,
        ),
        "respect the restriction stated in the error and choose an allowed option",
        "遵守错误信息中的限制，改用允许的选项",
    ),
    (
        re.compile(r"invalid|must be|required|missing|expected|malformed|type|format", re.I),
        "validate the arguments against the tool's schema before calling",
        "调用前按工具的参数格式校验参数",
    ),
]
_DEFAULT_ADVICE = (
    "check the arguments against the error message before calling again",
    "再次调用前先根据错误信息检查参数",
)


def render(template: str, lang: Lang, /, **values: object) -> str:
    """Fill the template named ``template`` in ``lang`` with ``values``."""
    return _TEMPLATES[template][lang].format(**values)


def advice_for(error: str, lang: Lang) -> str:
    """A short, general piece of advice for a tool error, chosen by the error's wording."""
    for pattern, english, chinese in _ADVICE:
        if pattern.search(error):
            return english if lang == "en" else chinese
    return _DEFAULT_ADVICE[0] if lang == "en" else _DEFAULT_ADVICE[1]
