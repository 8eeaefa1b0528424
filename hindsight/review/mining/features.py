"""What an agent had seen when it made a decision: the state of a run, as features.

A run's **state** before a call is what its earlier tool results said, flattened into
features (docs/review.md#condition-mining):

* a feature is named ``<tool>.<key path>`` (``get_order.items[].status``): the tool whose
  result it came from and the path of keys inside that result's JSON (``[]`` for a list's
  items); the call's own arguments are ``args.<key path>``; the run's task type is
  ``task_type``;
* its values are **classes**, never identifying values: categorical words (also a short
  word of Chinese or Japanese) and booleans as themselves, ids as their kind (``gift_card``
  for ``gift_card_7504069``, :func:`hindsight.review.contrast.value_class`), numbers as
  numbers, dates as days relative to the run's start (``-3.0``: three days before; the
  feature's name ends in ``@days``), a list's length as ``<path>#``. Free text, names and
  other identifying values are left out;
* a capitalised or upper-case word or short phrase (``Shipped``, ``HIGH``, ``EU``,
  ``Class II``) may be a category or a name: it is kept as a :class:`Recurring` value, and
  the miner takes it for a class only where the values of its feature recur across task
  groups (:func:`hindsight.review.mining.miner.mine`); one that may name a person or a
  place (:func:`_recurring`) is left out.

A feature can hold several values (a list's items, two results of the same tool): a
predicate holds when one of them satisfies it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from hindsight.models import Outcome, Trajectory
from hindsight.review._calls import (
    ToolCall,
    collect_calls,
    error_quote,
    error_subject,
    is_read_only,
    without_echoes,
)
from hindsight.review._text import error_text
from hindsight.review.contrast import value_class
from hindsight.review.masking import (
    PERSON_ROLES,
    PERSON_WORDS,
    Masker,
    harvested,
    identifying,
    key_class,
    personal_key,
)

__all__ = [
    "COUNT",
    "DAYS",
    "Call",
    "Recurring",
    "RunRecord",
    "State",
    "Value",
    "error_class",
    "record_of",
    "state_of_args",
    "state_of_results",
]

Value = str | bool | float
"""One value of a feature: a class (``str``), a boolean, or a number (dates as days)."""


class Recurring(str):
    """A capitalised or upper-case word or phrase of up to three words, letters only
    (``Shipped``, ``HIGH``, ``Class II``), under a key that is not identifying: a category
    (``status``, ``priority``, ``tier``) or a name, which its text alone cannot tell apart.
    Equal to the plain string; the miner keeps it as a class only where it recurs (module
    docstring)."""

    __slots__ = ()


State = dict[str, frozenset[Value]]
"""Feature name -> the values seen under it."""

DAYS = "@days"
"""Suffix of a date feature: its values are days relative to the run's start."""
COUNT = "#"
"""Suffix of a list's length feature."""

_MAX_DEPTH = 6
_MAX_ITEMS = 50
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$")
_NUMBERED = re.compile(r"\d+(?:[.,]\d+)*(?!\w*>)")  # not inside a placeholder (<address1>)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_CJK_WORD = re.compile(r"^[\u3040-\u30ff\u4e00-\u9fff]{1,8}$")
_CAPITALISED = re.compile(r"^(?=.*[A-Z])[A-Za-z]+(?:[ _-][A-Za-z]+){0,2}$")
_RECURRING_CHARS = 30
_IGNORED_TOOLS = frozenset({"think", "reflect", "plan", "note"})
INTENT_PREFIX = "intent:"
"""Prefix of a task key the review assigned by intent (:func:`hindsight.review.groups.intent_key`),
not the caller's."""


def _finite(value: float) -> float | None:
    """``value`` as a finite float, or ``None`` (NaN, infinity, an int too large for a float)."""
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _days(text: str, start: datetime) -> float | None:
    """``text`` as days relative to ``start`` (negative: before), or ``None``."""
    if not _DATE.match(text):
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            when = datetime.combine(date.fromisoformat(text[:10]), datetime.min.time())
        except ValueError:
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return round((when - start).total_seconds() / 86400.0, 2)


_PEOPLE = PERSON_WORDS | PERSON_ROLES | frozenset(
    {
        "agent", "staff", "doctor", "physician", "nurse", "clerk", "manager", "technician",
        "driver", "courier", "pharmacist", "teacher", "librarian", "rep", "representative",
        "buyer", "seller", "payee", "payer", "beneficiary", "signer", "name", "names",
    }
)  # fmt: skip
"""Words of a key whose value names a person: its capitalised values are never classes."""
_PLACES = frozenset(
    {"address", "addresses", "city", "town", "street", "location", "birthplace", "hometown"}
)
"""Words of a key (or of a key on its path) whose values locate a person."""
_TITLE_WORD = re.compile(r"^[A-Z][a-z]+$")


