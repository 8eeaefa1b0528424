"""The guard's rule prefilter: which rules can possibly fire on a text
(docs/security.md#layer-1-before-write).

Every rule's trigger (and anchor, and each ``requires`` pattern) is read once, when a
:class:`~hindsight.guard.checker.Guard` is built, and reduced to a **need**: a set of literal
strings one of which every match must contain (:func:`need`). ``(?:never|don'?t)\\s+skip``
needs one of ``{"never", "dont", "don't"}`` or ``{"skip"}`` - the most selective is kept. A
rule whose patterns all have a need is run on a text only when the text contains one string
of each need; a rule with a pattern that has none (a user's ``.*``, a back-reference) always
runs. Texts that contain none of the literals run no rule at all.

The prefilter never changes a verdict: a literal required by every match of a pattern is in
any text the pattern matches, so a rule it skips could not have fired. It is applied only to
texts equal to their lower case with no long s or dotless i (what
:func:`~hindsight.guard.normalize` returns), where case-insensitive matching of the ASCII and
caseless characters the literals are made of is plain containment; other texts run every
rule. Characters with case outside ASCII (``µ``/``μ``, the Kelvin sign, Greek finals) end a
literal, so their case-insensitive equivalents are never missed. Tested equal to the full
evaluation on the poison sets and on generated, obfuscated text (tests/test_guard_prefilter.py).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

__all__ = ["Gate", "need", "plain_lower"]

_MAX_SET = 256
"""Largest set of literals one need may hold (a larger cross product ends the literal)."""
_MAX_RANGE = 16
"""Largest character range ``[a-f]`` expanded into single-character literals."""

_FOLDS_TO_ASCII = frozenset("\u017f\u0131")  # long s, dotless i: lower case, yet IGNORECASE
# matches them with "s" / "i"


def plain_lower(text: str) -> bool:
    """No character of ``text`` matches a lower-case ASCII letter only case-insensitively
    (true of :func:`~hindsight.guard.normalize` output, which is case folded, NFKC and
    homoglyph-mapped): the texts :meth:`Gate.passing` may be given."""
    return text == text.lower() and _FOLDS_TO_ASCII.isdisjoint(text)


Need = frozenset[str] | None
"""Literals one of which every match contains; ``None``: nothing can be said."""


def _safe_char(code: int) -> str | None:
    """The character to look for in a lower-case text for pattern character ``code``, or
    ``None`` when case-insensitive matching could pair it with another character of such a
    text (non-ASCII characters with case)."""
    char = chr(code)
    if char.isascii():
        return char.lower()
    if char.lower() == char and char.upper() == char and char.casefold() == char:
        category = unicodedata.category(char)
        if category.startswith(("Lo", "N", "P", "S")):
            return char
    return None


@dataclass(frozen=True, slots=True)
class _Info:
    exact: frozenset[str] | None
    """Every string the node can match (``None``: too many or unknown)."""
    need: Need
    """Literals one of which every match of the node contains."""


_UNKNOWN = _Info(None, None)
_EMPTY = _Info(frozenset({""}), None)


def _useful(found: Iterable[str] | None) -> Need:
    if found is None:
        return None
    values = frozenset(found)
    if not values or "" in values:
        return None
    values = frozenset(_minimal(values))
    return values if len(values) <= _MAX_SET else None


def _better(a: Need, b: Need) -> Need:
    """The more selective need: longer shortest literal, then fewer literals."""
    if a is None:
        return b
    if b is None:
        return a
    key_a = (min(map(len, a)), -len(a))
    key_b = (min(map(len, b)), -len(b))
    return b if key_b > key_a else a


def _product(left: frozenset[str], right: frozenset[str]) -> frozenset[str] | None:
    if len(left) * len(right) > _MAX_SET:
        return None
    return frozenset(x + y for x in left for y in right)


def _charset(items: Sequence[tuple[Any, Any]]) -> _Info:
    chars: set[str] = set()
    for op, arg in items:
        if op is sre.LITERAL:
            char = _safe_char(arg)
            if char is None:
                return _UNKNOWN
            chars.add(char)
        elif op is sre.RANGE and arg[1] - arg[0] < _MAX_RANGE:
            for code in range(arg[0], arg[1] + 1):
                char = _safe_char(code)
                if char is None:
                    return _UNKNOWN
                chars.add(char)
        else:  # NEGATE, CATEGORY, a wide range
            return _UNKNOWN
    exact = frozenset(chars)
    return _Info(exact, _useful(exact))


def _sequence(items: Sequence[tuple[Any, Any]]) -> _Info:
    best: Need = None
    run: frozenset[str] | None = frozenset({""})
    whole: frozenset[str] | None = frozenset({""})
    for op, arg in items:
        info = _node(op, arg)
        best = _better(best, info.need)
        if info.exact is None:
            best = _better(best, _useful(run))
            run = frozenset({""})
            whole = None
            continue
        joined = _product(run, info.exact) if run is not None else None
        if joined is None:  # too many combinations: end the literal here
            best = _better(best, _useful(run))
            joined = info.exact
        run = joined
        whole = _product(whole, info.exact) if whole is not None else None
    best = _better(best, _useful(run))
    return _Info(whole, best)


def _node(op: Any, arg: Any) -> _Info:
    if op is sre.LITERAL:
        char = _safe_char(arg)
        return _UNKNOWN if char is None else _Info(frozenset({char}), frozenset({char}))
    if op is sre.IN:
        return _charset(arg)
    if op is sre.AT:
        return _EMPTY  # zero width: literals on both sides stay adjacent in the text
    if op is sre.ASSERT_NOT:
        return _EMPTY
    if op is sre.ASSERT:  # (?=...) / (?<=...): zero width, but its text is in the text
        return _Info(frozenset({""}), _sequence(arg[1]).need)
    if op is sre.SUBPATTERN:
        return _sequence(arg[3])
    if op is getattr(sre, "ATOMIC_GROUP", None):
        return _sequence(arg)
    if op is sre.BRANCH:
        branches = [_sequence(b) for b in arg[1]]
        exact: frozenset[str] | None = frozenset()
        needs: set[str] | None = set()
        for b in branches:
            exact = exact | b.exact if exact is not None and b.exact is not None else None
            own = _better(_useful(b.exact), b.need)
            needs = needs | own if needs is not None and own is not None else None
        if exact is not None and len(exact) > _MAX_SET:
            exact = None
        return _Info(exact, _useful(needs))
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
        low, high, sub = arg
        inner = _sequence(sub)
        if low == 0:
            if high == 1 and inner.exact is not None:
                return _Info(inner.exact | {""}, None)
            return _UNKNOWN
        if low == high == 1:
            return inner
        return _Info(None, _better(_useful(inner.exact), inner.need))
    return _UNKNOWN  # ANY, NOT_LITERAL, CATEGORY, GROUPREF, GROUPREF_EXISTS


def need(pattern: re.Pattern[str]) -> Need:
    """Literals one of which every match of ``pattern`` contains, as they appear in a text
    equal to its lower case (see the module docstring); ``None`` when none can be named.

    ``need(re.compile(r"\\bdrop\\s+table\\b"))`` is ``frozenset({"drop"})`` or
    ``frozenset({"table"})`` (the longer wins: ``{"table"}``).
    """
    return _need_of(pattern.pattern, pattern.flags)


@lru_cache(maxsize=1024)
def _need_of(source: str, flags: int) -> Need:
    """:func:`need` by pattern source (guards built in one process share the work)."""
    try:
        parsed = sre_parse.parse(source, flags)
    except (re.error, RecursionError):  # pragma: no cover - the pattern compiled already
        return None
    info = _sequence(list(parsed))
    return _better(_useful(info.exact), info.need)


def _minimal(literals: frozenset[str]) -> tuple[str, ...]:
    """``literals`` without those containing another one (a text that contains ``"bypassing"``
    contains ``"bypass"``), shortest first."""
    ordered = sorted(literals, key=lambda s: (len(s), s))
    kept: list[str] = []
    for lit in ordered:
        if not any(k in lit for k in kept):
            kept.append(lit)
    return tuple(kept)


def _trie_pattern(literals: Iterable[str]) -> str:
    """A regex matching, at a position, the longest of ``literals`` that starts there (a
    trie: one branch per next character, the shorter literal tried last)."""
    trie: dict[str, Any] = {}
    for lit in literals:
        node = trie
        for char in lit:
            node = node.setdefault(char, {})
        node[""] = {}

    def render(node: dict[str, Any]) -> str:
        branches = [re.escape(c) + render(child) for c, child in sorted(node.items()) if c]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:  # a literal ends here: a longer one first, then this one
            return "(?:" + body + ")?"
        return body

    return render(trie)


class Gate:
    """Which of a guard's compiled rules (or of the harm lexicon's scanned alternations,
    :mod:`hindsight.guard.harm`) can fire on a normalized text.

    One pass of one regex (a trie of every literal of every rule, tried at each position)
    finds the literals the text contains; a rule passes when each of its needs has one.

    Args:
        needs: per rule, in rule order, the needs of its patterns (trigger, anchor, each
            ``requires``): the rule can fire only when every non-``None`` need has one of
            its literals in the text. A rule with no usable need always runs.
    """

    def __init__(self, needs: Sequence[Sequence[Need]]) -> None:
        kept = [[_minimal(n) for n in rule if n is not None] for rule in needs]
        self.always = tuple(i for i, rule in enumerate(kept) if not rule)
        """Rules that run on every text (no usable need)."""
        # each need gets an id; a literal satisfies the needs it belongs to
        self._rules: list[tuple[int, ...]] = []
        satisfies: dict[str, set[int]] = {}
        count = 0
        for rule in kept:
            ids = []
            for n in rule:
                ids.append(count)
                for lit in n:
                    satisfies.setdefault(lit, set()).add(count)
                count += 1
            self._rules.append(tuple(ids))
        literals = sorted(satisfies)
        # the regex reports the longest literal at a position; the shorter ones starting
        # there are its prefixes
        self._found: dict[str, frozenset[int]] = {}
        for lit in literals:
            met: set[int] = set()
            for end in range(1, len(lit) + 1):
                met |= satisfies.get(lit[:end], set())
            self._found[lit] = frozenset(met)
        self._scan = re.compile(f"(?=({_trie_pattern(literals)}))") if literals else None

    def passing(self, text: str) -> list[int]:
        """Indexes of the rules that may fire on ``text`` (a lower-case text: see the module
        docstring), in rule order."""
        met: set[int] = set()
        if self._scan is not None:
            found = self._found
            for longest in {m.group(1) for m in self._scan.finditer(text)}:
                met |= found[longest]
        return [i for i, ids in enumerate(self._rules) if all(n in met for n in ids)]
