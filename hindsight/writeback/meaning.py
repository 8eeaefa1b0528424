"""The tokens that carry a lesson's meaning, compared exactly before any folded comparison.

Dedup folds a new lesson into a stored one only when both say the same thing
(:mod:`hindsight.writeback.dedup`). A fold keeps the stored text, so a fold of two texts that
mean different things loses the second one. The folded comparisons (case, whitespace,
punctuation; an embedding's cosine) are blind to the small tokens that reverse or change a
statement: ``latency > 5 s`` / ``latency < 5 s``, ``-5`` / ``5``, ``== 200`` / ``!= 200``,
``A+`` / ``A-``, ``retry`` / ``do not retry``, ``5 s`` / ``5 ms``, ``above`` / ``below``,
``enable`` / ``disable``. This module names those tokens:

* :func:`exact_key` - the text up to case, whitespace and *prose* punctuation only (full stops,
  commas, quotes, brackets, apostrophes, hyphens inside words, markdown emphasis, their CJK
  forms). Every other mark is kept: operators and any other mathematical, currency or other
  symbol (``<`` ``>`` ``=`` ``!=`` ``+`` ``%`` ``$`` ``#`` ``/`` ``~`` ``°``, emoji, any
  Unicode ``S*`` character), a sign or a range dash next to a digit, a trailing ``-``
  (``A-``), a leading ``!`` (``!enabled``), a decimal or thousands separator between digits,
  a ``.`` or ``_`` between two letters or digits (a file name or an identifier: ``app.conf``,
  ``max_retries`` are neither ``app_conf`` nor ``max retries``), and the case of a short unit
  after a number (``5 Mb`` / ``5 MB``). Two texts with one key are the same text.
* :func:`meaning_atoms` - the meaning-bearing tokens of a text, as a multiset of *atoms*: each
  number (digits in any script, or a number word in English, Chinese and a few other
  languages) with its sign, the operator before it and the unit after it (``>5 s``); each
  other symbol with its neighbours (``a+answers``); each negation ("not", "never", "don't",
  不, 没, 别, 勿, "nicht", "jamais", ...) with the word it negates; each unit, comparative,
  order or quantifier word ("seconds", "above", "before", "only", 以上, 之前, ...).
* :func:`meaning_change` - the first difference between two texts' atoms, or a pair of words
  that differ only by an opposing prefix (``enable`` / ``disable``, ``include`` /
  ``exclude``, ``upload`` / ``download``); ``None`` when they carry the same meaning tokens.

Texts whose :func:`meaning_change` is not ``None`` are never folded: they are two lessons
(or related as a supersede or a conflict, which stores both texts). The lists below are
closed classes of words (negations, units, comparatives, number words); anything in Unicode's
symbol categories counts without a list, so an operator or sign nobody listed still counts.
Details and examples: docs/lifecycle.md#dedup-on-write-hindsightwritebackdedup.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "exact_key",
    "meaning_atoms",
    "meaning_change",
    "same_meaning",
]

CACHE_SIZE = 16384
"""Texts whose key and atoms are remembered (a stored lesson is a candidate of many new ones)."""

_HAN_KANA = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(
    r"(?P<num>\d+(?:[.,:]\d+)*)"
    rf"|(?P<cjk>[{_HAN_KANA}]+)"
    rf"|(?P<word>[^\W\d_{_HAN_KANA}]+(?:['\u2019][^\W\d_{_HAN_KANA}]+)*)"
    r"|(?P<sym>\S)"
)
_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}
"""Full-width ASCII forms to ASCII (the only compatibility folding: ``x²`` stays ``x²``)."""

_PROSE = frozenset(
    ".,;:!?\"'`\u00b4()[]{}\u00ab\u00bb\u201c\u201d\u2018\u2019\u201e\u201a\u2039\u203a\u2026"
    "\u00b7\u2022\u00a1\u00bf_\u3001\u3002\uff0c\uff1b\uff1a\uff01\uff1f\u300c\u300d\u300e"
    "\u300f\uff08\uff09\u3010\u3011\u300a\u300b\u3008\u3009\u3014\u3015\u30fb"
)
"""Prose punctuation: never meaning-bearing by itself (the context rules of :func:`_counts`
decide the few cases where one of these is a sign or a separator)."""
_HYPHENS = frozenset("-\u2010\u2011")
_DASHES = frozenset("\u2012\u2013\u2014\u2015\ufe58\ufe63")
_OPERATOR_NEIGHBOURS = frozenset("<>=")

NOT_FORMS = frozenset(
    {
        *("not", "cannot", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent"),
        *("cant", "wont", "wouldnt", "shouldnt", "couldnt", "mustnt", "havent", "hasnt"),
        *("hadnt", "neednt", "aint", "never"),
    }
)
"""English spellings of "not" (and every word ending in ``n't``): one negation ("never
retry" and "don't retry" are one advice)."""
NEGATIONS = frozenset(
    {
        *("no", "none", "nothing", "nobody", "nowhere", "neither", "nor", "without"),
        "unless",
        # French, German, Spanish, Portuguese, Italian, Russian
        *("ne", "pas", "jamais", "aucun", "aucune", "rien", "sans", "ni"),
        *("nicht", "kein", "keine", "keinen", "keinem", "keiner", "keines", "nie", "niemals"),
        *("nichts", "ohne", "weder"),
        *("nunca", "jamás", "sin", "ningún", "ninguna", "ninguno", "nada", "tampoco"),
        *("não", "sem", "nenhum", "nenhuma"),
        *("non", "mai", "senza", "nessun", "nessuno", "nessuna", "niente"),
        *("не", "нет", "никогда", "без", "ничего"),
        # Korean: 안, 못, and the forms of 않다 / 없다 (by their first syllable)
        *("안", "못"),
    }
)
"""Negation words other than :data:`NOT_FORMS` (case folded). Chinese and Japanese negations
are in :data:`CJK_NEGATIONS`."""
KOREAN_NEGATION_STEMS = "않없"
CJK_NEGATIONS = ("ません", "なかった", "ない", "不", "没", "沒", "别", "別", "勿", "未", "无",
                 "無", "非", "莫", "甭", "否", "ず")  # fmt: skip
"""Negations inside Chinese and Japanese text (matched in the run, longest first)."""

UNITS = frozenset(
    {
        # time
        *("ns", "us", "µs", "μs", "ms", "s", "sec", "secs", "second", "seconds", "min"),
        *("mins", "minute", "minutes", "h", "hr", "hrs", "hour", "hours", "d", "day", "days"),
        *("wk", "week", "weeks", "mo", "month", "months", "y", "yr", "yrs", "year", "years"),
        *("millisecond", "milliseconds", "microsecond", "microseconds", "nanosecond"),
        *("nanoseconds",),
        # data and rates
        *("b", "bit", "bits", "byte", "bytes", "kb", "mb", "gb", "tb", "pb", "kib", "mib"),
        *("gib", "tib", "kbps", "mbps", "gbps", "rps", "qps", "rpm", "tps", "hz", "khz"),
        *("mhz", "ghz", "kilobytes", "megabytes", "gigabytes", "terabytes", "px", "dpi"),
        # ratios, money, physical, counts
        *("percent", "pct", "x", "times", "usd", "eur", "gbp", "jpy", "cny", "rmb", "dollar"),
        *("dollars", "euro", "euros", "cent", "cents", "yuan", "m", "km", "cm", "mm", "g"),
        *("kg", "mg", "lb", "lbs", "oz", "ft", "mi", "v", "w", "kw", "a", "ma", "k"),
        *("tokens", "token", "chars", "characters", "rows", "requests", "retries", "attempts"),
    }
)
"""Unit and counter words (case folded), bound to the number before them."""
STANDALONE_UNITS = frozenset(
    {
        *("ms", "sec", "secs", "seconds", "mins", "minutes", "hrs", "hours", "days", "weeks"),
        *("months", "years", "milliseconds", "microseconds", "nanoseconds", "kb", "mb", "gb"),
        *("tb", "kib", "mib", "gib", "tib", "kbps", "mbps", "gbps", "bytes", "bits", "percent"),
        *("kilobytes", "megabytes", "gigabytes", "terabytes", "hz", "khz", "mhz", "ghz", "rps"),
        *("qps", "rpm", "tps", "px", "dpi", "km", "kg", "cm", "mm", "usd", "eur", "dollars"),
        *("euros", "cents", "yuan"),
    }
)
"""The units that count without a number ("the timeout is in seconds"): those that are not
also common words."""
CJK_UNITS = frozenset("秒分时天日周月年元块次个倍米克页行条位岁度")
"""Units and counters after a Chinese or Japanese numeral (``三次``, ``5秒``)."""
CJK_MULTI_UNITS = ("毫秒", "微秒", "分钟", "小时", "星期", "美元", "欧元", "字节", "公里",
                   "千克", "公斤")  # fmt: skip

ORDER_WORDS = frozenset(
    {
        *("above", "below", "beyond", "within", "more", "less", "fewer", "greater", "smaller"),
        *("larger", "bigger", "higher", "lower", "longer", "shorter", "faster", "slower"),
        *("least", "most", "max", "maximum", "min", "minimum", "before", "after", "earlier"),
        *("later", "until", "exceed", "exceeds", "exceeded", "exceeding", "only", "except"),
        *("all", "every", "any", "always", "sometimes", "often", "rarely", "usually"),
        *("seldom",),
        # French, German, Spanish
        *("avant", "après", "plus", "moins", "vor", "nach", "mehr", "weniger", "antes"),
        *("después", "más", "menos"),
    }
)
"""Comparative, order, frequency and quantifier words (case folded): adding, dropping or
swapping one changes a statement as much as an operator does."""
CJK_ORDER_WORDS = ("大于", "小于", "高于", "低于", "多于", "少于", "超过", "以上",
                   "以下", "以内", "之前", "之后", "以前", "以后", "至少", "至多", "最多",
                   "最少", "所有", "全部", "任何", "只", "仅", "除了", "早于", "晚于", "总是",
                   "有时")  # fmt: skip

OPPOSITES = frozenset(
    frozenset(pair)
    for pair in (
        *(("on", "off"), ("true", "false"), ("yes", "no"), ("open", "close")),
        *(("opened", "closed"), ("start", "stop"), ("allow", "deny"), ("allowed", "denied")),
        *(("accept", "reject"), ("accepted", "rejected"), ("success", "failure")),
        *(("succeed", "fail"), ("succeeded", "failed"), ("pass", "fail"), ("passed", "failed")),
        *(("read", "write"), ("push", "pull"), ("show", "hide"), ("add", "remove")),
        *(("left", "right"), ("same", "different"), ("first", "last"), ("up", "down")),
        *(("and", "or"), ("with", "without"), ("raise", "lower"), ("over", "under")),
        *(("in", "out"), ("inside", "outside"), ("some", "all"), ("some", "none")),
        *(("public", "private"), ("internal", "external"), ("new", "old"), ("newer", "older")),
        *(("newest", "oldest"), ("latest", "earliest"), ("high", "low"), ("large", "small")),
        *(("big", "small"), ("long", "short"), ("fast", "slow"), ("early", "late")),
        *(("required", "optional"), ("mandatory", "optional"), ("must", "may")),
        *(("get", "set"), ("min", "max"), ("minimum", "maximum"), ("input", "output")),
        *(("前", "后"), ("上", "下"), ("开", "关"), ("大", "小"), ("多", "少"), ("高", "低")),
        *(("增", "减"), ("早", "晚"), ("是", "否"), ("成", "败"), ("允", "拒"), ("加", "减")),
        *(("升", "降"), ("长", "短"), ("快", "慢"), ("新", "旧"), ("内", "外"), ("入", "出")),
        *(("左", "右"), ("启", "停"), ("有", "无")),
    )
)
"""Pairs of opposite words (and Chinese characters): a text that has one where the other text
has the other says the opposite. Checked among the words that differ only, so a paraphrase
that keeps "on" or "first" still folds."""

NUMBER_WORDS = frozenset(
    {
        *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"),
        *("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen"),
        *("seventeen", "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty", "sixty"),
        *("seventy", "eighty", "ninety", "hundred", "thousand", "million", "billion"),
        *("once", "twice", "thrice", "half", "double", "triple", "dozen", "single", "second"),
        *("third", "fourth", "fifth", "tenth", "quarter"),
        *("deux", "trois", "quatre", "cinq", "sept", "huit", "neuf", "dix"),
        *("zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun", "zehn"),
        *("dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve", "diez"),
    }
)
"""Number words (case folded); ``un``/``ein``/``uno`` are left out (also articles)."""
CJK_NUMERALS = frozenset("零〇一二两兩三四五六七八九十百千万萬亿億半双雙壹贰叁肆伍陆柒捌玖拾")

OPPOSING_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non", "de", "en", "em", "ex",
                     "mis", "anti", "a", "up", "down", "over", "under", "out", "pre", "post",
                     "max", "min", "sub", "super", "inter", "intra")  # fmt: skip
