"""Provenance of a lesson's words: which parts of a run they draw on (docs/security.md#provenance).

A reviewer reads a whole run and writes lessons. The run's text has several authors, and only
the first two may tell a later run what to do:

==================  ==========================================================  ============
span source         what                                                        may instruct
==================  ==========================================================  ============
``instruction``     the system prompt (policy, tenant configuration), the       yes
                    outcome evidence's expected actions, the names of the tools
``user``            the user's messages and the run's ``task``                  yes
``agent``           the agent's thoughts, calls (with their arguments), answers no: it may
                                                                                echo data
``tool_behaviour``  failed tool results and error events, and a successful      no: a fact
                    result that is a short status message (at most
                    :data:`MESSAGE_WORDS` words, no salient element): the
                    tool's own behaviour
``data``            every other tool result and custom event: written by        no
                    whatever the tool read (a web page, an e-mail, a file)
==================  ==========================================================  ============

The keys of a JSON tool result are its shape, not data: only its values are data.

:meth:`RunSpans.provenance` tells, for a lesson's words (before masking), which span sources
they draw on and which of its **salient elements** come from data alone: elements found in a
``data`` span and in neither the trusted instructions nor the user's request. The elements,
found by the shape of the text, never by a vocabulary, so the same in every language:

* ``email`` and ``url`` (with a scheme or ``www.``);
* ``identifier``: a token with three or more digits, or digits and letters, or letters joined
  by ``.`` or ``@`` (account numbers, IBANs, amounts, dates, ids, domain and file names);
* ``quoted``: a quoted string (``'..'``, ``".."``, ``“..”``, ``「..」``) of at least three
  characters that is not a lower-case class of one or two words (``"pending"``, ``"in
  transit"``);
* ``name``: a capitalised word that does not open a sentence and that the run never writes in
  lower case (recipients, companies, people);
* ``passage``: :data:`PASSAGE_WORDS` consecutive words (:data:`PASSAGE_CJK_CHARS` tokens with
  Chinese characters, each character one token) copied from a data span.

An element found in data alone makes the lesson carry an instruction from tool output: the
write path quarantines it with the reason ``"instruction from tool output"`` and the span it
came from (:func:`hindsight.guard.screening.tool_instructions`). What decides is where the
words came from, never how they are phrased: a paraphrase keeps the account, the address, the
amount or the recipient the attacker wants used.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from hindsight._runcache import RunCache
from hindsight._status import classify_tool_result
from hindsight.guard._phrases import PhraseIndex
from hindsight.guard.normalize import KeptByLength, normalize
from hindsight.models import Event, EventStatus, EventType, Trajectory

__all__ = [
    "ELEMENT_CLASSES",
    "INSTRUCTION_FROM_TOOL",
    "MESSAGE_WORDS",
    "PASSAGE_CJK_CHARS",
    "PASSAGE_WORDS",
    "PROVENANCE_KEY",
    "SPAN_CHARS",
    "SPAN_SOURCES",
    "USER_RUN_WORDS",
    "LessonProvenance",
    "RunSpans",
    "TaintedSpan",
    "elements",
    "source_trust_names",
]

PROVENANCE_KEY: Final = "provenance"
"""The metadata key of a reviewed lesson's provenance record (:meth:`LessonProvenance.to_dict`)."""

INSTRUCTION_FROM_TOOL: Final = "instruction from tool output"
"""The quarantine reason of a lesson whose advice carries an element of a tool output."""

SPAN_SOURCES: Final = ("instruction", "user", "agent", "tool_behaviour", "data")
"""The span sources, most trusted first (see the module docstring)."""

PASSAGE_WORDS: Final = 6
"""Consecutive words shared with a data span that make a copied passage: longer than a
reviewer's template phrase, shorter than an instruction needs."""
PASSAGE_CJK_CHARS: Final = 10
"""Consecutive tokens shared with a data span that make a copied passage when a Chinese
character is among them."""
MESSAGE_WORDS: Final = 12
"""Longest successful tool result (words, each Chinese or Japanese character one word; not
JSON, no salient element) taken for the tool's own status message (``No results found.``,
``找不到结果。``) rather than data."""
USER_RUN_WORDS: Final = 3
"""Consecutive words of the user's request that an episode repeats as the user's own words
(:meth:`RunSpans.user_words`): long enough not to be a common pair of words."""
SPAN_CHARS: Final = 160
"""Characters of the data event kept on each side of a tainting element (the span shown with
the quarantine reason)."""

