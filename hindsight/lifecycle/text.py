"""Comparing two lessons as text: the normalized key, the specifics, and their differences.

The write-back rules (:mod:`hindsight.lifecycle.dedup`) need three facts about a pair of
lessons that an embedding alone does not give:

* whether they are the **same text** up to case, whitespace and punctuation
  (:func:`dedup_key`);
* their **specifics**: numbers, versions, identifiers (``book_reservation``, ``HAT039``,
  ``retry=3``'s ``3``) and named entities (``Helm``, ``Terraform``), which make two otherwise
  similar lessons *different* lessons (:func:`specifics`);
* how the two texts align (:func:`compare_texts`): which specifics were replaced by which, and
  how much of the wording changed. "use retry=3 for API X" -> "use retry=5 for API X; 3
  failed" is one replaced value (3 -> 5) plus an added clause that names the old value.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = [
    "TextDiff",
    "compare_texts",
    "dedup_key",
    "is_specific",
    "specifics",
    "tokenize",
]

# Words, numbers with their decimal/version dots, identifiers with _ . - inside, CJK runs, and
# single punctuation marks (kept: "=" and ":" tell a setting from prose).
_TOKEN = re.compile(
    r"[A-Za-z0-9]+(?:[._\-/][A-Za-z0-9]+)*"
    r"|[\u3400-\u4dbf\u4e00-\u9fff]+"
    r"|[^\sA-Za-z0-9\u3400-\u4dbf\u4e00-\u9fff]"
)
_PUNCT = re.compile(r"[^\w\s]|_", re.UNICODE)
_WS = re.compile(r"\s+")
_SENTENCE_END = {".", "!", "?", ";", ":", "\n", "。", "！", "？", "；", "："}
_CORRECTION = frozenset(
    {
        *("instead", "now", "changed", "updated", "actually", "corrected", "correction"),
        *("rather", "replaced", "previously", "formerly", "deprecated", "outdated", "wrong"),
        *("failed", "fails", "raised", "lowered", "increased", "decreased"),
        *("改为", "现在", "改成", "不再", "已改"),
    }
)
_SLOT_KEYS = {"=", ":", "is", "are", "was", "were", "version", "v", "@"}


def dedup_key(text: str) -> str:
    """The text folded for exact-duplicate detection.

    Unicode NFKC, case folded, every punctuation mark (and ``_``) turned into a space, runs of
    whitespace collapsed: ``"Retry  order_query ONCE."`` and ``"retry order query once"``
    have the same key.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _WS.sub(" ", _PUNCT.sub(" ", folded)).strip()


