"""The semantic layer of the guard (issue 17 item 1): nearest exemplars and the harm model.

Two detectors that do not depend on the rule list's trigger words:

* **Nearest exemplar.** A shipped, labelled bank of harmful and benign lessons
  (``hindsight/guard/exemplars.jsonl``: every harm category of :data:`~hindsight.guard.harm.
  HARM_CATEGORIES` and the benign kinds, hard negatives included, in English, Chinese, Spanish,
  French, German, Japanese and Portuguese) is embedded once per embedder. A lesson's vector -
  the one the write path computed anyway, so the layer costs no extra embedding - is compared
  with every exemplar: it is flagged when its most similar harmful exemplar is at least
  ``threshold`` similar *and* more similar than the most similar benign one by at least
  ``margin``, *and* it advises that exemplar category's act (a removal, moving, paying,
  hiding, destroying or granting verb in the polarity of advice: :func:`~hindsight.guard.harm.
  acts`). Embeddings place "never skip validation" next to "skip validation"; the stance check
  keeps the benign one out. The category is the nearest harmful exemplar's.
* **Harm model.** :func:`~hindsight.guard.harm.harm_frames`: who is harmed, what safeguard is
  removed, where data goes, as slots filled from small multilingual lexicons.

**Thresholds per embedder** (:func:`calibrate`): leave-one-out over the bank - every
exemplar is scored against all the others (stance check included); among the (threshold,
margin) pairs on a grid, the one that detects the most harm exemplars while flagging none of
the benign ones is kept (ties: the higher threshold, then the higher margin). An embedder
whose best pair detects less than :data:`MIN_DETECTED` of the harm exemplars gets no
threshold: the part does not run with it. This runs once per embedder (by name) on first
use, so any embedder gets thresholds of its own; the values for the shipped offline embedders are in
docs/security.md. Nothing of the labelled dev set is used.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from hindsight._errors import UsageError
from hindsight.guard.harm import acts, harm_frames
from hindsight.ports import Embedder

__all__ = [
    "BANK_FILE",
    "Calibration",
    "Exemplar",
    "SemanticLayer",
    "calibrate",
    "load_bank",
]

BANK_FILE = "exemplars.jsonl"
"""The shipped bank, a resource of :mod:`hindsight.guard`."""

_GRID_THRESHOLDS = tuple(round(0.10 + 0.02 * i, 2) for i in range(41))  # 0.10 .. 0.90
_GRID_MARGINS = tuple(round(-0.10 + 0.02 * i, 2) for i in range(16))  # -0.10 .. 0.20


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
class Calibration:
    """Thresholds of the nearest-exemplar detector for one embedder, and how they did on the
    bank, leave-one-out (``detected`` of ``harm``, ``false_positives`` of ``benign``).
    ``threshold`` is ``None`` when the embedder cannot separate the bank (the part is off)."""

    embedder: str
    threshold: float | None
    margin: float
    detected: int
    harm: int
    false_positives: int
    benign: int


_VECTORS: dict[tuple[str, str], npt.NDArray[np.float32]] = {}
_VECTORS_MAX = 20_000
_VECTORS_LOCK = threading.Lock()


def _embed(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """``embedder.embed(texts)`` with the bank's vectors remembered per embedder name (the
    bank is embedded once per process, whatever the number of layers built on it)."""
    name = embedder.name
    with _VECTORS_LOCK:
        known = {t: _VECTORS[(name, t)] for t in texts if (name, t) in _VECTORS}
    missing = list(dict.fromkeys(t for t in texts if t not in known))
    if missing:
        fresh = np.asarray(embedder.embed(missing), dtype=np.float32)
        known.update(zip(missing, fresh, strict=True))
        with _VECTORS_LOCK:
            if len(_VECTORS) + len(missing) > _VECTORS_MAX:
                _VECTORS.clear()
            _VECTORS.update({(name, t): v for t, v in zip(missing, fresh, strict=True)})
    return np.stack([known[t] for t in texts]).astype(np.float32)


def _nearest(
    queries: npt.NDArray[np.float32],
    refs: npt.NDArray[np.float32],
    harmful: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.intp]]:
    """Per query: the best similarity to a harmful and to a benign reference, and the index of
    the best harmful one (``-1`` when there is none)."""
    sims = queries @ refs.T
    harm = np.where(harmful[None, :], sims, -np.inf)
    benign = np.where(~harmful[None, :], sims, -np.inf)
    best = np.argmax(harm, axis=1) if harmful.any() else np.full(len(queries), -1)
    return harm.max(axis=1, initial=-1.0), benign.max(axis=1, initial=-1.0), best


MIN_MARGIN = 0.02
"""A lesson must be at least this much closer to the harmful exemplar than to any benign one
(cosine): being as close to both says nothing."""
MIN_DETECTED = 0.05
"""Share of the bank's harm exemplars the calibrated thresholds must detect (leave-one-out,
no benign exemplar flagged) for the nearest-exemplar part to run at all with an embedder: one
that cannot separate the bank's harm from its benign exemplars would only add noise."""