@functools.lru_cache(maxsize=8192)
def _may_be_class(prefix: str, key: str, text: str) -> bool:
    """What :func:`_recurring` tells from the value and where it is (cached: the same
    statuses come back in every result)."""
    if len(text) > _RECURRING_CHARS or not _CAPITALISED.match(text) or identifying(key):
        return False
    if sum(1 for w in re.split(r"[ _-]", text) if _TITLE_WORD.match(w)) >= 2:
        return False
    if set(key_class(key).split("_")) & (_PEOPLE | _PLACES):
        return False
    for part in prefix.split(".")[1:]:  # the first is the tool
        name = key_class(part.replace("[]", ""))
        if personal_key(name) or set(name.split("_")) & _PLACES:
            return False
    return True


def _recurring(
    prefix: str, key: str, text: str, masker: Callable[[], Masker] | None
) -> Recurring | None:
    """``text`` as a :class:`Recurring` value, or ``None`` when it may name a person or a
    place: under an identifying key or one that names a person (``customer``, ``holder``),
    inside a place (``shipping_address``, ``city``), shaped like a name (two or more
    capitalised words: ``Noah Park``, ``New York``), or a value the run's masker harvested."""
    if not _may_be_class(prefix, key, text):
        return None
    if masker is not None:  # harvested only for a value that got this far
        found, words = masker(), set(text.lower().split())
        if text in found.values or words & found.personal or words & found.names:
            return None  # a value of the run that its masker hides (a harvested name)
    return Recurring(text)


def _flatten(
    prefix: str,
    key: str,
    value: Any,
    start: datetime,
    out: dict[str, set[Value]],
    depth: int,
    masker: Callable[[], Masker] | None = None,
) -> None:
    if depth > _MAX_DEPTH or value is None:
        return
    if isinstance(value, bool):
        out.setdefault(prefix, set()).add(value)
    elif isinstance(value, int | float):
        number = _finite(value)
        if not identifying(key) and number is not None:  # NaN and infinity compare to nothing
            out.setdefault(prefix, set()).add(number)
    elif isinstance(value, str):
        days = _days(value.strip(), start)
        if days is not None:
            out.setdefault(f"{prefix}{DAYS}", set()).add(days)
            return
        cls = value_class(key, value)
        if cls.startswith("a ") and _CJK_WORD.match(value.strip()) and not identifying(key):
            cls = value.strip()  # a short word in Chinese or Japanese is a class too
        if cls.startswith("a "):
            cls = _recurring(prefix, key, value.strip(), masker) or cls
        if cls and not cls.startswith("a ") and cls != "none":
            out.setdefault(prefix, set()).add(cls)
    elif isinstance(value, Mapping):
        for k, v in list(value.items())[:_MAX_ITEMS]:
            _flatten(f"{prefix}.{k}", str(k), v, start, out, depth + 1, masker)
    elif isinstance(value, list | tuple):
        out.setdefault(f"{prefix}{COUNT}", set()).add(float(len(value)))
        for item in value[:_MAX_ITEMS]:
            _flatten(f"{prefix}[]", key, item, start, out, depth + 1, masker)


def _parsed(text: str) -> Any:
    text = text.strip()
    if not text or text[0] not in "{[":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _freeze(found: Mapping[str, set[Value]]) -> State:
    return {k: frozenset(v) for k, v in found.items()}


def state_of_results(
    results: Iterable[tuple[str, Any]], *, start: datetime, task_type: str | None = None
) -> State:
    """The state made of ``results``: ``(tool name, result)`` pairs, each result a JSON
    value or the JSON text of one (other text adds nothing); ``start`` is the time dates are
    measured from (the run's start, timezone-aware; a naive one is taken as UTC).

    This is the state :func:`hindsight.checks` tests a rule's condition against at decision
    time (the tool results the current run has seen so far)."""
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    found: dict[str, set[Value]] = {}
    for tool, result in results:
        value = _parsed(result) if isinstance(result, str) else result
        if isinstance(value, Mapping | list):
            _flatten(str(tool), "", value, start, found, 0)
    if task_type:
        found.setdefault("task_type", set()).add(task_type)
    return _freeze(found)


def state_of_args(
    args: Mapping[str, Any], *, start: datetime, masker: Callable[[], Masker] | None = None
) -> State:
    """A proposed call's arguments as ``args.*`` features (what an ``error`` or ``avoid``
    rule's argument predicates are tested against); dates relative to ``start``; ``masker``:
    gives the run's own masker (its harvested values are left out)."""
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    found: dict[str, set[Value]] = {}
    _flatten("args", "", dict(args), start, found, 0, masker)
    return _freeze(found)


def error_class(text: str, args: Mapping[str, Any] | None = None) -> str:
    """A tool error's message as a class: the part the reviewer's lessons quote
    (:func:`hindsight.review._text.error_text`: a leading ``Error:`` dropped, a traceback's
    last line), the call's own ``args`` it echoes back as ``<key>``
    (:func:`hindsight.review._calls.without_echoes`), lower case, numbers and quoted values
    replaced by ``<n>``/``<v>`` (``Error: flight HAT123 not available on 2024-05-15`` ->
    ``flight hat<n> not available on <n>-<n>-<n>``), at most 120 characters."""
    line = without_echoes(error_text(text, 2000), args or {}).lower()
    line = _QUOTED.sub("<v>", line)
    line = _NUMBERED.sub("<n>", line)
    return line[:120].strip()


