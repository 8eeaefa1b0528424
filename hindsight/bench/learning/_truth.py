"""What a failed run got wrong, from its record's ground truth, and whether a text names it.

A tau-bench record carries the task's ground-truth actions (``info.task.actions``, or
``info.reward_info.actions``): the state-changing calls a correct run makes. Only
**state-changing** tools are compared, since they are what the outcome is judged on: a tool
whose name starts with a read verb (``get``, ``search``, ``list``, ``find``, ``calculate``,
``think``... :data:`READ_VERBS`) only reads; any other tool (``book_...``, ``cancel_...``,
``update_...``, ``transfer_...``) may change state. A run's own calls count when their result
was not an error (a result whose text starts with ``error``, or a JSON object with an
``error`` key): a refused call changed nothing. Differences that the file's successful runs
have too are not counted (:func:`unjudged`): they are not what the outcome is judged on.

:func:`differences` aligns the two per tool and returns:

* ``missing`` - the ground truth calls the tool (once more) and the run never did;
* ``extra`` - the run called a state-changing tool (once more) that the ground truth does not;
* ``arg`` - an argument the ground truth gives differs in the matched call (``tool`` and
  ``key``; objects are compared on the ground truth's fields only).

:func:`names_difference` says whether a text (the rendered recall block) names the tool and,
for ``arg``, the key, in any form: ``payment_methods``, ``payment methods``, ``payment-method``,
``PaymentMethods`` (case-insensitive, ``_``/``-``/space/camel case as separators, a trailing
plural optional).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "READ_VERBS",
    "Call",
    "Difference",
    "corrected",
    "differences",
    "expected_actions",
    "is_state_changing",
    "mentions",
    "names_difference",
    "run_calls",
    "unjudged",
]

READ_VERBS = frozenset(
    {
        "get", "search", "list", "find", "read", "fetch", "query", "lookup", "look", "calculate",
        "calc", "compute", "think", "reflect", "plan", "check", "describe", "show", "view",
        "retrieve", "count", "browse", "inspect", "validate", "verify", "preview", "estimate",
        "load", "download", "summarize", "explain",
    }
)  # fmt: skip
"""First words of a tool name that mark it as read-only."""

_NAME_PARTS = re.compile(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])")


def _words(name: str) -> list[str]:
    return [p.lower() for p in _NAME_PARTS.split(name) if p]


def is_state_changing(tool: str) -> bool:
    """False when the tool's name starts with a read verb (:data:`READ_VERBS`)."""
    words = _words(tool)
    return bool(words) and words[0] not in READ_VERBS


