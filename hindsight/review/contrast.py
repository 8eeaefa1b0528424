"""Contrast a failed run's actions with a reference: what it did differently.

See docs/review.md#contrastive-review.

The reference is what a success looked like for the same task: a successful run of the same
task group (ExpeL's comparison of attempts), or the expected actions of the run's outcome
evidence (a benchmark's ground truth). Only **state-changing** calls are compared (a tool
whose name starts with a read verb - ``get_``, ``search``, ``list``... - only reads;
:func:`hindsight.review._calls.is_read_only`), since they are what an outcome is judged on.

:func:`diff_actions` aligns the two sequences by tool and reports, as :class:`Diff` records:

* ``missing`` - a tool the reference called and the failed run never did, or called fewer
  times (``how`` ``fewer``: one call per item or change, and the failed run stopped short);
* ``extra`` - a tool the failed run called and the reference never did;
* ``arg`` - an argument of the same tool that differs, described by **class**, never by value
  (:func:`value_class`): categorical words stay (``economy`` vs ``business``), ids become
  their kind (``certificate`` for ``certificate_7504069``), lists the kinds of their items
  (``2 x certificate + credit_card``), numbers a direction (``higher`` / ``lower``), the
  amounts inside lists and objects ``amounts``, other values
  "a different <key>". Free text (summaries, notes) is not compared, nor are arguments that
  were not a JSON object (kept as sent: ``{"_raw": <text>}`` for text that is not JSON,
  ``{"_value": <value>}`` for JSON of another value; :func:`kept_as_sent`): they name no
  argument, so ``_raw`` is never taken for one; the call still counts as a call of its tool.

Classes are identities (they key lessons and match risk checks), so they stay as computed;
:func:`readable_class` only words them for a lesson's text (``3 x flight`` -> ``3 flights``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hindsight.review._calls import is_read_only
from hindsight.review.masking import (
    PERSON_WORDS,
    Masker,
    identifying,
    is_categorical,
    is_phrase_class,
    key_class,
    personal_key,
)

__all__ = [
    "Action",
    "Diff",
    "changing",
    "diff_actions",
    "kept_as_sent",
    "readable_class",
    "value_class",
]

_IGNORED_TOOLS = frozenset({"think", "reflect", "plan", "note"})
_FREE_TEXT_WORDS = 6
_FREE_TEXT_CHARS = 40


@dataclass(frozen=True)
class Action:
    """One tool call: its name and parsed arguments."""

    tool: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class Diff:
    """One difference between a failed run and its reference.

    Attributes:
        op: ``missing``, ``extra`` or ``arg``.
        tool: the tool concerned.
        key: the argument (``arg`` only).
        expected: the reference's class (or, for ``missing``, its salient argument classes).
        actual: the failed run's class (or, for ``extra``, its salient argument classes).
        how: for ``arg``: ``class`` (classes differ), ``higher``/``lower`` (the failed run's
            number is higher/lower), ``amounts`` (same kinds, other amounts), ``other`` (same
            class, another value: another id, another item); for ``missing``: ``fewer`` when
            the failed run did call the tool, fewer times than the reference (one call per
            item or change), else ``""`` (it never called it).
    """

    op: Literal["missing", "extra", "arg"]
    tool: str
    key: str = ""
    expected: str = ""
    actual: str = ""
    how: str = ""

    @property
    def key_id(self) -> str:
        """Identity of the difference across runs: op, tool, argument and how it differs (not
        the classes: every run that passed the wrong kind of value to one argument supports
        one rule about that argument)."""
        if self.op == "arg":
            return f"arg:{self.tool}:{self.key}:{self.how}"
        if self.how:
            return f"{self.op}:{self.tool}:{self.how}"
        return f"{self.op}:{self.tool}"


def kept_as_sent(args: Mapping[str, Any]) -> bool:
    """Whether ``args`` are arguments that were not a JSON object, kept as sent under one
    reserved key (``{"_raw": <text that is not JSON>}``, ``{"_value": <another JSON value>}``:
    docs/concepts.md#stored-exactly-invalid-text-and-numbers) rather than named arguments."""
    return len(args) == 1 and ("_raw" in args or "_value" in args)


def changing(actions: Iterable[Action]) -> list[Action]:
    """The state-changing actions of ``actions``, in order."""
    return [a for a in actions if not is_read_only(a.tool) and a.tool not in _IGNORED_TOOLS]


def _singular(key: str) -> str:
    """``key`` (a :func:`~hindsight.review.masking.key_class`) without a plural ``s``, words
    apart: ``flights`` -> ``flight``, ``addresses`` -> ``address``; ``status``, ``address``
    and other words in ``ss`` or ``us`` as they are. English plurals have more forms than
    this; a key it misses reads as itself or loses only its ``s``."""
    if key.endswith("sses"):
        word = key[:-2]
    elif key.endswith("s") and not key.endswith(("ss", "us")):
        word = key[:-1]
    else:
        word = key
    return word.replace("_", " ")


def _free_text(value: Any) -> bool:
    return isinstance(value, str) and (
        len(value) > _FREE_TEXT_CHARS or len(value.split()) > _FREE_TEXT_WORDS
    )


def value_class(key: str, value: Any, masker: Masker | None = None) -> str:
    """``value`` (found under ``key``) as its class, without any run-specific value.

    ``None`` -> ``none``; booleans ``true``/``false``; numbers ``a number``; categorical words
    and short lower-case phrases (:func:`~hindsight.review.masking.is_phrase_class`) as
    themselves; ids made of a word and a number as their kind (``gift_card``) unless the word is
    personal; other identifying values ``a <key>``; objects by the kinds of their
    fields (``certificate``); lists by the kinds of their items and how many of each
    (``certificate + credit_card``, ``2 x flight``); other text ``a <key>``.
    """
    masker = masker or Masker()
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        text = value.strip()
        words = set(key_class(key).split("_"))
        if personal_key(key) is not None or (identifying(key) and words & PERSON_WORDS):
            return f"a {_singular(key_class(key))}"
        word_id = masker.word_id_class(text)
        if word_id is not None:
            return word_id.removesuffix("_id")
        if (is_categorical(text) or is_phrase_class(text, masker)) and not identifying(key):
            return text
        return f"a {_singular(key_class(key))}" if key else "a value"
    if isinstance(value, Mapping):
        parts = [value_class(str(k), v, masker) for k, v in value.items()]
        kinds = [p for p in parts if not p.startswith("a ") and p != "none"]
        return " ".join(kinds) or _singular(key_class(key)) or "an item"
    if isinstance(value, list | tuple):
        if not value:
            return "nothing"
        counts: dict[str, int] = {}
        for item in (value_class(key, v, masker) for v in value):
            counts[item] = counts.get(item, 0) + 1
        return " + ".join(f"{n} x {kind}" if n > 1 else kind for kind, n in counts.items())
    return "a value"


def numbers_in(value: Any) -> list[float]:
    """Every number inside ``value`` (objects and lists walked; booleans are not numbers)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, Mapping):
        return [n for v in value.values() for n in numbers_in(v)]
    if isinstance(value, list | tuple):
        return [n for v in value for n in numbers_in(v)]
    return []


def _compare(key: str, expected: Any, actual: Any, masker: Masker) -> tuple[str, str, str]:
    exp_cls, act_cls = value_class(key, expected, masker), value_class(key, actual, masker)
    if exp_cls != act_cls:
        return exp_cls, act_cls, "class"
    exp_n, act_n = numbers_in(expected), numbers_in(actual)
    scalar = not isinstance(expected, Mapping | list | tuple)
    if scalar and len(exp_n) == 1 and len(act_n) == 1 and exp_n != act_n:
        return exp_cls, act_cls, "higher" if act_n[0] > exp_n[0] else "lower"
    if exp_n and len(exp_n) == len(act_n) and exp_n != act_n:
        return exp_cls, act_cls, "amounts"
    return exp_cls, act_cls, "other"


def _distance(a: Action, b: Action) -> int:
    return sum(a.args.get(k) != b.args.get(k) for k in {*a.args, *b.args})


def salient(action: Action, masker: Masker | None = None, limit: int = 3) -> str:
    """Up to ``limit`` arguments of ``action`` whose class says something
    (``cabin=economy, flight_type=one_way``); ``""`` when none does."""
    parts: list[str] = []
    for key, value in () if kept_as_sent(action.args) else action.args.items():
        if _free_text(value):
            continue
        cls = value_class(str(key), value, masker)
        if cls and not cls.startswith("a ") and cls not in ("none", "nothing"):
            parts.append(f"{key}={cls}")
        if len(parts) == limit:
            break
    return ", ".join(parts)


_COUNTED = re.compile(r"^(\d+) x (.+)$")


def _plural(word: str) -> str:
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def readable_class(cls: str, other: str = "", lang: str = "en") -> str:
    """``cls`` (a :func:`value_class`) worded for a lesson's text in ``lang``.

    Counted list items read as counts (``3 x flight`` -> ``3 flights``, Chinese ``3 个 flight``),
    and a bare item kind compared with a counted one (``other``) gets its count of one
    (``flight`` next to ``3 x flight`` -> ``1 flight``), so "flights 3 x flight -> flight" reads
    "flights 3 flights -> 1 flight". Any other class is returned unchanged.
    """
    parts = cls.split(" + ")
    counted = {m.group(2) for p in other.split(" + ") if (m := _COUNTED.match(p))}
    out = []
    for part in parts:
        m = _COUNTED.match(part)
        if m is None and part in counted and len(parts) == 1:
            m = _COUNTED.match(f"1 x {part}")
        if m is None:
            out.append(part)
        elif lang == "zh":
            out.append(f"{m.group(1)} 个 {m.group(2)}")
        else:
            n, kind = m.group(1), m.group(2)
            out.append(f"{n} {kind if n == '1' else _plural(kind)}")
    return " + ".join(out)


def diff_actions(
    reference: Sequence[Action], actual: Sequence[Action], masker: Masker | None = None
) -> list[Diff]:
    """What ``actual`` (a failed run's calls) did differently from ``reference``.

    Both are filtered to state-changing calls. Each reference call is paired with the closest
    unpaired call of the same tool (fewest differing arguments; arguments kept as sent,
    :func:`kept_as_sent`, are not compared); one :class:`Diff` per
    :attr:`Diff.key_id`, in reference order, ``missing`` and ``arg`` before ``extra``.
    """
    masker = masker or Masker()
    ref, act = changing(reference), changing(actual)
    diffs: dict[str, Diff] = {}
    used: set[int] = set()
    for r in ref:
        same = [(i, a) for i, a in enumerate(act) if a.tool == r.tool and i not in used]
        if not same:
            # every call of the tool the failed run made is paired already: it made fewer
            fewer = "fewer" if any(a.tool == r.tool for a in act) else ""
            diff = Diff("missing", r.tool, expected=salient(r, masker), how=fewer)
            diffs.setdefault(diff.key_id, diff)
            continue
        i, best = min(same, key=lambda pair: _distance(r, pair[1]))
        used.add(i)
        if kept_as_sent(r.args) or kept_as_sent(best.args):
            continue  # no named arguments to compare
        for key in dict.fromkeys([*r.args, *best.args]):
            exp_v, act_v = r.args.get(key), best.args.get(key)
            if exp_v == act_v or _free_text(exp_v) or _free_text(act_v):
                continue
            exp_c, act_c, how = _compare(str(key), exp_v, act_v, masker)
            diff = Diff("arg", r.tool, str(key), exp_c, act_c, how)
            diffs.setdefault(diff.key_id, diff)
    ref_tools = {r.tool for r in ref}
    for i, a in enumerate(act):
        if i not in used and a.tool not in ref_tools:
            diff = Diff("extra", a.tool, actual=salient(a, masker))
            diffs.setdefault(diff.key_id, diff)
    return list(diffs.values())
