"""Which lessons compile into risk checks, and how (docs/checks.md).

The rules (docs/checks.md):

* **Kinds.** Lessons of kinds ``rule``, ``anti_pattern``, ``tool_reliability`` and
  ``improvement`` (:data:`COMPILED_KINDS`) compile; episodes (one run's record) never do.
  Only ``active`` lessons are read, so an archived, superseded, quarantined or deleted lesson
  yields no check and a new version yields the new check: checks follow the lesson lifecycle
  without a table of their own.
* **Trigger tool.** A mined rule (``metadata["condition"]``, docs/review.md#condition-mining)
  triggers on its ``tool`` and carries its predicates, tested against the run's state at
  decision time (:mod:`hindsight.checks.lookup`). A contrast rule (``metadata["contrast"]``,
  lesson keys ``contrast:...``) triggers on its ``tool``, except a rule about a call failed
  runs never made (``op`` ``missing``, no ``how``): it triggers on the state-changing tools
  they called in its place (``contrast["instead"]``, united across runs by write-back), since
  at decision time the agent is about to call one of those where successful runs called the
  missing tool; with none
  recorded (the failed runs stopped after a read or replied in text), on its own tool. An
  ``improvement`` triggers on its first tool (the one that failed; a second tool is the
  substitute it advises). Other lessons trigger on each tool of ``tools``.
  A lesson without ``tools`` (a model's rule) triggers on the asked tools its text names as a
  word (``book_reservation`` in "... before book_reservation ...").
* **Argument conditions.** A contrast rule about an argument (``op`` ``arg``) carries one
  :class:`~hindsight.checks.model.ArgCondition`: the argument's key, the class a failed run
  passed, the class the reference passed and how they differed. Classes are those of
  :func:`hindsight.review.contrast.value_class` (``certificate + credit_card``,
  ``basic_economy``, ``a number``), never values.
* **Advice** is the lesson's text (already general and masked by the review), one line. A
  missing-call rule's advice adds the salient argument classes of the reference calls
  (``contrast["references"]``, at most :data:`MAX_REFERENCES`; "Where it worked, X was called
  with cabin=economy, flights=2 x flight."), in the lesson's language (English or Chinese):
  what to call is not enough to call it right.
* **Severity** (:data:`SEVERITY`): ``high`` for rules (a failed run against a success or the
  expected actions, or a reviewer's "when X, do Y"), ``medium`` for anti-patterns and tool
  reliability (an observed failure), ``low`` for improvements (an inferred fix).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from hindsight.checks.model import ArgCondition, RiskCheck, Severity
from hindsight.models import Experience, ExperienceKind, ExperienceStatus

__all__ = [
    "COMPILED_KINDS",
    "MAX_REFERENCES",
    "SEVERITY",
    "Severity",
    "compile_checks",
    "names_tool",
]

#: Reference argument lists a missing-call rule's advice names.
MAX_REFERENCES = 3

_REFERENCES = {
    "en": "Where it worked, {tool} was called with {refs}.",
    "zh": "成功时调用 {tool} 的参数为：{refs}。",
}
_REFERENCES_JOIN = {"en": "; or ", "zh": "；或 "}
_HAN = re.compile(r"[\u4e00-\u9fff]")

#: Kinds of lessons that compile into checks.
COMPILED_KINDS: tuple[ExperienceKind, ...] = (
    ExperienceKind.RULE,
    ExperienceKind.ANTI_PATTERN,
    ExperienceKind.TOOL_RELIABILITY,
    ExperienceKind.IMPROVEMENT,
)

#: Severity of a check by the kind of its lesson.
SEVERITY: dict[ExperienceKind, Severity] = {
    ExperienceKind.RULE: "high",
    ExperienceKind.ANTI_PATTERN: "medium",
    ExperienceKind.TOOL_RELIABILITY: "medium",
    ExperienceKind.IMPROVEMENT: "low",
}


def names_tool(text: str, tool: str) -> bool:
    """Whether ``text`` names ``tool`` as a whole word (not inside a longer identifier)."""
    return bool(tool) and re.search(rf"(?<![\w]){re.escape(tool)}(?![\w])", text) is not None


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str) and v] if isinstance(value, list) else []


def _missing(contrast: Any) -> bool:
    """Whether ``contrast`` (``metadata["contrast"]``) is a missing-call difference."""
    return isinstance(contrast, dict) and contrast.get("op") == "missing"


def _condition(exp: Experience) -> dict[str, Any] | None:
    """A mined rule's ``metadata["condition"]`` when it is well formed, else ``None``."""
    cond = exp.metadata.get("condition")
    if not isinstance(cond, dict) or not isinstance(cond.get("tool"), str) or not cond["tool"]:
        return None
    preds = cond.get("predicates")
    if not isinstance(preds, list) or not preds:
        return None
    if not all(isinstance(p, dict) and {"feature", "op", "value"} <= set(p) for p in preds):
        return None
    return cond