def tokenize(text: str) -> list[str]:
    """Tokens of ``text`` (NFKC): words, numbers, identifiers, CJK runs, punctuation marks."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text))


def _is_word_char_token(token: str) -> bool:
    return bool(token) and (token[0].isalnum() or token[0] == "_")


def is_specific(token: str, *, sentence_start: bool = False) -> bool:
    """Whether ``token`` names a specific value rather than wording.

    Specific: anything with a digit (``3``, ``1.5``, ``v2``, ``HAT039``), identifiers with
    ``_`` ``.`` ``-`` or ``/`` inside (``book_reservation``, ``api.example``), ALL-CAPS words
    of two or more letters (``API``, ``SEA``), camelCase, and capitalized words that do not
    start a sentence (``Helm``, ``Terraform``, a lone ``X``).
    """
    if not _is_word_char_token(token):
        return False
    if any(c.isdigit() for c in token):
        return True
    if any(c in "._-/" for c in token[1:-1]):
        return True
    letters = [c for c in token if c.isalpha()]
    if not letters or not letters[0].isascii():
        return False
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return True
    if token[0].islower() and any(c.isupper() for c in token[1:]):
        return True  # camelCase
    return token[0].isupper() and not sentence_start


def _marked(tokens: list[str]) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    start = True
    for token in tokens:
        spec = is_specific(token, sentence_start=start)
        out.append((token.casefold(), spec))
        if token in _SENTENCE_END:
            start = True
        elif _is_word_char_token(token):
            start = False
    return out


@lru_cache(maxsize=4096)
def _marked_text(text: str) -> tuple[tuple[str, bool], ...]:
    """:func:`_marked` tokens of ``text``, remembered: dedup compares each new lesson with
    the same few stored neighbours again and again (issue 10)."""
    return tuple(_marked(tokenize(text)))


def specifics(text: str) -> frozenset[str]:
    """The specific values of ``text`` (case folded), see :func:`is_specific`."""
    return frozenset(tok for tok, spec in _marked(tokenize(text)) if spec)


@dataclass(frozen=True)
class TextDiff:
    """How a newer lesson differs from an older one (see :func:`compare_texts`).

    Attributes:
        same_specifics: both name exactly the same specific values.
        value_changes: ``(old, new)`` pairs where a run of specifics of the older text was
            replaced by a run of specifics in the newer one (aligned on the surrounding words).
        wording_changes: tokens of wording (not specifics, not punctuation) replaced, added or
            removed.
        keyed_slot: some replaced value follows a key such as ``=``, ``:``, ``is``,
            ``version`` (a setting, not a mention).
        names_old_value: the newer text still mentions a replaced old value ("3 failed").
        correction_word: the newer text has a correction word ("instead", "now", "failed").
        length: number of word tokens of the longer text.
    """

    same_specifics: bool
    value_changes: tuple[tuple[str, str], ...] = ()
    wording_changes: int = 0
    keyed_slot: bool = False
    names_old_value: bool = False
    correction_word: bool = False
    length: int = 0
    added_specifics: frozenset[str] = field(default_factory=frozenset)

    @property
    def aligned(self) -> bool:
        """The two texts say the same thing with other values: 1-2 replaced value runs and at
        most ``max(3, length // 2)`` tokens of changed wording."""
        return 1 <= len(self.value_changes) <= 2 and self.wording_changes <= max(
            3, self.length // 2
        )

    @property
    def is_update(self) -> bool:
        """One changed value, at most 3 tokens of changed wording, and evidence that the
        newer text *corrects* the older: the value sits in a setting slot, or the newer text
        names the old value or a correction word. Two reports of different incidents change
        several values at once and are not updates."""
        return (
            len(self.value_changes) == 1
            and self.wording_changes <= 3
            and (self.keyed_slot or self.names_old_value or self.correction_word)
        )


def compare_texts(older: str, newer: str) -> TextDiff:
    """Align ``older`` and ``newer`` token by token (:mod:`difflib`) and describe the change."""
    a = _marked_text(older)
    b = _marked_text(newer)
    spec_a = frozenset(t for t, s in a if s)
    spec_b = frozenset(t for t, s in b if s)
    words_a = [t for t, _ in a if t[:1].isalnum() or t[:1] == "_" or ord(t[:1] or " ") > 0x3000]
    words_b = [t for t, _ in b if t[:1].isalnum() or t[:1] == "_" or ord(t[:1] or " ") > 0x3000]
    length = max(len(words_a), len(words_b))
    if spec_a == spec_b:
        wording = _wording_changes(a, b)
        return TextDiff(True, wording_changes=wording, length=length)
    matcher = difflib.SequenceMatcher(None, [t for t, _ in a], [t for t, _ in b], autojunk=False)
    changes: list[tuple[str, str]] = []
    wording = 0
    keyed = False
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        old_part, new_part = a[i1:i2], b[j1:j2]
        old_specs = [t for t, s in old_part if s]
        new_specs = [t for t, s in new_part if s]
        old_words = [t for t, s in old_part if not s and _is_word_char_token(t)]
        new_words = [t for t, s in new_part if not s and _is_word_char_token(t)]
        if op == "replace" and old_specs and new_specs:
            changes.append((" ".join(old_specs), " ".join(new_specs)))
            before = a[i1 - 1][0] if i1 > 0 else ""
            if before in _SLOT_KEYS:
                keyed = True
        wording += len(old_words) + len(new_words)
        if op != "replace" or not (old_specs and new_specs):
            wording += len(old_specs) + len(new_specs)
    # The newer text names a replaced old value more often than the unchanged rest of the
    # older text does ("retry=5 ...; 3 failed"), not merely where both texts share it.
    replaced = [v for pair in changes for v in pair[0].split()]
    new_tokens = [t for t, _ in b]
    old_tokens = [t for t, _ in a]
    names_old = any(
        new_tokens.count(v) > old_tokens.count(v) - replaced.count(v) for v in set(replaced)
    )
    correction = any(t in _CORRECTION for t in new_tokens) and not any(
        t in _CORRECTION for t, _ in a
    )
    return TextDiff(
        False,
        value_changes=tuple(changes),
        wording_changes=wording,
        keyed_slot=keyed,
        names_old_value=names_old,
        correction_word=correction,
        length=length,
        added_specifics=spec_b - spec_a,
    )


def _wording_changes(a: Sequence[tuple[str, bool]], b: Sequence[tuple[str, bool]]) -> int:
    wa = [t for t, _ in a if _is_word_char_token(t)]
    wb = [t for t, _ in b if _is_word_char_token(t)]
    matcher = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
    return sum(
        (i2 - i1) + (j2 - j1) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal"
    )
