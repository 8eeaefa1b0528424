"""Condition mining: the simplest conditions that separate good decisions from bad ones.

Source and method: docs/review.md#condition-mining. In short:

1. **Decisions.** For each state-changing tool ``T`` of the tenant's runs, three kinds of
   decision are collected, each with the state the agent had seen before it
   (:mod:`hindsight.review.mining.features`):

   * ``avoid``: a run called ``T`` (the state before its first call, with its arguments).
     The decision was bad when the run failed, or, when the run's outcome evidence lists
     expected actions, when ``T`` was not among them.
   * ``do``: a run ended without calling ``T`` (its final state). Bad when the run failed
     while some run of the tenant did call ``T``, or when ``T`` was expected.
   * ``error``: every call of ``T`` (the state before it, with its arguments). Bad when it
     returned a given error; no outcome needed.

2. **Units of evidence.** Runs of one task (one task group) are replicas, not independent
   evidence: for each group, the decisions where a condition holds vote once (bad when most
   were bad), and so do those where it does not. Every count is in task groups. Where the
   caller gave no task key (the group is the task's text, or assigned by intent), runs that
   were called with the same identifying value (an order's or a patient's id:
   :attr:`~hindsight.review.mining.features.RunRecord.cases`) act on the same case and are
   one group; a value more than :data:`CASE_SHARE` of the runs (and more than
   :data:`MIN_CASE_RUNS`) share is no case (a shop's own id).

3. **Candidates.** One predicate on one feature (``=`` a class or boolean; ``>``/``<=`` a
   number cut from the 1-2-5 series inside the values seen; days ``-30, -7, -1, 0, 1, 7,
   30`` for dates; ``0, 1, 2, 3, 5`` for a list's length), and conjunctions of two of the
   best single predicates. A predicate that holds in every decision of its set separates
   nothing and is no candidate. A capitalised value
   (:class:`~hindsight.review.mining.features.Recurring`: ``Shipped``, ``HIGH``, or a name)
   is a class only where it recurs: seen in at least :data:`MIN_GROUPS` task groups, under a
   feature whose values repeat (at most half as many distinct values as task groups where
   it has one), as a status or a tier does and a name does not.

4. **Test.** Fisher's exact test, one-sided, of the group votes where the condition holds
   against where it does not; the Benjamini-Hochberg procedure at :data:`FDR` over every
   single predicate tried in the pass (pairs are a second family, counted as every pair
   that could reach significance, since the pairs tried are chosen from this very data, and
   a pair must also beat each of its parts tenfold); the Wilson lower bound of the bad rate
   where it holds at least :data:`MIN_RATE`; at least :data:`MIN_GROUPS` task groups where
   the condition held and the decision was bad. One run is never enough.

5. **Support of a call.** A ``do`` rule asks for a call: unless expected actions alone
   labelled its bad decisions, it also needs the runs that did make the call where the
   condition held (the state before their first call of ``T``) to have gone well: at least
   :data:`MIN_GROUPS` task groups, a Wilson lower bound of that good rate of at least
   :data:`MIN_RATE`, and more often than the runs that ended without it. A run that failed
   for another reason left out every tool it did not call; that alone says nothing for any
   one of them. (An ``avoid`` rule rests on the calls it warns against; its text says how the
   runs that did not call the tool went.)

6. **Selection.** Conditions with the same votes are one (the simplest wording stays); per
   tool and form, at most :data:`MAX_PER_FORM`: the best, then only one that is significant
   on the task groups the ones before did not cover (sequential covering).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from hindsight.review._calls import is_read_only
from hindsight.review.mining.features import COUNT, DAYS, Recurring, RunRecord, State, Value
from hindsight.review.mining.stats import benjamini_hochberg, fisher_greater, wilson_lower

__all__ = [
    "FDR",
    "MAX_PER_FORM",
    "MIN_GROUPS",
    "MIN_RATE",
    "Form",
    "MinedRule",
    "Predicate",
    "condition_holds",
    "mine",
    "nearest",
]

Form = Literal["avoid", "do", "error"]

FDR = 0.05
"""False discovery rate of the Benjamini-Hochberg procedure over one mining pass."""
MIN_GROUPS = 3
"""Task groups where the condition held and the decision was bad, at least."""
MIN_RATE = 0.4
"""Wilson lower bound (95%) of the bad rate where the condition holds, at least."""
MAX_PER_FORM = 2
"""Rules per tool and form (and error message), at most."""
PAIR_FACTOR = 10.0
"""A pair of predicates must have a p-value this many times smaller than each of its parts."""
PAIR_SEEDS = 12
"""Best single predicates per decision set that are combined into pairs."""
MAX_CUTS = 8
"""Number cuts per feature, at most."""
CASE_SHARE = 0.1
"""An identifying value shared by more than this share of the runs is not one case's."""
MIN_CASE_RUNS = 5
"""... nor by more runs than this (replicas of one task, a few trials each, may share one)."""

