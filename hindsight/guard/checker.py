"""The before-write check: :class:`Guard` and its :class:`Verdict`."""

from __future__ import annotations

import bisect
import math
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, Literal, NamedTuple

from hindsight._errors import UsageError
from hindsight.guard.conflict import compare
from hindsight.guard.harm import HARM_CATEGORIES
from hindsight.guard.normalize import normalize
from hindsight.guard.prefilter import Gate, need, plain_lower
from hindsight.guard.rules import CATEGORIES, DEFAULT_RULES, VOCAB, Rule
from hindsight.guard.semantic import SemanticLayer
from hindsight.guard.trust import initial_trust

__all__ = [
    "CONFLICT_RULE_ID",
    "LAYERS",
    "SCAN_CACHE_SIZE",
    "Established",
    "Finding",
    "Guard",
    "Verdict",
    "check",
    "default_guard",
    "outweighs",
]

CONFLICT_RULE_ID = "conflict"
"""The id used in reasons (and accepted by ``disabled``) for the high-confidence conflict test."""

SCAN_CACHE_SIZE = 4096
"""Texts whose rule hits one :class:`Guard` remembers (least recently used go first). The
rules are most of the write path's CPU (measured: tau-bench ingest checked 4,004 texts, 2,116
distinct); a hit costs a dict lookup."""
SCAN_CACHE_MAX_CHARS = 4000
"""Longer texts are scanned every time (bounds the cache's memory to ~16 MB)."""

_FLAGS = re.IGNORECASE
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|[;。！？；]")
# ``unless`` contexts ("...; we refused") may sit after a semicolon, so they see the whole
# sentence up to a full stop.
_FULL_STOP = re.compile(r"(?<=[.!?])\s|[。！？]")
_CLAUSE_END = re.compile(
    r"[,，:：、]|\b(?:but|however|then|otherwise|instead|and then|so)\b|但是?|然后|否则|而是|所以"
)
_NEGATION = re.compile(VOCAB["negation"], _FLAGS)
_NOT_A_NEGATION = re.compile(
    r"\b(?:never|not|n't|dont)\s+(?:ever\s+)?(?:forget|hesitate|fail|neglect)\b|"
    r"(?:不要|别|不能|千万别|千万不要)(?:忘记|忘了|忘掉|遗漏|犹豫)",
    _FLAGS,
)
_SENTENCE_NEGATED = re.compile(
    r"\s*(?:never|do not|don't|dont|must not|mustn't|should not|shouldn't|avoid|under no "
    r"circumstances|不要|切勿|禁止|严禁|千万不要|千万别|绝不|永远不要|别)",
    _FLAGS,
)
# A trigger that is only the condition of a safeguard ("ask for approval before deleting all
# records") or something somebody else asked for in the past ("the customer asked to route the
# refund to a new card") is not advice to do it.
_GUARDED = re.compile(
    r"(?:\b(?:before|prior to|until|unless)\s+(?:you\s+|we\s+|they\s+|the agent\s+)?"
    r"|\b(?:asked|requested|wanted|demanded|tried|attempted|urged)\s+(?:(?:us|you|me|him|her|"
    r"them|the \w+)\s+)?to\s+"
    r"|\b(?:asks?|asked|asking|wonders?|wondering|questions?|questioned)\s+(?:whether|if)\s+"
    r"(?:\S+\s+){0,4})$",
    _FLAGS,
)
_GUARDED_AFTER_ZH = re.compile(
    r"[^，,。;]{0,10}?(?:之前|以前|前)[，,]?\s*(?:先|必须|务必|要|需|请|应)"
)
# An object mentioned only to be excluded ("no secrets", "without the card number", "脱敏后的").
_EXCLUDED_OBJECT = re.compile(
    r"(?:\b(?:no|without|not|never|except|excluding|minus|sans|redact(?:ed|ing)?|"
    r"mask(?:ed|ing)?|strip(?:ped|ping)?|remov(?:e|ed|ing)|hash(?:ed|ing)?)\s+"
    r"(?:(?:the|any|all|raw|their|its|of|your)\s+)*"
    r"|(?:去掉|不含|不包含|不带|除去|脱敏|隐去|屏蔽|删除|不要|去除)(?:其中的|所有|任何|的)?)$",
    _FLAGS,
)
_BUILTIN: Final = frozenset(map(id, DEFAULT_RULES))
"""Identities of the built-in rules (valid by construction: tested, never user input)."""
_NEGATION_WINDOW = 60
_SPAN_CHARS = 60