@dataclass(frozen=True)
class Call:
    """One tool call: ``tool``, parsed ``args``, and ``ok`` (its result was not an error)."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    ok: bool = True


@dataclass(frozen=True)
class Difference:
    """One thing a failed run got wrong: ``op`` (``missing``, ``extra``, ``arg``), the
    ``tool`` and, for ``arg``, the argument ``key``."""

    op: Literal["missing", "extra", "arg"]
    tool: str
    key: str | None = None

    def label(self) -> str:
        """``"arg book_reservation.payment_methods"``, ``"missing cancel_reservation"``."""
        return f"{self.op} {self.tool}" + (f".{self.key}" if self.key else "")


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return {}
        return dict(value) if isinstance(value, Mapping) else {}
    return {}


def _is_error(content: Any) -> bool:
    if isinstance(content, str):
        text = content.strip()
        if text.lower().startswith("error"):
            return True
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except ValueError:
                return False
            return isinstance(value, Mapping) and "error" in value
    return isinstance(content, Mapping) and "error" in content


def expected_actions(record: Mapping[str, Any]) -> list[Call]:
    """The ground-truth actions of a tau-bench record (``info.task.actions``, else
    ``info.reward_info.actions``; ``[]`` when it has none). Each action is ``{"name",
    "kwargs"}`` (``arguments`` is accepted too)."""
    info = record.get("info")
    if not isinstance(info, Mapping):
        return []
    actions: Any = None
    task = info.get("task")
    if isinstance(task, Mapping):
        actions = task.get("actions")
    if not actions and isinstance(info.get("reward_info"), Mapping):
        actions = info["reward_info"].get("actions")
    out = []
    for action in actions or []:
        if isinstance(action, Mapping) and isinstance(action.get("name"), str):
            out.append(Call(action["name"], _args(action.get("kwargs", action.get("arguments")))))
    return out


def run_calls(record: Mapping[str, Any]) -> list[Call]:
    """The tool calls of a record's messages (``traj`` or ``messages``), in order, each with
    ``ok`` from its result. Results are paired to calls in order: the first open call with the
    result's ``tool_call_id``, else the first open call of the result's tool name (ids repeat in
    some logs). A call without a result is not ``ok``."""
    messages = record.get("traj") or record.get("messages") or []
    calls: list[dict[str, Any]] = []
    for msg in messages if isinstance(messages, list) else []:
        if not isinstance(msg, Mapping):
            continue
        for tc in msg.get("tool_calls") or []:
            fn = tc.get("function") if isinstance(tc, Mapping) else None
            if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
                args = _args(fn.get("arguments"))
                calls.append({"tool": fn["name"], "args": args, "id": tc.get("id"), "ok": None})
        if msg.get("role") in ("tool", "function"):
            open_calls = [c for c in calls if c["ok"] is None]
            by_id = [c for c in open_calls if c["id"] and c["id"] == msg.get("tool_call_id")]
            by_name = [c for c in open_calls if c["tool"] == msg.get("name")]
            for match in (by_id or by_name)[:1]:
                match["ok"] = not _is_error(msg.get("content"))
    return [Call(c["tool"], c["args"], bool(c["ok"])) for c in calls]


def _same(expected: Any, actual: Any) -> bool:
    """``actual`` holds what ``expected`` asks for: objects compared on the expected keys only
    (a run may pass extra fields a tool ignores), lists item by item, numbers by value,
    strings with spaces collapsed."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            _same(v, actual.get(k)) for k, v in expected.items()
        )
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(expected) == len(actual)
            and all(_same(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return float(expected) == float(actual)
    if isinstance(expected, str) and isinstance(actual, str):
        return " ".join(expected.split()) == " ".join(actual.split())
    return bool(expected == actual)


def _differing_keys(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    return [k for k, v in expected.items() if not _same(v, actual.get(k))]


def differences(
    expected: Iterable[Call], actual: Iterable[Call], ignore: Collection[Difference] = ()
) -> list[Difference]:
    """What ``actual`` (a run's calls) got wrong against ``expected`` (the ground truth).

    Only state-changing calls are compared, and of the run's only those that were ``ok``.
    Per tool, each expected call is matched (in order) to the run's unmatched call of that tool
    with the fewest differing arguments; arguments are compared on what the ground truth
    gives (:func:`_same`). See the module docstring for the three kinds. Differences in
    ``ignore`` (see :func:`unjudged`) are left out. Returns the differences without repeats,
    in order of first appearance.
    """
    exp = [c for c in expected if is_state_changing(c.tool)]
    act = [c for c in actual if c.ok and is_state_changing(c.tool)]
    out: list[Difference] = []
    for tool in dict.fromkeys([c.tool for c in exp] + [c.tool for c in act]):
        left = [c for c in act if c.tool == tool]
        for want in (c for c in exp if c.tool == tool):
            if not left:
                out.append(Difference("missing", tool))
                continue
            best = min(left, key=lambda c: len(_differing_keys(want.args, c.args)))
            left.remove(best)
            out.extend(Difference("arg", tool, k) for k in _differing_keys(want.args, best.args))
        out.extend(Difference("extra", tool) for _ in left)
    return [d for d in dict.fromkeys(out) if d not in ignore]


def unjudged(records: Iterable[tuple[Sequence[Call], Sequence[Call]]]) -> frozenset[Difference]:
    """The differences that successful runs have too: ``records`` are ``(expected, actual)``
    of successful runs. A difference a run can have and still succeed (a free-text argument,
    a hand-over call the grader does not check) is not what made another run fail, so
    :func:`differences` leaves these out (calibrated on the file, no tool names assumed)."""
    return frozenset(d for exp, act in records for d in differences(exp, act))


def _pattern(name: str) -> re.Pattern[str]:
    words = _words(name)
    if not words:
        return re.compile(r"(?!x)x")
    last = words[-1]
    if last.endswith("ss"):
        tail = re.escape(last) + "(?:es)?"
    elif last.endswith("s") and len(last) > 3:
        tail = re.escape(last[:-1]) + "s?"
    else:
        tail = re.escape(last) + "(?:e?s)?"
    body = r"[\s_\-]*".join([*(re.escape(w) for w in words[:-1]), tail])
    return re.compile(rf"(?<![a-z0-9]){body}(?![a-z0-9])", re.IGNORECASE)


def mentions(text: str, name: str) -> bool:
    """True when ``text`` names ``name`` (a tool or argument key) in any form: the words of the
    name joined by ``_``, ``-``, spaces or nothing, any case, a trailing plural optional."""
    return bool(_pattern(name).search(_spaced(text)))


def _spaced(text: str) -> str:
    """``text`` with camel case split (``PaymentMethods`` -> ``Payment Methods``)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)


def names_difference(text: str, diff: Difference) -> bool:
    """True when ``text`` names the tool of ``diff`` and, for an ``arg`` difference, its key."""
    return mentions(text, diff.tool) and (diff.key is None or mentions(text, diff.key))


def corrected(text: str, diffs: Sequence[Difference]) -> bool:
    """True when ``text`` names at least one of ``diffs`` (:func:`names_difference`)."""
    return any(names_difference(text, d) for d in diffs)
