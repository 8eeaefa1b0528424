"""Compact, privacy-aware descriptions of tool arguments and of how two calls' arguments differ.

Personal fields (names, birth dates, e-mail, ...) and secrets (passwords, tokens, keys) are left
out; ids are reduced to their kind (``credit_card_4421486`` -> ``credit_card``) or left out when
they identify a person, so lessons generalise beyond one user.
"""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple

from hindsight.review._text import one_line, shorten, tokens

__all__ = ["ArgChange", "describe_args", "describe_value", "diff_args", "id_kind"]

_ID_WITH_NUMBER = re.compile(r"^([A-Za-z][A-Za-z_\-]*?)[_\-]\d{3,}$")
_PERSONAL = {
    "name",
    "first_name",
    "last_name",
    "full_name",
    "middle_name",
    "dob",
    "date_of_birth",
    "birthday",
    "birth_date",
    "email",
    "phone",
    "phone_number",
    "address",
    "address1",
    "address2",
    "street",
    "zip",
    "zipcode",
    "postal_code",
    "ssn",
    "passport",
}
_SECRET = re.compile(
    r"pass(?:word|wd)?$|secret|token|api[_-]?key|auth|credential|cookie|session|private",
    re.IGNORECASE,
)
_WHO = {"user", "customer", "account", "member", "person", "client", "owner", "patient"}
_CATEGORICAL = re.compile(r"^(?:[a-z]+(?:_[a-z]+)*|true|false)$")
_MAX_ITEMS = 4
_MAX_SCALAR = 40


def id_kind(value: str) -> str | None:
    """The kind of an id made of a word and a number (``gift_card_123456`` -> ``gift_card``)."""
    match = _ID_WITH_NUMBER.match(value.strip())
    if not match:
        return None
    kind = match.group(1).rstrip("_-")
    return kind if len(kind) >= 3 else None


def _is_id_key(key: str) -> bool:
    low = key.lower()
    return low in {"id", "ids"} or low.endswith(("_id", "_ids", "-id")) or key.endswith("Id")


def _hidden(key: str) -> bool:
    low = key.lower()
    return low in _PERSONAL or bool(_SECRET.search(low))


def _scalar(key: str, value: Any) -> str | None:
    if value is None or _hidden(key):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    text = one_line(str(value))
    if not text:
        return None
    kind = id_kind(text)
    if _is_id_key(key):
        if set(re.split(r"[_\-]", key.lower())) & _WHO:
            return None
        return kind
    if kind is not None:
        return kind
    # Longer text is free prose (summaries, thoughts, messages): noisy and often personal.
    return text if len(text) <= _MAX_SCALAR else None


def _item(value: dict[str, Any]) -> str:
    parts = [
        d
        for k, v in value.items()
        if not isinstance(v, dict | list) and (d := _scalar(str(k), v)) is not None
    ]
    return " ".join(parts)


def describe_value(key: str, value: Any) -> str | None:
    """One argument value in a few words, or ``None`` when it is hidden or says nothing.

    Scalars as themselves (text longer than 40 chars is left out); lists as
    ``[a, b, +N more]`` whose object items are their visible scalar values joined
    (``[certificate 250, credit_card 5]``) or ``N items`` when nothing of them is visible;
    nested objects as ``{k=v, ...}``.
    """
    if isinstance(value, list):
        if not value:
            return "[]"
        items = [
            _item(v) if isinstance(v, dict) else (_scalar(key, v) or "") for v in value[:_MAX_ITEMS]
        ]
        if not any(items):
            return f"{len(value)} item" + ("s" if len(value) != 1 else "")
        shown = [i or "…" for i in items]
        if len(value) > _MAX_ITEMS:
            shown.append(f"+{len(value) - _MAX_ITEMS} more")
        return "[" + ", ".join(shown) + "]"
    if isinstance(value, dict):
        inner = describe_args(value, limit=60)
        return "{" + inner + "}" if inner else None
    return _scalar(key, value)


def describe_args(args: dict[str, Any], *, focus: set[str] | None = None, limit: int = 150) -> str:
    """The salient arguments of a call as ``key=value, ...`` within ``limit`` characters.

    Without ``focus`` every visible argument is listed in call order while it fits. With
    ``focus`` (e.g. the tokens of an error message) only the arguments that share words with
    it (first, most shared first) and those with a categorical value (a lower-case word such
    as ``one_way`` or ``economy``, or a bool) are kept, so a lesson names the conditions of a
    failure rather than one run's particulars; when none qualifies, all are listed. Unparsable
    arguments (``{"_raw": ...}``) are described as ``unparsable JSON arguments``.
    """
    if "_raw" in args and len(args) == 1:
        return "unparsable JSON arguments"
    scored: list[tuple[int, int, str, bool]] = []
    for index, (key, value) in enumerate(args.items()):
        described = describe_value(str(key), value)
        if described is None:
            continue
        overlap = len(tokens(f"{key} {described}") & focus) if focus else 0
        salient = overlap > 0 or bool(_CATEGORICAL.match(described))
        scored.append((-overlap, index, f"{key}={described}", salient))
    if focus and any(salient for *_, salient in scored):
        scored = [row for row in scored if row[3]]
    scored.sort()
    out: list[str] = []
    used = 0
    for _, _, part, _ in scored:
        if used + len(part) + 2 > limit:
            if out:
                continue
            part = shorten(part, limit - 2)
        out.append(part)
        used += len(part) + 2
    return ", ".join(out)


class ArgChange(NamedTuple):
    """How one argument changed between two calls.

    ``op``: ``"value"`` (``old`` -> ``new``), ``"added"`` (``new`` may be ``None`` when
    hidden), ``"dropped"``, or ``"other"`` (the values differ only in hidden parts such as ids
    or personal data).
    """

    op: Literal["value", "added", "dropped", "other"]
    key: str
    old: str | None = None
    new: str | None = None


def diff_args(before: dict[str, Any], after: dict[str, Any]) -> list[ArgChange]:
    """The arguments that differ between ``before`` and ``after``, in ``after``'s key order
    (keys only in ``before`` last); ``[]`` when the arguments are equal."""
    keys = list(dict.fromkeys([*after.keys(), *before.keys()]))
    changes: list[ArgChange] = []
    for key in keys:
        if key in before and key in after and before[key] == after[key]:
            continue
        old = describe_value(key, before[key]) if key in before else None
        new = describe_value(key, after[key]) if key in after else None
        if key not in before:
            changes.append(ArgChange("added", key, None, new))
        elif key not in after:
            changes.append(ArgChange("dropped", key))
        elif old is None or new is None or old == new:
            changes.append(ArgChange("other", key))
        else:
            changes.append(ArgChange("value", key, old, new))
    return changes
