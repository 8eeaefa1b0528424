"""Where a lesson's words come from: quotes of a trajectory's events (docs/security.md#provenance).

A reviewer turns a run into lessons, and a lesson may copy words from the run: the heuristic
reviewer quotes a failing tool's error text, an LLM reviewer may repeat whatever a tool output
said. :class:`EvidenceIndex` finds those quotes, which serves two layers of the guard:

* **provenance** (:meth:`EvidenceIndex.sources`): a lesson that quotes tool output was
  (partly) written by whatever the tool read, so its evidence is ``"tool"``; a lesson that
  quotes nothing, or the user's own message, rests on the run as recorded, whose source is the
  trajectory's ``source`` (see :func:`lesson_sources`);
* **taint** (:meth:`EvidenceIndex.tainted`): a lesson that quotes a passage the guard flags
  (a poisoned tool output, say) is quarantined even when the copied part alone looks harmless,
  for example when a reviewer cut the quote short before the URL.

A *quote* is a run of at least :data:`QUOTE_WORDS` consecutive words (or :data:`QUOTE_CJK_CHARS`
consecutive tokens when Chinese characters are involved, each character one token) shared by
the lesson and an event, compared on the guard's normalized text (:func:`normalize`), so
case, width and invisible characters do not hide a copy.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from hindsight.guard._phrases import PhraseIndex
from hindsight.guard.checker import Guard
from hindsight.guard.normalize import normalize
from hindsight.guard.trust import canonical_source
from hindsight.models import EventType, Trajectory

__all__ = [
    "INDEX_CACHE_SIZE",
    "QUOTES_CACHE_SIZE",
    "QUOTE_CJK_CHARS",
    "QUOTE_WORDS",
    "TAINT_WINDOW_CHARS",
    "TOOL_EVENT_TYPES",
    "EvidenceIndex",
    "Quote",
    "lesson_sources",
]

QUOTE_WORDS = 4
"""Consecutive shared words that make a quote (4: short enough to catch a clipped sentence,
long enough that template phrases such as "failed with" never count)."""
QUOTE_CJK_CHARS = 8
"""Consecutive shared tokens that make a quote when a Chinese character is among them."""
TAINT_WINDOW_CHARS = 400
"""Characters of the event's normalized text checked on each side of a quote (the passage the
quote came from, not the whole of a possibly huge tool output)."""
TOOL_EVENT_TYPES = frozenset({EventType.TOOL_RESULT, EventType.ERROR})
"""Events whose text was written by a tool (or by what the tool read), not by the user."""

INDEX_CACHE_SIZE = 16
"""Runs whose :class:`EvidenceIndex` :meth:`EvidenceIndex.of` keeps (most recently used)."""
QUOTES_CACHE_SIZE = 256
"""Lessons whose quotes one index remembers."""

_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\u3400-\u4dbf\u4e00-\u9fff]+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True, slots=True)
class Quote:
    """A passage of event ``event_index`` that a lesson copies.

    ``start``/``end`` are offsets in the event's *normalized* text (see :func:`normalize`);
    ``event_type`` is the event's type.
    """

    event_index: int
    event_type: EventType
    start: int
    end: int


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _shingles(tokens: Sequence[tuple[str, int, int]]) -> dict[tuple[str, ...], tuple[int, int]]:
    """Word n-grams (QUOTE_WORDS without CJK, QUOTE_CJK_CHARS with) -> first (start, end)."""
    out: dict[tuple[str, ...], tuple[int, int]] = {}
    words = [t[0] for t in tokens]
    cjk = [len(w) == 1 and _CJK.match(w) is not None for w in words]  # a CJK token: one char
    if not any(cjk):  # plain words only: every QUOTE_WORDS-gram, no long ones
        grams = zip(*(words[j:] for j in range(QUOTE_WORDS)), strict=False)
        for i, key in enumerate(grams):
            if key not in out:
                out[key] = (tokens[i][1], tokens[i + QUOTE_WORDS - 1][2])
        return out
    for size in (QUOTE_WORDS, QUOTE_CJK_CHARS):
        for i in range(len(words) - size + 1):
            has_cjk = any(cjk[i : i + size])
            if (size == QUOTE_WORDS) == has_cjk:
                continue  # short n-grams only for plain words, long ones only with CJK
            key = tuple(words[i : i + size])
            out.setdefault(key, (tokens[i][1], tokens[i + size - 1][2]))
    return out


class EvidenceIndex:
    """The quotable text of one trajectory, built once and queried per lesson.

    Args:
        trajectory: the reviewed run.

    Building costs one pass over every event's text; each query costs one pass over the
    lesson and a substring search of each of its passages in the events that hold its rarest
    word (:class:`~hindsight.guard._phrases.PhraseIndex`; remembered: the write path asks
    about the same lesson more than once). Never raises on a valid :class:`Trajectory`. Use
    :meth:`of` to share one index per run.
    """

    _cache: ClassVar[OrderedDict[Hashable, EvidenceIndex]] = OrderedDict()
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def of(cls, trajectory: Trajectory) -> EvidenceIndex:
        """The index of ``trajectory``, built once for the last :data:`INDEX_CACHE_SIZE` runs.

        A review writes a run's lessons, then its episode, and works out their stable ids on
        the way: each step used to build its own index (four per tau-bench run).
        The cache key is what the index depends on (the run's id and source, and every
        event's type and content), so an edited trajectory gets a new index.
        """
        key = (
            trajectory.id,
            trajectory.source,
            tuple((event.event_type, event.content) for event in trajectory.events),
        )
        with cls._cache_lock:
            found = cls._cache.get(key)
            if found is not None:
                cls._cache.move_to_end(key)
                return found
        built = cls(trajectory)
        with cls._cache_lock:
            cls._cache[key] = built
            while len(cls._cache) > INDEX_CACHE_SIZE:
                cls._cache.popitem(last=False)
        return built

    def __init__(self, trajectory: Trajectory) -> None:
        self.trajectory = trajectory
        self._quotes: dict[str, tuple[Quote, ...]] = {}
        self._texts: list[str] = []
        self._words: list[str] = []  # each event's tokens, space-joined and padded
        for event in trajectory.events:
            text = normalize(event.content) if event.content.strip() else ""
            self._texts.append(text)
            self._words.append(f" {' '.join(_TOKEN.findall(text))} " if text else "")
        self._phrases = PhraseIndex(self._words)

    def quotes(self, content: str) -> list[Quote]:
        """The passages of the trajectory that ``content`` copies, at most one per event,
        in event order: in each event, the first of the lesson's passages (in the lesson's
        order) that the event holds, where it first occurs."""
        known = self._quotes.get(content)
        if known is None:
            grams = list(_shingles(_tokens(normalize(content))))
            needles = [f" {' '.join(key)} " for key in grams]
            first: dict[int, tuple[str, ...]] = {}  # event -> the first passage it holds
            for key, needle in zip(grams, needles, strict=True):
                for index in self._phrases.holding(needle):
                    first.setdefault(index, key)
            found: list[Quote] = []
            for index in sorted(first):
                start, end = _shingles(_tokens(self._texts[index]))[first[index]]
                event = self.trajectory.events[index]
                found.append(Quote(index, event.event_type, start, end))
            known = tuple(found)
            if len(self._quotes) < QUOTES_CACHE_SIZE:
                self._quotes[content] = known
        return list(known)

    def sources(self, content: str) -> list[str]:
        """The evidence sources of a lesson with this ``content`` (see :func:`lesson_sources`)."""
        return lesson_sources(self.trajectory, self.quotes(content))

    def passages(self, content: str, *, limit: int = 3, chars: int = 200) -> list[str]:
        """Up to ``limit`` passages of the run that ``content`` copies, each with ``chars``
        characters of context on either side (normalized text), as ``"<event type>: ..."``:
        the source evidence the LLM judge reads (:mod:`hindsight.guard.llm_judge`)."""
        out = []
        for quote in self.quotes(content)[:limit]:
            text = self._texts[quote.event_index]
            window = text[max(0, quote.start - chars) : quote.end + chars]
            out.append(f"{quote.event_type.value}: {window}")
        return out

    def tainted(self, content: str, guard: Guard, *, tool_output_only: bool = False) -> list[str]:
        """Reasons to quarantine ``content`` because a passage it copies is flagged.

        Each quoted passage of the run but the user's own messages (their request is theirs
        to give, whatever it asks: docs/security.md#provenance) is checked with ``guard`` (its
        rules and its semantic layer)
        together with :data:`TAINT_WINDOW_CHARS` characters around it; returns one reason per
        flagged passage, ``"tainted: quotes a <event type> event the guard flags (<rule ids>)"``,
        or ``[]``. ``tool_output_only`` checks only quotes of tool output
        (:data:`TOOL_EVENT_TYPES`): an episode's record of the agent's own calls is what the
        run did, not advice (docs/security.md#episodes).
        """
        reasons: list[str] = []
        for quote in self.quotes(content):
            if quote.event_type is EventType.USER_MESSAGE:
                continue  # the user's own request: theirs to give (docs/security.md#provenance)
            if tool_output_only and quote.event_type not in TOOL_EVENT_TYPES:
                continue
            text = self._texts[quote.event_index]
            window = text[max(0, quote.start - TAINT_WINDOW_CHARS) : quote.end + TAINT_WINDOW_CHARS]
            verdict = guard.check(window)
            rule_ids = [r for r in verdict.rule_ids if r != "conflict"]
            rule_ids += [f"semantic.{f.category}" for f in verdict.layer("semantic")]
            if rule_ids:
                kind = quote.event_type.value.replace("_", " ")
                article = "an" if kind[0] in "aeiou" else "a"  # an error event
                reasons.append(
                    f"tainted: quotes {article} {kind} event (#{quote.event_index + 1}) "
                    f"the guard flags ({', '.join(dict.fromkeys(rule_ids))})"
                )
        return reasons


def lesson_sources(trajectory: Trajectory, quotes: Sequence[Quote]) -> list[str]:
    """The evidence sources of a lesson: canonical names from ``system``, ``user``, ``tool``,
    ``unknown`` (see :data:`hindsight.guard.TRUST_WEIGHTS`).

    The decision (documented in docs/security.md, "Provenance"):

    * a lesson that quotes a tool result or error has ``"tool"`` among its sources;
    * a lesson that quotes nothing, or also quotes a user message, rests on the run as it
      was recorded, whose source is ``trajectory.source``;
    * a lesson quoting *only* tool output has ``["tool"]`` and so starts at the tool weight
      (0.6) whatever the trajectory's source: the words were written by whatever the tool read.

    So the heuristic reviewer's "X can time out: ..." (observed status, no copied text) keeps
    the run's trust, while "X failed with '<error text>'" is tool evidence.
    """
    run = canonical_source(trajectory.source)
    if not any(q.event_type in TOOL_EVENT_TYPES for q in quotes):
        return [run]
    if run != "tool" and any(q.event_type is EventType.USER_MESSAGE for q in quotes):
        return ["tool", run]
    return ["tool"]
