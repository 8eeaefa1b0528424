"""The semantic layer of the guard: the harm model; and the shipped exemplar bank.

* **Harm model.** :func:`~hindsight.guard.harm.harm_frames`: who is harmed, what safeguard is
  removed, where data goes, as slots filled from small multilingual lexicons
  (docs/security.md#layered-detection-and-hindsight-guard-eval).
* **The bank** (``hindsight/guard/exemplars.jsonl``): labelled harmful and benign lessons in
  every harm category of :data:`~hindsight.guard.harm.HARM_CATEGORIES` and the benign kinds,
  hard negatives included, in English, Chinese, Spanish, French, German, Japanese and
  Portuguese: the source of the LLM judge's control lessons (:mod:`hindsight.guard.llm_judge`).
  Two detectors built on it were measured and removed, a nearest-exemplar match and a
  learned clause classifier: with the offline embedders they added nothing, or more false
  positives than detections (docs/security.md#measured-what-generalizes-and-what-does-not).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from hindsight._errors import UsageError
from hindsight.guard.harm import harm_frames

__all__ = [
    "BANK_FILE",
    "Exemplar",
    "SemanticHit",
    "SemanticLayer",
    "load_bank",
]

BANK_FILE = "exemplars.jsonl"
"""The shipped bank, a resource of :mod:`hindsight.guard`."""


@dataclass(frozen=True, slots=True)
class Exemplar:
    """One labelled lesson of the bank: ``label`` ``"harm"`` or ``"benign"``, its
    ``category`` (a harm category, or a benign kind), ``lang`` and ``split`` (``"train"`` or
    ``"calib"``)."""

    id: str
    label: str
    category: str
    content: str
    lang: str = "en"
    split: str = "train"

    @property
    def harmful(self) -> bool:
        return self.label == "harm"

    @classmethod
    def from_record(cls, record: Mapping[str, Any], where: str = "exemplar") -> Exemplar:
        """An exemplar from a bank line or a labelled scan line (``label`` ``"harm"`` /
        ``"poison"`` / ``"benign"``; ``category`` or ``kind``).

        Raises:
            UsageError: the record has no string ``content`` or an unknown ``label``.
        """
        content = record.get("content")
        label = {"poison": "harm"}.get(str(record.get("label")), str(record.get("label")))
        if not isinstance(content, str) or not content.strip():
            raise UsageError(f"{where}: 'content' must be a non-empty string")
        if label not in ("harm", "benign"):
            raise UsageError(f"{where}: 'label' must be harm, poison or benign, got {label!r}")
        return cls(
            id=str(record.get("id", where)),
            label=label,
            category=str(record.get("category") or record.get("kind") or label),
            content=content,
            lang=str(record.get("lang") or "en"),
            split=str(record.get("split") or "train"),
        )


def load_bank() -> list[Exemplar]:
    """The shipped exemplar bank (:data:`BANK_FILE`), in file order."""
    text = resources.files("hindsight.guard").joinpath(BANK_FILE).read_text(encoding="utf-8")
    return [
        Exemplar.from_record(json.loads(line), f"{BANK_FILE}:{n}")
        for n, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]


@dataclass(frozen=True, slots=True)
class SemanticHit:
    """What the semantic layer found: ``part`` ``"harm_model"``, ``category`` (a harm
    category), ``score`` (1.0) and a one-line ``reason``."""

    part: str
    category: str
    score: float
    reason: str


class SemanticLayer:
    """The semantic layer: the harm model (module docstring). No model, no embedder, no state;
    thread-safe."""

    def check(self, content: str) -> list[SemanticHit]:
        """What the harm model finds in the lesson text ``content`` (``[]``: nothing), one
        hit per frame."""
        return [
            SemanticHit(
                "harm_model", frame.category, 1.0, f"semantic.{frame.category}: {frame.describe()}"
            )
            for frame in harm_frames(content)
        ]
