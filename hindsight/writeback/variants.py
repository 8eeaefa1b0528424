"""Lessons with one varying part (docs/review.md#one-lesson-several-fixes): when the same
lesson is learned again with another value in that part, the stored lesson names every value
seen, instead of keeping only the first writer's.

A reviewer marks such a lesson with ``metadata["variants"]``::

    {"template": "When book_reservation fails with '<error>', calling it again with "
                 "{variants} went through.",
     "values": ["payment_methods certificate -> gift_card + credit_card"],
     "join": "; or "}

``template`` is the lesson's text with :data:`SLOT` where the values go (replaced literally,
so braces elsewhere in the text are safe), ``values`` the values seen, oldest first, and
``join`` the separator in the lesson's language. When a lesson with the same ``lesson_key``
and the same ``template`` is folded into it (:mod:`hindsight.writeback.dedup` rule 0), the
values are united and the text is rendered again from the template with the first
:data:`MAX_SHOWN` values (every value stays in the metadata), embedded again and screened by
the guard like any merged wording (a text the guard stops is not written). Anything else (no
variants, a malformed entry, another template) leaves the stored lesson's text as it was.
"""

from __future__ import annotations

from typing import Any

from hindsight.models import Experience

__all__ = [
    "CONTRAST_KEY",
    "CONTRAST_LISTS",
    "KEY",
    "MAX_CONTRAST_VALUES",
    "MAX_SHOWN",
    "SLOT",
    "fold_contrast",
    "fold_variants",
    "render",
    "united",
]

KEY = "variants"
"""The metadata key of a lesson's varying part."""

SLOT = "{variants}"
"""Where the values go in ``template``."""

MAX_SHOWN = 3
"""Values named in the text; more are kept in the metadata only (a lesson stays one sentence)."""

CONTRAST_KEY = "contrast"
"""The metadata key of a contrast rule's difference (:mod:`hindsight.review.contrast`)."""

CONTRAST_LISTS = ("references", "instead")
"""The lists of a contrast entry united on a fold: the reference call's salient argument
classes and the state-changing tools failed runs called in place of a missing call."""

MAX_CONTRAST_VALUES = 8
"""Values kept per contrast list (oldest first): a bound on a lesson's metadata."""


def _valid(entry: Any) -> dict[str, Any] | None:
    if not isinstance(entry, dict):
        return None
    template, values, join = entry.get("template"), entry.get("values"), entry.get("join")
    if not (isinstance(template, str) and template.count(SLOT) == 1 and isinstance(join, str)):
        return None
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        return None
    return entry


def render(entry: dict[str, Any]) -> str:
    """The text of a lesson from its variants entry: ``template`` with the first
    :data:`MAX_SHOWN` ``values`` joined by ``join`` in :data:`SLOT`."""
    shown = entry["join"].join(entry["values"][:MAX_SHOWN])
    return str(entry["template"]).replace(SLOT, shown)


def united(current: Experience, incoming: Experience) -> dict[str, Any] | None:
    """``current``'s variants entry with ``incoming``'s values added, or ``None`` when nothing
    changes (either has no valid entry, the templates differ, or no value is new)."""
    mine = _valid(current.metadata.get(KEY))
    theirs = _valid(incoming.metadata.get(KEY))
    if mine is None or theirs is None or mine["template"] != theirs["template"]:
        return None
    values = list(dict.fromkeys([*mine["values"], *theirs["values"]]))
    if values == mine["values"]:
        return None
    return {**mine, "values": values}


def fold_variants(folded: Experience, incoming: Experience) -> Experience:
    """``folded`` (the stored lesson after :func:`~hindsight.writeback.confidence.folded`)
    with ``incoming``'s values united into its variants entry; unchanged when :func:`united`
    finds nothing new. The text is not touched here: the write-back renders it
    (:func:`render`), embeds it and has the guard screen it first; a text the guard stops is
    not written, and the value is kept in the metadata only."""
    entry = united(folded, incoming)
    if entry is None:
        return folded
    return folded.model_copy(update={"metadata": {**folded.metadata, KEY: entry}})


def fold_contrast(folded: Experience, incoming: Experience) -> Experience:
    """``folded`` with the :data:`CONTRAST_LISTS` of ``incoming``'s ``metadata["contrast"]``
    united into its own (values in order of first appearance, at most
    :data:`MAX_CONTRAST_VALUES` each), so a missing-call rule learned from several runs keeps
    every reference and every tool called in its place; unchanged when either has no contrast
    entry, the entries are about another difference, or nothing is new. The text is not
    touched (these lists feed the risk checks, :mod:`hindsight.checks.compile`)."""
    mine, theirs = folded.metadata.get(CONTRAST_KEY), incoming.metadata.get(CONTRAST_KEY)
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return folded
    if (mine.get("op"), mine.get("tool")) != (theirs.get("op"), theirs.get("tool")):
        return folded
    entry = dict(mine)
    for name in CONTRAST_LISTS:
        old, new = mine.get(name), theirs.get(name)
        if not isinstance(old, list) or not isinstance(new, list):
            continue
        values = [v for v in dict.fromkeys([*old, *new]) if isinstance(v, str) and v]
        entry[name] = values[:MAX_CONTRAST_VALUES]
    if entry == mine:
        return folded
    return folded.model_copy(update={"metadata": {**folded.metadata, CONTRAST_KEY: entry}})