_DAY_CUTS = (-30.0, -7.0, -1.0, 0.0, 1.0, 7.0, 30.0)
_COUNT_CUTS = (0.0, 1.0, 2.0, 3.0, 5.0)


@dataclass(frozen=True, order=True)
class Predicate:
    """One test on one feature of a state.

    Attributes:
        feature: the feature's name (:mod:`hindsight.review.mining.features`).
        op: ``=`` (the value is among the feature's), ``>`` or ``<=`` (one of the feature's
            numbers is above / at most the value).
        value: a class, a boolean or a number.
    """

    feature: str
    op: Literal["=", ">", "<="]
    value: Value

    def holds(self, state: State) -> bool:
        """True when one of the state's values of the feature satisfies it."""
        values = state.get(self.feature)
        if not values:
            return False
        if self.op == "=":
            return self.value in values
        nums = [v for v in values if isinstance(v, float)]
        if self.op == ">":
            return any(v > self.value for v in nums)  # type: ignore[operator]
        return any(v <= self.value for v in nums)  # type: ignore[operator]

    def as_dict(self) -> dict[str, Any]:
        """``{"feature", "op", "value"}`` (JSON; what a rule's metadata stores)."""
        return {"feature": self.feature, "op": self.op, "value": self.value}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Predicate:
        """The predicate :meth:`as_dict` gave (numbers come back as floats)."""
        value = data["value"]
        if isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        return cls(str(data["feature"]), data["op"], value)


def condition_holds(
    predicates: Iterable[Mapping[str, Any] | Predicate],
    state: State,
    args_state: State | None = None,
) -> bool | None:
    """Does a rule's condition hold for the current run?

    Args:
        predicates: the rule's predicates (all must hold), as stored in its metadata.
        state: the run's state so far (:func:`~hindsight.review.mining.features.state_of_results`).
        args_state: the proposed call's arguments as ``args.*`` features (``None``: no call).

    Returns:
        ``True`` / ``False``, or ``None`` (unknown) when a predicate is about a tool the run
        has not called yet, or about arguments and no call was given.
    """
    unknown = False
    for raw in predicates:
        pred = raw if isinstance(raw, Predicate) else Predicate.from_dict(raw)
        source = pred.feature.split(".", 1)[0]
        if source == "args":
            if args_state is None:
                unknown = True
                continue
            if not pred.holds(args_state):
                return False
            continue
        if pred.feature not in state and not any(k.startswith(source + ".") for k in state):
            unknown = True
            continue
        if not pred.holds(state):
            return False
    return None if unknown else True


@dataclass
class MinedRule:
    """One mined rule: a decision about ``tool`` that went wrong when ``predicates`` held.

    Attributes:
        tool: the tool.
        form: ``avoid``, ``do`` or ``error``.
        predicates: the condition (one or two predicates, all must hold).
        message: the error class (``error`` form), else ``""``.
        basis: ``outcome`` (runs' outcomes), ``expected`` (expected actions), ``mixed``, or
            ``error`` (the calls' own errors).
        bad, held: task groups where the condition held: with a bad decision / in all.
        bad_else, held_else: the same where it did not hold.
        declined_ok, declined: (``avoid``) task groups where the condition held, ``tool`` was
            not called, and the run went well / in all.
        called_ok, called: (``do``) task groups where the condition held before ``tool``'s
            first call, and the run went well / in all (what a ``do`` rule from outcomes needs,
            :func:`mine`).
        p: the one-sided Fisher p-value.
        quote: (``error`` form) the error as the runs quote it, the numbers they differ in
            masked (:func:`_error_quotes`); ``""`` to show the class.
        subject: (``error`` form) the subject of the reviewer's lessons about the same error
            (``<tool>:<status>:<masked error>``, the most common among its failed calls), so
            that recall shows one lesson per error; else ``""``.
    """

    tool: str
    form: Form
    predicates: tuple[Predicate, ...]
    message: str = ""
    basis: str = "outcome"
    bad: int = 0
    held: int = 0
    bad_else: int = 0
    held_else: int = 0
    declined_ok: int = 0
    declined: int = 0
    called_ok: int = 0
    called: int = 0
    p: float = 1.0
    covered: frozenset[str] = field(default_factory=frozenset, repr=False)
    subject: str = ""
    quote: str = ""

    @property
    def key(self) -> str:
        """A stable key: ``condition:<tool>:<form>[:<message>]:<predicates>``."""
        preds = "&".join(f"{p.feature}{p.op}{_fmt(p.value)}" for p in self.predicates)
        mid = f"{self.form}:{self.message}" if self.message else self.form
        return f"condition:{self.tool}:{mid}:{preds}"

    def evidence(self) -> dict[str, Any]:
        """The counts, as a rule's metadata stores them (JSON)."""
        return {
            "basis": self.basis,
            "bad": self.bad,
            "held": self.held,
            "bad_else": self.bad_else,
            "held_else": self.held_else,
            "declined_ok": self.declined_ok,
            "declined": self.declined,
            "called_ok": self.called_ok,
            "called": self.called,
            "p": float(f"{self.p:.3g}"),
            "unit": "task group",
        }


