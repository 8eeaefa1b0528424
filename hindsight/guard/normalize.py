"""Text normalization applied before any guard rule looks at a candidate lesson.

Attackers hide trigger words from naive filters with invisible characters
(``"A\\u200bPI key"``), full-width or mathematical letters (``"ｓｅｎｄ"``), look-alike letters
from other scripts (Cyrillic ``"раssword"``), odd casing and line breaks. :func:`normalize`
undoes all of these cheaply so the rules can be written once, in plain lower-case text.

The result is a *matching copy*: it is lossy on purpose (case folded, look-alikes mapped to
Latin, whitespace collapsed) and is never what gets stored or shown.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

__all__ = ["HOMOGLYPHS", "KeptByLength", "normalize", "strip_invisible"]

# Characters that render as nothing (or almost nothing) and so can split a word without a
# reader noticing: zero-width space/joiners, word joiner, BOM, soft hyphen, bidi controls and
# isolates, invisible operators, Mongolian vowel separator, Hangul fillers, variation
# selectors, combining grapheme joiner, Unicode tag characters, and combining marks that NFKC
# could not fold into a letter (for example a strike-through overlay on an ASCII letter).
_INVISIBLE = re.compile(
    "["
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef\U0001d173-\U0001d17a"
    "]+"
)
# Other control characters (C0/C1 except whitespace) become a space.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_SPACE = re.compile(r"\s+")

HOMOGLYPHS: dict[str, str] = {
    # Cyrillic lower case
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d",
    "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ɡ": "g",
    # Cyrillic upper case (normally folded to lower case first; kept for safety)
    "А": "a", "В": "b", "Е": "e", "К": "k", "М": "m", "Н": "h", "О": "o", "Р": "p", "С": "c",
    "Т": "t", "У": "y", "Х": "x", "Ѕ": "s", "І": "i", "Ј": "j",
    # Greek
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "ω": "w",
    # Latin look-alikes outside ASCII
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɩ": "i", "ʏ": "y",
}  # fmt: skip
"""Look-alike letters mapped to the Latin letter they imitate (applied after case folding).

Deliberately small: only letters that are visually identical in common fonts. Genuine Greek
or Cyrillic text is mangled in the matching copy, which is harmless because no rule matches
those languages.
"""

_FOLD = str.maketrans(HOMOGLYPHS)


def strip_invisible(text: str) -> str:
    """Remove invisible/format characters and control characters, keep everything else.

    Returns ``text`` with zero-width characters, bidi controls, tag characters, soft hyphens,
    variation selectors and stray combining marks deleted and C0/C1 controls (other than
    whitespace) replaced by a space. Case, script and whitespace are kept, so the result is
    fit to store or show. Raises ``TypeError`` when ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    return _INVISIBLE.sub("", _CONTROL.sub(" ", text))


# A line break inside a word ("sk\nip the check") is undone when the two halves together
# spell a word the rules care about; any other line break is a space.
_LINE_BREAK = re.compile(r"[ \t]*(?:\r\n|[\n\r\v\f\x85\u2028\u2029])[ \t]*")
_SENSITIVE_WORD = re.compile(
    r"(?:skip\w*|bypass\w*|disabl\w*|ignor\w*|disregard\w*|forget\w*|overrid\w*|validat\w*|"
    r"verif\w*|authenti\w*|authori[sz]\w*|passwords?|passwd|passphrases?|credentials?|secrets?|"
    r"tokens?|instructions?|approv\w*|delet\w*|drop|truncate|refunds?|transfer\w*|admin\w*|"
    r"sudo|privileges?|certificates?|confirm\w*|signatures?|system|prompts?|previous|payees?|"
    r"beneficiar\w*|wallets?|iban|execute|remove|api|keys?|send|upload|paste|forward|ssn|"
    r"passport|firewall|injection|reveal)"
)
_WORD_START = re.compile(r"\w{1,40}")
_MAX_FRAGMENT = 40


def _left_fragment(text: str, end: int, floor: int) -> str:
    start = end
    while (
        start > floor
        and end - start < _MAX_FRAGMENT
        and (text[start - 1].isalnum() or text[start - 1] == "_")
    ):
        start -= 1
    return text[start:end]


def _join_broken_words(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _LINE_BREAK.finditer(text):
        left = _left_fragment(text, m.start(), pos)
        right = _WORD_START.match(text, m.end())
        joined = left + right.group(0) if left and right is not None else ""
        glue = "" if joined and _SENSITIVE_WORD.fullmatch(joined) else " "
        out.append(text[pos : m.start()])
        out.append(glue)
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def _one_pass(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = unicodedata.normalize("NFKC", text.casefold())
    text = _INVISIBLE.sub("", _CONTROL.sub(" ", text))
    text = text.translate(_FOLD)
    if "\n" in text or "\r" in text or "\u2028" in text or "\u2029" in text or "\x85" in text:
        text = _join_broken_words(text)
    return _SPACE.sub(" ", text).strip()


def normalize(text: str) -> str:
    """Return the lower-case matching copy of ``text``.

    Steps: Unicode NFKC (folds full-width, circled and mathematical letters and compatibility
    forms such as ``"ﬁ"``), case folding, removal of invisible/format characters (see
    :func:`strip_invisible`), look-alike folding (:data:`HOMOGLYPHS`), line breaks inside a
    word undone when the halves spell a sensitive word (``"sk\\nip"`` -> ``"skip"``; any other
    line break is a space), and every run of whitespace collapsed to one space, trimmed at both
    ends.

    The function is idempotent: ``normalize(normalize(s)) == normalize(s)`` for every string.
    It never raises on a ``str``; a non-``str`` raises ``TypeError``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    return _normalize_kept(text)


_CACHED_CHARS = 4096
"""Texts up to this length are normalized once per process while they stay among the last
:func:`functools.lru_cache`'s 2,048 (a review reads the same event texts several times)."""
_CACHED_LONG_CHARS = 65_536
"""Longer texts up to this length (a system prompt with the agent's policy, read by every
review of that agent) are kept among the last 16; longer ones are normalized each time."""


class KeptByLength:
    """``fn(text)`` with its results kept by the length of ``text``: up to
    :data:`_CACHED_CHARS` characters among the last ``short`` texts, up to
    :data:`_CACHED_LONG_CHARS` among the last 16, longer ones never (their memory is not
    held). ``short`` and ``long`` are the two :func:`functools.lru_cache` wrappers."""

    def __init__(self, fn: Callable[[str], str], *, short: int) -> None:
        self.fn = fn
        self.short = functools.lru_cache(maxsize=short)(fn)
        self.long = functools.lru_cache(maxsize=16)(fn)

    def __call__(self, text: str) -> str:
        if len(text) <= _CACHED_CHARS:
            return self.short(text)
        if len(text) <= _CACHED_LONG_CHARS:
            return self.long(text)
        return self.fn(text)


def _normalize(text: str) -> str:
    out = _one_pass(text)
    if out.isascii():
        # A pass over ASCII output changes nothing: NFKC and case folding keep it, its
        # control characters and line breaks are gone, and no look-alike is ASCII.
        return out
    # Removing characters can make new NFKC compositions possible (e.g. two Hangul jamo
    # that were split by a zero-width space); repeat until nothing changes.
    for _ in range(4):
        again = _one_pass(out)
        if again == out:
            break
        out = again
    return out


_normalize_kept = KeptByLength(_normalize, short=2048)