def _trigger_tools(exp: Experience, asked: Sequence[str]) -> list[str]:
    cond = _condition(exp)
    if cond is not None:
        return [cond["tool"]]
    contrast = exp.metadata.get("contrast")
    if isinstance(contrast, dict) and isinstance(contrast.get("tool"), str) and contrast["tool"]:
        if _missing(contrast) and not contrast.get("how"):
            instead = [t for t in _strings(contrast.get("instead")) if t != contrast["tool"]]
            if instead:
                return list(dict.fromkeys(instead))
        return [contrast["tool"]]
    if exp.tools:
        return exp.tools[:1] if exp.kind is ExperienceKind.IMPROVEMENT else list(exp.tools)
    return [t for t in asked if names_tool(exp.content, t)]


def _conditions(exp: Experience) -> list[ArgCondition]:
    contrast: Any = exp.metadata.get("contrast")
    if not isinstance(contrast, dict) or contrast.get("op") != "arg" or not contrast.get("key"):
        return []
    return [
        ArgCondition(
            key=str(contrast["key"]),
            failed=str(contrast.get("actual") or ""),
            expected=str(contrast.get("expected") or ""),
            how=str(contrast.get("how") or ""),
        )
    ]


def _about(exp: Experience) -> str | None:
    contrast: Any = exp.metadata.get("contrast")
    return str(contrast["tool"]) if _missing(contrast) and contrast.get("tool") else None


def _advice(exp: Experience) -> str:
    text = " ".join(exp.content.split())
    contrast: Any = exp.metadata.get("contrast")
    if not _missing(contrast):
        return text
    refs = _strings(contrast.get("references"))[:MAX_REFERENCES]
    if not refs:
        return text
    lang = "zh" if _HAN.search(text) else "en"
    joined = _REFERENCES_JOIN[lang].join(refs)
    return f"{text} {_REFERENCES[lang].format(tool=contrast['tool'], refs=joined)}"


def compile_checks(exp: Experience, asked: Iterable[str] = ()) -> list[RiskCheck]:
    """The risk checks of the lesson ``exp`` (the rules of this module's docstring); ``[]``
    for an episode, an inactive lesson or a lesson about no tool.

    Args:
        exp: the lesson.
        asked: tool names to look for in the text of a lesson without ``tools``.
    """
    if exp.kind not in COMPILED_KINDS or exp.status is not ExperienceStatus.ACTIVE:
        return []
    conditions = _conditions(exp)
    key = exp.metadata.get("lesson_key")
    cond = _condition(exp)
    return [
        RiskCheck(
            id=f"{exp.id}:{tool}",
            tool=tool,
            conditions=conditions,
            task_type=exp.task_type,
            tags=list(exp.tags),
            advice=_advice(exp),
            severity=SEVERITY[exp.kind],
            lesson_id=exp.id,
            lesson_version=exp.version,
            lesson_kind=exp.kind.value,
            lesson_key=key if isinstance(key, str) else None,
            subject=exp.subject,
            namespace=exp.namespace,
            confidence=exp.confidence,
            trust=exp.trust,
            sources=list(exp.source_trajectory_ids),
            instead_of=_about(exp) if _about(exp) not in (None, tool) else None,
            form=None if cond is None else str(cond.get("form") or ""),
            predicates=[] if cond is None else list(cond["predicates"]),
        )
        for tool in _trigger_tools(exp, list(asked))
    ]
