"""Does a lesson hold run identifiers or personal data? An independent check.

Written apart from the reviewers' masking (:mod:`hindsight.review.masking` is not imported), so
that it checks what they produce rather than mirroring it. A text **holds identifiers** when it
contains any of:

* ``value``: an identifying value of any run of the file, read from the runs themselves: the
  scalars under id-like keys (``id``, ``*_id``, ``*_ids``, ``*_number``, ``*_uuid``) and
  personal keys (e-mail, phone, date of birth, address and what has digits inside it,
  zip/postal code, passport, person names: ``first_name``, ``last_name``, ``full_name``...
  and ``name`` when it is an object or sits next to personal keys) in tool-call arguments and
  JSON tool results, plus any code-like token there (letters and digits mixed, 5+
  characters, like ``ZFA04Y``). Ids and codes match case-insensitively, names and address
  parts case-sensitively, as whole tokens;
* ``email``: an e-mail address; ``phone``: a phone number (7+ digits with separators, not
  a date or a time);
* ``number``: a number of 3 or more digits (amounts, years, ids) outside a placeholder.

Placeholders (``<amount>``, ``<reservation_id>``, anything in angle brackets) are never a
finding. Not collected, as too common to mean a person or a run: values of fewer than 3
characters, plain lowercase words and 3-letter words without a digit under id-like keys
(``economy``, ``JFK``), and the parts of an address or a person without a digit that are not
under a personal key themselves (a city, a country).

:func:`normalized_text` is the masked form two lessons are compared on for the duplicate rate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Finding", "IdentifierDetector", "normalized_text"]

_PLACEHOLDER = re.compile(r"<[^<>\n]{1,60}>")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"(?<![\w])\+?\d[\d\s().-]{5,}\d(?![\w])")
_DATE_OR_TIME = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}-\d{1,2}-\d{4}|\d{1,2}:\d{2}")
_NUMBER = re.compile(r"\d+(?:[,.]\d+)*")
_SPLIT = re.compile(r"[^\s=:/,;()\[\]{}\"'`<>|*]+")
_EDGE = ".!?-'\u2019"
_NAME_PARTS = re.compile(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])")
_CODE = re.compile(
    r"(?<![\w#])(?=[A-Za-z0-9#]*\d)(?=[A-Za-z0-9#]*[A-Za-z])[A-Za-z0-9#]{5,}(?![\w#])"
)

_ID_WORDS = frozenset({"id", "ids", "number", "numbers", "uuid", "guid"})
_PERSONAL_WORDS = frozenset(
    {
        "email",
        "emails",
        "mail",
        "phone",
        "phones",
        "mobile",
        "telephone",
        "dob",
        "birthday",
        "birthdate",
        "birth",
        "address",
        "address1",
        "address2",
        "addresses",
        "street",
        "zip",
        "zipcode",
        "postal",
        "postcode",
        "passport",
        "ssn",
        "surname",
        "username",
        "fullname",
    }
)
_PERSON_NAME_WORDS = frozenset({"first", "last", "middle", "full", "given", "family", "user"})
_MAX_WORDS = 4  # longest multi-word value looked up (a street address, a full name)


def _phone(match: re.Match[str]) -> bool:
    """A phone number: 7+ digits, and not a date or a time (``2024-05-20``, ``15:00``)."""
    text = match.group(0)
    return sum(c.isdigit() for c in text) >= 7 and not _DATE_OR_TIME.search(text)


def _words(key: str) -> list[str]:
    return [p.lower() for p in _NAME_PARTS.split(key) if p]


def _id_like(key: str) -> bool:
    words = _words(key)
    return bool(words) and words[-1] in _ID_WORDS


def _personal(key: str, siblings: Mapping[str, Any]) -> bool:
    words = _words(key)
    if not words:
        return False
    if any(w in _PERSONAL_WORDS for w in words):
        return True
    if words[-1] == "name":
        if len(words) > 1:
            return words[-2] in _PERSON_NAME_WORDS
        # a bare "name": a person's when it is an object or sits next to personal keys
        value = siblings.get(key)
        return isinstance(value, Mapping) or any(k != key and _personal(k, {}) for k in siblings)
    return False


def _parse(text: Any) -> Any:
    if isinstance(text, Mapping | list):
        return text
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _tool_payloads(record: Mapping[str, Any]) -> Iterator[Any]:
    """Tool-call arguments and JSON tool results of one tau-bench / OpenAI-style record."""
    messages = record.get("traj") or record.get("messages") or []
    for msg in messages if isinstance(messages, list) else []:
        if not isinstance(msg, Mapping):
            continue
        for call in msg.get("tool_calls") or []:
            if isinstance(call, Mapping):
                fn = call.get("function") or {}
                if isinstance(fn, Mapping):
                    yield _parse(fn.get("arguments"))
        if msg.get("role") in ("tool", "function"):
            yield _parse(msg.get("content"))


@dataclass(frozen=True)
class Finding:
    """One reason a text holds identifiers: ``kind`` (``value``, ``email``, ``phone``,
    ``number``) and the matched ``text``."""

    kind: str
    text: str


class IdentifierDetector:
    """Finds run identifiers and personal data in lesson texts.

    Args:
        ids: identifying values matched case-insensitively (ids, codes, e-mails).
        names: values matched case-sensitively (person names, address parts).
    """

    def __init__(self, ids: Iterable[str] = (), names: Iterable[str] = ()) -> None:
        self.ids = frozenset(" ".join(v.split()).casefold() for v in ids if v.strip())
        self.names = frozenset(" ".join(v.split()) for v in names if v.strip())

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> IdentifierDetector:
        """Collect the identifying values of every record's tool calls and tool results."""
        ids: set[str] = set()
        names: set[str] = set()

        def walk(value: Any, key: str | None, siblings: Mapping[str, Any], inside: bool) -> None:
            if isinstance(value, Mapping):
                for k, v in value.items():
                    walk(v, str(k), value, inside or _personal(str(k), value))
                return
            if isinstance(value, list):
                for item in value:
                    walk(item, key, siblings, inside)
                return
            if isinstance(value, bool) or not isinstance(value, str | int):
                return
            text = " ".join(str(value).split())
            has_digit = any(c.isdigit() for c in text)
            if len(text) < 3:
                return
            if key is not None and _personal(key, siblings):
                (ids if has_digit or "@" in text else names).add(text)
            elif inside:  # inside an address or a person: what has digits (street, suite)
                if has_digit:
                    ids.add(text)
            elif key is not None and _id_like(key):
                if (has_digit or not (text.isalpha() and text.islower())) and (
                    has_digit or len(text) >= 4
                ):
                    ids.add(text)
            elif isinstance(value, str):
                ids.update(m.group(0) for m in _CODE.finditer(text))

        for record in records:
            for payload in _tool_payloads(record):
                if payload is not None:
                    walk(payload, None, {}, False)
        return cls(ids, names)

    def findings(self, text: str) -> list[Finding]:
        """Every reason ``text`` holds identifiers, in order of kind then position."""
        clean = _PLACEHOLDER.sub(" ", text)
        out: list[Finding] = []
        tokens = [m.group(0).strip(_EDGE) for m in _SPLIT.finditer(clean)]
        tokens = [t for t in tokens if t]
        seen: set[str] = set()
        for size in range(1, _MAX_WORDS + 1):
            for i in range(len(tokens) - size + 1):
                gram = " ".join(tokens[i : i + size])
                if gram in seen:
                    continue
                if gram.casefold() in self.ids or gram in self.names:
                    seen.add(gram)
                    out.append(Finding("value", gram))
        out.extend(Finding("email", m.group(0)) for m in _EMAIL.finditer(clean))
        no_mail = _EMAIL.sub(" ", clean)
        out.extend(Finding("phone", m.group(0)) for m in _PHONE.finditer(no_mail) if _phone(m))
        no_phone = _PHONE.sub(lambda m: " " if _phone(m) else m.group(0), no_mail)
        out.extend(
            Finding("number", m.group(0))
            for m in _NUMBER.finditer(no_phone)
            if sum(c.isdigit() for c in m.group(0)) >= 3
        )
        return out

    def holds(self, text: str) -> bool:
        """True when :meth:`findings` finds anything."""
        return bool(self.findings(text))


def normalized_text(text: str, detector: IdentifierDetector | None = None) -> str:
    """The masked form of ``text`` for the duplicate rate: every placeholder, e-mail, phone,
    identifying value (of ``detector``) and number becomes ``<>``; then case-folded, spaces
    collapsed, trailing punctuation dropped."""
    out = _PLACEHOLDER.sub("<>", text)
    out = _EMAIL.sub("<>", out)
    if detector is not None:
        for finding in sorted(
            (f for f in detector.findings(out) if f.kind == "value"),
            key=lambda f: -len(f.text),
        ):
            out = re.sub(rf"(?<![\w]){re.escape(finding.text)}(?![\w])", "<>", out, flags=re.I)
    out = re.sub(r"\d+(?:[,.]\d+)*", "<>", out)
    return " ".join(out.casefold().split()).rstrip(" .!;:,")
