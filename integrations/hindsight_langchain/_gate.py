"""Decision-time risk checks in front of a tool call (issue 16, MISSION S15).

:class:`RiskGate` decides, for a tool call the model proposed, what the matching risk checks
(:meth:`hindsight.AsyncMemory.check_action`) do, by the mode of the most severe one:

* ``advise`` (default): the first proposal of that tool in a run is **held**, not run: the tool
  answers with the advice block (reference data, delimited like the recall block) and says so,
  so the model reads the advice before the call executes; it then proposes the call again
  (the same or corrected) and that proposal runs. The arguments are never changed.
* ``confirm``: a human-in-the-loop interrupt (``langgraph.types.interrupt``) with the call and
  the checks; resuming with ``True`` / ``"approve"`` / ``{"approve": true}`` runs the call
  unchanged, anything else answers the model that a human declined it.
* ``off``: nothing.

A failing, slow or closed memory leaves the call untouched (the engine logs it once).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hindsight import UsageError
from hindsight.checks import CheckResult

__all__ = ["MODES", "GateDecision", "RiskGate", "approved", "held_message"]

Mode = Literal["advise", "confirm", "off"]
MODES: tuple[str, ...] = ("advise", "confirm", "off")
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
