"""What the write path does with one new lesson: an :class:`Op` and its :class:`Decision`.

Decided by the rules (:func:`hindsight.writeback.dedup.decide`) or by the LLM judge
(:class:`hindsight.writeback.judge.Judge`); both import this module, neither the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hindsight.models import Experience

__all__ = ["Decision", "Op"]


class Op(StrEnum):
    """What the write-back does with a new lesson."""

    ADD = "add"
    NOOP = "noop"
    MERGE = "merge"
    SUPERSEDE = "supersede"
    CONFLICT = "conflict"


@dataclass(frozen=True)
class Decision:
    """The decision for one new lesson: ``op``, the existing ``target`` (None for ADD), its
    cosine ``similarity``, a human-readable ``reason`` and, for a judge's MERGE, the merged
    ``content``."""

    op: Op
    target: Experience | None = None
    similarity: float | None = None
    reason: str = ""
    content: str | None = None
    by: str = "rules"
