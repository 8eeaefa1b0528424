"""Which lessons compile into risk checks, and how (issue 16, item 1).

The rules (docs/checks.md):

* **Kinds.** Lessons of kinds ``rule``, ``anti_pattern``, ``tool_reliability`` and
  ``improvement`` (:data:`COMPILED_KINDS`) compile; episodes (one run's record) never do.
  Only ``active`` lessons are read, so an archived, superseded, quarantined or deleted lesson
  yields no check and a new version yields the new check: checks follow the lesson lifecycle
  without a table of their own.
* **Trigger tool.** A contrast rule (``metadata["contrast"]``, lesson keys ``contrast:...``)
  triggers on its ``tool``. An ``improvement`` triggers on its first tool (the one that failed;
  a second tool is the substitute it advises). Other lessons trigger on each tool of ``tools``.
  A lesson without ``tools`` (a model's rule) triggers on the asked tools its text names as a
  word (``book_reservation`` in "... before book_reservation ...").
* **Argument conditions.** A contrast rule about an argument (``op`` ``arg``) carries one
  :class:`~hindsight.checks.model.ArgCondition`: the argument's key, the class a failed run
  passed, the class the reference passed and how they differed. Classes are those of
  :func:`hindsight.review.contrast.value_class` (``certificate + credit_card``,
  ``basic_economy``, ``a number``), never values.
* **Advice** is the lesson's text (already general and masked by the review), one line.
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

__all__ = ["COMPILED_KINDS", "SEVERITY", "Severity", "compile_checks", "names_tool"]

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


def _trigger_tools(exp: Experience, asked: Sequence[str]) -> list[str]:
    contrast = exp.metadata.get("contrast")
    if isinstance(contrast, dict) and isinstance(contrast.get("tool"), str) and contrast["tool"]:
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
    return [
        RiskCheck(
            id=f"{exp.id}:{tool}",
            tool=tool,
            conditions=conditions,
            task_type=exp.task_type,
            tags=list(exp.tags),
            advice=" ".join(exp.content.split()),
            severity=SEVERITY[exp.kind],
            lesson_id=exp.id,
            lesson_version=exp.version,
            lesson_kind=exp.kind.value,
            lesson_key=key if isinstance(key, str) else None,
            namespace=exp.namespace,
            confidence=exp.confidence,
            trust=exp.trust,
            sources=list(exp.source_trajectory_ids),
        )
        for tool in _trigger_tools(exp, list(asked))
    ]