ELEMENT_CLASSES: Final = {"email": "<email>", "url": "<url>", "identifier": "<id>"}
"""The class an episode shows in place of an element of these kinds it took from data alone
(:meth:`RunSpans.mask_data`). Numbers and dates stay (a count or an amount that a tool result
happens to hold as well), and so do names and quoted strings: the personal ones are masked by
the review already (docs/review.md#masking), and a class in place of one word of a name helps
no reader."""

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # kana and Han
# Tokens: split at white space, brackets, quotes, CJK punctuation and CJK characters.
_TOKEN = re.compile(rf"[^\s()\[\]{{}}<>\"'`“”‘’«»「」『』、。，；：！？（）【】{_CJK}]+")
_EDGE = ".,;:!?*-_/#|~"
_QUOTED = re.compile(
    r"(?<!\w)'([^'\n]{3,200})'(?!\w)|(?<!\w)\"([^\"\n]{3,200})\"(?!\w)|“([^”\n]{3,200})”"
    r"|「([^」\n]{3,200})」"
)
_CLASS_WORDS = re.compile(r"[^\W\d_]+(?:[ _-][^\W\d_]+)?")
_PASSAGE_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")
_PLACEHOLDER = re.compile(r"<[a-z0-9_]+>")
_KEY_PREFIX = re.compile(r"^[^\W\d]\w*[=:](?!//)(?=\S)")
_BARE_URL = re.compile(r"[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}/", re.IGNORECASE)  # site.example/pay
_DOT_AT = re.compile(r"[.@]")
_CJK_CHAR = re.compile(f"[{_CJK}]")
_OPENERS = frozenset(".!?。！？\"'“‘「(（[-*•>#")


def _kind(token: str) -> str | None:
    """The element kind of one token (already stripped of edge punctuation), or ``None``."""
    if len(token) < 3 or token.isalpha():  # a plain word: no digit, '@', '.' or '/'
        return None
    at = token.find("@")
    if at > 0 and "." in token[at + 2 : -1]:
        return "email"
    if token.lower().startswith(("http://", "https://", "www.")) or _BARE_URL.match(token):
        return "url"
    digits = sum(map(str.isdigit, token))
    letters = sum(map(str.isalpha, token))
    if digits >= 3 or (digits and letters and len(token) >= 4):
        return "identifier"
    parts = _DOT_AT.split(token)
    if sum(len(p) >= 2 and p.replace("-", "").isalnum() for p in parts) >= 2:
        return "identifier"
    return None


def _opens_sentence(text: str, start: int) -> bool:
    before = text[max(0, start - 24) : start].rstrip()
    return not before or before[-1] in _OPENERS


def elements(text: str) -> list[tuple[str, str]]:
    """The salient elements of ``text`` as ``(kind, element)`` pairs, kinds ``email``,
    ``url``, ``identifier``, ``quoted``, ``name`` (module docstring; ``name`` here is every
    capitalised word that does not open a sentence), in order of kind and appearance, without
    repeats. Placeholders of masked text (``<amount>``) are not elements. Linear in the
    length of ``text``; never raises on a ``str``."""
    found: dict[str, str] = {}
    clean = _PLACEHOLDER.sub(" ", text)
    names: list[str] = []
    for m in _TOKEN.finditer(clean):
        token = m.group().strip(_EDGE)
        if token.endswith(("'s", "’s")):
            token = token[:-2]
        if ("=" in token or ":" in token) and not token.lower().startswith(
            ("http://", "https://", "www.")
        ):
            token = _KEY_PREFIX.sub("", token)  # recipient=UK12...: the value is the element
        kind = _kind(token)
        if kind is not None:
            found.setdefault(token, kind)
        elif (
            len(token) >= 3
            and token[0].isupper()
            and not token.isupper()
            and token.replace("-", "").replace("'", "").isalpha()
            and not _opens_sentence(clean, m.start())
        ):
            names.append(token)
    for m in _QUOTED.finditer(clean):
        quoted = next(g for g in m.groups() if g).strip()
        plain = quoted.islower() and _CLASS_WORDS.fullmatch(quoted)
        if len(quoted) >= 3 and not plain and not any(quoted in e for e in found):
            found.setdefault(quoted, "quoted")
    for name in names:
        found.setdefault(name, "name")
    return [(kind, element) for element, kind in found.items()]


