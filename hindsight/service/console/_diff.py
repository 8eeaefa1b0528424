"""What changed between two versions of an experience: a word diff of the content and the
other fields a rollback restores (:data:`hindsight.writeback.versions.ROLLED_BACK_FIELDS`)."""

from __future__ import annotations

import difflib
import re
from typing import Any

from hindsight.models import Experience
from hindsight.writeback.versions import ROLLED_BACK_FIELDS

__all__ = ["field_changes", "word_diff"]

_TOKENS = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """``[(op, text)]`` with ``op`` ``same``, ``del`` or ``ins``, word by word (whitespace
    kept), so that joining the ``same`` and ``del`` parts gives ``old`` and the ``same`` and
    ``ins`` parts give ``new``."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(("ins", "".join(b[j1:j2])))
    return out


def _plain(value: Any) -> Any:
    return getattr(value, "value", value)


def field_changes(old: Experience, new: Experience) -> list[dict[str, Any]]:
    """The fields besides ``content`` that differ: ``[{"field", "old", "new"}]``."""
    return [
        {"field": name, "old": _plain(getattr(old, name)), "new": _plain(getattr(new, name))}
        for name in ROLLED_BACK_FIELDS
        if name != "content" and getattr(old, name) != getattr(new, name)
    ]