def calibrate(embedder: Embedder, bank: Sequence[Exemplar] | None = None) -> Calibration:
    """Pick the (threshold, margin) of the nearest-exemplar detector for ``embedder`` on the
    bank, leave-one-out: every exemplar in turn is scored against all the others (its own
    stance check included), and among the pairs of the grid the one that detects the most
    harm exemplars while flagging **no** benign exemplar is kept (ties: the higher threshold,
    then the higher margin; the margin is at least :data:`MIN_MARGIN`). One ``embed`` call for
    the whole bank. When even the best pair detects less than :data:`MIN_DETECTED` of the harm
    exemplars, ``threshold`` is ``None``: the part is off for this embedder.

    Raises:
        UsageError: the bank has no exemplar of either label.
    """
    bank = list(load_bank() if bank is None else bank)
    if not any(e.harmful for e in bank) or all(e.harmful for e in bank):
        raise UsageError("the exemplar bank needs harm and benign exemplars")
    vectors = _embed(embedder, [e.content for e in bank])
    harmful = np.array([e.harmful for e in bank])
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)  # leave each exemplar out of its own neighbours
    s_harm = np.where(harmful[None, :], sims, -np.inf).max(axis=1)
    s_benign = np.where(~harmful[None, :], sims, -np.inf).max(axis=1)
    nearest = np.argmax(np.where(harmful[None, :], sims, -np.inf), axis=1)
    stance = np.array(
        [bank[int(b)].category in acts(e.content) for e, b in zip(bank, nearest, strict=True)]
    )
    best: tuple[int, float, float] | None = None
    for threshold in _GRID_THRESHOLDS:
        for margin in _GRID_MARGINS:
            if margin < MIN_MARGIN:
                continue
            flagged = stance & (s_harm >= threshold) & (s_harm - s_benign >= margin)
            if flagged[~harmful].any():
                continue
            key = (int(flagged[harmful].sum()), threshold, margin)
            if best is None or key > best:
                best = key
    detected, threshold, margin = best or (0, _GRID_THRESHOLDS[-1], _GRID_MARGINS[-1])
    usable = detected >= MIN_DETECTED * int(harmful.sum())
    return Calibration(
        embedder=embedder.name,
        threshold=threshold if usable else None,
        margin=margin,
        detected=detected,
        harm=int(harmful.sum()),
        false_positives=0,
        benign=int((~harmful).sum()),
    )


@dataclass(frozen=True, slots=True)
class SemanticHit:
    """What the semantic layer found: ``part`` ``"harm_model"`` or ``"exemplar"``,
    ``category``, ``score`` (1.0 for the harm model; the similarity to the nearest harmful
    exemplar otherwise) and a one-line ``reason``."""

    part: str
    category: str
    score: float
    reason: str


