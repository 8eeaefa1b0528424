"""The learned layer of the guard (issue 17): a clause classifier over sentence embeddings.

Mechanism: a logistic regression (harm vs. benign) on the embedder's vectors, implemented
with numpy and trained on data the project ships for that purpose only - the exemplar bank
(``hindsight/guard/exemplars.jsonl``) and ``hindsight/guard/classifier_exemplars.jsonl``
(harmful and benign lessons in twelve harm categories and ten languages, written for the
classifier; none from the dev set or a blind set). A lesson is split into clauses
(:func:`clauses`); each clause and the whole lesson are scored, and the lesson is flagged when
the highest probability reaches the threshold, so one harmful clause next to benign ones is
still caught.

**Threshold** (:func:`train`): 5-fold cross-validation on the training data (folds by a hash
of the exemplar id, so the split is deterministic); the threshold is the lowest score at which
at most :data:`MAX_VALIDATION_FP` of the benign exemplars are flagged out of fold, never below
0.5. The model is then fit on all of it. Same data, same embedder: same weights (full-batch
gradient descent from zeros, fixed iterations). Nothing of the labelled dev set or the blind
sets is used.

**Cost and caching.** Training embeds the training set once per embedder (about 420 short
texts) and fits six small models; the result (weights, threshold, validation figures) is kept
per process and, with ``cache_dir``, in ``<cache_dir>/guard-classifier-<key>.npz`` (``key``: a
hash of the embedder name and the training data), so later processes load it. Checking a
lesson embeds its clauses (one ``embed`` call).

**What it does and does not do**: the vectors of the shipped offline embedders place "skip
the amount check" next to "never skip the amount check"; measured figures are in
docs/security.md. With the hash embedder (bag of hashed words) the layer runs with weights of
its own, and reads word overlap rather than meaning.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hindsight._errors import UsageError
from hindsight.guard.semantic import Exemplar, _embed, load_bank
from hindsight.ports import Embedder

__all__ = [
    "CLASSIFIER_FILE",
    "MAX_VALIDATION_FP",
    "ClassifierHit",
    "ClauseClassifier",
    "Model",
    "clauses",
    "load_training",
    "train",
]

CLASSIFIER_FILE = "classifier_exemplars.jsonl"
"""The classifier's own training lessons, a resource of :mod:`hindsight.guard`."""
MAX_VALIDATION_FP = 0.01
"""Share of benign training exemplars the threshold may flag out of fold (cross-validation)."""
FOLDS = 5
L2 = 1e-3
"""L2 penalty of the logistic regression (on the weights, not the bias)."""
ITERATIONS = 800
STEP = 1.0
_VERSION = "1"

_CLAUSE_SPLIT = re.compile(
    r"(?<=[.!?;:])\s+|[。！？；\n]+|，|,\s+(?=(?:and|but|then|so|y|pero|et|mais|und|aber|e|ma)\b)",
    re.IGNORECASE,
)
_MIN_CLAUSE_CHARS = 6
_WIDE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def clauses(text: str) -> list[str]:
    """The parts of ``text`` the classifier scores: the whole text first, then each clause
    (split at sentence ends, semicolons and colons, CJK punctuation, and ", and / but / then /
    so" and their Spanish, French, German, Portuguese and Italian equivalents), clauses shorter
    than 6 characters (a Chinese, Japanese or Korean character counts 2) left out, no
    duplicates."""
    whole = " ".join(text.split())
    out = [whole] if whole else []
    for part in _CLAUSE_SPLIT.split(text):
        part = " ".join((part or "").split())
        wide = len(_WIDE.findall(part))
        if len(part) + wide >= _MIN_CLAUSE_CHARS and part not in out:
            out.append(part)
    return out


def load_training() -> list[Exemplar]:
    """The classifier's training data: the exemplar bank and :data:`CLASSIFIER_FILE`."""
    text = resources.files("hindsight.guard").joinpath(CLASSIFIER_FILE).read_text("utf-8")
    own = [
        Exemplar.from_record(json.loads(line), f"{CLASSIFIER_FILE}:{n}")
        for n, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]
    return [*load_bank(), *own]


