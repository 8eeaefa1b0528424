"""Comparing two lessons as text: the normalized key, the specifics, and their differences.

The write-back rules (:mod:`hindsight.writeback.dedup`) need three facts about a pair of
lessons that an embedding alone does not give:

* whether they are the **same text** up to case, whitespace and prose punctuation
  (:func:`dedup_key`; operators, signs and other meaning-bearing marks count,
  :mod:`hindsight.writeback.meaning`);
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
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from hindsight.writeback.meaning import NEGATIONS, NOT_FORMS, exact_key

__all__ = [
    "FILLER_WORDS",
    "TEXT_CACHE_SIZE",
    "TextDiff",
    "cannot_align",
    "compare_texts",
    "content_words",
    "dedup_key",
    "is_specific",
    "specifics",
    "tokenize",
    "word_difference",
]

# Words, numbers with their decimal/version dots, identifiers with _ . - inside, CJK runs, and
# single punctuation marks (kept: "=" and ":" tell a setting from prose).
_TOKEN = re.compile(
    r"[A-Za-z0-9]+(?:[._\-/][A-Za-z0-9]+)*"
    r"|[\u3400-\u4dbf\u4e00-\u9fff]+"
    r"|[^\sA-Za-z0-9\u3400-\u4dbf\u4e00-\u9fff]"
)
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

TEXT_CACHE_SIZE = 16384
"""Texts whose tokens :func:`compare_texts` remembers (least recently used go first). Dedup
compares each new lesson with up to 5 stored neighbours, and the same stored lessons are
neighbours of many new ones (at 10k lessons a 4,096-entry cache missed one lookup in four).
Tokens are shared between texts, so an entry is a few hundred bytes plus its counts."""


def dedup_key(text: str) -> str:
    """The text folded for exact-duplicate detection: :func:`hindsight.writeback.meaning.exact_key`.

    Case, whitespace and prose punctuation are folded (``"Retry  order_query ONCE."`` and
    ``"retry, ORDER_QUERY once"`` have the same key); operators, signs, symbols, a ``.`` or
    ``_`` inside a name and the other meaning-bearing marks are kept (``"latency > 5 s"`` and
    ``"latency < 5 s"`` do not, nor ``order_query`` and ``order query``).
    """
    return exact_key(text)


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


@lru_cache(maxsize=65536)
def _mark(token: str, sentence_start: bool) -> tuple[str, bool]:
    """``(token case folded, is it specific)``, one shared tuple per distinct pair."""
    return (token.casefold(), is_specific(token, sentence_start=sentence_start))


def _marked(tokens: list[str]) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    start = True
    for token in tokens:
        out.append(_mark(token, start))
        if token in _SENTENCE_END:
            start = True
        elif _is_word_char_token(token):
            start = False
    return out


def _is_word(token: str) -> bool:
    """Counted in :attr:`TextDiff.length`: words, numbers, identifiers and CJK runs."""
    return token[:1].isalnum() or token[:1] == "_" or ord(token[:1] or " ") > 0x3000


@dataclass(frozen=True, slots=True)
class _Profile:
    """What :func:`compare_texts` and :func:`cannot_align` need of one text."""

    marked: tuple[tuple[str, bool], ...]
    specifics: frozenset[str]
    words: int
    plain_words: Counter[str]  # wording tokens (word-like, not specific), case folded
    tokens: Counter[str]  # every token, case folded


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _profile(text: str) -> _Profile:
    """The :class:`_Profile` of ``text``, remembered (see :data:`TEXT_CACHE_SIZE`)."""
    marked = tuple(_marked(tokenize(text)))
    return _Profile(
        marked=marked,
        specifics=frozenset(t for t, s in marked if s),
        words=sum(1 for t, _ in marked if _is_word(t)),
        plain_words=Counter(t for t, s in marked if not s and _is_word_char_token(t)),
        tokens=Counter(t for t, _ in marked),
    )


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


def cannot_align(older: str, newer: str) -> bool:
    """True when :func:`compare_texts` ``(older, newer)`` is sure to find the two texts
    neither with the same specifics, nor :attr:`~TextDiff.aligned`, nor an
    :attr:`~TextDiff.is_update`, decided without aligning them (the alignment was most of
    dedup's time).

    The bound: a wording token of one text (not specific) that occurs more often in it than
    in the other text at all cannot sit in an ``equal`` block of the alignment, so it counts
    as changed wording; when these alone exceed ``max(3, length // 2)`` tokens the texts are
    not aligned (and not an update, which allows 3). False means "compare them".
    """
    pa, pb = _profile(older), _profile(newer)
    if pa.specifics == pb.specifics:
        return False
    limit = max(3, max(pa.words, pb.words) // 2)
    changed = 0
    for mine, theirs in ((pa.plain_words, pb.tokens), (pb.plain_words, pa.tokens)):
        for token, count in mine.items():
            extra = count - theirs.get(token, 0)
            if extra > 0:
                changed += extra
                if changed > limit:
                    return True
    return False


def compare_texts(older: str, newer: str) -> TextDiff:
    """Align ``older`` and ``newer`` token by token (:mod:`difflib`) and describe the change."""
    pa, pb = _profile(older), _profile(newer)
    a, b = pa.marked, pb.marked
    spec_a, spec_b = pa.specifics, pb.specifics
    length = max(pa.words, pb.words)
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


# Scripts written without spaces between words: compared character by character.
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"  # Thai, Lao, Myanmar, Khmer
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]"
)
_APOSTROPHES = frozenset("'\u2019")
FILLER_WORDS = frozenset({"a", "an", "the", "and", "then", "also", "please", "do", "does", "的"})
"""Words whose presence or absence does not change an instruction: articles, "and" / "then"
between steps (the order of the steps is compared), "please", the "do" of "do not", and the
Chinese possessive 的. Negations are left to :func:`~hindsight.writeback.meaning.\
meaning_change`; every other word counts, modal, quantity and direction words included."""
_NOT_COMPARED = FILLER_WORDS | NEGATIONS | NOT_FORMS


def _words_of(text: str) -> Iterator[str]:
    """Words of any script in ``text`` (NFKC, case folded): runs of letters, digits, ``_``
    and combining marks (so Devanagari or Thai vowel signs stay in their word), an apostrophe
    between two letters dropped (``don't`` is ``dont``); a run of an unspaced script (Han,
    kana, Thai, Lao, Khmer, Myanmar) yields its characters one by one."""
    word: list[str] = []
    folded = unicodedata.normalize("NFKC", text).casefold()
    for i, char in enumerate(folded):
        if char.isalnum() or char == "_" or unicodedata.category(char)[0] == "M":
            if _UNSPACED.match(char):
                if word:
                    yield "".join(word)
                    word = []
                yield char
            else:
                word.append(char)
        elif char in _APOSTROPHES and word and folded[i + 1 : i + 2].isalpha():
            continue
        elif word:
            yield "".join(word)
            word = []
    if word:
        yield "".join(word)


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def content_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` a fold must keep, in order: :func:`_words_of` without
    :data:`FILLER_WORDS` and negations (NFKC, case folded; Han, kana, Thai, Lao, Khmer and
    Myanmar character by character)."""
    return tuple(w for w in _words_of(text) if w not in _NOT_COMPARED and w != "_")


def word_difference(older: str, newer: str) -> str | None:
    """How the content words of two texts differ (:func:`content_words`), shown in a few
    words; ``None`` when they are the same words in the same order.

    A fold keeps one text, so dedup merges two texts only when this is ``None``: an
    embedding's cosine is an estimate (``"lesson okexsivrtialhwfn"`` and ``"lesson
    sgvognseodgznfbq"`` score 0.84 with the hashing embedder, ``"Never change the seating
    without asking"`` and ``"... the insurance ..."`` 0.82), and a word one text has and the
    other lacks, or steps in another order, is what a fold would lose. Words are compared
    exactly: an inflection (``payment`` / ``payments``) is another word, so such a pair is
    stored twice rather than risk ``new`` / ``news``
    (docs/lifecycle.md#dedup-on-write-hindsightwritebackdedup).
    """
    a, b = content_words(older), content_words(newer)
    if a == b:
        return None
    only_a = sorted(set(a) - set(b))[:3]
    only_b = sorted(set(b) - set(a))[:3]
    if not only_a and not only_b:
        return "the same words in another order or number"
    return "other words: " + " / ".join(", ".join(w) or "(none)" for w in (only_a, only_b))
