"""Decision-time lookup: the checks that match a proposed tool call (docs/checks.md).

Exact lookup, no vectors: the store returns the active lessons of the asked namespaces that
are about the tool (:meth:`hindsight.store.SqlStore.experiences_about_tool`), they are compiled
(:func:`hindsight.checks.compile.compile_checks`), and each check's argument conditions are
matched against the proposed arguments *as classes*
(:func:`hindsight.review.contrast.value_class`). A check applies to a call of any task type
when it has none, else only to calls of its task type or of no stated task type.

Score of a match: ``confidence * trust * weight``, the weight by how well the call matches the
trigger (:data:`MATCH_WEIGHTS`):

* ``call``: the check has no argument condition (it is about every call of the tool), 1.0;
* ``class``: the argument's class is the one a failed run passed, 1.0;
* ``argument``: the condition is about the argument's value, not its class (a number set too
  high, amounts split differently, another id) and the argument is in the call, 1.0;
* ``other_class``: the argument's class is neither the failed nor the reference's one, 0.8;
* ``absent``: the call does not pass the argument, 0.6;
* ``instead``: the check is about another tool, which failed runs did not call where they
  called this one (a missing-call rule, :attr:`RiskCheck.instead_of`), 0.6: the call only
  resembles the failure, so the tool's own checks rank first;
* ``expected``: the argument's class is the one the reference passed (the call already looks
  like what worked), 0.4;
* ``condition``: a mined rule whose condition holds for this run (its predicates tested
  against the run's state - the tool results it has seen - and the call's arguments), 1.0;
* ``unknown``: a mined rule whose condition cannot be tested yet (the run has not called the
  tool a predicate is about, or no state was given), 0.5. A mined rule whose condition is
  false for this run gives no match at all (docs/checks.md#conditions).

The weights are ours (an ordering, not a measurement): an exact class match and an
unconditional check count fully, a weaker match is kept but ranked lower.

**One check per subject first.** Several lessons about the same argument (one per way it went
wrong: its class, its amounts, which value) would fill the ``top_k`` and hide a check about
another argument. The best match of each subject - the argument of its condition, the tool a
missing-call check is about, or the lesson itself for a check about every call - is shown
before any second match of a subject (:func:`diversify`); within each pass the order is the
score's. Nothing is dropped: the second matches follow when ``top_k`` leaves room.

**Missing-call checks the call names first** (:func:`named_first`): among the ``instead``
matches, those whose tool's name words appear in the call's own free text (a hand-off's
summary) take their places first; scores are unchanged.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from hindsight.checks.compile import COMPILED_KINDS, compile_checks
from hindsight.checks.model import RiskCheck
from hindsight.review.contrast import value_class

__all__ = ["MATCH_WEIGHTS", "CheckMatch", "CheckResult", "MatchLevel", "find_checks", "match"]

_T = TypeVar("_T")
_M = TypeVar("_M", bound=tuple[Any, ...])  # a match under way: (score, check, level, class)

MatchLevel = Literal[
    "call",
    "class",
    "argument",
    "other_class",
    "absent",
    "instead",
    "expected",
    "condition",
    "unknown",
]

#: Weight of each match level in a match's score (see the module docstring).
MATCH_WEIGHTS: dict[str, float] = {
    "call": 1.0,
    "class": 1.0,
    "argument": 1.0,
    "other_class": 0.8,
    "absent": 0.6,
    "instead": 0.6,
    "expected": 0.4,
    "condition": 1.0,
    "unknown": 0.5,
}

#: Lessons read per lookup (most confident first).
MAX_CANDIDATES = 200

#: Compiled lessons kept in memory (see :class:`_Compiled`).
COMPILED_CACHE_SIZE = 65_536


class _Compiled:
    """``(lesson object, tool) -> its checks``, oldest compiled dropped first, thread-safe: a
    lookup answered from the store's cache
    (:meth:`hindsight.store.SqlStore.experiences_about_tool`) gets back the same lesson
    objects while nothing of the tenant changed, so their checks are compiled once, not on
    every call. Keyed by the object itself (identity, held so its id is not reused), never by
    its id: a new version, a confidence change or any other write gives new objects."""

    def __init__(self, size: int = COMPILED_CACHE_SIZE) -> None:
        self.size = size
        self.items: OrderedDict[tuple[int, str], tuple[Any, list[RiskCheck]]] = OrderedDict()
        self.lock = threading.Lock()

    def checks(self, exp: Any, tool: str) -> list[RiskCheck]:
        key = (id(exp), tool)
        found = self.items.get(key)  # a hit takes no lock (one dict read is atomic)
        if found is not None and found[0] is exp:
            return found[1]
        checks = compile_checks(exp, asked=[tool])
        with self.lock:
            self.items[key] = (exp, checks)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return checks


_COMPILED = _Compiled()


class CheckMatch(BaseModel):
    """One check matching a proposed call.

    Attributes:
        check: the check.
        score: ``confidence * trust * weight`` in [0, 1].
        match: how the call matched the trigger (:data:`MatchLevel`).
        argument_class: the class of the proposed argument the condition is about, when the
            call passes it.
    """

    model_config = ConfigDict(frozen=True)

    check: RiskCheck
    score: float = Field(ge=0.0, le=1.0)
    match: MatchLevel
    argument_class: str | None = None


class CheckResult(BaseModel):
    """What :meth:`hindsight.AsyncMemory.check_action` returns: the checks matching a proposed
    call, best first."""

    model_config = ConfigDict(frozen=True)

    tool: str
    checks: list[CheckMatch] = Field(default_factory=list)
    tested: int | None = Field(default=None, ge=0)
    """How many checks of the tool's lessons were tested against the call, matching or not
    (``None``: not reported, e.g. by an older server). ``0``: the memory holds no risk check
    for this tool in this scope, so a caller may skip the tool's checks for the rest of the
    run (the integrations do: docs/checks.md#cost-on-the-agents-path)."""

    def render(self, token_budget: int | None = None) -> str:
        """The advice block to place next to the proposed call (``""`` when nothing matched);
        :func:`hindsight.checks.render.render_advice`."""
        from hindsight.checks.render import render_advice

        return render_advice(self.checks, token_budget=token_budget)

    @property
    def lesson_ids(self) -> list[str]:
        """The lessons behind the matched checks, once each, in order."""
        return list(dict.fromkeys(m.check.lesson_id for m in self.checks))


class RunView:
    """What a lookup knows of the asking run: its state (``None``: not given) and the
    proposed call's arguments as features, built once per call and only when a mined rule
    needs them."""

    def __init__(
        self, results: Sequence[Mapping[str, Any]] | None, args: Mapping[str, Any], now: Any
    ) -> None:
        self.results, self.args, self.now = results, args, now
        self._state: Any = None
        self._args: Any = None

    def holds(self, predicates: Sequence[Mapping[str, Any]]) -> bool | None:
        """:func:`hindsight.review.mining.condition_holds` for this run."""
        from hindsight.review.mining import condition_holds, state_of_args, state_of_results

        if self._args is None:
            self._args = state_of_args(self.args, start=self.now)
            self._state = (
                None
                if self.results is None
                else state_of_results(
                    ((r["tool"], r.get("result")) for r in self.results), start=self.now
                )
            )
        if self._state is None:  # no state given: only the argument predicates can be tested
            args_only = [p for p in predicates if str(p.get("feature", "")).startswith("args.")]
            if len(args_only) < len(predicates):
                found = condition_holds(args_only, {}, self._args) if args_only else None
                return False if found is False else None
        return condition_holds(predicates, self._state or {}, self._args)


def match(
    check: RiskCheck,
    args: Mapping[str, Any],
    classes: dict[str, str] | None = None,
    run: RunView | None = None,
) -> tuple[MatchLevel, str | None] | None:
    """How the arguments ``args`` of a proposed call match ``check``'s conditions: the weakest
    level over its conditions, and the class of the first conditioned argument present
    (``instead`` for a check about another tool, :attr:`RiskCheck.instead_of`).
    ``classes``: argument -> class, filled and reused across the checks of one call (the
    arguments' classes are computed once per call, not once per check). A mined rule
    (:attr:`RiskCheck.predicates`) is tested against ``run``: ``condition`` when it holds,
    ``unknown`` when it cannot be told, ``None`` (no match) when it is false."""
    if check.predicates:
        held = (run or RunView(None, args, _epoch())).holds(check.predicates)
        if held is False:
            return None
        return ("condition" if held else "unknown"), None
    if check.instead_of is not None:
        return "instead", None
    if not check.conditions:
        return "call", None
    levels: list[MatchLevel] = []
    seen: str | None = None
    for cond in check.conditions:
        if cond.key not in args:
            levels.append("absent")
            continue
        if classes is None:
            cls = value_class(cond.key, args[cond.key])
        else:
            cls = classes.get(cond.key) or classes.setdefault(
                cond.key, value_class(cond.key, args[cond.key])
            )
        seen = seen if seen is not None else cls
        if cond.how != "class":
            levels.append("argument")
        elif cls == cond.failed:
            levels.append("class")
        elif cls == cond.expected:
            levels.append("expected")
        else:
            levels.append("other_class")
    return min(levels, key=lambda level: MATCH_WEIGHTS[level]), seen


def _epoch() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def _subject(check: RiskCheck) -> str:
    """What a check is about, for :func:`diversify`: its first condition's argument, else the
    tool a missing-call check is about, else the check itself (a check about every call)."""
    if check.conditions:
        return f"arg:{check.conditions[0].key}"
    if check.instead_of:
        return f"tool:{check.instead_of}"
    return f"check:{check.id}"


_WORD = re.compile(r"[^\W_]+")


def _stem(word: str) -> str:
    """A word's rough English singular, lower case (``passengers`` -> ``passenger``,
    ``addresses`` -> ``address``, ``deliveries`` -> ``delivery``): enough to match a tool
    name's words in free text, not a stemmer."""
    word = word.lower()
    if len(word) <= 3:
        return word
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _text_words(value: Any, out: set[str], depth: int = 0) -> set[str]:
    """The stemmed words of every string inside ``value`` (mappings and lists, a few levels)."""
    if isinstance(value, str):
        out.update(_stem(w) for w in _WORD.findall(value))
    elif depth < 4 and isinstance(value, Mapping):
        for item in value.values():
            _text_words(item, out, depth + 1)
    elif depth < 4 and isinstance(value, (list, tuple)):
        for item in value:
            _text_words(item, out, depth + 1)
    return out


def named_first(found: list[_M], args: Mapping[str, Any]) -> list[_M]:
    """``found`` with its missing-call matches (``instead``) reordered among their own places:
    those whose tool the call's own text names come first.

    A missing-call check says "a failed run called this tool where it should have called
    ``instead_of``"; several such checks can trigger on one tool (a hand-off to a human, a
    cancellation) and score alike. When the proposed call carries free text (a hand-off's
    summary, a note), the words of that text tell which of the missing tools the run is about:
    each word of a missing tool's name found in the text counts ``1 / n``, ``n`` the number of
    the call's missing-call checks whose tool names that word (a word every one of them shares,
    like ``reservation``, tells nothing). Higher counts first, then the score order; every other
    match keeps its place, and no score changes. A call with no text changes nothing."""
    places = [i for i, m in enumerate(found) if m[1].instead_of is not None]
    if len(places) < 2:
        return found
    said = _text_words(dict(args), set())
    if not said:
        return found
    tools = {found[i][1].instead_of or "" for i in places}
    words = {t: {_stem(w) for w in _WORD.findall(t)} for t in tools}
    shared: dict[str, int] = {}
    for ws in words.values():
        for w in ws:
            shared[w] = shared.get(w, 0) + 1
    named = {t: sum(1 / shared[w] for w in ws & said) for t, ws in words.items()}
    if not any(named.values()):
        return found
    ordered = sorted(
        (found[i] for i in places), key=lambda m: -named[m[1].instead_of or ""]
    )  # stable: equal counts keep the score order
    out = list(found)
    for i, m in zip(places, ordered, strict=True):
        out[i] = m
    return out


def diversify(ranked: Sequence[_T], subject: Callable[[_T], str]) -> list[_T]:
    """``ranked`` with the first item of each subject first, then the others, each pass in
    its order (stable): ``[a1, a2, b1] -> [a1, b1, a2]`` for subjects ``a`` and ``b``."""
    seen: set[str] = set()
    first: list[_T] = []
    rest: list[_T] = []
    for item in ranked:
        key = subject(item)
        (rest if key in seen else first).append(item)
        seen.add(key)
    return first + rest


def find_checks(
    store: Any,
    tenant_id: str,
    tool: str,
    args: Mapping[str, Any],
    *,
    namespaces: Sequence[str],
    task_type: str | None = None,
    min_confidence: float = 0.0,
    top_k: int = 5,
    state: Sequence[Mapping[str, Any]] | None = None,
    now: Any = None,
) -> CheckResult:
    """The checks of ``tenant_id``'s active lessons in ``namespaces`` that match the call
    ``tool(**args)``, best ``top_k`` first (score, then confidence, then the namespace order).

    Lessons under ``min_confidence`` give no check (like recall). One match per lesson.
    ``state``: the tool results the run has seen (``[{"tool", "result"}]``, ``None``: not
    known), against which mined rules' conditions are tested; ``now``: the time their date
    predicates are measured from (the memory's clock).
    """
    lessons = store.experiences_about_tool(
        tenant_id,
        tool,
        namespaces=list(namespaces),
        kinds=[k.value for k in COMPILED_KINDS],
        limit=MAX_CANDIDATES,
    )
    order = {ns: i for i, ns in enumerate(namespaces)}
    found: list[tuple[float, RiskCheck, MatchLevel, str | None]] = []
    classes: dict[str, str] = {}
    run = RunView(state, args, now if now is not None else _epoch())
    tested = 0
    for exp in lessons:
        if exp.confidence < min_confidence:
            continue
        for check in _COMPILED.checks(exp, tool):
            if check.tool != tool:
                continue
            if (
                check.task_type is not None
                and task_type is not None
                and check.task_type != task_type
            ):
                continue
            tested += 1
            matched = match(check, args, classes, run)
            if matched is None:
                break  # a mined rule whose condition is false for this run
            level, cls = matched
            score = round(check.confidence * check.trust * MATCH_WEIGHTS[level], 4)
            found.append((score, check, level, cls))
            break
    found.sort(key=lambda m: (-m[0], -m[1].confidence, order.get(m[1].namespace, 0), m[1].id))
    found = named_first(found, args)
    found = diversify(found, lambda m: _subject(m[1]))
    # only the shown matches become objects; their fields are computed here, in range (a
    # score is a product of numbers in [0, 1]), so they are not validated again
    shown = [
        CheckMatch.model_construct(check=check, score=score, match=level, argument_class=cls)
        for score, check, level, cls in found[:top_k]
    ]
    return CheckResult.model_construct(tool=tool, checks=shown, tested=tested)
