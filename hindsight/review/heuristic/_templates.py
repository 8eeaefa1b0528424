"""Sentence templates of the heuristic reviewer, in English and in Chinese.

The Chinese set is used when the run is mostly CJK text, so that a Chinese query finds the
lessons of a Chinese run. Every template is a general, actionable sentence about a
tool or a step ("before calling X, check Y: ..."), never a restatement of one run, and avoids
absolute words ("never", "always"), which the write-time guard treats as suspicious
(docs/security.md). Values reach the templates only as classes (:mod:`hindsight.review.masking`).
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Lang", "advice_for", "render"]

Lang = Literal["en", "zh"]

_TEMPLATES: dict[str, dict[Lang, str]] = {
    # -- pieces ----------------------------------------------------------------------------
    "paren": {"en": " ({args})", "zh": "（{args}）"},
    "change_value": {"en": "{key} {old} -> {new}", "zh": "{key} 从 {old} 改为 {new}"},
    "change_added": {"en": "adding {key}{value}", "zh": "增加参数 {key}{value}"},
    "change_count": {"en": "{old} -> {new}", "zh": "从 {old} 改为 {new}"},
    "change_amounts": {"en": "{change} (other amounts)", "zh": "{change}（金额也不同）"},
    "change_dropped": {"en": "dropping {key}", "zh": "去掉参数 {key}"},
    "change_other": {"en": "another {key}", "zh": "换用另一个 {key}"},
    "change_others": {"en": "other {key}", "zh": "换用另一些 {key}"},
    "change_join": {"en": ", ", "zh": "，"},
    # the changes of several runs that fixed the same error (hindsight.writeback.variants)
    "variants_join": {"en": ", or with ", "zh": "，或将 "},
    "went_through": {"en": "went through", "zh": "调用成功"},
    "worked": {"en": "worked", "zh": "奏效"},
    "timed_out": {"en": "times out", "zh": "超时"},
    "failed_with": {"en": "fails with '{error}'", "zh": "报错“{error}”"},
    # -- lessons about a tool (one run is enough) -------------------------------------------
    "tool_failure": {
        "en": "{tool} can fail with '{error}': {advice}.",
        "zh": "{tool} 可能报错“{error}”；建议：{advice}。",
    },
    "tool_timeout": {
        "en": "{tool} can time out: retry once after a short wait, then fall back "
        "to another tool or tell the user it is unavailable.",
        "zh": "{tool} 可能超时；建议稍等后重试一次，仍超时则改用其他工具或告知用户。",
    },
    "anti_pattern": {
        "en": "When {tool} {failure}, do not repeat the same call (it failed the same way "
        "again): {advice}.",
        "zh": "{tool} {failure}后，不要原样重试（同样的调用再次失败）；建议：{advice}。",
    },
    "fix_changed": {
        "en": "When {tool} {failure}, calling it again with {changes} {result}.",
        "zh": "{tool} {failure}后，将 {changes} 后再次调用即{result}。",
    },
    "fix_retry": {
        "en": "When {tool} {failure}, one retry with the same arguments {result}: the failure "
        "can be transient.",
        "zh": "{tool} {failure}后，用相同参数重试一次即{result}，该失败可能是暂时性的。",
    },
    "fix_retries": {
        "en": "When {tool} {failure}, retrying with the same arguments {result} on attempt "
        "{attempt} (the {failed} before failed the same way): the failure can be transient.",
        "zh": "{tool} {failure}后，用相同参数重试，第 {attempt} 次即{result}（前 {failed} "
        "次同样失败），该失败可能是暂时性的。",
    },
    "fix_other": {
        "en": "When {tool} {failure}, calling {other}{args} instead {result}.",
        "zh": "{tool} {failure}后，改用 {other}{args} 即{result}。",
    },
}

_RUNNING_SHORT = (
    "check how much is left first, then ask for no more than that or choose another option",
    "先查询还剩多少，再把请求减到不超过剩余量，或改选其他选项",
)

# (pattern over the error text, English advice, Chinese advice); the first match wins. The
# categories are those of tool errors in general (arithmetic, rate limits, capacity,
# availability, unknown ids, permissions, validation), not of one domain.
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
        *_RUNNING_SHORT,
    ),
    (  # the service itself is down or overloaded: not the thing asked for
        re.compile(
            r"\b(?:HTTP(?:/[\d.]+)?\s*)?5\d\d\b|service unavailable|bad gateway|server error|"
            r"overloaded|temporarily|try again later|upstream",
            re.I,
        ),
        "wait briefly and retry once, then fall back to another tool or tell the user it is "
        "unavailable",
        "稍等后重试一次，仍失败则改用其他工具，或告知用户该服务暂不可用",
    ),
    (  # a file or folder the call names, not a record's id
        re.compile(
            r"no such file|no such (?:directory|folder)|not a directory|\bENOENT\b|"
            r"\b(?:file|directory|folder)\b[^;\n]{0,40}?\b(?:not found|does not exist|"
            r"doesn't exist)\b|\bpath\b[^;\n]{0,40}?\b(?:does not exist|doesn't exist)\b|"
            r"cannot find the (?:file|path)",
            re.I,
        ),
        "check that the file or path exists first (list its folder) and pass one that does",
        "先确认文件或路径存在（列出其所在目录），只传入存在的路径",
    ),
    (
        re.compile(r"not available|unavailable|not open|closed", re.I),
        "confirm availability with a search right before calling and pick an available option",
        "调用前先查询确认可用，再选择可用的选项",
    ),
    (  # the address of the service, not a thing the call names: "No such host", "unknown host"
        re.compile(
            r"(?:no such|unknown|unresolv\w*|could not resolve)\s+(?:host|hostname|domain)\b"
            r"|name resolution|name or service not known|getaddrinfo",
            re.I,
        ),
        "check the service's address and network settings; the call itself may be right",
        "检查服务地址和网络设置；调用本身可能没有问题",
    ),
    (
        re.compile(r"not found|does not exist|no such|unknown", re.I),
        "look the id up first and pass only ids that exist",
        "先查询确认 ID 存在，只传入存在的 ID",
    ),
    (  # a check of who is asking, due first: "identity verification required", "login needed"
        re.compile(
            r"\b(?:identity|authenticat\w*|re-?auth\w*|log(?:ged)?[\s-]?in|2fa|mfa|otp|"
            r"two[\s-]factor)\b[^.;]{0,40}?\b(?:required|needed|first|before|pending)\b|"
            r"\b(?:requires?|needs?|must)\b[^.;]{0,20}?\b(?:authenticat\w*|re-?auth\w*|"
            r"log(?:ged)?[\s-]?in)\b|\bnot (?:authenticated|logged in)\b|"
            r"\b(?:user|customer|caller|client|account holder|person|requester)\b[^.;]{0,30}?"
            r"\b(?:must be|needs to be|has to be|is not|isn't|not)\s+(?:verified|authenticated)\b|"
            r"\bverif\w*\s+(?:of\s+)?(?:the\s+)?(?:identity|user|customer|caller)\b",
            re.I,
        ),
        "complete the verification the error asks for first (confirm who the user is), or tell "
        "the user it is needed",
        "先完成错误信息要求的身份验证（确认用户身份），或告知用户需要验证",
    ),
    (  # a step someone must take first: "prior authorization required", "needs approval"
        re.compile(
            r"\bauthori[sz]ation\b(?!\s+header)|\bapproval\b|\bsign[\s-]?off\b|\bconsent\b",
            re.I,
        ),
        "get the authorization or approval the error asks for first, or tell the user it is needed",
        "先取得错误信息要求的授权或审批，或告知用户需要授权",
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
_DEFAULT_ADVICE = (  # an error may be about the call's arguments or about the state it met
    "check the arguments and what earlier results showed against the error message before "
    "calling again",
    "再次调用前先根据错误信息核对参数和之前的结果",
)


_TIMEOUT_ADVICE = (
    "fall back to another tool or tell the user it is unavailable",
    "改用其他工具，或告知用户该服务暂不可用",
)


_RETRY_ADVICE = frozenset(
    text for _, english, chinese in _ADVICE for text in (english, chinese) if "retry" in english
)
"""The advice of transient errors (retry after a delay): wrong after the same call already
failed the same way again."""


def repeat_advice(error: str | None, lang: Lang) -> str:
    """The advice of a repeated failing call: :func:`advice_for` its error; for a call that
    timed out again (``error`` ``None``), or whose error's advice is to retry (the retry was
    what failed), to fall back rather than try once more."""
    advice = None if error is None else advice_for(error, lang)
    if advice is None or advice in _RETRY_ADVICE:
        return _TIMEOUT_ADVICE[0] if lang == "en" else _TIMEOUT_ADVICE[1]
    return advice


def render(template: str, lang: Lang, /, **values: object) -> str:
    """Fill the template named ``template`` in ``lang`` with ``values``."""
    return _TEMPLATES[template][lang].format(**values)


# What ran short, in the error's own word: "not enough seats", "insufficient stock", "the
# balance is not enough", "quota exceeded" (English errors; otherwise the advice stays general).
_SHORT_OF = (
    re.compile(r"\b(?:not enough|insufficient|no)\s+([a-z]{3,})\b", re.I),
    re.compile(r"\b([a-z]{3,})\s+(?:is |are |was |were )?(?:not enough|too low|exceeded)", re.I),
)
_NOT_A_QUANTITY = frozenset(
    {"more", "such", "any", "longer", "enough", "the", "and", "has", "have"}
)


def _short_of(error: str) -> str | None:
    for pattern in _SHORT_OF:
        for match in pattern.finditer(error):
            word = match.group(1).lower()
            if word not in _NOT_A_QUANTITY:
                return word
    return None


def advice_for(error: str, lang: Lang) -> str:
    """A short, general piece of advice for a tool error, chosen by the error's wording; for
    running short, it names what ran short when the error says it in English ("check the
    seats left first")."""
    for pattern, english, chinese in _ADVICE:
        if pattern.search(error):
            if lang != "en":
                return chinese
            if english == _RUNNING_SHORT[0] and (what := _short_of(error)):
                return english.replace("how much is left", f"the {what} left", 1)
            return english
    return _DEFAULT_ADVICE[0] if lang == "en" else _DEFAULT_ADVICE[1]
