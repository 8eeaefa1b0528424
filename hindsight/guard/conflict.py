"""Cheap lexical contradiction test between two lessons (issue 5, item 1, "conflict").

Two lessons contradict when they talk about the same things (most key terms shared) with
opposite polarity ("always validate the amount" vs "never validate the amount", "keep 2FA
enabled" vs "disable 2FA", "必须校验参数" vs "跳过参数校验"). Polarity is the parity of the
negation/removal markers, so a double negation ("never skip validation") is positive.

This is a screen, not a judge: the engine only hands over experiences it already found
similar, and a flagged candidate goes to human review rather than being dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from hindsight.guard.normalize import normalize

__all__ = ["ConflictScore", "compare", "key_terms", "polarity"]

_NEG = re.compile(
    r"\b(?:never|not|no|nor|don'?t|dont|doesn'?t|didn'?t|isn'?t|aren'?t|won'?t|can'?t|cannot|"
    r"shouldn'?t|mustn'?t|without|avoid(?:s|ed|ing)?|skip(?:s|ped|ping)?|"
    r"disabl(?:e|es|ed|ing)|bypass(?:es|ed|ing)?|turn(?:ed|ing)? off|switch(?:ed|ing)? off|"
    r"stop(?:s|ped|ping)?|remov(?:e|es|ed|ing)|omit(?:s|ted|ting)?|ignor(?:e|es|ed|ing)|"
    r"optional|unnecessary|needless)\b"
    r"|不要|不必|不用|无需|不需要|没必要|禁止|切勿|跳过|关闭|禁用|绕过|避免|忽略|省略|不能|不可|不得|"
    r"别|勿|没有|不(?![同断错少久过仅但然是足])"
)
_WORD = re.compile(r"\b(?:[a-z][a-z0-9_]{2,}|\d[a-z0-9_]*[a-z][a-z0-9_]*)")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_ZH_FUNCTION = re.compile(
    r"必须|总是|始终|一律|永远|一定|应该|需要|要|先|再|的|了|在|时|和|与|或|把|将|就|都|也"
)
_STOP_WORDS = """
    the and for with that this these those when then before after from into are was were
    has have had its their them they you your our all any each every always must should will
    would can could may might also only just than very more most first next time times there
    here what which who whom how why now once ever even still again being been does
    did doing done make makes made get gets got use used using keep kept need needs needed
    sure please instead rather other another same such about above below over under until
    while because since though although whether"""
_STOP = frozenset(_STOP_WORDS.split())
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ed", "es", "s")


def _stem(word: str) -> str:
    if "_" in word or any(c.isdigit() for c in word):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:5]


# Quoted text ('...', "...", `...`, “...”, ‘...’, 「...」) is somebody else's words - typically
# a tool's error message such as 'payment method not found' - not the lesson's own stance.
_QUOTED = re.compile(
    r"(?<!\w)'[^'\n]{1,300}'(?!\w)|(?<!\w)\"[^\"\n]{1,300}\"(?!\w)|`[^`\n]{1,300}`|"
    r"“[^”\n]{1,300}”|‘[^’\n]{1,300}’|「[^」\n]{1,300}」"
)


@lru_cache(maxsize=4096)  # pure; the write path compares the same texts often (issue 10)
def polarity(text: str) -> int:
    """``+1`` or ``-1``: the parity of negation/removal markers in ``text`` (normalized here),
    leaving out quoted text (an error message a lesson quotes is not the lesson's stance).

    ``"always validate"`` -> +1, ``"never validate"`` -> -1, ``"never skip validation"`` -> +1,
    ``"X failed with 'not found': check the id"`` -> +1.
    """
    return -1 if len(_NEG.findall(normalize(_QUOTED.sub(" ", text)))) % 2 else 1


@lru_cache(maxsize=4096)  # pure, and returns an immutable set
def key_terms(text: str) -> frozenset[str]:
    """The content terms of ``text``: stemmed English words and Chinese character bigrams.

    Negation/removal markers, absolute words and stop words are left out, so a lesson and its
    negation have the same key terms.
    """
    norm = _NEG.sub(" ", normalize(text))
    terms = {_stem(w) for w in _WORD.findall(norm) if w not in _STOP}
    for run in _CJK_RUN.findall(_ZH_FUNCTION.sub(" ", norm)):
        if len(run) == 1:
            continue
        terms.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(terms)


@dataclass(frozen=True, slots=True)
class ConflictScore:
    """How two lessons relate: shared key terms, overlap ratio and their polarities."""

    shared: frozenset[str]
    overlap: float
    polarity_a: int
    polarity_b: int

    def contradicts(self, min_overlap: float = 0.6, min_shared: int = 2) -> bool:
        """True when polarities differ and the key-term overlap is high enough."""
        return (
            self.polarity_a != self.polarity_b
            and len(self.shared) >= min_shared
            and self.overlap >= min_overlap
        )


def compare(a: str, b: str) -> ConflictScore:
    """Compare two lesson texts. ``overlap`` is ``|shared| / min(|terms a|, |terms b|)``."""
    ta, tb = key_terms(a), key_terms(b)
    shared = ta & tb
    smaller = min(len(ta), len(tb))
    overlap = len(shared) / smaller if smaller else 0.0
    return ConflictScore(shared, overlap, polarity(a), polarity(b))