LAYERS = ("rules", "semantic", "llm")
"""The guard's detection layers, in the order they run
(docs/security.md#layered-detection-and-hindsight-guard-eval): the rules (and the conflict
test), the semantic layer (the harm model, :mod:`hindsight.guard.semantic`), the LLM judge
(:mod:`hindsight.guard.llm_judge`, on the write path when an LLM is configured)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason to quarantine, with the layer that found it.

    ``layer`` is one of :data:`LAYERS`; ``category`` the harm category (a rule category,
    ``conflict``, or a category of :data:`~hindsight.guard.harm.HARM_CATEGORIES`); ``id`` the
    rule id, ``"conflict"``, ``"semantic.harm_model"`` or ``"llm"``; ``score`` in [0, 1] (1.0
    for a rule or the harm model; the judge's confidence otherwise); ``reason`` the one line
    kept in ``metadata["quarantine_reasons"]``.
    """

    layer: str
    category: str
    id: str
    score: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """``{"layer", "category", "id", "score", "reason"}`` (JSON-ready)."""
        return {
            "layer": self.layer,
            "category": self.category,
            "id": self.id,
            "score": round(float(self.score), 4),
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of :meth:`Guard.check`.

    ``verdict`` is ``"quarantine"`` when any layer fired, else ``"allow"``. ``reasons`` has
    one line per finding: ``"<rule id>: <description> (matched '<span>')"``, ``"conflict:
    conflicts with high-confidence experience: '<text>' (confidence 0.90)..."``,
    ``"semantic.<category>: ..."``. ``findings`` has the same hits with their layer,
    category and score (:class:`Finding`). ``normalized`` is the matching copy of the content
    (see :func:`~hindsight.guard.normalize`). ``rule_ids`` lists the ids the rules layer fired
    (the conflict test included), in order, and ``trust`` is the provenance weight of the
    given ``source`` (see :func:`~hindsight.guard.initial_trust`).
    """

    verdict: Literal["allow", "quarantine"]
    reasons: list[str]
    normalized: str
    rule_ids: tuple[str, ...] = ()
    trust: float = 0.5
    findings: tuple[Finding, ...] = ()

    def layer(self, name: str) -> tuple[Finding, ...]:
        """The findings of one layer (``"rules"``, ``"semantic"``, ``"llm"``)."""
        return tuple(f for f in self.findings if f.layer == name)

    @property
    def quarantined(self) -> bool:
        """True when the candidate must not be stored as active."""
        return self.verdict == "quarantine"


@dataclass(frozen=True, slots=True)
class _Compiled:
    rule: Rule
    trigger: re.Pattern[str]
    requires: tuple[re.Pattern[str], ...] = ()
    unless: re.Pattern[str] | None = None
    unless_after: re.Pattern[str] | None = None
    unless_in_match: re.Pattern[str] | None = None
    negatable: bool = field(default=True)
    anchor: re.Pattern[str] | None = None


def _expand(pattern: str, rule_id: str) -> str:
    def repl(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in VOCAB:
            raise UsageError(
                f"rule {rule_id!r}: unknown placeholder {{{name}}}; known: {sorted(VOCAB)}"
            )
        return f"(?:{VOCAB[name]})"

    return _PLACEHOLDER.sub(repl, pattern)


def _compile(patterns: Sequence[str], rule_id: str, what: str) -> re.Pattern[str] | None:
    if not patterns:
        return None
    source = "|".join(f"(?:{_expand(p, rule_id)})" for p in patterns)
    try:
        return re.compile(source, _FLAGS)
    except re.error as exc:
        raise UsageError(f"rule {rule_id!r}: invalid regex in {what}: {exc}") from exc


_ESCAPE = re.compile(r"\\.")


def _case_free(pattern: re.Pattern[str] | None) -> re.Pattern[str] | None:
    """``pattern`` compiled without IGNORECASE when that cannot change what it matches in a
    :func:`~hindsight.guard.prefilter.plain_lower` text: outside escapes its source has no
    letter but ASCII lower case and uncased characters (CJK). Otherwise ``pattern`` itself.
    Matching without the flag is ~1.6x faster on the built-in rules."""
    if pattern is None:
        return None
    bare = _ESCAPE.sub("", pattern.pattern)
    if any(c.isupper() or (c.islower() and not c.isascii()) for c in bare):
        return pattern
    return re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE)


def _case_free_rule(c: _Compiled) -> _Compiled:
    """``c`` with every pattern :func:`_case_free` (the same rule, faster on plain text)."""
    trigger = _case_free(c.trigger)
    assert trigger is not None
    return _Compiled(
        rule=c.rule,
        trigger=trigger,
        requires=tuple(p for p in map(_case_free, c.requires) if p is not None),
        unless=_case_free(c.unless),
        unless_after=_case_free(c.unless_after),
        unless_in_match=_case_free(c.unless_in_match),
        negatable=c.negatable,
        anchor=_case_free(c.anchor),
    )


def _needs(c: _Compiled) -> list[frozenset[str] | None]:
    """The prefilter's needs of a compiled rule: trigger, anchor and each ``requires``
    (:func:`hindsight.guard.prefilter.need`); the rule can fire only where all are met."""
    return [need(p) for p in (c.trigger, c.anchor, *c.requires) if p is not None]


def _compile_rule(rule: Rule) -> _Compiled:
    if not isinstance(rule, Rule):
        raise UsageError(f"expected a Rule or a mapping, got {type(rule).__name__}")
    if not rule.id or not rule.category:
        raise UsageError(f"rule {rule!r} needs a non-empty id and category")
    trigger = _compile(rule.patterns, rule.id, "patterns")
    if trigger is None:
        raise UsageError(f"rule {rule.id!r} has no patterns")
    requires = []
    for pattern in rule.requires:
        compiled = _compile([pattern], rule.id, "requires")
        assert compiled is not None
        requires.append(compiled)
    return _Compiled(
        rule=rule,
        trigger=trigger,
        requires=tuple(requires),
        unless=_compile(rule.unless, rule.id, "unless"),
        unless_after=_compile(rule.unless_after, rule.id, "unless_after"),
        unless_in_match=_compile(rule.unless_in_match, rule.id, "unless_in_match"),
        negatable=rule.negatable,
        anchor=_compile([rule.anchor], rule.id, "anchor") if rule.anchor else None,
    )


def _shorten(text: str, limit: int = _SPAN_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _spans(text: str, boundary: re.Pattern[str]) -> tuple[list[int], list[int]]:
    starts, ends = [0], []
    for m in boundary.finditer(text):
        ends.append(m.start())
        starts.append(m.end())
    ends.append(len(text))
    return starts, ends


def _cover(spans: tuple[list[int], list[int]], start: int, end: int) -> tuple[int, int]:
    starts, ends = spans
    first = bisect.bisect_right(starts, start) - 1
    last = bisect.bisect_right(starts, max(start, end - 1)) - 1
    return starts[first], ends[last]


class _Text:
    """The normalized text with its sentence boundaries, for scoped lookups."""

    __slots__ = ("_anchors", "full", "sentences", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.sentences = _spans(text, _SENTENCE_END)
        self.full = _spans(text, _FULL_STOP)
        self._anchors: dict[str, list[int]] = {}

    def anchor_starts(self, anchor: re.Pattern[str]) -> list[int]:
        """Start offsets of ``anchor`` in the text, computed once per pattern."""
        found = self._anchors.get(anchor.pattern)
        if found is None:
            found = [m.start() for m in anchor.finditer(self.text)]
            self._anchors[anchor.pattern] = found
        return found

    def matches(self, compiled: _Compiled) -> Iterator[re.Match[str]]:
        """Trigger matches, tried only at anchor starts when the rule has an anchor."""
        if compiled.anchor is None:
            yield from compiled.trigger.finditer(self.text)
            return
        for pos in self.anchor_starts(compiled.anchor):
            m = compiled.trigger.match(self.text, pos)
            if m is not None:
                yield m

    def sentence(self, start: int, end: int) -> tuple[int, int]:
        """The span of the sentence(s) covering ``[start, end)`` (split at ``.;!?。``)."""
        return _cover(self.sentences, start, end)

    def full_sentence(self, start: int, end: int) -> tuple[int, int]:
        """Like :meth:`sentence` but split only at full stops (``.!?。``)."""
        return _cover(self.full, start, end)

    def negated(self, sent_start: int, pos: int) -> bool:
        """Whether a directive negation scopes the trigger at ``pos``."""
        before = self.text[sent_start:pos]
        if _SENTENCE_NEGATED.match(before) and not _CLAUSE_END.search(before):
            return True
        clause_start = 0
        for m in _CLAUSE_END.finditer(before):
            clause_start = m.end()
        window = before[max(clause_start, len(before) - _NEGATION_WINDOW) :]
        if _GUARDED.search(window):
            return True
        window = _NOT_A_NEGATION.sub(" ", window)
        return _NEGATION.search(window) is not None

    def guarded_after(self, pos: int, end: int) -> bool:
        """Chinese "X之前先..." - the trigger is the condition of a safeguard that follows."""
        return _GUARDED_AFTER_ZH.match(self.text, pos, end) is not None

    def find_included(self, pattern: re.Pattern[str], start: int, end: int) -> str | None:
        """The first match of ``pattern`` in ``[start, end)`` that is not excluded ("no X")."""
        for m in pattern.finditer(self.text, start, end):
            if not _EXCLUDED_OBJECT.search(self.text[max(start, m.start() - 30) : m.start()]):
                return m.group(0)
        return None


MASKED_DESTINATIONS: Final = {
    "<email>": "address@masked.invalid",
    "<url>": "https://masked.invalid",
}
"""What the layers read in place of a masked e-mail address or URL (docs/review.md#masking):
still a destination, and not the word "email" (a verb to the rules: "maintained by <email>"
is no order to e-mail anything)."""
_MASKED_DESTINATION = re.compile("|".join(map(re.escape, MASKED_DESTINATIONS)))


class Guard:
    """Checks candidate lessons before they are written.

    Args:
        rules: the rule set; ``None`` means :data:`~hindsight.guard.rules.DEFAULT_RULES`.
        extra_rules: rules appended to ``rules``; :class:`Rule` objects or mappings accepted
            by :meth:`Rule.from_dict`.
        disabled: rule ids or category names to switch off; ``"conflict"`` switches off the
            high-confidence conflict test. A category (a rule category or one of
            :data:`~hindsight.guard.harm.HARM_CATEGORIES`) is switched off in the semantic
            layer too.
        conflict_threshold: minimum confidence (0-1) of an existing experience for a
            contradiction to quarantine the candidate.
        conflict_overlap: minimum share (0-1) of key terms two lessons must have in common to
            be compared at all.
        layers: the layers :meth:`check` runs, of ``"rules"`` and ``"semantic"`` (``"llm"`` is
            accepted and runs on the write path only). Default ``rules`` and ``semantic``.
        semantic: the semantic layer (default: :class:`~hindsight.guard.semantic.
            SemanticLayer`, the harm model).

    Raises:
        UsageError: a rule id is duplicated, a pattern is not a valid regex or uses an unknown
            ``{placeholder}``, a name in ``disabled`` matches no rule or category, a
            threshold is outside [0, 1], or a layer is unknown.

    A ``Guard`` is immutable after construction and safe to share between threads.
    """

    def __init__(
        self,
        rules: Iterable[Rule] | None = None,
        *,
        extra_rules: Iterable[Rule | Mapping[str, Any]] = (),
        disabled: Iterable[str] = (),
        conflict_threshold: float = 0.8,
        conflict_overlap: float = 0.6,
        layers: Iterable[str] = ("rules", "semantic"),
        semantic: SemanticLayer | None = None,
    ) -> None:
        chosen = [layers] if isinstance(layers, str) else list(layers)
        bad = sorted(set(chosen) - set(LAYERS))
        if bad:
            raise UsageError(f"unknown guard layers {bad}; known: {', '.join(LAYERS)}")
        self.layers = tuple(name for name in LAYERS if name in chosen)
        if "semantic" in self.layers:
            self.semantic: SemanticLayer | None = semantic or SemanticLayer()
        else:
            self.semantic = None
        for name, value in (
            ("conflict_threshold", conflict_threshold),
            ("conflict_overlap", conflict_overlap),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (0.0 <= value <= 1.0)
            ):
                raise UsageError(f"{name} must be a number in [0, 1], got {value!r}")
        base = list(DEFAULT_RULES if rules is None else rules)
        extra = [r if isinstance(r, Rule) else Rule.from_dict(r) for r in extra_rules]
        all_rules = base + extra
        seen: set[str] = set()
        for rule in all_rules:
            if not isinstance(rule, Rule):
                raise UsageError(f"expected a Rule, got {type(rule).__name__}")
            if rule.id in seen or rule.id == CONFLICT_RULE_ID:
                raise UsageError(f"duplicate or reserved rule id {rule.id!r}")
            seen.add(rule.id)
        off = {d.strip() for d in ([disabled] if isinstance(disabled, str) else disabled)}
        known = (
            seen
            | {r.category for r in all_rules}
            | set(CATEGORIES)
            | set(HARM_CATEGORIES)
            | {CONFLICT_RULE_ID}
        )
        unknown = sorted(off - known)
        if unknown:
            raise UsageError(
                f"disabled names {unknown} match no rule id or category; "
                f"rule ids: {sorted(seen)}; categories: {sorted(set(CATEGORIES))}"
            )
        active = tuple(r for r in all_rules if r.id not in off and r.category not in off)
        # A rule given here is compiled now (a bad regex is an error of the constructor); the
        # built-in ones always compile, so they are compiled on the first check: building
        # them is ~0.3 s of CPU, which opening a memory and recalling never need.
        self._given = {i: _compile_rule(r) for i, r in enumerate(active) if id(r) not in _BUILTIN}
        self._active = active
        self._built: tuple[tuple[_Compiled, ...], tuple[_Compiled, ...]] | None = None
        self._build_lock = threading.Lock()
        self._gate_built: Gate | None = None
        self._categories = {r.id: r.category for r in active}
        self._conflicts = CONFLICT_RULE_ID not in off
        self._off = frozenset(off)
        self._rule_hits = lru_cache(maxsize=SCAN_CACHE_SIZE)(self._scan)
        self.conflict_threshold = float(conflict_threshold)
        self.conflict_overlap = float(conflict_overlap)

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The active rules, in evaluation order."""
        return self._active

    @property
    def _compiled(self) -> tuple[_Compiled, ...]:
        """The active rules compiled, in evaluation order (built on first use)."""
        return self._compiled_rules()[0]

    @property
    def _case_free(self) -> tuple[_Compiled, ...]:
        """:attr:`_compiled`, each rule :func:`_case_free_rule` (built on first use)."""
        return self._compiled_rules()[1]

    def _compiled_rules(self) -> tuple[tuple[_Compiled, ...], tuple[_Compiled, ...]]:
        built = self._built
        if built is None:
            with self._build_lock:
                built = self._built
                if built is None:
                    compiled = tuple(
                        self._given.get(i) or _compile_rule(r) for i, r in enumerate(self._active)
                    )
                    built = self._built = (compiled, tuple(map(_case_free_rule, compiled)))
        return built

    def check(
        self,
        content: str,
        *,
        source: str | None = "unknown",
        existing: Sequence[Established | tuple[Any, ...]] = (),
        trust: float | None = None,
        support: float | None = None,
    ) -> Verdict:
        """Check one candidate lesson with the rules (and the conflict test) and the semantic
        layer (the layers this guard runs: ``layers``; the LLM judge runs on the write path,
        :class:`~hindsight.guard.screening.WriteScreen`).

        Args:
            content: the lesson text as it would be stored.
            source: where its evidence came from (``system``, ``user``, ``tool`` /
                ``tool_output``, ``unknown``); sets ``Verdict.trust`` and, unless ``trust`` is
                given, the candidate's trust in the conflict test; the rules are the same for
                every source.
            existing: similar active experiences, :class:`Established` or tuples
                ``(content, confidence[, trust[, support]])``. The candidate is quarantined
                when it contradicts those with ``confidence >= conflict_threshold`` and they
                outweigh it (:func:`outweighs`: their total support at least its own, and the
                most trusted of them at least as trusted as it); a pair without trust
                outweighs any candidate.
            trust: the candidate's trust in [0, 1] (default: the weight of ``source``).
            support: the candidate's support mass (default: its trust).

        Returns:
            A :class:`Verdict`; ``"quarantine"`` with one reason per rule that fired (and per
            contradicted experience when they outweigh the candidate).

        Raises:
            UsageError: ``content`` is not a string, an ``existing`` item is not a
                ``(str, number in [0, 1], ...)`` tuple, or ``trust`` / ``support`` is
                negative or not a number.
        """
        if not isinstance(content, str):
            raise UsageError(f"content must be a str, not {type(content).__name__}")
        content = _MASKED_DESTINATION.sub(lambda m: MASKED_DESTINATIONS[m.group()], content)
        cached = len(content) <= SCAN_CACHE_MAX_CHARS
        norm, hits = self._rule_hits(content) if cached else self._scan(content)
        rules_on = "rules" in self.layers
        if not rules_on:
            hits = ()
        ids = [rule_id for rule_id, _ in hits]
        findings = [
            Finding(
                "rules",
                self._categories.get(rule_id, rule_id.split(".", 1)[0]),
                rule_id,
                1.0,
                reason,
            )
            for rule_id, reason in hits
        ]
        own_trust = initial_trust([source]) if trust is None else _mass(trust, "trust")
        own_support = own_trust if support is None else _mass(support, "support")
        if rules_on and self._conflicts and existing:
            against = [
                e
                for e in _validated(existing)
                if e.confidence >= self.conflict_threshold
                and compare(content, e.content).contradicts(self.conflict_overlap)
            ]
            if against and outweighs(against, own_trust, own_support):
                for e in against:
                    ids.append(CONFLICT_RULE_ID)
                    reason = _conflict_reason(e, own_trust, own_support)
                    findings.append(
                        Finding("rules", CONFLICT_RULE_ID, CONFLICT_RULE_ID, e.confidence, reason)
                    )
        if self.semantic is not None:
            for hit in self.semantic.check(content):
                if hit.category in self._off:
                    continue  # a category switched off for this deployment, in every layer
                findings.append(
                    Finding("semantic", hit.category, f"semantic.{hit.part}", hit.score, hit.reason)
                )
        reasons = [f.reason for f in findings]
        return Verdict(
            verdict="quarantine" if reasons else "allow",
            reasons=reasons,
            normalized=norm,
            rule_ids=tuple(ids),
            trust=initial_trust([source]),
            findings=tuple(findings),
        )

    def _gate(self) -> Gate:
        """The rules' prefilter (:mod:`hindsight.guard.prefilter`), built on the first scan
        (~0.3 s for the built-in rules, shared by the guards of a process): opening a memory
        and recalling never pays for it."""
        gate = self._gate_built
        if gate is None:
            gate = self._gate_built = Gate([_needs(c) for c in self._case_free])
        return gate

    def _scan(self, content: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """The normalized ``content`` and ``(rule id, reason)`` of every rule that fires on it,
        in rule order. Pure in ``content`` (the rules never change), so :meth:`check` caches
        it: the write path checks the same text more than once (a lesson learned again, the
        same quoted passage of a run for several of its lessons)."""
        return self._scan_rules(content, prefilter=True)

    def _scan_rules(
        self, content: str, *, prefilter: bool
    ) -> tuple[str, tuple[tuple[str, str], ...]]:
        """:meth:`_scan`; ``prefilter=False`` runs every rule on every text (the reference the
        prefilter is tested against: the same hits on every text)."""
        norm = normalize(content)
        text = _Text(norm)
        hits = []
        if not plain_lower(norm):
            rules: Sequence[_Compiled] = self._compiled
        elif prefilter:  # only the rules whose required literals are all in the text
            rules = [self._case_free[i] for i in self._gate().passing(norm)]
        else:
            rules = self._case_free
        for compiled in rules:
            span = self._first_hit(compiled, text)
            if span is not None:
                rule = compiled.rule
                hits.append((rule.id, f"{rule.id}: {rule.description} (matched {span!r})"))
        return norm, tuple(hits)

    @staticmethod
    def _first_hit(compiled: _Compiled, text: _Text) -> str | None:
        s = text.text
        for m in text.matches(compiled):
            if compiled.unless_in_match is not None and compiled.unless_in_match.search(m.group(0)):
                continue
            start, end = text.sentence(m.start(), m.end())
            if compiled.negatable:
                anchor = _anchor(m)
                if text.negated(text.sentence(anchor, anchor + 1)[0], anchor):
                    continue
                if text.guarded_after(m.end(), end):
                    continue
            if compiled.unless_after is not None and compiled.unless_after.match(s, m.end(), end):
                continue
            if compiled.unless is not None and compiled.unless.search(
                s, *text.full_sentence(m.start(), m.end())
            ):
                continue
            parts = [m.group(0).strip()]
            for req in compiled.requires:
                found = text.find_included(req, start, end)
                if found is None:
                    break
                parts.append(found.strip())
            else:
                return " + ".join(_shorten(p) for p in parts)
        return None


def _anchor(m: re.Match[str]) -> int:
    """Where negation is looked for: the first ``act*`` group that took part, else the start."""
    for name, value in m.groupdict().items():
        if name.startswith("act") and value is not None:
            return m.start(name)
    return m.start()


class Established(NamedTuple):
    """An active experience the conflict test compares a candidate with.

    ``confidence`` in [0, 1]; ``trust`` in [0, 1] (its most trusted evidence,
    :func:`~hindsight.guard.initial_trust`) and ``support`` (>= 0, the trust mass of its
    distinct supporting sources) are ``None`` when unknown: such an experience outweighs any
    candidate (the earlier, trust-blind test)."""

    content: str
    confidence: float
    trust: float | None = None
    support: float | None = None


def outweighs(against: Sequence[Established], trust: float, support: float) -> bool:
    """Whether contradicting experiences ``against`` settle a conflict against a candidate of
    ``trust`` and ``support``: their total support is at least the
    candidate's and the most trusted of them is at least as trusted as it. So a lesson is
    never quarantined for contradicting lessons of lower total trust, and repeating a claim
    from lower-trust sources never outranks a more trusted lesson, however often it is
    repeated. Experiences of unknown trust or support count as outweighing."""
    if any(e.trust is None or e.support is None for e in against):
        return True
    total = math.fsum(float(e.support or 0.0) for e in against)
    strongest = max(float(e.trust or 0.0) for e in against)
    return total >= support - _EPS and strongest >= trust - _EPS


_EPS = 1e-9


def _conflict_reason(e: Established, trust: float, support: float) -> str:
    text = f"{_shorten(' '.join(e.content.split()), 120)!r}"
    line = f"{CONFLICT_RULE_ID}: conflicts with high-confidence experience: {text} "
    line += f"(confidence {e.confidence:.2f})"
    if e.trust is not None and e.support is not None:
        line += (
            f", trust {e.trust:.2f} >= {trust:.2f} and support {e.support:.2f} "
            f"against this lesson's {support:.2f}"
        )
    return line


def _mass(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0.0:
        raise UsageError(f"{what} must be a number >= 0, got {value!r}")
    return float(value)


def _validated(existing: Sequence[Established | tuple[Any, ...]]) -> Iterable[Established]:
    for i, item in enumerate(existing):
        try:
            found = Established(*item)
        except TypeError:
            raise UsageError(
                f"existing[{i}] must be a (content, confidence[, trust[, support]]) tuple, "
                f"got {item!r}"
            ) from None
        other, confidence = found.content, found.confidence
        if not isinstance(other, str):
            raise UsageError(f"existing[{i}] content must be a str, not {type(other).__name__}")
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, int | float)
            or not 0.0 <= confidence <= 1.0
        ):
            raise UsageError(f"existing[{i}] confidence must be in [0, 1], got {confidence!r}")
        trust = None if found.trust is None else _mass(found.trust, f"existing[{i}] trust")
        support = None if found.support is None else _mass(found.support, f"existing[{i}] support")
        yield Established(other, float(confidence), trust, support)


@lru_cache(maxsize=1)
def default_guard() -> Guard:
    """The shared guard with the built-in rules and default thresholds (built once)."""
    return Guard()


def check(
    content: str,
    *,
    source: str | None = "unknown",
    existing: Sequence[Established | tuple[Any, ...]] = (),
) -> Verdict:
    """:meth:`Guard.check` on :func:`default_guard`."""
    return default_guard().check(content, source=source, existing=existing)
