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

from hindsight.guard.provenance import PROVENANCE_KEY, RunSpans
from hindsight.models import Trajectory
from hindsight.ports import Lesson
from hindsight.review.masking import Masker

__all__ = ["LessonGate", "RecordingMasker"]


@dataclass
class RecordingMasker(Masker):
    """A :class:`Masker` that remembers, for each masked text, the text it was given."""

    raw: dict[str, str] = field(default_factory=dict)

    def mask(self, text: str) -> str:
        """``Masker.mask(text)``, remembering ``text`` under the masked result (stripped)."""
        out = super().mask(text)
        self.raw.setdefault(out.strip(), text.strip())
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
            self.masker.add_trajectory(run)
        self.spans = RunSpans(trajectory, *others)

    def mask(self, text: str) -> str:
        """``text`` with every run-specific value replaced by its class."""
        return self.masker.mask(text)

    def raw(self, content: str) -> str:
        """The words a reviewer wrote for the lesson ``content`` before masking (``content``
        itself when it was not masked through this gate)."""
        text = content.strip()
        found = self.masker.raw.get(text)
        if found is None and text.endswith("…"):  # shortened after masking
            head = text[:-1].rstrip()
            found = next((r for m, r in self.masker.raw.items() if m.startswith(head)), None)
        return content if found is None else found

    def seal(self, lessons: Sequence[Lesson]) -> list[Lesson]:
        """``lessons`` with their provenance in ``metadata["provenance"]`` (computed on the
        words before masking); the lessons are copied, not changed."""
        out = []
        for lesson in lessons:
            record = self.spans.provenance(self.raw(lesson.content)).to_dict()
            out.append(
                lesson.model_copy(update={"metadata": {**lesson.metadata, PROVENANCE_KEY: record}})
            )
        return out