class SemanticLayer:
    """The semantic layer: the harm model plus nearest exemplars (module docstring).

    Args:
        embedder: embeds the bank (once) and, when no vector is given, the lesson; ``None``
            runs the harm model only.
        bank: the exemplars (default :func:`load_bank`).
        extra: more exemplars (all used as references, never for calibration), e.g. a
            labelled set minus a held-out part (``hindsight guard eval --exemplars``).
        drop_categories: categories left out of the bank and ``extra`` (a strict
            leave-one-category-out evaluation).
        parts: ``"harm_model"`` and/or ``"exemplar"``.

    Thread-safe: the bank's vectors and thresholds are computed once, under a lock.
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        bank: Sequence[Exemplar] | None = None,
        extra: Iterable[Exemplar] = (),
        drop_categories: Iterable[str] = (),
        parts: Iterable[str] = ("harm_model", "exemplar"),
    ) -> None:
        self.parts = frozenset(parts)
        unknown = sorted(self.parts - {"harm_model", "exemplar"})
        if unknown:
            raise UsageError(f"unknown semantic parts {unknown}; known: harm_model, exemplar")
        drop = set(drop_categories)
        self.embedder = embedder
        self.bank = [e for e in (load_bank() if bank is None else bank) if e.category not in drop]
        self.extra = [e for e in extra if e.category not in drop]
        self._lock = threading.Lock()
        self._refs: tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]] | None = None
        self._calibration: Calibration | None = None

    @property
    def uses_vectors(self) -> bool:
        """True when the nearest-exemplar part runs (it needs an embedder)."""
        return self.embedder is not None and "exemplar" in self.parts

    @property
    def calibration(self) -> Calibration | None:
        """The thresholds in use (computed on first use; ``None`` without an embedder)."""
        if not self.uses_vectors:
            return None
        self._prepare()
        return self._calibration

    def _prepare(self) -> None:
        if self._refs is not None:
            return
        with self._lock:
            if self._refs is not None:
                return
            assert self.embedder is not None
            self._calibration = calibrate(self.embedder, self.bank)
            refs = self.bank + self.extra
            vectors = _embed(self.embedder, [e.content for e in refs])
            self._refs_list = refs
            self._refs = (vectors, np.array([e.harmful for e in refs]))

    def check(self, content: str, vector: npt.ArrayLike | None = None) -> list[SemanticHit]:
        """What the semantic layer finds in one lesson (``[]``: nothing).

        Args:
            content: the lesson text.
            vector: its embedding by this layer's embedder (L2-normalised); ``None`` embeds
                it (one call) when the nearest-exemplar part runs.
        """
        hits: list[SemanticHit] = []
        if "harm_model" in self.parts:
            for frame in harm_frames(content):
                hits.append(
                    SemanticHit(
                        "harm_model",
                        frame.category,
                        1.0,
                        f"semantic.{frame.category}: {frame.describe()}",
                    )
                )
        if self.uses_vectors:
            hit = self._nearest(content, vector)
            if hit is not None:
                hits.append(hit)
        return hits

    def _nearest(self, content: str, vector: npt.ArrayLike | None) -> SemanticHit | None:
        self._prepare()
        assert self._refs is not None and self._calibration is not None
        refs, harmful = self._refs
        if vector is None:
            assert self.embedder is not None
            vector = self.embedder.embed([content])[0]
        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        if query.shape[1] != refs.shape[1] or not np.isfinite(query).all():
            return None
        cal = self._calibration
        if cal.threshold is None:
            return None
        s_harm, s_benign, best = _nearest(query, refs, harmful)
        score, gap = float(s_harm[0]), float(s_harm[0] - s_benign[0])
        if best[0] < 0 or score < cal.threshold or gap < cal.margin:
            return None
        near = self._refs_list[int(best[0])]
        if near.category not in acts(content):
            return None  # close in topic, but the lesson does not advise the act
        shown = " ".join(near.content.split())
        shown = shown if len(shown) <= 80 else shown[:79] + "…"
        return SemanticHit(
            "exemplar",
            near.category,
            round(score, 4),
            f"semantic.{near.category}: close to the harmful exemplar {shown!r} "
            f"(similarity {score:.2f}, {gap:+.2f} over the nearest benign one)",
        )
