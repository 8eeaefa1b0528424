"""A mined rule in words: the tool, the condition, the advice and the evidence.

Every count is in task groups (docs/review.md#condition-mining). Examples::

    cancel_reservation: when cabin (from get_reservation_details) is basic_economy, do not
    call it: the runs that called it failed (5 of 5 tasks), against 1 of 9 otherwise.

    update_reservation_flights: when payment_id (in its arguments) is certificate, the call
    returned 'certificate cannot be used to update reservation' (3 of 3 tasks), against 0 of
    18 otherwise.

    modify_booking: when rate_type (from get_booking) is non_refundable, call it before the
    run ends: the runs that ended without calling it failed (6 of 6 tasks), against 2 of 20
    otherwise; the runs that called it then went well in 10 of 12.

A rule's last clause is the other side of its decision where the condition held: for ``do
not call it``, how the runs that did not call it went; for ``call it``, how the runs that
called it went (what a rule from outcomes to call a tool stands on).
"""

from __future__ import annotations

import re

from hindsight.review.mining.features import COUNT, DAYS
from hindsight.review.mining.miner import MinedRule, Predicate

__all__ = ["describe_predicate", "render_rule"]


def _number(value: float) -> str:
    return f"{value:g}"


def _days(op: str, value: float) -> str:
    n = abs(value)
    unit = "day" if n == 1 else "days"
    if value == 0:
        return "is before the run started" if op == "<=" else "is after the run started"
    if value < 0:
        if op == "<=":
            return f"is at least {_number(n)} {unit} before the run started"
        return f"is later than {_number(n)} {unit} before the run started"
    if op == "<=":
        return f"is at most {_number(n)} {unit} after the run started"
    return f"is more than {_number(n)} {unit} after the run started"


def describe_predicate(pred: Predicate) -> str:
    """``pred`` in words: ``cabin (from get_reservation_details) is basic_economy``."""
    source, _, path = pred.feature.partition(".")
    tool = source.removesuffix(COUNT).replace("[]", "")  # a list's items: "get_x[]"
    nested = "[]" in source
    if pred.feature == "task_type":
        subject = "the task type"
    elif not path and pred.feature.endswith(COUNT):  # a tool that returned a list
        subject = f"an item of the result of {tool}" if nested else f"the result of {tool}"
    else:
        clean = path.removesuffix(DAYS).removesuffix(COUNT) or tool
        if source == "args":
            where = "in its arguments"
        else:
            where = f"of an item from {tool}" if nested else f"from {tool}"
        subject = f"{clean} ({where})"
    if pred.feature.endswith(DAYS) and isinstance(pred.value, float):
        return f"{subject} {_days(pred.op, pred.value)}"
    if pred.feature.endswith(COUNT) and isinstance(pred.value, float):
        items = "item" if pred.value == 1 else "items"
        if pred.op == ">":
            return f"{subject} has more than {_number(pred.value)} {items}"
        return f"{subject} has at most {_number(pred.value)} {items}"
    if isinstance(pred.value, bool):
        return f"{subject} is {'true' if pred.value else 'false'}"
    if isinstance(pred.value, float):
        word = "is more than" if pred.op == ">" else "is at most"
        return f"{subject} {word} {_number(pred.value)}"
    return f"{subject} is {pred.value}"


_PLACEHOLDERS = re.compile(r"<[nv]>")
_SHOWN = {"<n>": "<number>", "<v>": "<value>"}
"""The error class's placeholders as the reviewer's lessons write them (review masking)."""


def _tasks(n: int) -> str:
    return "task" if n == 1 else "tasks"


def render_rule(rule: MinedRule) -> str:
    """The rule's lesson text (one sentence; see the module docstring)."""
    when = " and ".join(describe_predicate(p) for p in rule.predicates)
    counts = f"({rule.bad} of {rule.held} {_tasks(rule.held)})"
    against = f"against {rule.bad_else} of {rule.held_else} otherwise"
    if rule.form == "error":
        said = rule.quote or _PLACEHOLDERS.sub(lambda m: _SHOWN[m.group()], rule.message)
        return f"{rule.tool}: when {when}, the call returned '{said}' {counts}, {against}."
    advice, (what, other) = _ADVICE[rule.form], _WORDING[rule.form]
    text = f"{rule.tool}: when {when}, {advice}: {_by_basis(what, rule.basis)} {counts}, {against}"
    ok, seen = (
        (rule.declined_ok, rule.declined) if rule.form == "avoid" else (rule.called_ok, rule.called)
    )
    if seen:  # how the runs on the other side of the decision went
        text += f"; {_by_basis(other, rule.basis)} in {ok} of {seen}"
    return text + "."


_ADVICE = {"avoid": "do not call it", "do": "call it before the run ends"}
_WORDING: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    # form -> (what the bad decisions were, how the other side went), by the rule's basis
    # (outcome, expected actions, anything else under ""), each with its own words
    "avoid": (
        {
            "outcome": "the runs that called it failed",
            "expected": "calling it was not an expected action",
            "": "calling it was a wrong step",
        },
        {
            "outcome": "the runs that did not call it then went well",
            "expected": "the runs that did not call it were expected not to",
            "": "the runs that did not call it were right not to",
        },
    ),
    "do": (
        {
            "outcome": "the runs that ended without calling it failed",
            "expected": "it was an expected action the runs left out",
            "": "leaving it out was a wrong step",
        },
        {
            "outcome": "the runs that called it then went well",
            "expected": "the runs that called it were expected to",
            "": "the runs that called it were right to",
        },
    ),
}


def _by_basis(words: dict[str, str], basis: str) -> str:
    return words.get(basis, words[""])
