"""Masking of run-specific values in lesson text (docs/review.md#masking: lessons are general).

A lesson must hold no personal data and no run identifiers: names, e-mail addresses, phone
numbers, ids, exact amounts and dates are replaced by their class (``<first_name>``,
``<email>``, ``<reservation_id>``, ``<gift_card_id>``, ``<amount>``, ``<date>``), so that the
same lesson learned from two runs has one text and a lesson never carries one user's data to
another user's prompt. Episodes (one run's summary) keep the task; they are masked for personal
data only (:meth:`Masker.mask_personal`).

Two sources of values to mask, both independent of any domain's vocabulary:

1. **The runs' own values.** Every scalar of the runs' tool arguments and of their JSON tool
   results is harvested with the key it sits under (``"reservation_id": "HXDUBJ"``,
   ``"first_name": "Mia"``). A value under an identifying key (an id, a personal field, a secret;
   :func:`identifying`), a code mixing letters and digits, or a code of digits (grouped
   by dashes or spaces, or of nine digits and more: ``"ndc": "0002-3227-30"``, ``"npi":
   1234567893``) is masked wherever it appears, as ``<key>`` (quantities are left to the
   patterns below). Ids made of a word and a number
   (``gift_card_8190333``) are masked as their kind (``<gift_card_id>``) unless the word part is
   personal (``mia_li_3668`` -> ``<user_id>``).
2. **Patterns.** URLs, e-mail addresses, phone numbers (9+ digits), ISO and written dates,
   clock times, word-and-number ids, letter-digit codes (``HAT290``), money (``$120``,
   ``120 dollars``) and numbers of two or more digits (``<amount>`` after a money word such as
   price, total, paid, balance; ``<number>`` otherwise).

Categorical values (short lower-case words such as ``economy``, ``one_way``, ``no``) are
classes already and are kept, as are single digits (counts such as "3 bags").
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hindsight._runcache import RunCache
from hindsight.models import EventType, Trajectory

__all__ = [
    "PERSONAL_KEYS",
    "PERSON_ROLES",
    "PERSON_WORDS",
    "Masker",
    "harvested",
    "identifying",
    "is_categorical",
    "is_phrase_class",
    "key_class",
    "masker_for",
    "personal_key",
    "value_pattern",
]

PERSONAL_KEYS = frozenset(
    {
        "name", "first_name", "last_name", "full_name", "middle_name", "firstname", "lastname",
        "given_name", "family_name", "surname", "nickname", "dob", "date_of_birth", "birthday",
        "birth_date", "birthdate", "email", "email_address", "phone", "phone_number", "mobile",
        "telephone", "address", "address1", "address2", "street", "zip", "zipcode", "zip_code",
        "postal_code", "postcode", "ssn", "passport", "passport_number", "national_id",
        "username", "user_name", "login", "handle", "card_number", "iban", "account_number",
        "ip", "ip_address",
    }
)  # fmt: skip
"""Keys whose values are personal data, wherever they appear (arguments or JSON results)."""

PERSON_WORDS = frozenset(
    {
        "user", "customer", "account", "member", "person", "client", "owner", "patient", "guest",
        "contact", "passenger", "employee", "reporter", "recipient", "sender", "traveler",
        "traveller", "student", "applicant", "caller", "holder", "cardholder", "requester",
    }
)  # fmt: skip
"""Words of a key that make an id a person's id (``user_id``, ``customer_id``): masked as such;
before a personal key they make the key personal too (``patient_name``, ``customer_email``)."""
_SECRET = re.compile(
    r"pass(?:word|wd)?$|secret|token|api[_-]?key|credential|cookie|session", re.IGNORECASE
)
_ID_KEY = re.compile(r"(?:^|_)(?:id|ids|uuid|number|num|no|code|ref|reference)$|Id$")
_CATEGORICAL = re.compile(r"^[a-z]+(?:[_-][a-z]+){0,3}$")
_NAME_PARTS = re.compile(r"[^a-z0-9]+")
_PHRASE = re.compile(r"[a-z][a-z._/:-]*(?: [a-z][a-z._/:-]*){1,3}")

_URL = re.compile(r"https?://\S+|www\.\S+", re.IGNORECASE)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"(?<![\w<])\+?\d[\d\s().-]{7,}\d(?![\w>])")
_ISO_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
)
_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_TEXT_DATE = re.compile(
    rf"\b{_MONTHS}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}\b(?:,?\s+\d{{4}})?"
    r"|\d{4}年\d{1,2}月\d{1,2}[日号]|\d{1,2}月\d{1,2}[日号]",
    re.IGNORECASE,
)
_TIME = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?m\.?\b)?", re.IGNORECASE)
_WORD_ID = re.compile(r"\b([A-Za-z][A-Za-z_\-]*?)[_\-]\d{3,}\b")
_CODE = re.compile(r"\b(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{4,}\b")
_DIGIT_CODE = re.compile(r"\d+(?:[ -]\d+)*")
_MONEY = re.compile(
    r"[$€£¥₹]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars?|usd|eur|euros?|gbp)\b"
    r"|\d[\d,]*(?:\.\d+)?\s?(?:元|円|美元|欧元)",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"(?<![\w<])\d+(?:[.,]\d+)*(?![\w>])")
_MONEY_WORDS = re.compile(
    r"\b(?:amount|price|total|paid|pay|payment|cost|balance|refund|fee|charge|fare|sum|"
    r"credit|budget)s?\b|金额|价格|费用|余额|退款|支付",
    re.IGNORECASE,
)  # whole words: a name such as "payments" or "summary" in the text is not money
_NAME_KEYS = frozenset(
    {
        "name", "first_name", "last_name", "full_name", "middle_name", "firstname", "lastname",
        "given_name", "family_name", "surname", "nickname", "username", "user_name", "login",
        "email", "email_address",
    }
)  # fmt: skip
"""Personal keys whose words name the person: a handle built from them is masked whole."""
_HANDLE = re.compile(r"(?<![\w<.@+-])[A-Za-z0-9]+(?:[_.+-][A-Za-z0-9]+)*(?![\w>@]|[.+-]\w)")
_RUNS = re.compile(r"[a-z]+|[0-9]+")  # a handle's letter runs and digit runs
_TITLE_WORD = re.compile(r"(?<![\w<])[A-Z][a-z]+(?![\w>])")
_NAME_RUN = re.compile(r"<name>(?:[ -]<name>)+")
_PLACEHOLDER = re.compile(r"<[a-z0-9_]+>")


_R = TypeVar("_R")

CACHED_KEY_CHARS = 200
"""Keys up to this length have their tests cached (the last 4,096 of each test): a run
repeats its keys many times, and a longer key is no key a lesson would name."""


def _short_keys_cached(test: Callable[[str], _R]) -> Callable[[str], _R]:
    """``test`` (a pure function of a key) with its answers for short keys cached."""
    cached = functools.lru_cache(maxsize=4096)(test)

    @functools.wraps(test)
    def run(key: str) -> _R:
        return cached(key) if len(key) <= CACHED_KEY_CHARS else test(key)

    run.cache_info = cached.cache_info  # type: ignore[attr-defined]
    return run


@_short_keys_cached
def key_class(key: str) -> str:
    """A key as a class name: lower case, runs of other characters as ``_`` (``"Order ID"`` ->
    ``order_id``); ``value`` for an empty key."""
    return _NAME_PARTS.sub("_", key.strip().lower()).strip("_") or "value"


PERSON_ROLES = frozenset(
    {
        "author", "assignee", "assigned_to", "committer", "creator", "approver", "maintainer",
        "submitter", "uploader", "owner", "on_call",
    }
)  # fmt: skip
"""Keys whose value names the person in a role (``"author": "mgarcia"``), as do the keys of
an act and ``by`` (``created_by``, ``approved_by``, ``written_by``; not ``sort_by``,
``ordered_by``, ``need_by``): personal, so a rule never names who did something, only what
held. Not ``sender`` or ``recipient``: their values are often accounts or addresses, which
keep their own rules."""
_DONE_BY = re.compile(
    r"(?:created|updated|modified|changed|edited|approved|assigned|requested|reported"
    r"|submitted|reviewed|owned|authored|committed|merged|opened|closed|resolved|deleted"
    r"|triggered|initiated|started|cancell?ed|signed|written|uploaded|verified|accepted"
    r"|rejected|handled|processed|sent|added|removed)_?by$"
)


@_short_keys_cached
def personal_key(key: str) -> str | None:
    """The personal key (:data:`PERSONAL_KEYS`, :data:`PERSON_ROLES`) that ``key`` is, or that
    it ends with after a word of :data:`PERSON_WORDS` (``patient_name`` -> ``name``,
    ``customer_email`` -> ``email``); else ``None`` (``product_name``, ``file_name``: not a
    person's)."""
    low = key_class(key)
    if low in PERSONAL_KEYS or low in PERSON_ROLES or _DONE_BY.fullmatch(low):
        return low
    parts = low.split("_")
    for i in range(1, len(parts)):
        tail = "_".join(parts[i:])
        if tail in PERSONAL_KEYS and set(parts[:i]) & PERSON_WORDS:
            return tail
    return None


def _personal_class(cls: str) -> bool:
    """Whether values of the class ``cls`` are a person's: a personal key, an e-mail or phone,
    or an id of a person (``member_id``, ``customer_number``)."""
    if personal_key(cls) is not None or cls in {"email", "phone"}:
        return True
    parts = cls.split("_")
    return len(parts) > 1 and bool(set(parts[:-1]) & PERSON_WORDS) and bool(_ID_KEY.search(cls))


@_short_keys_cached
def identifying(key: str) -> bool:
    """True for keys whose values identify a person, an object or a secret: personal fields
    (:func:`personal_key`), secrets (password, token, api key...) and ids (``*_id``, ``id``,
    ``*_number``, ``*_code``, ``*Id``)."""
    low = key.lower()
    return personal_key(low) is not None or bool(_SECRET.search(low)) or bool(_ID_KEY.search(key))


def is_categorical(value: str) -> bool:
    """True for a short lower-case word or identifier (``economy``, ``one_way``,
    ``basic-economy``): a class already, kept in lessons. Phrases with spaces are free text."""
    return len(value) <= 30 and bool(_CATEGORICAL.match(value))


def is_phrase_class(value: str, masker: Masker | None = None) -> bool:
    """True for a short lower-case phrase of 2-4 words with no digit, no capital and nothing
    ``masker`` would mask (``pnpm install``, ``change of plan``): a command or a category, kept
    in lessons like a single categorical word. Names are capitalised or harvested (masked),
    ids and amounts carry digits, codes are upper-case: none of them passes."""
    text = value.strip()
    if len(text) > 40 or not _PHRASE.fullmatch(text):
        return False
    if masker is None:
        return True
    return masker.mask(text) == text and not set(text.split()) & masker.personal


VALUE_PATTERNS_CACHED = 4096
"""Compiled value patterns kept (least recently used dropped; values are at most 200
characters, so a few MB at most)."""


@dataclass
class Masker:
    """Masks the values of one or several runs in a text (see the module docstring).

    Attributes:
        values: value -> class of every harvested value to mask.
        personal: lower-case words of harvested personal values (names), used to tell a
            person's id (``mia_li_3668``) from a typed id (``gift_card_8190333``).
        names: lower-case words (3+ letters) of the person's names (a name key, or an
            e-mail's local part): a handle holding one (``paypal_seun.adeyemi``) is masked whole,
            as ``<paypal_id>`` (its other word parts) or ``<user_id>``.
        name_words: those of them that are a name on their own (of a name key, or of an
            e-mail's local part of two words or more, ``maria.gonzalez``): written with a
            capital in a text, each is masked as ``<name>`` even apart from its value.
        tools: the names of the run's tools that hold a digit (``getOrderV2``,
            ``search_v2``): a lesson names its tools, so :meth:`mask` leaves them as they are
            where the patterns would take them for a code or a number.
    """

    values: dict[str, str] = field(default_factory=dict)
    personal: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    name_words: set[str] = field(default_factory=set)
    tools: set[str] = field(default_factory=set)
    _patterns: list[tuple[str, str]] | None = field(default=None, repr=False)

    def add(self, key: str, value: Any) -> None:
        """Harvest ``value`` (nested mappings and lists too) found under ``key``."""
        if isinstance(value, Mapping):
            for k, v in value.items():
                self.add(str(k), v)
            return
        if isinstance(value, list | tuple):
            for v in value:
                self.add(key, v)
            return
        if value is None or isinstance(value, bool):
            return
        self._patterns = None
        if isinstance(value, float) or (isinstance(value, int) and abs(value) < 10**8):
            return  # numbers are masked by pattern (<amount> / <number>), wherever they are
        text = " ".join(str(value).split())
        if len(text) < 2 or len(text) > 200:
            return
        personal = personal_key(key)
        if personal is None and _EMAIL.fullmatch(text):  # an address under any key
            named = [w for w in _NAME_PARTS.split(text.split("@")[0].lower()) if w.isalpha()]
            if len(named) >= 2 and all(len(w) >= 3 for w in named):  # first.last@...
                self.personal.update(named)
                self.names.update(named)
                self.name_words.update(named)
        if personal is not None:
            words = _NAME_PARTS.split(text.lower().split("@")[0] if "@" in text else text.lower())
            self.personal.update(w for w in words if len(w) >= 2)
            if personal in _NAME_KEYS:
                named = [w for w in words if len(w) >= 3 and w.isalpha()]
                self.names.update(named)
                if "@" not in text or len(named) >= 2:  # a name, or first.last@...
                    self.name_words.update(named)
            self.values.setdefault(text, key_class(key))
            return
        if identifying(key):
            self.values.setdefault(text, key_class(key))
        elif not is_categorical(text) and (_CODE.fullmatch(text) or _WORD_ID.fullmatch(text)):
            self.values.setdefault(text, key_class(key) if key else "id")
        elif key and _digit_code(text):
            # a code of digits under its own key (``"ndc": "0002-3227-30"``, ``"npi":
            # "1234567893"``): masked as what the key says, not as a phone by its shape
            self.values.setdefault(text, key_class(key))

    def add_json_text(self, text: str) -> None:
        """Harvest the key/value pairs of a JSON document (a tool result); other text is
        ignored."""
        text = text.strip()
        if not text or text[0] not in "[{":
            return
        try:
            self.add("", json.loads(text))
        except (ValueError, RecursionError):
            return

    def add_trajectory(self, traj: Trajectory) -> None:
        """Harvest every tool argument and JSON tool result of ``traj`` and its identifying
        metadata (user ids and the like)."""
        for event in traj.events:
            if event.tool_name and any(c.isdigit() for c in event.tool_name):
                self.tools.add(event.tool_name)
            if event.tool_args:
                self.add("", event.tool_args)
            if event.event_type is EventType.TOOL_RESULT and event.content:
                self.add_json_text(event.content)
        for key, value in traj.metadata.items():
            if identifying(str(key)):
                self.add(str(key), value)
        evidence = getattr(traj, "evidence", None)
        for action in getattr(evidence, "expected_actions", None) or []:
            self.add("", action.args)

    def absorb(self, other: Masker) -> None:
        """Add the values ``other`` harvested (as if its runs had been added here after this
        one's: a value known already keeps its class)."""
        for value, cls in other.values.items():
            self.values.setdefault(value, cls)
        self.personal |= other.personal
        self.names |= other.names
        self.name_words |= other.name_words
        self.tools |= other.tools
        self._patterns = None

    def word_id_class(self, value: str) -> str | None:
        """``gift_card_8190333`` -> ``gift_card_id``; ``None`` when ``value`` is not a word and
        a number, or when its word part is personal (``mia_li_3668``)."""
        match = _WORD_ID.fullmatch(value.strip())
        if not match:
            return None
        kind = key_class(match.group(1))
        if set(kind.split("_")) & (self.personal | PERSON_WORDS):
            return None
        return f"{kind}_id"

    def _known(self) -> list[tuple[str, str]]:
        """``(value, class)`` of every harvested value, longest first."""
        if self._patterns is None:
            pats = []
            for value in sorted(self.values, key=len, reverse=True):  # ids before names in them
                cls = self.values[value]
                if personal_key(cls) is None and not set(cls.split("_")) & PERSON_WORDS:
                    cls = self.word_id_class(value) or cls
                pats.append((value, cls))
            self._patterns = pats
        return self._patterns

    def _mask_known(self, text: str, personal_only: bool = False) -> str:
        """``text`` with the harvested values (``personal_only``: of personal keys, e-mails
        and phones) replaced by their class. A value's pattern (:func:`value_pattern`, case
        folded) is compiled and run only where it can match: an ASCII value absent from an
        ASCII text, compared in lower case, cannot."""
        out = text
        low = out.lower() if out.isascii() else None
        for value, cls in self._known():
            if personal_only and not _personal_class(cls):
                continue
            if low is not None and value.isascii() and value.lower() not in low:
                continue
            new = value_pattern(value).sub(f"<{cls}>", out)
            if new != out:
                out = new
                low = out.lower() if out.isascii() else None
        return out

    def mask_personal(self, text: str) -> str:
        """``text`` with personal data only masked: e-mails, phones, URLs and the harvested
        values of personal keys (names, birth dates, addresses) and of a person's ids
        (``member_id``, ``patient_id``, ``user_id``: a key with a word of
        :data:`PERSON_WORDS`). Other ids and amounts stay."""
        out = _URL.sub("<url>", text)
        out = _EMAIL.sub("<email>", out)
        out = self._mask_known(self._mask_handles(out), personal_only=True)
        return _PHONE.sub(_phone, self._mask_name_words(out))

    def _mask_handles(self, text: str) -> str:
        """Handles that hold one of the person's names (``paypal_seun.adeyemi``,
        ``visa_adeyemi_22``, ``priya_raman88``, ``88priya``) as one class: masking the name alone
        would leave the rest. A handle is cut into letter runs and digit runs; the class is
        made of its other words (``<paypal_id>``), never of digits, initials (``p.raman-07``) or
        the person's words (``<user_id>``). A bare name (one run) is left to the values."""
        if not self.names:
            return text

        def handle(match: re.Match[str]) -> str:
            runs = _RUNS.findall(match.group().lower())
            if len(runs) < 2 or not self.names.intersection(runs):
                return match.group()
            kind = [r for r in runs if len(r) > 1 and r.isalpha() and r not in self.personal]
            return f"<{'_'.join(kind)}_id>" if kind else "<user_id>"

        return _HANDLE.sub(handle, text)

    def _mask_name_words(self, text: str) -> str:
        """Each word of the person's names (:attr:`name_words`) written with a capital
        (``Maria``, ``Gonzalez``: the name alone, without the rest of the value it came in) as
        ``<name>``, a run of them as one."""
        if not self.name_words:
            return text
        out = _TITLE_WORD.sub(
            lambda m: "<name>" if m.group().lower() in self.name_words else m.group(), text
        )
        return _NAME_RUN.sub("<name>", out)

    def mask(self, text: str) -> str:
        """``text`` with every run-specific value replaced by its class (module docstring);
        the run's tool names (:attr:`tools`) stay as they are."""
        if not self.tools:
            return self._mask(text)
        names = sorted((t for t in self.tools if t in text), key=len, reverse=True)
        if not names:
            return self._mask(text)
        # each name as a token of private-use characters no pattern matches, then back
        tokens = {name: f"\ue000{chr(0xE100 + i)}\ue001" for i, name in enumerate(names)}
        edge = r"(?<![\w.-]){}(?![\w-])"
        for name, token in tokens.items():
            text = re.sub(edge.format(re.escape(name)), token, text)
        out = self._mask(text)
        for name, token in tokens.items():
            out = out.replace(token, name)
        return out

    def _mask(self, text: str) -> str:
        out = _URL.sub("<url>", text)
        out = _EMAIL.sub("<email>", out)
        out = _ISO_DATE.sub("<date>", out)
        out = _TEXT_DATE.sub("<date>", out)
        out = _TIME.sub("<time>", out)
        out = self._mask_name_words(self._mask_known(self._mask_handles(out)))
        out = _PHONE.sub(_phone, out)
        out = _WORD_ID.sub(lambda m: f"<{self.word_id_class(m.group()) or 'id'}>", out)
        out = _CODE.sub(lambda m: m.group() if _inside_placeholder(out, m) else "<id>", out)
        out = _MONEY.sub("<amount>", out)

        def number(match: re.Match[str]) -> str:
            digits = match.group().replace(",", "").replace(".", "")
            if len(digits) < 2:
                return match.group()
            before = out[max(0, match.start() - 40) : match.start()]
            if before.endswith(("HTTP/", "http/")):
                return match.group()  # the protocol's version
            starts = not before.strip() or before.rstrip()[-1] in ":([-'\"“‘"
            if _HTTP_STATUS.fullmatch(match.group()) and (
                _HTTP_BEFORE.search(before) or (starts and _HTTP_REASON.match(out, match.end()))
            ):
                return match.group()  # an HTTP status is a kind of error, not a value
            return "<amount>" if _MONEY_WORDS.search(before) else "<number>"

        return _NUMBER.sub(number, out)


_HTTP_STATUS = re.compile(r"[1-5]\d\d")
_HTTP_BEFORE = re.compile(r"\b(?:HTTP(?:/[\d.]+)?|status(?:\s+code)?|error)\s*:?\s*$", re.I)
_HTTP_REASON = re.compile(r"\s*:?\s*[A-Z][a-z]+(?: [A-Z][a-z]+)*\b")
"""An HTTP status: three digits after ``HTTP``, ``status`` or ``error`` (``HTTP 503``,
``error 401``), or starting the text (or a clause) before a reason phrase in title case
(``404 Not Found``)."""


@functools.lru_cache(maxsize=VALUE_PATTERNS_CACHED)
def value_pattern(value: str) -> re.Pattern[str]:
    """The pattern masking ``value`` (case-insensitive), compiled once per value: the runs of
    a task group and both masks of one review share most values, and one review compiles far
    more patterns than ``re``'s own cache (512) keeps."""
    # Word boundaries only where the value starts/ends with an ASCII word character:
    # CJK text has no spaces between words.
    edge_l = r"(?<![\w<])" if _ascii_word(value[:1]) else ""
    edge_r = r"(?![\w>])" if _ascii_word(value[-1:]) else ""
    return re.compile(edge_l + re.escape(value) + edge_r, re.IGNORECASE)


def _ascii_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _digit_code(text: str) -> bool:
    """Whether ``text`` is a code of digits, not a quantity: 6+ digits grouped by dashes or
    spaces or starting with 0 (``0002-3227-30``, ``4006381 333931``), or 9+ digits in one run
    (``1234567893``, where the phone pattern would take it); ``250000`` is a number."""
    if not _DIGIT_CODE.fullmatch(text):
        return False
    digits = sum(c.isdigit() for c in text)
    grouped = not text.isdigit() or text.startswith("0")
    return digits >= 9 or (digits >= 6 and grouped)


def _phone(match: re.Match[str]) -> str:
    return "<phone>" if sum(c.isdigit() for c in match.group()) >= 9 else match.group()


def _inside_placeholder(text: str, match: re.Match[str]) -> bool:
    return any(p.start() <= match.start() < p.end() for p in _PLACEHOLDER.finditer(text))


def masker_for(trajectories: Iterable[Trajectory]) -> Masker:
    """A new :class:`Masker` knowing the values of every trajectory in ``trajectories`` (each
    run harvested once per trajectory object: :func:`harvested`)."""
    masker = Masker()
    for traj in trajectories:
        masker.absorb(harvested(traj))
    return masker


def _harvest(traj: Trajectory) -> Masker:
    masker = Masker()
    masker.add_trajectory(traj)
    return masker


_HARVESTED: RunCache[Masker] = RunCache(_harvest)


def harvested(traj: Trajectory) -> Masker:
    """The values of ``traj`` (:meth:`Masker.add_trajectory`), harvested once per trajectory
    object (:class:`hindsight._runcache.RunCache`): the review's gate and its episode mask
    with the values of the same run. Shared: :meth:`Masker.absorb` it, do not add to it."""
    return _HARVESTED(traj)
