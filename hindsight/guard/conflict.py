"""Cheap lexical contradiction test between two lessons (docs/security.md#layer-1-before-write).

Two lessons contradict when they talk about the same things (most key terms shared) and give
**opposite advice about the same action** ("always validate the amount" vs "never validate the
amount", "keep 2FA enabled" vs "disable 2FA", "必须校验参数" vs "跳过参数校验"). Polarity is the
parity of the negation/removal markers, so a double negation ("never skip validation") is
positive.

Only a lesson's *directives* carry its stance (honest reviews of different runs must not be
quarantined as "conflicts"). A lesson is split into clauses (at ``. ; : , !  ?``,
their CJK forms and "then"); clauses that set the scene - a condition or cause ("when
search_direct_flight returns no flights", "if the payment is not enough", "因为接口不可用时")
or a plain fact ("book_reservation did not accept the certificate") - are context, and a
negation in them is not advice. Directives are the imperative and modal clauses ("retry
once", "never pay with a certificate", "you should ...", "不要先尝试 npm"). Two lessons
contradict when a directive of one and a directive of the other name the same action (share
key terms) with opposite polarity; lessons whose shared directives agree are the *same
advice* (for dedup to merge), whatever their context clauses say. A lesson without any
directive (a bare statement such as "2FA is not needed") is its own single directive, as
before. Tool arguments (``insurance=no``), quoted text and bounds ("not more than twice")
are not negations.

This is a screen, not a judge: the engine only hands over experiences it already found
similar, and a flagged candidate goes to human review rather than being dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from hindsight.guard.normalize import normalize

__all__ = [
    "SAME_ACTION_OVERLAP",
    "ConflictScore",
    "Directive",
    "compare",
    "directives",
    "key_terms",
    "polarity",
]

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


# A tool argument written ``key=value`` ("insurance=no", "verify=false") is data, not a stance.
_ARGUMENT = re.compile(r"\b[a-z_][\w.]*\s*=\s*(?:\[[^\]\n]{0,300}\]|[^\s,;)\]]+)")
# A negated bound ("do not retry more than twice", "no more than 3") limits an action rather
# than forbidding it: the same advice as "retry at most twice".
_BOUND = re.compile(
    r"\b(?:never|not|no|don'?t|dont|doesn'?t|shouldn'?t|mustn'?t)\b"
    r"(?=[^,.;:!?\n]{0,40}?\b(?:more|longer|later|fewer|less|other)\s+than\b)"
    r"|不要超过|不得超过|不能超过|不超过"
)


def _stance_text(text: str) -> str:
    """``text`` normalized, without quotes, tool arguments and negated bounds."""
    norm = normalize(_QUOTED.sub(" ", text)).replace("\u2019", "'")
    return _BOUND.sub(" ", _ARGUMENT.sub(" ", norm))


@lru_cache(maxsize=4096)  # pure; the write path compares the same texts often
def polarity(text: str) -> int:
    """``+1`` or ``-1``: the parity of negation/removal markers in ``text`` (normalized here),
    leaving out quoted text (an error message a lesson quotes is not the lesson's stance),
    tool arguments (``insurance=no``) and negated bounds ("not more than twice").

    ``"always validate"`` -> +1, ``"never validate"`` -> -1, ``"never skip validation"`` -> +1,
    ``"X failed with 'not found': check the id"`` -> +1.
    """
    return _parity(_stance_text(text))


def _parity(norm: str) -> int:
    return -1 if len(_NEG.findall(norm)) % 2 else 1


@lru_cache(maxsize=4096)  # pure, and returns an immutable set
def key_terms(text: str) -> frozenset[str]:
    """The content terms of ``text``: stemmed English words and Chinese character bigrams.

    Negation/removal markers, absolute words and stop words are left out, so a lesson and its
    negation have the same key terms.
    """
    return _terms(normalize(text))


def _terms(norm: str) -> frozenset[str]:
    norm = _NEG.sub(" ", norm)
    terms = {_stem(w) for w in _WORD.findall(norm) if w not in _STOP}
    for run in _CJK_RUN.findall(_ZH_FUNCTION.sub(" ", norm)):
        if len(run) == 1:
            continue
        terms.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(terms)


# -- directives ---------------------------------------------------------------------------

_CLAUSE_SPLIT = re.compile(
    r"[.;:!?\n。；：！？]+(?:\s|$)|[;:!?。；：！？\n]|,|，|、|\bthen\b|然后|随后"
)
_CONTEXT_EN = re.compile(
    r"(?:when|whenever|if|once|after|before|because|since|as|while|until|unless|although|"
    r"though|whether|otherwise|for tasks like|in case|even if|even when|given|where)\b"
)
_CONTEXT_ZH = re.compile(
    r"^(?:当|如果|若|假如|要是|一旦|因为|由于|在|对于|每当|即使|除非)|(?:时|后|之后|以后|的时候|的话|之前|以前)$"
)
_MODAL_EN = re.compile(
    r"\b(?:should|shouldn'?t|must|mustn'?t|need(?:s)? to|have to|has to|ought to|make sure|"
    r"be sure|remember to|better to|prefer|recommended)\b"
)
_MODAL_ZH = re.compile(
    r"必须|应该|应当|务必|需要|要|不要|别|勿|切勿|禁止|请|记得|优先|总是|始终|永远|一律|避免|跳过|"
    r"不必|无需|不用|改用|先|再|直接|禁用|关闭|绕过|忽略|省略|保持|确认|检查|使用|调用|用"
)
# Words that may open a directive before its verb ("always", "never", "do not", "please").
_LEAD_WORDS = """
    always never just only also instead first next and so please do don't dont not
    simply still rather immediately now again finally"""
_LEAD = frozenset(_LEAD_WORDS.split())
# Words that open a statement, not a command.
_SUBJECT_WORDS = """
    the a an this that these those it its they their them we our i my he she his her there
    here which who what each every all some most many several both either neither one two
    any no none nothing nobody everyone someone"""
_SUBJECT = frozenset(_SUBJECT_WORDS.split())
_FINITE_WORDS = """
    is are was were be been has have had does did doesn't didn't isn't aren't wasn't
    weren't hasn't haven't can cannot can't could couldn't will won't would wouldn't may might
    returns returned fails failed works worked succeeds succeeded times timed rejects
    rejected accepts accepted requires required needs needed takes took gets got seems seemed
    helps helped causes caused gives gave shows showed says said only"""
_FINITE = frozenset(_FINITE_WORDS.split())
# Verbs that open a lesson's directives even when the next word looks like a verb form.
_VERBS_WORDS = """
    use check call ask confirm verify retry keep pay cancel book tell send validate queue
    wait search try prefer avoid skip disable enable stop start log mask grant give refund
    transfer offer compute sum split reduce add remove delete update modify change escalate
    apply set run read write store save fetch look double-check recheck list follow return
    approve reject charge collect inform notify explain"""
_VERBS = frozenset(_VERBS_WORDS.split())
_STRONG_STANCE = re.compile(
    r"\b(?:always|never|don'?t|dont|do not|must|mustn'?t|should|shouldn'?t)\b"
    r"|必须|不要|切勿|禁止|务必|应该|应当|一定要|千万"
)
_ENGLISH_WORD = re.compile(r"[\w'-]+|\S+")
_STANCE_START = re.compile(
    r"(?:never|don'?t|dont|do not|avoid|skip|stop|disable|bypass|always|ignore|remove|omit)\b"
)


@dataclass(frozen=True, slots=True)
class Directive:
    """One piece of advice in a lesson: its key ``terms`` and ``polarity`` (+1 do, -1 don't)."""

    terms: frozenset[str]
    polarity: int


def _is_context(clause: str) -> bool:
    """A condition, cause or time clause - unless it carries a stance itself ("before calling
    X always check Y", "在调用前必须校验参数")."""
    if _STRONG_STANCE.search(clause):
        return False
    if _CONTEXT_EN.match(clause):
        return True
    cjk = clause.replace(" ", "")
    return bool(cjk) and bool(_CJK_RUN.match(cjk)) and bool(_CONTEXT_ZH.search(cjk))


def _is_directive(clause: str) -> bool:
    if _MODAL_EN.search(clause) or _STANCE_START.match(clause):
        return True
    if _CJK_RUN.search(clause) and not _WORD.search(clause):
        return bool(_MODAL_ZH.search(clause))
    words = _ENGLISH_WORD.findall(clause)
    while words and words[0] in _LEAD:
        words = words[1:]
    if not words:
        return False
    first = words[0]
    if first in _VERBS:
        return True
    if (
        not first.isalpha()
        or first in _SUBJECT
        or first.endswith(("ing", "ed"))
        or (first.endswith("s") and not first.endswith(("ss", "us")))
    ):
        return False
    return len(words) < 2 or (words[1] not in _FINITE and not words[1].endswith("ed"))


# The rejected alternative of "do A (not B)", "do A rather than B", "做A（而不是B）": advice
# against B, its own directive, never a negation of A (the form the review asks for).
_ALTERNATIVE = re.compile(
    r"[(（]\s*(?:not|rather than|instead of|而不是|而非|不是)\s*([^)）]*)[)）]"
    r"|\b(?:rather than|instead of)\s+([^,.;:!?\n]*)"
    r"|(?:而不是|而非)([^,.;:!?\n，。；：！？]*)"
)


@lru_cache(maxsize=4096)  # pure; a lesson is compared with several neighbours
def directives(text: str) -> tuple[Directive, ...]:
    """The directives of a lesson (see the module docstring): imperative or modal clauses with
    their key terms and polarity, leaving out context clauses (conditions, causes, facts).

    The rejected alternative of "do A (not B)" ("(not B)", "rather than B", "instead of B",
    "（而不是B）") is a directive against what sets B apart from the rest of the lesson, so
    the form itself never makes A's directive negative. A lesson with no directive clause is
    one directive made of its whole text (its terms and :func:`polarity`), so bare statements
    keep the old whole-text behaviour.

    ``"When search_direct_flight returns no flights, check the date"`` ->
    ``(Directive({'check', 'date'}, +1),)``.
    """
    norm = _stance_text(text)
    found = []
    rest = _ALTERNATIVE.sub(" ", norm)
    for m in _ALTERNATIVE.finditer(norm):
        # what sets B apart from A: "the address in the chat" against "confirm the address"
        terms = _terms(next(g for g in m.groups() if g is not None)) - _terms(rest)
        if terms:
            found.append(Directive(terms, -1))
    norm = rest
    for raw in _CLAUSE_SPLIT.split(norm):
        clause = raw.strip(" \t-—()[]\"'")
        if not clause or _is_context(clause) or not _is_directive(clause):
            continue
        terms = _terms(clause)
        if terms:
            found.append(Directive(terms, _parity(clause)))
    if not found:
        return (Directive(_terms(norm), _parity(norm)),)
    return tuple(found)


@dataclass(frozen=True, slots=True)
class ConflictScore:
    """How two lessons relate: shared key terms, overlap ratio and their polarities.

    ``polarity_a`` / ``polarity_b`` are the lessons' stances on the action they have in
    common when :func:`compare` found one (their directives; the whole texts' parity
    otherwise). ``opposed`` (set by :func:`compare`) is True when some directive of one
    lesson and some directive of the other name the same action with opposite polarity;
    ``None`` (a score built by hand) falls back to ``polarity_a != polarity_b``.
    """

    shared: frozenset[str]
    overlap: float
    polarity_a: int
    polarity_b: int
    opposed: bool | None = None

    def contradicts(self, min_overlap: float = 0.6, min_shared: int = 2) -> bool:
        """True when the lessons give opposite advice (see ``opposed``) and the key-term
        overlap of the whole texts is at least ``min_overlap`` with ``min_shared`` terms."""
        opposite = self.polarity_a != self.polarity_b if self.opposed is None else self.opposed
        return opposite and len(self.shared) >= min_shared and self.overlap >= min_overlap


SAME_ACTION_OVERLAP = 0.5
"""Share of key terms (of the smaller directive) two directives must have in common to be
about the same action. Lower than the lessons' own ``min_overlap`` (0.6) because a directive
is short ("retry once") and its object often sits in the context clause."""


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    smaller = min(len(a), len(b))
    return len(a & b) / smaller if smaller else 0.0


def compare(a: str, b: str) -> ConflictScore:
    """Compare two lesson texts. ``overlap`` is ``|shared| / min(|terms a|, |terms b|)`` over
    the whole texts; the polarities and ``opposed`` come from their :func:`directives`:
    among the directive pairs about the same action (:data:`SAME_ACTION_OVERLAP`), an
    opposed pair wins, else the closest aligned pair; with none, the whole texts' parity and
    ``opposed=False`` when both lessons have real directives (different advice, no conflict).
    """
    ta, tb = key_terms(a), key_terms(b)
    shared = ta & tb
    smaller = min(len(ta), len(tb))
    overlap = len(shared) / smaller if smaller else 0.0
    best: tuple[bool, float, int, int] | None = None
    for da in directives(a):
        for db in directives(b):
            same = _overlap(da.terms, db.terms)
            if same < SAME_ACTION_OVERLAP:
                continue
            key = (da.polarity != db.polarity, same, da.polarity, db.polarity)
            if best is None or key[:2] > best[:2]:
                best = key
    if best is not None:
        return ConflictScore(shared, overlap, best[2], best[3], best[0])
    return ConflictScore(shared, overlap, polarity(a), polarity(b), False)