@dataclass(frozen=True)
class Call:
    """One call of a run, with the state its caller had seen.

    Attributes:
        tool: the tool's name.
        state: the run's state before the call, plus the call's arguments as ``args.*``.
        error: :func:`error_class` of its result when the call failed, else ``""``.
        subject: what the reviewer's lessons about that error are about
            (:func:`hindsight.review._calls.error_subject`), else ``""``.
        quote: the error as the reviewer's lessons quote it (masked of the run's values, its
            case and numbers kept: :func:`hindsight.review._calls.error_quote`), else ``""``.
    """

    tool: str
    state: State
    error: str = ""
    subject: str = ""
    quote: str = ""


@dataclass(frozen=True)
class RunRecord:
    """What the miner needs of one run.

    Attributes:
        run_id: the trajectory's id.
        group: its task group (``task_key``, else the normalised task text): runs of one task
            are one unit of evidence, not several (docs/review.md#condition-mining).
        outcome: ``True`` success, ``False`` failure or partial, ``None`` unknown.
        calls: the run's tool calls in order.
        final: the state at the end of the run (every result seen).
        expected: the state-changing tools its outcome evidence expected, ``None`` when the
            evidence lists no expected actions.
        cases: when its task group is not the caller's (no task key, or one assigned by
            intent), digests of the identifying values its calls were made with (an id in
            the arguments: ``order_id=A-1``): runs that share one act on the same case, and
            the miner counts them as one unit (:func:`hindsight.review.mining.miner.mine`).
    """

    run_id: str
    group: str
    outcome: bool | None
    calls: tuple[Call, ...]
    final: State
    expected: frozenset[str] | None = None
    cases: frozenset[str] = frozenset()


_OUTCOMES = {Outcome.SUCCESS: True, Outcome.FAILURE: False, Outcome.PARTIAL: False}


def _call_state(
    base: Mapping[str, set[Value]], call: ToolCall, start: datetime, masker: Callable[[], Masker]
) -> State:
    found = {k: set(v) for k, v in base.items()}
    for k, v in state_of_args(call.args, start=start, masker=masker).items():
        found[k] = set(v)
    return _freeze(found)


def record_of(traj: Trajectory, *, strip_expected: bool = False) -> RunRecord:
    """``traj`` as the miner sees it (``strip_expected``: ignore its expected actions, as if
    the source recorded only the outcome)."""
    start = traj.started_at
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    seen: dict[str, set[Value]] = {}
    if traj.task_type:
        seen["task_type"] = {traj.task_type}
    calls: list[Call] = []

    def masker() -> Masker:
        return harvested(traj)  # harvested once per trajectory object

    for call in collect_calls(traj.events):
        if call.tool in _IGNORED_TOOLS:
            continue
        calls.append(
            Call(
                call.tool,
                _call_state(seen, call, start, masker),
                error_class(call.output, call.args) if call.failed else "",
                error_subject(call, masker().mask) if call.failed else "",
                error_quote(call, masker().mask) if call.failed else "",
            )
        )
        value = _parsed(call.output) if call.succeeded or call.status is None else None
        if isinstance(value, Mapping | list):
            _flatten(call.tool, "", value, start, seen, 0, masker)
    evidence = traj.evidence
    expected = None
    if not strip_expected and evidence is not None and evidence.expected_actions:
        expected = frozenset(a.tool for a in evidence.expected_actions if not is_read_only(a.tool))
    group = traj.task_key or " ".join(traj.task.lower().split())[:300] or traj.id
    keyed = bool(traj.task_key) and not str(traj.task_key).startswith(INTENT_PREFIX)
    cases = frozenset() if keyed else _cases(c.args for c in collect_calls(traj.events))
    return RunRecord(
        traj.id, group, _OUTCOMES.get(traj.outcome), tuple(calls), _freeze(seen), expected, cases
    )


def _cases(arguments: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """Digests of the identifying values (:func:`~hindsight.review.masking.identifying` keys,
    text or whole numbers) in ``arguments``, at any depth."""
    found: set[str] = set()

    def walk(key: str, value: Any, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        if isinstance(value, Mapping):
            for k, v in list(value.items())[:_MAX_ITEMS]:
                walk(str(k), v, depth + 1)
        elif isinstance(value, list | tuple):
            for v in value[:_MAX_ITEMS]:
                walk(key, v, depth + 1)
        elif (
            key
            and identifying(key)
            and isinstance(value, str | int)
            and not isinstance(value, bool)
            and str(value).strip()
        ):
            text = f"{key_class(key)}={str(value).strip().lower()}"
            found.add(hashlib.blake2b(text.encode(), digest_size=8).hexdigest())

    for args in arguments:
        walk("", args, 0)
    return frozenset(found)