"""Prefixes that make a word's opposite (``able``: ``enable`` / ``disable``; ``crease``:
``increase`` / ``decrease``; ``port``: ``import`` / ``export``)."""
_MIN_STEM = 3


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # num | word | cjk | sym
    text: str  # as written (digits in ASCII)
    start: int
    end: int

    @property
    def folded(self) -> str:
        return self.text.casefold()


def _prepare(text: str) -> str:
    return unicodedata.normalize("NFC", text).translate(_FULLWIDTH)


def _digits(text: str) -> str:
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in text)


def _meaningful(text: str, i: int) -> bool:
    """Whether the mark ``text[i]`` carries meaning where it stands (the module docstring)."""
    c = text[i]
    prev = text[i - 1] if i > 0 else ""
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if c in _HYPHENS:  # decided for the whole run of hyphens, from what stands around it
        start, end = i, i + 1
        while start > 0 and text[start - 1] in _HYPHENS:
            start -= 1
        while end < len(text) and text[end] in _HYPHENS:
            end += 1
        prev = text[start - 1] if start > 0 else ""
        nxt = text[end] if end < len(text) else ""
        if prev in _OPERATOR_NEIGHBOURS or nxt in _OPERATOR_NEIGHBOURS:
            return True  # -> <- -=
        if nxt.isdecimal():
            return not prev.isalpha()  # a sign (-5) or a range (1-5); not COVID-19
        if prev.isalnum() or prev == "+":
            return not nxt.isalnum()  # a trailing minus (A-, B-); not e-mail
        return nxt.isalpha() and (not prev or prev.isspace() or prev in "([{")  # -f, --force
    if c in _DASHES:
        return prev.isdecimal() and nxt.isdecimal()  # 1–5; a prose dash otherwise
    if c == "!":
        return nxt == "=" or (nxt.isalnum() and not prev.isalnum())  # != and !enabled
    if c in "._" and prev.isalnum() and nxt.isalnum():
        return True  # a file name or an identifier: app.conf, max_retries (not app conf)
    if c in ".,":
        return nxt.isdecimal() and not prev.isdecimal()  # .5
    if c == "*":
        return (prev.isspace() and nxt.isspace()) or (prev.isalnum() and nxt.isalnum())
    if c == "#":
        return not ((not nxt or nxt.isspace() or nxt == "#") and (not prev or prev.isspace()
                                                               or prev == "#"))  # fmt: skip
    if c in _PROSE:
        return False
    category = unicodedata.category(c)
    if category[0] == "P":
        return category == "Po"  # % & @ / \ § ‰ ...; brackets and quotes are prose
    return True  # symbols (Sm Sc Sk So), anything else


