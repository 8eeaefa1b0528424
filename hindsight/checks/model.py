"""The risk check: a trigger and an advice, with the evidence of its lesson."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ArgCondition", "RiskCheck", "Severity"]

Severity = Literal["high", "medium", "low"]


class ArgCondition(BaseModel):
    """A condition on one argument of the triggering tool, by class, never by value.

    Attributes:
        key: the argument's name (``payment_methods``).
        failed: the class a failed run passed (``certificate + credit_card``), ``""`` when the
            lesson does not name one (a number set too high, another id).
        expected: the class the reference (a successful run, the expected action) passed.
        how: how the failed run differed: ``class``, ``higher``, ``lower``, ``amounts``,
            ``other`` (:class:`hindsight.review.contrast.Diff`).
    """

    model_config = ConfigDict(frozen=True)

    key: str
    failed: str = ""
    expected: str = ""
    how: str = ""


class RiskCheck(BaseModel):
    """An if-then check compiled from one lesson (docs/checks.md#what-a-check-is).

    Attributes:
        id: ``<lesson id>:<tool>`` (stable for a lesson version).
        tool: the tool whose proposed call triggers the check (exact name).
        conditions: argument conditions (all optional refinements: a call without the argument
            still triggers the check, with a lower score, :mod:`hindsight.checks.lookup`).
        task_type: the check applies only to calls of this task type (``None`` = any).
        tags: the lesson's tags.
        advice: what to check before the call, one line (the lesson's text).
        severity: ``high``, ``medium`` or ``low`` (:data:`hindsight.checks.compile.SEVERITY`).
        lesson_id / lesson_version / lesson_kind / lesson_key: the lesson it comes from.
        subject: what the lesson is about (:attr:`hindsight.models.Experience.subject`), or
            ``None``; the run-start section shows one check per subject.
        namespace: the lesson's namespace.
        confidence, trust: the lesson's, in [0, 1].
        sources: the runs the lesson was learned from.
        instead_of: the tool the advice is about when it is not ``tool``: a missing-call rule
            triggered by a call failed runs made in place of ``instead_of``
            (:mod:`hindsight.checks.compile`); ``None`` otherwise.
        form: a mined rule's form (``avoid``, ``do``, ``error``), ``None`` for other lessons.
        predicates: a mined rule's condition (``[{"feature", "op", "value"}]``, all must
            hold), tested against the run's state at decision time
            (docs/checks.md#conditions); empty for other lessons.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    tool: str
    conditions: list[ArgCondition] = Field(default_factory=list)
    task_type: str | None = None
    tags: list[str] = Field(default_factory=list)
    advice: str
    severity: Severity
    lesson_id: str
    lesson_version: int = 1
    lesson_kind: str
    lesson_key: str | None = None
    subject: str | None = None
    namespace: str = "default"
    confidence: float = Field(ge=0.0, le=1.0)
    trust: float = Field(default=1.0, ge=0.0, le=1.0)
    sources: list[str] = Field(default_factory=list)
    instead_of: str | None = None
    form: str | None = None
    predicates: list[dict[str, Any]] = Field(default_factory=list)
