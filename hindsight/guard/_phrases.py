"""Which texts of a run hold a phrase, without searching every text for every phrase.

Provenance (:mod:`hindsight.guard.provenance`) and evidence (:mod:`hindsight.guard.evidence`)
ask, for each passage of a lesson, which events of the run hold it. Both keep each event's
text as its tokens joined by single spaces and padded (``" w1 w2 ... "``), and a passage the
same way, so a text that lacks one of the passage's tokens cannot hold it: only the texts
holding its rarest token are searched. The answer is the plain substring search's.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["PhraseIndex"]


class PhraseIndex:
    """The texts ``texts`` (each its tokens joined by single spaces and padded with one space
    on each side; a text without tokens is blank) and the positions of the texts each token
    occurs in (built on the first lookup, one pass over the texts' distinct tokens)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        self._holding: dict[str, list[int]] | None = None

    def _postings(self) -> dict[str, list[int]]:
        holding = self._holding
        if holding is None:
            holding = {}
            for i, text in enumerate(self.texts):
                for token in set(text.split()):
                    holding.setdefault(token, []).append(i)
            self._holding = holding
        return holding

    def holding(self, phrase: str) -> list[int]:
        """The positions (ascending) of the texts that hold ``phrase``: ``[i for i, t in
        enumerate(texts) if phrase in t]``, for a phrase written as the texts are (``" w1 ...
        wn "``: tokens joined by single spaces, one space before the first and after the last,
        so that it can only match whole tokens). A phrase without a token is held by none."""
        holding = self._postings()
        fewest: list[int] | None = None
        for token in phrase.split():
            found = holding.get(token)
            if found is None:
                return []
            if fewest is None or len(found) < len(fewest):
                fewest = found
        if fewest is None:
            return []
        texts = self.texts
        return [i for i in fewest if phrase in texts[i]]