@lru_cache(maxsize=CACHE_SIZE)
def _tokens(text: str) -> tuple[_Tok, ...]:
    """Numbers, words, Chinese/Japanese runs and runs of meaningful marks, in order."""
    text = _prepare(text)
    out: list[_Tok] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "sym"
        if kind == "sym":
            if not _meaningful(text, m.start()):
                continue
            last = out[-1] if out else None
            if last is not None and last.kind == "sym" and last.end == m.start():
                out[-1] = _Tok("sym", last.text + m.group(), last.start, m.end())
                continue
        value = _digits(m.group()) if kind == "num" else m.group()
        out.append(_Tok(kind, value.replace("\u2019", "'"), m.start(), m.end()))
    return tuple(out)


def _keeps_case(tokens: tuple[_Tok, ...], i: int) -> bool:
    """A short unit right after a number keeps its case (``Mb`` is not ``MB``)."""
    tok = tokens[i]
    if tok.kind != "word" or len(tok.text) > 3 or i == 0 or tokens[i - 1].kind != "num":
        return False
    return tokens[i - 1].end == tok.start or tok.folded in UNITS


@lru_cache(maxsize=CACHE_SIZE)
def exact_key(text: str) -> str:
    """``text`` up to case, whitespace and prose punctuation (the module docstring).

    >>> exact_key("Retry  order_query ONCE.") == exact_key("retry ORDER_QUERY once")
    True
    >>> exact_key("Retry order_query once.") == exact_key("retry order query once")
    False
    >>> exact_key("latency > 5 s") == exact_key("latency < 5 s")
    False
    """
    tokens = _tokens(text)
    return " ".join(
        t.text if t.kind in ("num", "sym") or _keeps_case(tokens, i) else t.folded
        for i, t in enumerate(tokens)
    )


