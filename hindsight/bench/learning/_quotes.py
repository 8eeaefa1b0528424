"""Mask the quoted task text out of a lesson: what recall finds once a lesson no longer
copies the user's request.

A lesson that restates its run's first user message is found again by the next run of the
same task because the user words the request the same way, not because the lesson is
useful. :class:`QuoteMasker` removes those quotes before recall is measured again: every
stretch of a lesson that repeats **at least** :data:`MIN_WORDS` consecutive words of one of the
given messages (so the whole message, any sentence of five words or more, and any truncated
quote of it), or a whole message of two words or more, becomes ``<task>``.

Words are compared case-folded (``\\w+`` runs, apostrophes kept inside a word, curly quotes as
straight ones). A placeholder already in the lesson (``<date>``, ``<first_name>``, as a
masking reviewer writes them) matches one to :data:`MAX_PLACEHOLDER_WORDS` words of the
message, so a quote whose names and dates were masked is still a quote. A stretch must hold
at least :data:`MIN_LITERAL_WORDS` literal matches, so placeholders alone never match.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["MASK", "MIN_WORDS", "QuoteMasker"]

MASK = "<task>"
"""What a quoted stretch becomes."""
MIN_WORDS = 5
"""Shortest run of message words that counts as a quote (unless it is the whole message)."""
MIN_LITERAL_WORDS = 3
"""Literal (non-placeholder) word matches a quote needs besides placeholders."""
MAX_PLACEHOLDER_WORDS = 4
"""Message words one placeholder of the lesson may stand for."""

_TOKEN = re.compile(r"<[A-Za-z][\w ]{0,40}>|\w+(?:'\w+)*")
_PLACEHOLDER = re.compile(r"<[A-Za-z][\w ]{0,40}>")


@dataclass(frozen=True)
class _Tok:
    text: str  # case-folded word, or "" for a placeholder
    start: int
    end: int


def _tokens(text: str) -> list[_Tok]:
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    out: list[_Tok] = []
    for m in _TOKEN.finditer(text):
        word = m.group(0)
        out.append(_Tok("" if _PLACEHOLDER.fullmatch(word) else word.casefold(), *m.span()))
    return out


class QuoteMasker:
    """Masks quotes of ``messages`` (the train runs' first user messages) out of texts.

    Args:
        messages: the messages whose quotes are masked (blank ones are ignored).
    """

    def __init__(self, messages: Iterable[str]) -> None:
        self._messages: list[list[str]] = []
        self._bigrams: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
        for text in dict.fromkeys(m for m in messages if m and m.strip()):
            words = [t.text for t in _tokens(text) if t.text]
            if len(words) < 2:
                continue
            index = len(self._messages)
            self._messages.append(words)
            for j in range(len(words) - 1):
                self._bigrams[(words[j], words[j + 1])].append((index, j))

    def _extend(self, toks: list[_Tok], i: int, msg: list[str], j: int) -> tuple[int, int, int]:
        """Match ``toks[i:]`` against ``msg[j:]``: (lesson tokens used, message words covered,
        literal matches)."""
        a, b, literal = i, j, 0
        while a < len(toks) and b < len(msg):
            tok = toks[a]
            if tok.text:
                if tok.text != msg[b]:
                    break
                a, b, literal = a + 1, b + 1, literal + 1
                continue
            # a placeholder: the fewest message words after which the lesson goes on matching
            nxt = toks[a + 1].text if a + 1 < len(toks) else None
            span = 1
            if nxt:
                for width in range(1, MAX_PLACEHOLDER_WORDS + 1):
                    if b + width < len(msg) and msg[b + width] == nxt:
                        span = width
                        break
            a, b = a + 1, min(len(msg), b + span)
        return a - i, b - j, literal

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of ``text`` that quote a message, merged and in order."""
        toks = _tokens(text)
        found: list[tuple[int, int]] = []
        for i in range(len(toks) - 1):
            key = (toks[i].text, toks[i + 1].text)
            if not key[0] or not key[1]:
                continue
            best = 0
            for index, j in self._bigrams.get(key, ()):
                msg = self._messages[index]
                used, covered, literal = self._extend(toks, i, msg, j)
                whole = j == 0 and covered == len(msg)
                if literal >= min(MIN_LITERAL_WORDS, len(msg)) and (covered >= MIN_WORDS or whole):
                    best = max(best, used)
            if best:
                start = i
                # a placeholder right before the quote stands for its first words
                if start > 0 and not toks[start - 1].text:
                    start -= 1
                found.append((toks[start].start, toks[i + best - 1].end))
        merged: list[tuple[int, int]] = []
        for start, end in sorted(found):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def mask(self, text: str) -> str:
        """``text`` with every quoted stretch replaced by :data:`MASK` (unchanged if none)."""
        out, last = [], 0
        for start, end in self.spans(text):
            out.append(text[last:start])
            out.append(MASK)
            last = end
        out.append(text[last:])
        return "".join(out)
