"""The one gate every reviewer's lessons pass: masking and provenance (docs/review.md#masking,
docs/security.md#provenance).

Both reviewers build their lessons through a :class:`LessonGate` of the run(s) they review:

1. every lesson text is masked with :meth:`LessonGate.mask` (run values -> classes,
   :class:`hindsight.review.masking.Masker`), and the gate remembers the words the reviewer
   wrote before masking;
2. :meth:`LessonGate.seal` records, in each lesson's ``metadata["provenance"]``, which span
   sources of the run those raw words draw on and which of their elements came from tool
   output alone (:class:`hindsight.guard.provenance.RunSpans`): masking hides an attacker's
   account number in the stored text, the provenance still knows it was there.

The write path trusts and screens the lesson by that record (:mod:`hindsight.guard.screening`
quarantines a lesson with tainted spans as "instruction from tool output").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hindsight.guard.provenance import PROVENANCE_KEY, SPAN_SOURCES, LessonProvenance, RunSpans
from hindsight.models import Trajectory
from hindsight.ports import Lesson
from hindsight.review.masking import Masker, harvested

__all__ = ["LessonGate", "RecordingMasker"]


@dataclass
class RecordingMasker(Masker):
    """A :class:`Masker` that remembers, for each masked text, every text it was given that
    masks to it (two accounts mask to one ``<id>``: both are remembered)."""

    raw: dict[str, list[str]] = field(default_factory=dict)

    def mask(self, text: str) -> str:
        """``Masker.mask(text)``, remembering ``text`` under the masked result (stripped)."""
        out = super().mask(text)
        given = self.raw.setdefault(out.strip(), [])
        if text.strip() not in given:
            given.append(text.strip())
        return out


class LessonGate:
    """Masking and provenance of the lessons of one review.

    Args:
        trajectory: the reviewed run.
        others: runs the review compares it with (a contrastive review); their values are
            masked too and their tool output is data as well.
    """

    def __init__(self, trajectory: Trajectory, *others: Trajectory) -> None:
        self.masker = RecordingMasker()
        for run in (trajectory, *others):
            self.masker.absorb(harvested(run))
        self.spans = RunSpans.of(trajectory, *others)

    def mask(self, text: str) -> str:
        """``text`` with every run-specific value replaced by its class."""
        return self.masker.mask(text)

    def raw(self, content: str) -> list[str]:
        """Every text a reviewer wrote that this gate masked to the lesson ``content``
        (``[content]`` when none was: a lesson not masked through this gate)."""
        text = content.strip()
        found = list(self.masker.raw.get(text, ()))
        if not found and text.endswith("…"):  # shortened after masking
            head = text[:-1].rstrip()
            found = [r for m, rs in self.masker.raw.items() if m.startswith(head) for r in rs]
        return found or [content]

    def seal(self, lessons: Sequence[Lesson]) -> list[Lesson]:
        """``lessons`` with their provenance in ``metadata["provenance"]``, computed on the
        words before masking (of all of them, when several masked to one text); the lessons
        are copied, not changed."""
        out = []
        for lesson in lessons:
            found = [self.spans.provenance(text) for text in self.raw(lesson.content)]
            record = LessonProvenance(
                tuple(s for s in SPAN_SOURCES if any(s in p.sources for p in found)),
                tuple(dict.fromkeys(t for p in found for t in p.tainted)),
            ).to_dict()
            out.append(
                lesson.model_copy(update={"metadata": {**lesson.metadata, PROVENANCE_KEY: record}})
            )
        return out