@dataclass(frozen=True)
class Model:
    """A trained classifier: ``weights`` (one per vector dimension) and ``bias`` of the
    logistic regression, the ``threshold`` on the probability, and its out-of-fold figures on
    the training data (``detected`` of ``harm``, ``false_positives`` of ``benign``)."""

    embedder: str
    key: str
    weights: npt.NDArray[np.float64]
    bias: float
    threshold: float
    detected: int
    harm: int
    false_positives: int
    benign: int

    def figures(self) -> dict[str, Any]:
        """``{"embedder", "threshold", "detected", "harm", "false_positives", "benign"}``."""
        return {
            "embedder": self.embedder,
            "threshold": self.threshold,
            "detected": self.detected,
            "harm": self.harm,
            "false_positives": self.false_positives,
            "benign": self.benign,
        }

    def probability(self, vectors: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """P(harm) per row of ``vectors`` (n x dim)."""
        z = np.asarray(vectors, dtype=np.float64) @ self.weights + self.bias
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -30, 30))), dtype=np.float64)


def _fit(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], float]:
    """Class-balanced L2 logistic regression by full-batch gradient descent from zeros."""
    w = np.zeros(x.shape[1])
    b = 0.0
    pos = max(1.0, float(y.sum()))
    neg = max(1.0, float(len(y) - y.sum()))
    sw = np.where(y == 1, len(y) / (2 * pos), len(y) / (2 * neg))
    for _ in range(ITERATIONS):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w + b, -30, 30)))
        g = (p - y) * sw
        w -= STEP * (x.T @ g / len(y) + L2 * w)
        b -= STEP * float(g.mean())
    return w, b


def _fold(exemplar_id: str) -> int:
    return int(hashlib.sha256(exemplar_id.encode()).hexdigest()[:8], 16) % FOLDS


def _key(embedder: Embedder, data: Sequence[Exemplar]) -> str:
    h = hashlib.sha256(f"{_VERSION}\0{embedder.name}".encode())
    for e in data:
        h.update(f"\0{e.id}\0{e.label}\0{e.content}".encode())
    return h.hexdigest()[:16]


def train(embedder: Embedder, data: Sequence[Exemplar] | None = None) -> Model:
    """Train the classifier for ``embedder`` on ``data`` (default :func:`load_training`):
    threshold by cross-validation, then a fit on everything (module docstring). One
    ``embed`` call for the whole set.

    Raises:
        UsageError: ``data`` lacks harm or benign exemplars.
    """
    data = list(load_training() if data is None else data)
    y = np.array([1.0 if e.harmful else 0.0 for e in data])
    if not y.any() or y.all():
        raise UsageError("the classifier needs harm and benign exemplars to train on")
    x = _embed(embedder, [" ".join(e.content.split()) for e in data]).astype(np.float64)
    folds = np.array([_fold(e.id) for e in data])
    oof = np.zeros(len(data))
    for k in range(FOLDS):
        held = folds == k
        if not held.any() or held.all():
            continue
        w, b = _fit(x[~held], y[~held])
        oof[held] = 1.0 / (1.0 + np.exp(-np.clip(x[held] @ w + b, -30, 30)))
    benign = np.sort(oof[y == 0])
    allowed = int(np.floor(MAX_VALIDATION_FP * len(benign)))
    threshold = max(0.5, float(benign[len(benign) - 1 - allowed]) + 1e-6)
    w, b = _fit(x, y)
    return Model(
        embedder=embedder.name,
        key=_key(embedder, data),
        weights=w,
        bias=b,
        threshold=round(threshold, 6),
        detected=int((oof[y == 1] >= threshold).sum()),
        harm=int(y.sum()),
        false_positives=int((oof[y == 0] >= threshold).sum()),
        benign=int(len(y) - y.sum()),
    )


_MODELS: dict[str, Model] = {}
_MODELS_LOCK = threading.Lock()


def _load(path: Path, embedder: str, key: str) -> Model | None:
    try:
        with np.load(path) as f:
            stats = [int(v) for v in f["stats"]]
            return Model(
                embedder, key, f["weights"], float(f["bias"]), float(f["threshold"]), *stats
            )
    except (OSError, KeyError, ValueError):
        return None


