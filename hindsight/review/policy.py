"""The passages of a run's policy (its system prompt) that the run touches.

See docs/review.md#what-the-model-is-given.

A reviewing model judges a run by the policy the agent was given, but a policy is long (the
tau-bench airline policy is about 2,000 tokens) and a review request has a token budget. This
module picks the passages the run is about:

1. :func:`split_passages` cuts the policy into **passages**: each Markdown heading opens a
   section (``#``, ``##`` ...; a line ending in ``:`` alone on its line also counts); inside a
   section each bullet (``-``, ``*``, ``+``, ``1.``, ``1)``) with its indented sub-bullets and
   continuation lines is one passage, and so is each paragraph (lines up to a blank line). A
   passage longer than :data:`MAX_PASSAGE_CHARS` is cut at sentence ends. Plain text without
   any Markdown is paragraphs.
2. :func:`run_terms` collects what the run touches: its tool names and argument keys, split
   into words (``book_reservation`` -> ``book``, ``reservation``; ``paymentMethods`` ->
   ``payment``, ``methods``), and the words of its error texts (failed and timed-out tool
   results, error events), plus the tools and keys of the expected actions when the outcome
   evidence lists them.
3. :func:`rank_passages` scores every passage (its heading words count as its own) against
   those terms with **Okapi BM25** (Robertson & Zaragoza, "The Probabilistic Relevance
   Framework: BM25 and Beyond", 2009; ``k1 = 1.2``, ``b = 0.75``, the non-negative IDF
   ``log(1 + (N - n + 0.5) / (n + 0.5))`` of Lucene) over **light stems**
   (:func:`stem`: lower case, a plural or ``-ing``/``-ed``/``-ation``/``-ment``/``-al`` ending
   and a final ``e`` removed, so ``booking``, ``booked`` and ``books`` meet ``book``; CJK text is
   indexed as character bigrams).
4. :func:`select_policy` fits the result into a token budget: the whole policy when it fits;
   otherwise the passages by rank (those that share no term with the run are never shown),
   each taken while it still fits, rendered in policy order under their headings with ``…``
   where passages were left out.

Nothing here knows a domain: the terms come from the run, the passages from its policy.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from hindsight.models import EventStatus, EventType, ExpectedAction, Trajectory

__all__ = [
    "BM25_B",
    "BM25_K1",
    "MAX_PASSAGE_CHARS",
    "Passage",
    "PolicyExcerpt",
    "rank_passages",
    "run_terms",
    "select_policy",
    "split_passages",
    "stem",
    "terms",
]

BM25_K1 = 1.2
"""BM25 term-frequency saturation (Robertson & Zaragoza 2009 use 1.2-2.0; Lucene 1.2)."""

BM25_B = 0.75
"""BM25 length normalisation (the customary 0.75)."""

MAX_PASSAGE_CHARS = 1200
"""Longest passage, in characters (about 300 tokens): a longer paragraph or bullet is cut at
sentence ends, so one wall of text cannot take the whole budget."""

_ERROR_CHARS = 300  # characters of one error text taken as query words
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_LABEL = re.compile(r"^\s{0,3}([^\s#\-*+][^:]{0,80}):\s*$")  # "Cancellation rules:" alone
_BULLET = re.compile(r"^(\s*)(?:[-*+•]|\d{1,3}[.)])\s+")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_VOWELS = set("aeiouy")
# fmt: off
_STOP = frozenset({
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "by", "for", "with", "from",
    "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these",
    "those", "as", "if", "then", "than", "not", "no", "do", "does", "did", "can", "cannot",
    "should", "must", "may", "will", "would", "you", "your", "we", "our", "they", "their",
    "he", "she", "his", "her", "them", "there", "here", "any", "all", "each", "only", "also",
    "but", "so", "such", "into", "out", "up", "about", "which", "who", "what", "when", "how",
    "have", "has", "had", "s", "t",
})
# fmt: on
_SUFFIXES = (
    ("ations", ""),
    ("ation", ""),
    ("ments", ""),
    ("ment", ""),
    ("ings", ""),
    ("als", ""),
    ("al", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ed", ""),
    ("es", ""),
    ("s", ""),
)


def stem(word: str) -> str:
    """A light stem of one lower-case word (see the module docstring): at most one suffix of
    ``-ations -ation -ments -ment -ings -ing -als -al -ies -ied -ed -es -s`` is removed when
    at least three letters stay (four for ``-al``: ``renewal`` -> ``renew``, ``total``
    stays), then a doubled final consonant is undone (``cancelled`` ->
    ``cancel``) and a final ``e`` dropped (``reserve`` and ``reservation`` -> ``reserv``)."""
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= (4 if "al" in suffix else 3):
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                break
            word = word[: -len(suffix)] + repl
            if (
                suffix in ("ed", "ing", "ings")
                and len(word) > 3
                and word[-1] == word[-2]
                and word[-1] not in _VOWELS
                and word[-1] not in "sz"
            ):
                word = word[:-1]
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The index terms of ``text``: identifiers split at ``_``, ``-``, ``.`` and camelCase,
    lower-cased, stop words dropped, :func:`stem` applied; CJK runs as character bigrams
    (a lone CJK character as itself)."""
    out: list[str] = []
    for run in _CJK.findall(text):
        out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    latin = _CAMEL.sub(" ", _CJK.sub(" ", text)).lower()
    for word in _WORD.findall(latin):
        if word not in _STOP and not (len(word) == 1 and word.isalpha()):
            out.append(stem(word))
    return out


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage of a policy.

    Attributes:
        index: its position among the policy's passages (0-based), for policy order.
        heading: the headings it sits under, outermost first, joined by ``" > "`` (``""``
            before the first heading).
        text: the passage as written (bullet marker and indentation kept).
    """

    index: int
    heading: str
    text: str


def _cut_long(text: str, limit: int) -> list[str]:
    if len(text) <= limit:
        return [text]
    parts: list[str] = []
    current = ""
    for sentence in _SENTENCE.split(text):
        while len(sentence) > limit:  # one sentence longer than the limit: hard cut
            if current:
                parts.append(current)
                current = ""
            parts.append(sentence[:limit])
            sentence = sentence[limit:]
        if current and len(current) + 1 + len(sentence) > limit:
            parts.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        parts.append(current)
    return parts


def _title(line: str, *, opens_passage: bool) -> str | None:
    """The title when ``line`` is a heading: a Markdown heading, or a short line ending in
    ``:`` alone on its line where a passage may start (a label such as ``Refunds:``)."""
    heading = _HEADING.match(line)
    if heading is not None:
        return heading.group(2).strip()
    if not opens_passage or _BULLET.match(line):
        return None
    label = _LABEL.match(line)
    return label.group(1).strip() if label is not None else None


def split_passages(policy: str, *, max_chars: int = MAX_PASSAGE_CHARS) -> list[Passage]:
    """The passages of ``policy`` in order (module docstring, step 1); ``[]`` for a blank one."""
    headings: list[tuple[int, str]] = []  # (level, title)
    blocks: list[tuple[str, list[str]]] = []  # (heading path, lines)
    current: list[str] | None = None
    bullet_indent = -1  # indentation of the bullet that opened ``current``; -1: a paragraph

    def path() -> str:
        return " > ".join(title for _, title in headings)

    def close() -> None:
        nonlocal current, bullet_indent
        if current and any(line.strip() for line in current):
            blocks.append((path(), current))
        current, bullet_indent = None, -1

    for raw in policy.splitlines():
        line = raw.rstrip()
        indent = len(line) - len(line.lstrip())
        title = _title(line, opens_passage=current is None or 0 <= indent <= bullet_indent)
        if title is not None:
            close()
            level = len(line.lstrip()) - len(line.lstrip().lstrip("#")) or 7
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, title))
            continue
        if not line.strip():
            if bullet_indent < 0:  # a blank line ends a paragraph; a bullet may go on
                close()
            continue
        bullet = _BULLET.match(line)
        if bullet is not None:
            if current is not None and bullet_indent >= 0 and indent > bullet_indent:
                current.append(line)  # a sub-bullet stays with its bullet
                continue
            close()
            current, bullet_indent = [line], indent
            continue
        if current is not None and bullet_indent >= 0 and indent <= bullet_indent:
            close()  # unindented text after a bullet starts a paragraph
        if current is None:
            current, bullet_indent = [], -1
        current.append(line)
    close()

    passages: list[Passage] = []
    for path_of, lines in blocks:
        text = "\n".join(lines).strip("\n")
        for part in _cut_long(text, max_chars):
            passages.append(Passage(len(passages), path_of, part))
    return passages


def _words_of_name(name: str) -> str:
    return re.sub(r"[_\-.]+", " ", _CAMEL.sub(" ", name))


def _keys(value: object, out: list[str], depth: int = 0) -> None:
    if depth > 4:
        return
    if isinstance(value, dict):
        for key, child in value.items():
            out.append(str(key))
            _keys(child, out, depth + 1)
    elif isinstance(value, list):
        for child in value[:20]:
            _keys(child, out, depth + 1)


def run_terms(
    trajectories: Iterable[Trajectory],
    *,
    tools: Iterable[str] | None = None,
    actions: Iterable[ExpectedAction] = (),
) -> list[str]:
    """What the runs touch, as index terms (module docstring, step 2).

    Every tool name and argument key (nested keys too) once per run, and the words of every
    distinct failed or timed-out tool result and error event of a run (first 300 characters
    each). ``tools``: when given, only the calls of these tools count (the differing calls of
    a contrastive review); errors always count. The tools and keys of each run's expected
    actions are added, and those of ``actions`` (a reference given as expected actions).
    Numbers are left out (they are a run's values, not what it is about).
    """
    keep = set(tools) if tools is not None else None
    out: list[str] = []
    groups: list[list[str]] = []  # the names of each run, then those of ``actions``
    for traj in trajectories:
        names: list[str] = []
        errors: list[str] = []
        for event in traj.events:
            if event.event_type is EventType.TOOL_CALL and event.tool_name:
                if keep is None or event.tool_name in keep:
                    names.append(event.tool_name)
                    _keys(event.tool_args or {}, names)
            elif (
                event.event_type is EventType.TOOL_RESULT
                and event.status in (EventStatus.FAILURE, EventStatus.TIMEOUT)
            ) or event.event_type is EventType.ERROR:
                errors.append(event.content[:_ERROR_CHARS])
        for error in dict.fromkeys(errors):  # the same error again is not more relevant
            out.extend(terms(error))
        evidence = traj.evidence
        _action_names(evidence.expected_actions if evidence is not None else [], keep, names)
        groups.append(names)
    groups.append(_action_names(actions, keep, []))
    for names in groups:
        for name in dict.fromkeys(names):  # each name once per run: a loop is not relevance
            out.extend(terms(_words_of_name(name)))
    return [t for t in out if not t.isdigit()]  # a run's numbers are values, not topics


def _action_names(
    actions: Iterable[ExpectedAction], keep: set[str] | None, names: list[str]
) -> list[str]:
    for action in actions:
        if keep is None or action.tool in keep:
            names.append(action.tool)
            _keys(action.args, names)
    return names


def rank_passages(passages: Sequence[Passage], query: Sequence[str]) -> list[tuple[Passage, float]]:
    """``passages`` scored by BM25 against the ``query`` terms (module docstring, step 3),
    best first, ties in policy order; passages sharing no term with the query are left out.

    A query term repeated ``n`` times weighs ``1 + ln(n)``: a tool called in every run of a
    contrast counts more than one seen once, but not linearly.
    """
    if not passages or not query:
        return []
    docs = [Counter(terms(f"{p.heading}\n{p.text}")) for p in passages]
    n_docs = len(docs)
    avg_len = sum(sum(d.values()) for d in docs) / n_docs or 1.0
    frequency: Counter[str] = Counter()
    for doc in docs:
        frequency.update(doc.keys())
    weights = {t: 1.0 + math.log(c) for t, c in Counter(query).items()}
    scored: list[tuple[Passage, float]] = []
    for passage, doc in zip(passages, docs, strict=True):
        length = sum(doc.values())
        score = 0.0
        for term, weight in weights.items():
            tf = doc.get(term, 0)
            if not tf:
                continue
            n = frequency[term]
            idf = math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5))
            norm = tf + BM25_K1 * (1.0 - BM25_B + BM25_B * length / avg_len)
            score += weight * idf * tf * (BM25_K1 + 1.0) / norm
        if score > 0:
            scored.append((passage, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0].index))
    return scored


@dataclass(frozen=True, slots=True)
class PolicyExcerpt:
    """The part of a policy a review request shows.

    Attributes:
        text: the rendered excerpt (``""`` when nothing fits or nothing is touched).
        tokens: its tokens, counted with the ``count_tokens`` given to :func:`select_policy`.
        whole: the whole policy is shown.
        shown: passages shown.
        total: passages in the policy.
        policy_tokens: tokens of the whole policy.
    """

    text: str
    tokens: int
    whole: bool
    shown: int
    total: int
    policy_tokens: int


def _render(chosen: Sequence[Passage], total: int) -> str:
    lines: list[str] = []
    heading: str | None = None
    previous = -1
    for passage in sorted(chosen, key=lambda p: p.index):
        if passage.index != previous + 1:
            lines.append("…")
        if passage.heading != heading:
            heading = passage.heading
            if heading:
                lines.append(f"## {heading}")
        lines.append(passage.text)
        previous = passage.index
    if chosen and previous != total - 1:
        lines.append("…")
    return "\n".join(lines)


def select_policy(
    policy: str | None,
    query: Sequence[str],
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> PolicyExcerpt:
    """The excerpt of ``policy`` that fits ``max_tokens`` (module docstring, step 4).

    Args:
        policy: the run's system prompt / policy (``None`` or blank: nothing to show).
        query: the terms the run touches (:func:`run_terms`).
        max_tokens: the excerpt's budget in tokens (<= 0: nothing is shown).
        count_tokens: counts tokens, e.g. the reviewer's tokenizer or
            :func:`hindsight.tokens.estimate_tokens`.

    Returns:
        a :class:`PolicyExcerpt`: the whole policy (stripped) when it fits, else the
        best-ranked passages that fit, in policy order, under their headings.
    """
    text = (policy or "").strip()
    if not text or max_tokens <= 0:
        return PolicyExcerpt("", 0, False, 0, 0, count_tokens(text) if text else 0)
    passages = split_passages(text)
    whole_tokens = count_tokens(text)
    if whole_tokens <= max_tokens:
        return PolicyExcerpt(text, whole_tokens, True, len(passages), len(passages), whole_tokens)
    chosen: list[Passage] = []
    used = 0
    for passage, _ in rank_passages(passages, query):
        # A passage costs its text, its heading line when new, and a gap marker: count the
        # rendering, which is exact whatever the tokenizer.
        trial = _render([*chosen, passage], len(passages))
        cost = count_tokens(trial)
        if cost <= max_tokens:
            chosen.append(passage)
            used = cost
    rendered = _render(chosen, len(passages)) if chosen else ""
    return PolicyExcerpt(rendered, used, False, len(chosen), len(passages), whole_tokens)