def _negation(word: str) -> str | None:
    """The negation a word is, canonical (``don't``, ``cannot``, ``not`` -> ``not``)."""
    if word in NOT_FORMS or word.endswith("n't"):
        return "not"
    if word.startswith("n'"):  # French n'est, n'a
        return "ne"
    if word in NEGATIONS:
        return word
    if word[:1] and word[0] in KOREAN_NEGATION_STEMS:
        return word[0]
    return None


def _cjk_atoms(run: str, following: str) -> Iterator[str]:
    """The atoms inside a Chinese or Japanese run: numerals with their unit or counter,
    negations with the character they negate (a Japanese negation, a suffix, with the one
    before it), comparative and order words."""
    i = 0
    while i < len(run):
        if run[i] in CJK_NUMERALS:
            j = i
            while j < len(run) and run[j] in CJK_NUMERALS:
                j += 1
            unit = _cjk_unit(run[j:])
            yield run[i:j] + unit
            i = j + len(unit)
            continue
        neg = next((n for n in CJK_NEGATIONS if run.startswith(n, i)), None)
        if neg is not None:
            after = run[i + len(neg) : i + len(neg) + 1] or following[:1]
            japanese = not "\u4e00" <= neg[0] <= "\u9fff"
            yield f"¬{run[i - 1 : i] if japanese else ''}{neg}|{after}"
            i += len(neg)
            continue
        word = next((w for w in CJK_ORDER_WORDS if run.startswith(w, i)), None)
        if word is not None:
            yield "~" + word
            i += len(word)
            continue
        i += 1