def _passage_text(text: str) -> str:
    """``text`` (normalized) as its passage tokens joined by single spaces, padded."""
    return _padded(" ".join(_PASSAGE_TOKEN.findall(text)))


def _padded(words: str) -> str:
    return " " + words + " "


def _words_of(text: str) -> str:
    """:func:`_passage_text` of ``text`` without the padding. A token never holds a space,
    so the words of texts joined by spaces are their words joined by spaces."""
    return " ".join(_PASSAGE_TOKEN.findall(text))


_passage_words = KeptByLength(_words_of, short=256)
"""The words of a trusted text, kept as :func:`normalize` keeps its results (a trusted text
is read by every review of its agent): the last 256 up to 4,096 characters, the last 16 up to
65,536, longer ones never."""
_passage_words_short, _passage_words_long = _passage_words.short, _passage_words.long


def _passages(text: str) -> list[str]:
    """The :data:`PASSAGE_WORDS`-word (with CJK: :data:`PASSAGE_CJK_CHARS`-token) passages of
    ``text`` (normalized), each as ``" w1 w2 ... "``."""
    words = _PASSAGE_TOKEN.findall(text)
    cjk = [bool(_CJK_CHAR.fullmatch(w)) for w in words]
    out: dict[str, None] = {}
    for size in (PASSAGE_WORDS, PASSAGE_CJK_CHARS):
        for i in range(len(words) - size + 1):
            if (size == PASSAGE_WORDS) != any(cjk[i : i + size]):
                out.setdefault(" " + " ".join(words[i : i + size]) + " ")
    return list(out)


