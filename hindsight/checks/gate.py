"""Decision-time modes of risk checks, shared by the framework integrations
(docs/checks.md).

:class:`RiskGate` decides, for a proposed tool call, what the matching checks do by the mode
of the most severe one: ``advise`` (hold the first call once and answer with the advice),
``confirm`` (a human-in-the-loop interrupt, where the framework has one), ``off``
(docs/checks.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hindsight._errors import UsageError
from hindsight.checks.lookup import CheckResult

__all__ = [
    "MODES",
    "SPECIFIC_MATCHES",
    "GateDecision",
    "RiskGate",
    "approved",
    "held_message",
]

Mode = Literal["advise", "confirm", "off"]
MODES: tuple[str, ...] = ("advise", "confirm", "off")
#: Matches that say something about this call's arguments (not only its tool).
SPECIFIC_MATCHES = frozenset({"class", "argument", "condition"})
"""Matches specific to this call (its argument's class, or a rule's condition holding for this
run): shown even when the model saw the lesson in the recall block already."""
_RANK = {"off": 0, "advise": 1, "confirm": 2}
_SEVERITIES = ("high", "medium", "low")


def _modes(value: str | Mapping[str, str]) -> dict[str, str]:
    if isinstance(value, str):
        value = dict.fromkeys(_SEVERITIES, value)
    if not isinstance(value, Mapping):
        raise UsageError("checks must be 'advise', 'confirm', 'off' or a mapping by severity")
    modes = {s: "advise" for s in _SEVERITIES}
    for severity, mode in value.items():
        if severity not in _SEVERITIES or mode not in MODES:
            raise UsageError(
                f"checks: severity must be one of {_SEVERITIES} and mode one of {MODES}, "
                f"got {severity!r}: {mode!r}"
            )
        modes[severity] = mode
    return modes


@dataclass(frozen=True)
class GateDecision:
    """What to do with one proposed call: ``mode`` and the checks that decided it."""

    mode: str
    result: CheckResult


class RiskGate:
    """The modes by severity (``checks=`` of the integrations) and the decision for a call.

    Args:
        checks: one mode for every severity, or ``{"high": "confirm", "low": "off", ...}``
            (unnamed severities: ``advise``).
        min_score: matches under this score are ignored (0.3: a weak match of a weak lesson
            does not hold a call).
    """

    def __init__(self, checks: str | Mapping[str, str] = "advise", min_score: float = 0.3):
        self.modes = _modes(checks)
        self.min_score = float(min_score)

    @property
    def enabled(self) -> bool:
        return any(mode != "off" for mode in self.modes.values())

    def decide(self, result: CheckResult | None) -> GateDecision | None:
        """``None`` when nothing applies (no result, no strong enough match, all off)."""
        if result is None:
            return None
        kept = [m for m in result.checks if m.score >= self.min_score]
        kept = [m for m in kept if self.modes[m.check.severity] != "off"]
        if not kept:
            return None
        mode = max((self.modes[m.check.severity] for m in kept), key=_RANK.__getitem__)
        return GateDecision(mode, result.model_copy(update={"checks": kept}))


def held_message(tool: str, result: CheckResult) -> str:
    """The answer of a held call: the advice block and what happened to the call."""
    return (
        f"{result.render()}\n"
        f"hindsight held this {tool} call once so that these checks can be read first; it was "
        f"NOT executed. If it still fits the user's request and the policy, call {tool} again "
        "(with the same or corrected arguments) and it will run."
    )


def approved(answer: Any) -> bool:
    """Whether a resume value approves a held call."""
    if isinstance(answer, Mapping):
        answer = answer.get("approve", answer.get("decision"))
    if isinstance(answer, str):
        return answer.strip().lower() in ("approve", "approved", "yes", "y", "ok", "true")
    return answer is True