def _cjk_unit(text: str) -> str:
    """The unit or counter ``text`` starts with, or ``""``."""
    unit = next((u for u in CJK_MULTI_UNITS if text.startswith(u)), "")
    return unit or (text[0] if text[:1] and text[0] in CJK_UNITS else "")


def _unit_after(tokens: tuple[_Tok, ...], i: int) -> tuple[str, int]:
    """The unit written after the number ``tokens[i]`` and how many tokens it takes: attached
    marks and a word (``5%``, ``5ms``, ``5°C``, ``5秒``), or a unit word (``5 seconds``). A
    short unit keeps its case (``Mb`` / ``MB``)."""
    unit, used, end = "", 0, tokens[i].end
    for tok in tokens[i + 1 : i + 3]:
        attached = tok.start == end
        if tok.kind == "sym" and attached and not used:
            unit, used, end = tok.text, 1, tok.end
            continue
        if tok.kind == "word" and (attached or (not used and tok.folded in UNITS)):
            unit, used = unit + " " + (tok.text if len(tok.text) <= 3 else tok.folded), used + 1
        elif tok.kind == "cjk" and attached:
            unit += _cjk_unit(tok.text)  # part of the run: not taken from it
        break
    return unit, used


def _context(tok: _Tok | None) -> str:
    """What a number or mark is bound to on one side: a word, or a run's nearest character."""
    if tok is None:
        return ""
    return tok.folded