def _values(value: Any) -> Iterable[str]:
    """The scalar values of a JSON document (its keys are its shape, not data)."""
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _values(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _values(v)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def _data_text(content: str) -> str:
    text = content.strip()
    if text[:1] in "[{":
        try:
            return "\n".join(_values(json.loads(text)))
        except (ValueError, RecursionError):
            pass
    return content


def _event_source(event: Event) -> str:
    kind = event.event_type
    if kind is EventType.USER_MESSAGE:
        return "user"
    if kind in (EventType.MODEL_THOUGHT, EventType.MODEL_CALL, EventType.TOOL_CALL):
        return "agent"
    if kind is EventType.FINAL_ANSWER:
        return "agent"
    status = event.status
    if status is None and kind is EventType.TOOL_RESULT:
        status = classify_tool_result(event.content)  # as the review reads it
    if kind is EventType.ERROR or status in (EventStatus.FAILURE, EventStatus.TIMEOUT):
        return "tool_behaviour"
    text = event.content.strip()
    if (
        kind is EventType.TOOL_RESULT
        and text[:1] not in "[{"
        and len(_PASSAGE_TOKEN.findall(text)) <= MESSAGE_WORDS  # a CJK character: one word
        and not elements(text)
    ):
        return "tool_behaviour"
    return "data"


@dataclass(frozen=True, slots=True)
class TaintedSpan:
    """An element of a lesson found in data alone, and where.

    ``kind`` is the element kind (module docstring), ``event_index`` the event's position in
    its run (0-based), ``event_type`` its type's value, ``span`` the event's text around the
    element (:data:`SPAN_CHARS` characters on each side, white space folded, ``…`` where cut).
    """

    kind: str
    element: str
    trajectory_id: str
    event_index: int
    event_type: str
    tool_name: str | None
    span: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form kept in ``metadata["provenance"]["tainted"]``: every field."""
        return asdict(self)

    @classmethod
    def from_dict(cls, item: Mapping[str, Any]) -> TaintedSpan:
        """The span of a :meth:`to_dict` record; missing or odd fields read as empty."""
        index = item.get("event_index")
        return cls(
            str(item.get("kind") or ""),
            str(item.get("element") or ""),
            str(item.get("trajectory_id") or ""),
            index if isinstance(index, int) else -1,
            str(item.get("event_type") or ""),
            None if item.get("tool_name") is None else str(item.get("tool_name")),
            str(item.get("span") or ""),
        )

    def reason(self) -> str:
        """``instruction from tool output: "<element>" (<tool> result, event #<n>): "<span>"``."""
        what = "result" if self.event_type == EventType.TOOL_RESULT.value else self.event_type
        where = " ".join(p for p in (self.tool_name, what.replace("_", " ")) if p)
        return (
            f'{INSTRUCTION_FROM_TOOL}: "{self.element}" ({where}, event #{self.event_index + 1}): '
            f'"{self.span}"'
        )


@dataclass(frozen=True, slots=True)
class LessonProvenance:
    """Where a lesson's words came from.

    ``sources``: the span sources (:data:`SPAN_SOURCES`) its elements and passages draw on,
    most trusted first (empty: only the reviewer's own words); ``tainted``: its elements
    found in data alone, at most one passage per event (empty for a clean lesson)."""

    sources: tuple[str, ...]
    tainted: tuple[TaintedSpan, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form kept in ``metadata["provenance"]``."""
        return {"sources": list(self.sources), "tainted": [t.to_dict() for t in self.tainted]}


def source_trust_names(sources: Iterable[str], run_source: str) -> list[str]:
    """Span sources as trust sources (:data:`hindsight.guard.TRUST_WEIGHTS`): ``instruction``
    -> ``system``; ``user`` and ``agent`` -> ``run_source`` (the run as recorded);
    ``tool_behaviour`` and ``data`` -> ``tool``. No source -> ``[run_source]``."""
    table = {"instruction": "system", "user": run_source, "agent": run_source}
    names = [table.get(s, "tool") for s in sources] or [run_source]
    return list(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class _Span:
    trajectory_id: str
    event_index: int
    event_type: str
    tool_name: str | None
    source: str
    raw: str
    text: str  # normalized
    words: str  # normalized passage tokens, space-joined and padded


class RunSpans:
    """The text of one or more runs, split by span source (see the module docstring).

    Args:
        trajectories: the reviewed run and, for a contrastive review, the runs it is
            compared with (their tool output is data as well).

    Building costs one pass over the runs' text; :meth:`provenance` one pass over the spans
    per element of the lesson. Never raises on valid trajectories.
    """

    @classmethod
    def of(cls, *trajectories: Trajectory) -> RunSpans:
        """The spans of ``trajectories``, built once for the same trajectory objects
        (:class:`hindsight._runcache.RunCache`): the review's gate and its episode read one
        run twice. Do not change what it returns."""
        return _SPANS(*trajectories)

    def __init__(self, *trajectories: Trajectory) -> None:
        self.spans: list[_Span] = []
        trusted: list[str] = []
        for traj in trajectories:
            trusted.append(traj.system_prompt or "")
            for action in getattr(traj.evidence, "expected_actions", None) or []:
                trusted.append(f"{action.tool} {json.dumps(action.args, ensure_ascii=False)}")
            trusted.extend(e.tool_name for e in traj.events if e.tool_name)
            if traj.task:
                self._add(traj.id, -1, "task", None, "user", traj.task)
            for i, event in enumerate(traj.events):
                source = _event_source(event)
                raw = event.content
                if source == "agent" and event.tool_args:
                    raw = f"{raw}\n{json.dumps(event.tool_args, ensure_ascii=False)}"
                elif source in ("data", "tool_behaviour"):
                    raw = _data_text(raw)
                self._add(traj.id, i, event.event_type.value, event.tool_name, source, raw)
        # each trusted text normalized and split into words on its own, so no two of them
        # run into one word, and a system prompt (often the longest text of a run, the same
        # for every run of an agent) is read once while the caches of normalize() and
        # _passage_words() keep it (up to 65,536 characters), not once per review
        parts = [p for p in map(normalize, trusted) if p]
        user_text = "\n".join(s.text for s in self.spans if s.source == "user")
        self._given = {"instruction": " ".join(parts), "user": user_text}
        self._given_words = {
            "instruction": _padded(" ".join(w for w in map(_passage_words, parts) if w)),
            "user": _passage_text(user_text),
        }

    @functools.cached_property
    def _phrases(self) -> PhraseIndex:
        """The spans' words, for finding the spans that hold a passage."""
        return PhraseIndex([span.words for span in self.spans])

    @functools.cached_property
    def _given_phrases(self) -> PhraseIndex:
        """The words of the trusted instructions and of the user's request, in that order,
        for finding which of them holds a passage."""
        return PhraseIndex(list(self._given_words.values()))

    @functools.cached_property
    def _lower(self) -> frozenset[str]:
        """The words the runs write in lower case (read when a lesson has a capitalised
        word: most reviews never need them)."""
        tokens: set[str] = set()
        for span in self.spans:
            tokens.update(_TOKEN.findall(span.raw))
        stripped = {t.strip(_EDGE) for t in tokens}
        return frozenset(t for t in stripped if t.isalpha() and t.islower())

    def _add(
        self, traj_id: str, index: int, kind: str, tool: str | None, source: str, raw: str
    ) -> None:
        if raw.strip():
            text = normalize(raw)
            self.spans.append(
                _Span(traj_id, index, kind, tool, source, raw, text, _passage_text(text))
            )

    def user_words(self, text: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` character ranges of ``text`` that repeat the user's request:
        runs of at least :data:`USER_RUN_WORDS` consecutive words (each Chinese or Japanese
        character one word) that the user's messages or the run's task hold in that order,
        compared case-folded. What the user asked for is theirs to ask: an episode that
        quotes it is not read as advice there (docs/security.md#episodes). Never raises."""
        tokens = [(m.start(), m.end(), normalize(m.group())) for m in _PASSAGE_TOKEN.finditer(text)]
        user = self._given_words["user"]
        out: list[tuple[int, int]] = []
        i = 0
        while i < len(tokens):
            j = i
            while (
                j < len(tokens) and (" " + " ".join(t[2] for t in tokens[i : j + 1]) + " ") in user
            ):
                j += 1
            if j - i >= USER_RUN_WORDS:
                out.append((tokens[i][0], tokens[j - 1][1]))
                i = j
            else:
                i += 1
        return out

    def _given_in(self, needle: str, *, words: bool = False) -> str | None:
        """``instruction`` or ``user`` when ``needle`` occurs in the trusted instructions or
        the user's request (checked in that order), else ``None``."""
        if not words:
            return next((source for source, text in self._given.items() if needle in text), None)
        found = self._given_phrases.holding(needle)
        return list(self._given_words)[found[0]] if found else None

    def provenance(self, text: str) -> LessonProvenance:
        """The provenance of a lesson whose words are ``text`` (before masking).

        An element or passage found in the trusted instructions or the user's request is
        theirs wherever else it occurs; any other is attributed to the spans it occurs in, and
        one found in a ``data`` span is tainted (each passage once, at most one passage per
        event). Never raises."""
        return self._provenance(text, elements(text), record=False)

    def _provenance(
        self, text: str, found: list[tuple[str, str]], *, record: bool
    ) -> LessonProvenance:
        """:meth:`provenance` of ``text`` whose :func:`elements` are ``found``; ``record``:
        ``text`` is a record of the run (an episode), so a passage that the agent's own calls
        or answers hold is an action recorded, not an instruction restated: it is attributed,
        never tainted, and leaves its events free for the passages that are
        (:meth:`mask_data`)."""
        sources: set[str] = set()
        tainted: dict[str, TaintedSpan] = {}
        for kind, element in found:
            key = normalize(element)
            if kind == "name" and key in self._lower:
                continue  # a common word the run also writes in lower case
            given = self._given_in(key)
            if given is not None:
                sources.add(given)
                continue
            hits = [s for s in self.spans if _contains(s.text, key, kind)]
            sources.update(s.source for s in hits)
            data = next((s for s in hits if s.source == "data"), None)
            if data is not None:
                tainted.setdefault(key, _taint(kind, element, re.escape(key), data))
        events: set[tuple[str, int]] = set()
        for passage in _passages(normalize(text)):
            given = self._given_in(passage, words=True)
            if given is not None:
                sources.add(given)
                continue
            held = [self.spans[i] for i in self._phrases.holding(passage)]
            sources.update(span.source for span in held)
            if record and any(_acted(span) for span in held):
                continue
            for span in held:
                where = (span.trajectory_id, span.event_index)
                if span.source == "data" and where not in events and passage not in tainted:
                    events.add(where)
                    pattern = r"\W*".join(re.escape(w) for w in passage.split())
                    tainted[passage] = _taint("passage", passage.strip(), pattern, span)
        order = tuple(s for s in SPAN_SOURCES if s in sources)
        return LessonProvenance(order, tuple(tainted.values()))

    def mask_data(self, text: str) -> tuple[str, LessonProvenance]:
        """An episode's ``text`` with every element it took from tool output alone shown as
        its class (:data:`ELEMENT_CLASSES`), and the provenance of ``text`` with only the
        copied passages left tainted (docs/security.md#episodes).

        An episode is a record of one run, not advice: that the agent paid the recipient a
        bill named is a fact about the run. What it must not do is carry a value an attacker
        planted in a tool result (data or an error message) to a later prompt, so those
        values are replaced, in every spelling and wherever they stand (next to Chinese text,
        after ``key:`` or ``key=``), together with the space-separated groups that follow
        them in the tool output (a grouped IBAN or card number). A count, an amount (at most
        six digits before the decimals, or thousands separators) or a date stays. A passage
        copied from a tool result that the agent's calls and answers (not its thoughts) do
        not hold - an instruction restated, not an action recorded - stays tainted and
        quarantines the episode. Never raises."""
        salient = elements(text)
        found = self._provenance(text, salient, record=True)
        tool_text = [_tool_text(s) for s in self.spans if s.source in ("data", "tool_behaviour")]
        wanted: dict[str, str] = {}
        for kind, element in salient:
            label = ELEMENT_CLASSES.get(kind)
            key = normalize(element)
            if label is None or self._given_in(key) is not None:
                continue
            if _in_tool(key, tool_text):
                wanted[key] = label
        out, at = [], 0
        for m in _TOKEN.finditer(text) if wanted else ():
            token = m.group()
            start = m.start() + len(token) - len(token.lstrip(_EDGE))
            end = m.start() + len(token.rstrip(_EDGE))
            core = text[start:end]
            if not core.lower().startswith(("http://", "https://", "www.")):
                prefix = _KEY_PREFIX.match(core)  # recipient=UK12...: the value is the element
                start += prefix.end() if prefix else 0
            label = wanted.get(normalize(text[start:end]))
            if label is None or start < at:
                continue
            groups = _GROUPS.match(text, end)  # matches the empty string at least
            stop = groups.end() if groups else end
            out += [text[at:start], _masked(text[start:stop], end - start, label, tool_text)]
            at = stop
        masked = "".join([*out, text[at:]])
        passages = tuple(t for t in found.tainted if t.kind == "passage")
        return masked, LessonProvenance(found.sources, passages)


_GROUPS = re.compile(rf"(?:[ \u00a0][A-Z0-9]{{1,6}}(?![^\W{_CJK}]))*")
"""The groups after the start of a grouped account or card number (``DE89 3704 0044``):
upper-case letters or digits after one space, each ending a token."""
_KEPT_NUMBER = re.compile(
    r"[$€£¥₹]?(?:\d{1,3}(?:[,.\u00a0 ]\d{3})+(?:[.,]\d{1,2})?|\d{1,9}[.,]\d{1,2}|\d{1,6})%?"
    r"[€$£¥₹]?(?: ?[A-Z]{3})?"  # a count or an amount (1,250.00  1.250,00 EUR  98,70€  2500000.00)
    r"|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"  # an ISO date, and its time
    r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|\d{1,2}:\d{2}(?::\d{2})?"  # a written date, a time
    r"(?:\s?[-–]\s?\d{1,2}:\d{2})?"  # (a time range)
    r"|v?\d{1,3}\.\d{1,3}\.\d{1,4}"  # a version (three parts: an IP address has four)
)


def _acted(span: _Span) -> bool:
    """Whether ``span`` is the agent's own call or answer (not a thought): what the run did."""
    return span.source == "agent" and span.event_type != EventType.MODEL_THOUGHT.value


def _compact(text: str) -> str:
    """``text`` without spaces, dashes, dots and brackets: one spelling for ``DE89 3704 0044``,
    ``de89370400440532013000``, ``+1 (202) 555-0147`` and ``+12025550147``."""
    return _SEPARATORS.sub("", text)


_SEPARATORS = re.compile(r"[\s\-–().]+")
_GROUP_OF = r"(?:[A-Za-z]*\d[A-Za-z\d]*|[A-Z]{2,6})"
_GROUPED_RUN = re.compile(rf"\+?{_GROUP_OF}(?:[ \u00a0\-–().]{{1,3}}{_GROUP_OF})+")
"""A value written in groups in a tool output: groups with a digit, or of two to six capitals
(``GB29 NWBK 6016 1331``, ``+1 (202) 555-0147``, ``4111-1111-1111-1111``), joined by a few
separators; words are not groups, so ``sales 2015`` is not ``sales2015``."""


def _tool_text(span: _Span) -> str:
    """The normalized text of a tool output, then each of its grouped values without
    separators (:data:`_GROUPED_RUN`), one per line."""
    runs = [normalize(_compact(m.group())) for m in _GROUPED_RUN.finditer(span.raw)]
    return "\n".join([span.text, *runs])


def _in_tool(key: str, tool_text: list[str]) -> bool:
    """Whether the normalized value ``key`` is in a tool output (:func:`_tool_text`), as
    written or, without separators, as one of its grouped values."""
    compact = _compact(key)
    return any(key in t or compact in t for t in tool_text)


def _masked(found: str, size: int, label: str, tool_text: list[str]) -> str:
    """``found`` (an element of ``size`` characters and the groups after it in the episode)
    with the longest prefix that a tool output holds as one string shown as ``label``, unless
    that prefix is a count, an amount or a date (:data:`_KEPT_NUMBER`; a number of seven
    digits or more in groups is none of them)."""
    cuts = [size, *(m.end() + size for m in re.finditer(r"[ \u00a0]\S+", found[size:]))]
    for cut in reversed(cuts):
        candidate = found[:cut]
        if not _in_tool(normalize(candidate), tool_text):
            continue
        kept = _KEPT_NUMBER.fullmatch(candidate) or (
            _KEPT_NUMBER.fullmatch(found[:size]) and sum(c.isdigit() for c in candidate) < 7
        )
        return found if kept else label + found[cut:]
    return found


def _contains(text: str, element: str, kind: str) -> bool:
    if element not in text:
        return False
    if kind != "name":
        return True
    return re.search(rf"(?<!\w){re.escape(element)}(?!\w)", text) is not None


def _taint(kind: str, element: str, pattern: str, span: _Span) -> TaintedSpan:
    """The tainted span of ``element`` in ``span``: cut from its raw text where ``pattern``
    finds it (ignoring case), else from its normalized text."""
    source = span.raw
    m = re.search(pattern, source, re.IGNORECASE)
    if m is None:
        source = span.text
        m = re.search(pattern, source)
    lo, hi = (m.start(), m.end()) if m is not None else (0, 0)
    start, end = max(0, lo - SPAN_CHARS), hi + SPAN_CHARS
    excerpt = " ".join(source[start:end].split())
    excerpt = ("…" if start > 0 else "") + excerpt + ("…" if end < len(source) else "")
    return TaintedSpan(
        kind,
        element,
        span.trajectory_id,
        span.event_index,
        span.event_type,
        span.tool_name,
        excerpt,
    )


_SPANS: RunCache[RunSpans] = RunCache(RunSpans)