def _fmt(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return value


# -- decisions ----------------------------------------------------------------------------------
@dataclass
class _Units:
    """The decisions of one (tool, form[, message]): parallel lists (``labels``: what labelled
    each decision, ``outcome``, ``expected`` or ``error``)."""

    states: list[State] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    bad: list[bool] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    basis: Counter[str] = field(default_factory=Counter)
    origins: list[str] = field(default_factory=list)  # the run's own group, before cases

    def add(self, state: State, group: str, bad: bool, basis: str, origin: str = "") -> None:
        self.states.append(state)
        self.groups.append(group)
        self.origins.append(origin or group)
        self.bad.append(bad)
        self.labels.append(basis)
        self.basis[basis] += 1

    def by_outcome(self, mask: int) -> bool:
        """True when a bad decision of ``mask`` was labelled by its run's outcome (not by
        expected actions)."""
        return any(
            mask >> i & 1 and bad and label == "outcome"
            for i, (bad, label) in enumerate(zip(self.bad, self.labels, strict=True))
        )


def _recurring_classes(runs: Sequence[RunRecord]) -> set[tuple[str, Value]]:
    """``(feature, value)`` of the :class:`Recurring` values that are classes (module
    docstring, step 3): in :data:`MIN_GROUPS` task groups or more, under a feature with at
    most half as many distinct such values as task groups where it has one."""
    groups_of: dict[tuple[str, Value], set[str]] = defaultdict(set)
    for run in runs:
        states = [run.final, *(c.state for c in run.calls)]
        for i, state in enumerate(states):
            for feature, values in state.items():
                if i and not feature.startswith("args."):
                    continue  # a call's state is the final state's results, plus its arguments
                for v in values:
                    if type(v) is Recurring:
                        groups_of[(feature, v)].add(run.group)
    per_feature: dict[str, list[set[str]]] = defaultdict(list)
    for (feature, _), groups in groups_of.items():
        per_feature[feature].append(groups)
    spread = {f: (len(g), len(set().union(*g))) for f, g in per_feature.items()}
    return {
        (feature, v)
        for (feature, v), groups in groups_of.items()
        if len(groups) >= MIN_GROUPS and 2 * spread[feature][0] <= spread[feature][1]
    }


def _classes_only(runs: Sequence[RunRecord]) -> Any:
    """A function that returns a state without its :class:`Recurring` values that are not
    classes (:func:`_recurring_classes`); the same state when it holds none."""
    kept = _recurring_classes(runs)
    done: dict[int, State] = {}

    def clean(state: State) -> State:
        found = done.get(id(state))
        if found is not None:
            return found
        out = state
        for feature, values in state.items():
            drop = {v for v in values if type(v) is Recurring and (feature, v) not in kept}
            if drop:
                if out is state:
                    out = dict(state)
                if values - drop:
                    out[feature] = values - drop
                else:
                    del out[feature]
        done[id(state)] = out
        return out

    return clean


def _by_case(runs: Sequence[RunRecord]) -> tuple[list[RunRecord], dict[str, str]]:
    """``runs`` with the task groups of runs that share a case joined (module docstring, step
    2), and each joined run's own group by run id. A case is no larger than a value may be
    shared (:data:`CASE_SHARE`, :data:`MIN_CASE_RUNS`): two joins that would make it larger
    are not made, so ids that chain from task to task do not join a whole log."""
    carried: Counter[str] = Counter(c for r in runs for c in r.cases)
    limit = max(MIN_CASE_RUNS, CASE_SHARE * len(runs))
    parent: dict[str, str] = {}
    size: Counter[str] = Counter(r.group for r in runs)

    def root(g: str) -> str:
        while parent.get(g, g) != g:
            g = parent[g]
        return g

    owner: dict[str, str] = {}
    for run in runs:
        for case in sorted(run.cases):
            if carried[case] > limit:
                continue
            a, b = root(owner.setdefault(case, run.group)), root(run.group)
            if a != b and size[a] + size[b] <= limit:
                keep, gone = min(a, b), max(a, b)
                parent[gone] = keep
                size[keep] += size.pop(gone)
    if not parent:
        return list(runs), {}
    joined = [r if root(r.group) == r.group else replace(r, group=root(r.group)) for r in runs]
    return joined, {r.run_id: r.group for r in runs if root(r.group) != r.group}


def _decisions(
    runs: Sequence[RunRecord], origin_of: Mapping[str, str] | None = None
) -> dict[tuple[str, Form, str], _Units]:
    units: dict[tuple[str, Form, str], _Units] = defaultdict(_Units)
    clean = _classes_only(runs)
    origin_of = origin_of or {}
    called_by_any: set[str] = set()
    for run in runs:
        called_by_any.update(c.tool for c in run.calls if not is_read_only(c.tool))
    for run in runs:
        first: dict[str, State] = {}
        for call in run.calls:
            if not is_read_only(call.tool):
                first.setdefault(call.tool, call.state)
        for tool in called_by_any:
            if run.expected is not None:
                wanted = tool in run.expected
                basis = "expected"
            elif run.outcome is not None:
                wanted = None
                basis = "outcome"
            else:
                continue
            if tool in first:
                bad = (not wanted) if wanted is not None else run.outcome is False
                units[(tool, "avoid", "")].add(
                    clean(first[tool]), run.group, bad, basis, origin_of.get(run.run_id, "")
                )
            else:
                bad = bool(wanted) if wanted is not None else run.outcome is False
                units[(tool, "do", "")].add(
                    clean(run.final), run.group, bad, basis, origin_of.get(run.run_id, "")
                )
    # error form: every call of a tool that ever failed, one decision set per error class
    errors: dict[str, Counter[str]] = defaultdict(Counter)
    for run in runs:
        for call in run.calls:
            if call.error:
                errors[call.tool][call.error] += 1
    for run in runs:
        for call in run.calls:
            for message in errors.get(call.tool, ()):
                units[(call.tool, "error", message)].add(
                    clean(call.state),
                    run.group,
                    call.error == message,
                    "error",
                    origin_of.get(run.run_id, ""),
                )
    return units


# -- candidates ---------------------------------------------------------------------------------
def _nice_cuts(values: Iterable[float]) -> list[float]:
    """Numbers of the 1-2-5 series (and 0) strictly inside the range of ``values``, at most
    :data:`MAX_CUTS`, spread over the values' quantiles."""
    vals = sorted(set(values))
    if len(vals) < 2:
        return []
    lo, hi = vals[0], vals[-1]
    whole = all(v == int(v) for v in vals)
    cuts: set[float] = {0.0} if lo < 0 < hi else set()
    top = max(abs(lo), abs(hi))
    if top > 0:
        for exp in range(math.floor(math.log10(top)) - 2, math.floor(math.log10(top)) + 1):
            for m in (1, 2, 5):
                for sign in (1, -1):
                    c = sign * m * 10.0**exp
                    if lo <= c < hi and (not whole or c == int(c)):
                        cuts.add(round(c, 6))
    if len(cuts) <= MAX_CUTS:
        return sorted(cuts)
    ordered = sorted(cuts)
    wanted = [vals[int(len(vals) * q / (MAX_CUTS + 1))] for q in range(1, MAX_CUTS + 1)]
    chosen = {min(ordered, key=lambda c: abs(c - w)) for w in wanted}
    return sorted(chosen)


def _atoms(units: _Units) -> dict[Predicate, int]:
    """Every single predicate that holds in some decision, with the bitmask of the decisions
    where it holds."""
    masks: dict[Predicate, int] = defaultdict(int)
    numbers: dict[str, list[float]] = defaultdict(list)
    for i, state in enumerate(units.states):
        bit = 1 << i
        for feature, values in state.items():
            for v in values:
                if isinstance(v, float):
                    numbers[feature].append(v)
                else:
                    masks[Predicate(feature, "=", v)] |= bit
    for feature, vals in numbers.items():
        if feature.endswith(DAYS):
            cuts: Sequence[float] = [c for c in _DAY_CUTS if min(vals) <= c < max(vals)]
        elif feature.endswith(COUNT):
            cuts = [c for c in _COUNT_CUTS if min(vals) <= c < max(vals)]
        else:
            cuts = _nice_cuts(vals)
        for cut in cuts:
            above, below = Predicate(feature, ">", cut), Predicate(feature, "<=", cut)
            for i, state in enumerate(units.states):
                nums = [v for v in state.get(feature, ()) if isinstance(v, float)]
                if not nums:
                    continue
                if max(nums) > cut:
                    masks[above] |= 1 << i
                if min(nums) <= cut:
                    masks[below] |= 1 << i
    every = (1 << len(units.states)) - 1
    return {p: mask for p, mask in masks.items() if mask != every}  # else it separates nothing


@dataclass
class _Votes:
    """Task-group votes of one condition over one decision set."""

    bad: int
    held: int
    bad_else: int
    held_else: int
    covered: frozenset[str]
    signature: tuple[int, ...]


class _Groups:
    """The decisions of one set by task group, for voting."""

    def __init__(self, units: _Units) -> None:
        by: dict[str, int] = defaultdict(int)
        badmask = 0
        for i, (group, bad) in enumerate(zip(units.groups, units.bad, strict=True)):
            by[group] |= 1 << i
            if bad:
                badmask |= 1 << i
        self.names = sorted(by)
        self.masks = [by[g] for g in self.names]
        self.badmask = badmask
        self.bad_groups = sum(1 for m in self.masks if m & badmask)

    def without(self, names: set[str]) -> _Groups:
        """The same decisions without the task groups ``names``."""
        rest = object.__new__(_Groups)
        keep = [i for i, n in enumerate(self.names) if n not in names]
        rest.names = [self.names[i] for i in keep]
        rest.masks = [self.masks[i] for i in keep]
        rest.badmask = self.badmask
        rest.bad_groups = sum(1 for m in rest.masks if m & rest.badmask)
        return rest

    def votes(self, mask: int) -> _Votes:
        bad = held = bad_else = held_else = 0
        covered: list[str] = []
        sig: list[int] = []
        for name, gmask in zip(self.names, self.masks, strict=True):
            for part, inside in ((gmask & mask, True), (gmask & ~mask, False)):
                n = part.bit_count()
                if not n:
                    sig.append(0)
                    continue
                k = (part & self.badmask).bit_count()
                if k * 2 == n:
                    sig.append(3)
                    continue  # a tie says nothing
                vote = k * 2 > n
                sig.append(2 if vote else 1)
                if inside:
                    held += 1
                    bad += vote
                    if vote:
                        covered.append(name)
                else:
                    held_else += 1
                    bad_else += vote
        return _Votes(bad, held, bad_else, held_else, frozenset(covered), tuple(sig))


@dataclass
class _Candidate:
    key: tuple[str, Form, str]
    predicates: tuple[Predicate, ...]
    mask: int
    votes: _Votes
    p: float


def _test(
    key: tuple[str, Form, str], preds: tuple[Predicate, ...], mask: int, groups: _Groups
) -> _Candidate | None:
    v = groups.votes(mask)
    if v.bad < MIN_GROUPS:
        return None
    p = fisher_greater(v.bad, v.held - v.bad, v.bad_else, v.held_else - v.bad_else)
    return _Candidate(key, preds, mask, v, p)


def _simplicity(c: _Candidate) -> tuple[int, int, int]:
    ops = sum(p.op != "=" for p in c.predicates)
    return (len(c.predicates), ops, sum(len(p.feature) for p in c.predicates))


def _select(cands: list[_Candidate], groups_of: Mapping[Any, _Groups]) -> list[_Candidate]:
    """Same votes -> the simplest; then per decision set the best (highest Wilson bound,
    then lowest p), and at most :data:`MAX_PER_FORM` - 1 more, each of which must stand on
    the task groups the ones before did not cover (sequential covering: its Fisher test
    there, Bonferroni over the set's candidates, at :data:`FDR`)."""
    by_key: dict[tuple[str, Form, str], list[_Candidate]] = defaultdict(list)
    for c in _distinct(cands):
        by_key[c.key].append(c)
    chosen: list[_Candidate] = []
    for key in sorted(by_key):
        ranked = sorted(
            by_key[key],
            key=lambda c: (-wilson_lower(c.votes.bad, c.votes.held), c.p, _simplicity(c)),
        )
        groups = groups_of[key]
        covered: set[str] = set()
        taken: list[_Candidate] = []
        for c in ranked:
            if len(taken) >= MAX_PER_FORM:
                break
            if taken:
                rest = groups.without(covered)
                v = rest.votes(c.mask)
                p = fisher_greater(v.bad, v.held - v.bad, v.bad_else, v.held_else - v.bad_else)
                if v.bad < MIN_GROUPS or p * len(ranked) > FDR:
                    continue
            covered |= c.votes.covered
            taken.append(c)
        chosen.extend(taken)
    return chosen


def _singles(
    key: tuple[str, Form, str], units: _Units
) -> tuple[_Groups, dict[Predicate, int], list[_Candidate]] | None:
    """The decision set's groups, atoms and tested single conditions (those holding for a
    bad decision in at least :data:`MIN_GROUPS` task groups); ``None`` when the set has
    fewer bad task groups than that."""
    groups = _Groups(units)
    if groups.bad_groups < MIN_GROUPS:
        return None
    atoms = _atoms(units)
    cands = []
    for pred in sorted(atoms):
        mask = atoms[pred]
        if (mask & groups.badmask).bit_count() < MIN_GROUPS:
            continue
        cand = _test(key, (pred,), mask, groups)
        if cand is not None:
            cands.append(cand)
    return groups, atoms, cands


def mine(runs: Sequence[RunRecord]) -> list[MinedRule]:
    """The rules ``runs`` support (see the module docstring), ordered by tool, form, then
    strength. ``runs``: :func:`~hindsight.review.mining.features.record_of` of the tenant's
    runs. Deterministic for the same runs in any order."""
    runs, origin_of = _by_case(sorted(runs, key=lambda r: r.run_id))
    singles: list[_Candidate] = []
    sets: dict[tuple[str, Form, str], tuple[_Units, _Groups, dict[Predicate, int]]] = {}
    decisions = _decisions(runs, origin_of)
    for key, units in sorted(decisions.items()):
        found = _singles(key, units)
        if found is None:
            continue
        groups, atoms, cands = found
        sets[key] = (units, groups, atoms)
        singles.extend(cands)
    kept = _standing(singles)
    singles = _distinct(singles)
    pairs: list[_Candidate] = []
    by_key: dict[tuple[str, Form, str], list[_Candidate]] = defaultdict(list)
    for c in singles:
        by_key[c.key].append(c)
    searched = 0  # the pairs the seeds were chosen among: all of them are hypotheses
    for key, cands in by_key.items():
        _, groups, _ = sets[key]
        searched += _testable_pairs(cands, groups)
        seeds = sorted(cands, key=lambda c: (c.p, _simplicity(c), c.predicates))[:PAIR_SEEDS]
        for i, a in enumerate(seeds):
            for b in seeds[i + 1 :]:
                if a.predicates[0].feature == b.predicates[0].feature:
                    continue
                mask = a.mask & b.mask
                if mask in (a.mask, b.mask):
                    continue
                cand = _test(key, tuple(sorted(a.predicates + b.predicates)), mask, groups)
                if cand is not None and cand.p * PAIR_FACTOR <= min(a.p, b.p):
                    pairs.append(cand)
    kept += _standing(pairs, per_set=False, untested=searched)
    kept = [c for c in kept if _supported(c, decisions)]
    subjects = _error_subjects(runs)
    quotes = _error_quotes(runs)
    rules: list[MinedRule] = []
    for c in _select(kept, {k: v[1] for k, v in sets.items()}):
        units, groups, _ = sets[c.key]
        tool, form, message = c.key
        basis = "error" if form == "error" else _basis(units.basis)
        rule = MinedRule(
            tool,
            form,
            c.predicates,
            message,
            basis,
            c.votes.bad,
            c.votes.held,
            c.votes.bad_else,
            c.votes.held_else,
            p=c.p,
            covered=_own_groups(c, units, groups),
            subject=subjects.get((tool, message), "") if form == "error" else "",
            quote=quotes.get((tool, message), "") if form == "error" else "",
        )
        if form == "avoid":
            rule.declined_ok, rule.declined = _opposite(decisions, (tool, "do", ""), c.predicates)
        elif form == "do":
            rule.called_ok, rule.called = _opposite(decisions, (tool, "avoid", ""), c.predicates)
        rules.append(rule)
    return rules


@dataclass(frozen=True)
class Nearest:
    """The strongest single condition of one decision set and how far it is from standing
    (:func:`nearest`). Counts are task groups.

    Attributes:
        tool, form, message: the decision set (``message``: the error class of ``error``).
        predicate: the condition with the smallest p-value.
        bad, held: groups where it held and the decision went wrong / all where it held.
        bad_else, held_else: the same where it did not hold.
        p: its one-sided Fisher p-value.
        needed: the largest p-value the first Benjamini-Hochberg step accepts in this set
            (:data:`FDR` / ``tested``).
        tested: distinct conditions of the set that could reach significance.
        wilson: the Wilson lower bound (95%) of its bad rate (:data:`MIN_RATE` needed).
        stands: whether it stands as a single condition (the procedure and the bound).
    """

    tool: str
    form: Form
    message: str
    predicate: Predicate
    bad: int
    held: int
    bad_else: int
    held_else: int
    p: float
    needed: float
    tested: int
    wilson: float
    stands: bool


def nearest(runs: Sequence[RunRecord]) -> list[Nearest]:
    """Per decision set with at least :data:`MIN_GROUPS` bad task groups, its strongest single
    condition and what it lacks (:class:`Nearest`), sorted by tool, form and message: why the
    runs gave a rule, or why they did not (too few task groups for the test to reach the
    false discovery rate, a bad rate whose lower bound is too low). The same candidates and
    tests as :func:`mine` (single predicates; pairs and the selection aside)."""
    runs, _ = _by_case(sorted(runs, key=lambda r: r.run_id))
    out: list[Nearest] = []
    for key, units in sorted(_decisions(runs).items()):
        found = _singles(key, units)
        cands = _distinct(found[2]) if found is not None else []
        if not cands:
            continue
        best = min(cands, key=lambda c: (c.p, _simplicity(c), c.predicates))
        v = best.votes
        wilson = wilson_lower(v.bad, v.held)
        stands = any(c is best for c in _standing(cands))
        tool, form, message = key
        out.append(
            Nearest(tool, form, message, best.predicates[0], v.bad, v.held, v.bad_else,
                    v.held_else, best.p, FDR / len(cands), len(cands), wilson, stands)
        )  # fmt: skip
    return out


def _own_groups(c: _Candidate, units: _Units, groups: _Groups) -> frozenset[str]:
    """The runs' own task groups behind ``c``'s covered groups (a case joins several): those
    of the bad decisions where its condition held."""
    where = 0
    for name, gmask in zip(groups.names, groups.masks, strict=True):
        if name in c.votes.covered:
            where |= gmask
    where &= c.mask & groups.badmask
    return frozenset(units.origins[i] for i in range(len(units.origins)) if where >> i & 1)


def _error_subjects(runs: Sequence[RunRecord]) -> dict[tuple[str, str], str]:
    """For each (tool, error class), the most common subject of its failed calls (ties: the
    smallest, so that the answer does not depend on the order of the runs), the one the
    reviewer's lessons about that error share."""
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for run in runs:
        for call in run.calls:
            if call.error and call.subject:
                counts[(call.tool, call.error)][call.subject] += 1
    return {key: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for key, c in counts.items()}


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _error_quotes(runs: Sequence[RunRecord]) -> dict[tuple[str, str], str]:
    """For each (tool, error class), the error as the runs quote it, with the numbers that
    differ between them shown as ``<number>`` and those they all share kept: ``deploy refused:
    2 approvals required, pipeline <pl_id> has <number>`` from ``... has 0`` and ``... has 1``
    (a policy's constant is kept, a run's count is not). ``""`` when the quotes differ in
    anything but their numbers (the class is shown then)."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for run in runs:
        for call in run.calls:
            if call.error and call.quote:
                found[(call.tool, call.error)].add(call.quote)
    out: dict[tuple[str, str], str] = {}
    for key, quotes in found.items():
        texts = sorted(quotes)
        shapes = {tuple(_NUMBER.split(t)) for t in texts}
        if len(shapes) != 1:
            continue
        (parts,) = shapes
        numbers = [_NUMBER.findall(t) for t in texts]
        slots = [
            values[0] if len(set(values)) == 1 else "<number>"
            for values in zip(*numbers, strict=True)
        ]
        out[key] = "".join(p + n for p, n in zip(parts, [*slots, ""], strict=True))
    return out


def _distinct(cands: list[_Candidate]) -> list[_Candidate]:
    """One candidate per decision set and vote signature (the simplest): predicates with the
    same votes are one hypothesis, not several."""
    best: dict[tuple[Any, tuple[int, ...]], _Candidate] = {}
    for c in cands:
        sig = (c.key, c.votes.signature)
        old = best.get(sig)
        if old is None or (_simplicity(c), c.predicates) < (_simplicity(old), old.predicates):
            best[sig] = c
    return list(best.values())


def _testable_pairs(cands: Sequence[_Candidate], groups: _Groups) -> int:
    """How many pairs of ``cands`` (distinct single predicates of one decision set, on two
    features) could reach significance: those whose conjunction holds for a bad decision in
    at least :data:`MIN_GROUPS` task groups (an upper bound of its bad votes; after Tarone
    1990). The pairs tested are built from the best singles of this very data, so every such
    pair was in the search and counts as a hypothesis."""
    bad = [m & groups.badmask for m in groups.masks]
    reach = []
    for c in _distinct(list(cands)):
        parts = {g: b & c.mask for g, b in enumerate(bad) if b & c.mask}
        reach.append((c.predicates[0].feature, parts))
    count = 0
    for i, (feature_a, parts_a) in enumerate(reach):
        for feature_b, parts_b in reach[i + 1 :]:
            if feature_a != feature_b:
                both = sum(1 for g, part in parts_a.items() if part & parts_b.get(g, 0))
                count += both >= MIN_GROUPS
    return count


def _standing(
    cands: list[_Candidate], *, per_set: bool = True, untested: int = 0
) -> list[_Candidate]:
    """The candidates that stand: Benjamini-Hochberg at :data:`FDR` over distinct candidates
    (those with :data:`MIN_GROUPS` bad groups: the others could never be significant and are
    not counted, after Tarone 1990), within each decision set (``per_set``, single
    predicates) or over the whole pass (pairs, counted as ``untested``: every pair that could
    reach significance, tested or not), and a Wilson lower bound of the bad rate of at least
    :data:`MIN_RATE`."""
    by_key: dict[Any, list[_Candidate]] = defaultdict(list)
    for c in _distinct(cands):
        by_key[c.key if per_set else ""].append(c)
    out: list[_Candidate] = []
    for key in sorted(by_key):
        group = by_key[key]
        hypotheses = max(len(group), untested)
        padded = [c.p for c in group] + [1.0] * (hypotheses - len(group))
        keep = benjamini_hochberg(padded, FDR)[: len(group)]
        out.extend(
            c
            for c, ok in zip(group, keep, strict=True)
            if ok and wilson_lower(c.votes.bad, c.votes.held) >= MIN_RATE
        )
    return out


def _basis(counts: Counter[str]) -> str:
    kinds = [k for k, n in counts.items() if n]
    return kinds[0] if len(kinds) == 1 else "mixed"


def _opposite(
    decisions: Mapping[tuple[str, Form, str], _Units],
    key: tuple[str, Form, str],
    preds: tuple[Predicate, ...],
) -> tuple[int, int]:
    """Task groups of the decision set ``key`` (the opposite decision about the same tool: the
    runs that did not call it, for an ``avoid`` rule; those that did, for a ``do`` rule) where
    the condition held (its argument predicates aside): (went well, all). Every run of the
    set counts, whether or not the set had enough bad decisions to be mined itself."""
    units = decisions.get(key)
    if units is None:
        return 0, 0
    mask = 0
    for i, state in enumerate(units.states):
        if all(p.holds(state) for p in preds if not p.feature.startswith("args.")):
            mask |= 1 << i
    v = _Groups(units).votes(mask)
    return v.held - v.bad, v.held


def _supported(c: _Candidate, decisions: Mapping[tuple[str, Form, str], _Units]) -> bool:
    """Does a ``do`` candidate stand on runs that made the call (module docstring, 5)? Other
    forms, and ``do`` candidates whose bad decisions expected actions alone labelled, do."""
    tool, form, _ = c.key
    if form != "do" or not decisions[c.key].by_outcome(c.mask):
        return True
    ok, called = _opposite(decisions, (tool, "avoid", ""), c.predicates)
    if ok < MIN_GROUPS or wilson_lower(ok, called) < MIN_RATE:
        return False
    held_ok = c.votes.held - c.votes.bad  # the groups that ended without it and went well
    return ok * c.votes.held > held_ok * called
