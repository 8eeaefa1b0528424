"""Risk checks: lessons about a tool compiled into if-then checks (docs/checks.md).

A **risk check** is a trigger (a tool, optional argument conditions written as value
*classes*, optional task_type / tags) and an advice, with the confidence and sources of the
lesson it comes from. Checks are not stored apart: they are compiled from the active lessons
(:mod:`hindsight.checks.compile`), so they follow the lesson's lifecycle by construction (an
archived, superseded, quarantined or deleted lesson yields no check; a new version yields the
new check). Lookup is exact by tool name, then the proposed arguments are matched by their
class (:func:`hindsight.review.contrast.value_class`), no vector search
(:mod:`hindsight.checks.lookup`). :mod:`hindsight.checks.render` renders the advice next to a
proposed call and the run-start "before you call X" block.

Imports the review stage (value classes) and the store; imported by the engine.
"""

from hindsight.checks.compile import COMPILED_KINDS, Severity, compile_checks
from hindsight.checks.lookup import CheckMatch, CheckResult, MatchLevel, find_checks
from hindsight.checks.model import ArgCondition, RiskCheck
from hindsight.checks.render import (
    ADVICE_END,
    ADVICE_START,
    RISK_HEADING,
    render_advice,
    render_risk_section,
    request_scores,
)

__all__ = [
    "ADVICE_END",
    "ADVICE_START",
    "COMPILED_KINDS",
    "RISK_HEADING",
    "ArgCondition",
    "CheckMatch",
    "CheckResult",
    "MatchLevel",
    "RiskCheck",
    "Severity",
    "compile_checks",
    "find_checks",
    "render_advice",
    "render_risk_section",
    "request_scores",
]