def _save(path: Path, model: Model) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        stats = [model.detected, model.harm, model.false_positives, model.benign]
        np.savez(
            tmp,
            weights=model.weights,
            bias=model.bias,
            threshold=model.threshold,
            stats=np.array(stats),
        )
        tmp.replace(path)
    except OSError:
        pass  # a read-only data dir: the model is kept in memory only


@dataclass(frozen=True, slots=True)
class ClassifierHit:
    """A flagged lesson: ``score`` (the highest P(harm) of its clauses), the ``clause`` that
    scored it, the ``category`` of the nearest harmful training exemplar, a one-line
    ``reason``."""

    score: float
    clause: str
    category: str
    reason: str


class ClauseClassifier:
    """The classifier layer: :func:`train` once per embedder (lazily, thread-safe), then
    :meth:`check` per lesson.

    Args:
        embedder: the embedder whose vectors the model reads.
        data: training exemplars (default :func:`load_training`).
        extra: more exemplars added to ``data`` (a held-out evaluation's other records).
        drop_categories: categories left out of the training data (strict leave-one-out).
        cache_dir: folder for the trained model (``None``: per process only).
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        data: Sequence[Exemplar] | None = None,
        extra: Iterable[Exemplar] = (),
        drop_categories: Iterable[str] = (),
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        drop = set(drop_categories)
        base = load_training() if data is None else list(data)
        self.embedder = embedder
        self.data = [e for e in [*base, *extra] if e.category not in drop]
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self._lock = threading.Lock()
        self._model: Model | None = None
        self._harm: tuple[list[Exemplar], npt.NDArray[np.float32]] | None = None

    @property
    def model(self) -> Model:
        """The trained model (trained, or loaded from ``cache_dir``, on first use)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._train()
        return self._model

    def _train(self) -> Model:
        key = _key(self.embedder, self.data)
        with _MODELS_LOCK:
            known = _MODELS.get(key)
        if known is not None:
            return known
        path = None if self.cache_dir is None else self.cache_dir / f"guard-classifier-{key}.npz"
        model = (
            _load(path, self.embedder.name, key) if path is not None and path.is_file() else None
        )
        if model is None:
            model = train(self.embedder, self.data)
            if path is not None:
                _save(path, model)
        with _MODELS_LOCK:
            _MODELS[key] = model
        return model

    def scores(self, texts: Sequence[str]) -> list[tuple[float, str]]:
        """Per text: the highest P(harm) over its :func:`clauses` and the clause that has it.
        One ``embed`` call for all clauses of all texts."""
        model = self.model
        parts = [clauses(t) or [t] for t in texts]
        flat = [c for p in parts for c in p]
        vectors = np.asarray(self.embedder.embed(flat), dtype=np.float64)
        if vectors.ndim != 2 or vectors.shape[1] != len(model.weights):
            return [(0.0, t) for t in texts]
        probs = model.probability(vectors)
        out = []
        at = 0
        for p in parts:
            chunk = probs[at : at + len(p)]
            best = int(np.argmax(chunk))
            out.append((float(chunk[best]), p[best]))
            at += len(p)
        return out

    def check(self, content: str) -> ClassifierHit | None:
        """The hit for one lesson, or ``None`` when no clause reaches the threshold."""
        ((score, clause),) = self.scores([content])
        return self.hit(score, clause)

    def hit(self, score: float, clause: str) -> ClassifierHit | None:
        """A :class:`ClassifierHit` for a score from :meth:`scores` (``None`` below the
        threshold)."""
        model = self.model
        if score < model.threshold:
            return None
        category = self._category(clause)
        shown = clause if len(clause) <= 80 else clause[:79] + "…"
        return ClassifierHit(
            round(score, 4),
            clause,
            category,
            f"classifier.{category}: P(harm) {score:.2f} >= {model.threshold:.2f} for "
            f"{shown!r} ({model.embedder})",
        )

    def _category(self, clause: str) -> str:
        if self._harm is None:
            harm = [e for e in self.data if e.harmful]
            self._harm = (harm, _embed(self.embedder, [e.content for e in harm]))
        harm, vectors = self._harm
        query = np.asarray(self.embedder.embed([clause])[0], dtype=np.float32)
        if query.shape[0] != vectors.shape[1]:
            return "harm"
        return harm[int(np.argmax(vectors @ query))].category