@lru_cache(maxsize=CACHE_SIZE)
def meaning_atoms(text: str) -> Counter[str]:
    """The meaning-bearing atoms of ``text`` with their counts (the module docstring): each
    number with the word before it, its sign or operator and its unit; each other mark with
    its neighbours; each negation with the word after it; each comparative, order or
    quantifier word; each unit without a number.

    >>> sorted(meaning_atoms("Do not retry when latency > 5 s."))
    ['latency > 5 s', '¬not|retry']
    """
    tokens = _tokens(text)
    atoms: Counter[str] = Counter()
    used: set[int] = set()
    for i, tok in enumerate(tokens):
        if i in used:
            continue
        prev = tokens[i - 1] if i > 0 else None
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok.kind == "num" or (tok.kind == "word" and tok.folded in NUMBER_WORDS):
            sign = prev.text if prev is not None and prev.kind == "sym" else ""
            before = tokens[i - 2] if sign and i > 1 else prev
            unit, n = _unit_after(tokens, i)
            used.update(range(i + 1, i + 1 + n))
            value = tok.text if tok.kind == "num" else tok.folded
            left = _context(before)[-1:] if before is not None and before.kind == "cjk" else (
                _context(before))  # fmt: skip
            atoms[" ".join(p for p in (left, sign, value + unit) if p)] += 1
        elif tok.kind == "sym":
            if nxt is not None and (nxt.kind == "num" or nxt.folded in NUMBER_WORDS):
                continue  # the number's sign or operator, counted with it
            atoms[" ".join(p for p in (_context(prev), tok.text, _context(nxt)) if p)] += 1
        elif tok.kind == "cjk":
            atoms.update(_cjk_atoms(tok.text, nxt.text if nxt is not None else ""))
        else:
            word = tok.folded
            negation = _negation(word)
            if negation is not None:
                after = next(
                    (t.folded for t in tokens[i + 1 :] if t.kind != "sym" and
                     _negation(t.folded) is None), "",
                )  # fmt: skip
                atoms[f"¬{negation}|{after}"] += 1
            elif word in ORDER_WORDS:
                atoms["~" + word] += 1
            elif word in STANDALONE_UNITS:
                atoms["unit:" + word] += 1
    return atoms


def _differing(older: str, newer: str) -> tuple[set[str], set[str]]:
    """The words (and Chinese/Japanese characters) of each text that the other lacks."""
    sides = []
    for text in (older, newer):
        words: set[str] = set()
        for tok in _tokens(text):
            if tok.kind == "word":
                words.add(tok.folded)
            elif tok.kind == "cjk":
                words.update(tok.text)
        sides.append(words)
    return sides[0] - sides[1], sides[1] - sides[0]


def _stems(word: str) -> Iterator[tuple[str, str]]:
    """``(prefix, stem)`` readings of a word: itself, and each opposing prefix it starts with."""
    yield "", word
    for prefix in OPPOSING_PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= _MIN_STEM:
            yield prefix, word[len(prefix) :]


def _opposed(a: str, b: str) -> bool:
    """``a`` and ``b`` are a pair of :data:`OPPOSITES`, or one stem with different opposing
    prefixes (a bare stem counts as the empty prefix; then, or with ``a-``, the stem must be 4
    letters or more): ``enable``/``disable``, ``valid``/``invalid``, ``import``/``export``,
    ``sync``/``async``."""
    if frozenset((a, b)) in OPPOSITES:
        return True
    readings = dict(_stems(b))
    for prefix, stem in _stems(a):
        for other, other_stem in readings.items():
            if other == prefix or other_stem != stem:
                continue
            if len(stem) >= 4 or not {"", "a"} & {prefix, other}:
                return True
    return False


def meaning_change(older: str, newer: str) -> str | None:
    """How ``newer`` differs from ``older`` in a meaning-bearing token, as ``'x' / 'y'``
    (an atom of one text and not the other, ``(none)`` for nothing), or ``None`` when they
    carry the same meaning tokens (:func:`meaning_atoms`) and no differing word of one is the
    opposite of a differing word of the other (:data:`OPPOSITES`, or the same stem with
    another :data:`OPPOSING_PREFIXES`).

    >>> meaning_change("Retry when latency > 5 s.", "Retry when latency < 5 s.")
    "'latency > 5 s' / 'latency < 5 s'"
    >>> meaning_change("Enable caching for exports.", "Disable caching for exports.")
    "'enable' / 'disable'"
    >>> meaning_change("Retry once, then fall back.", "Retry once and then fall back!") is None
    True
    """
    if older == newer or exact_key(older) == exact_key(newer):
        return None
    a, b = meaning_atoms(older), meaning_atoms(newer)
    if a != b:
        return f"{_shown(sorted((a - b).elements()))} / {_shown(sorted((b - a).elements()))}"
    only_old, only_new = _differing(older, newer)
    for x in sorted(only_old):
        for y in sorted(only_new):
            if _opposed(x, y):
                return f"{x!r} / {y!r}"
    return None


def _shown(atoms: list[str]) -> str:
    return repr(atoms[0].removeprefix("~").removeprefix("unit:")) if atoms else "(none)"


def same_meaning(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` carry the same meaning-bearing tokens (:func:`meaning_change`
    is ``None``)."""
    return meaning_change(a, b) is None
