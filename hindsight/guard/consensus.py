"""Consensus across a recalled set: flag the outliers that contradict the majority (layer 3).

A poisoned lesson that slipped past the before-write rules usually *contradicts* what the
memory already knows ("skip the amount check" among three lessons that say "validate the
amount"). After recall, before rendering, :func:`find_outliers` looks at the recalled items
together and flags such outliers, offline (no model call):

* **majority** - an item that contradicts (:meth:`ConflictScore.contradicts`) at least
  :data:`MIN_OPPONENTS` (2) other recalled items which do not contradict each other, and
  whose opponents outnumber its own side (the items that agree with it, plus itself), is
  flagged: 2 against 1 is decided, 2 against 2 is not;
* **embedding outlier** - when embeddings are given and a contradiction is left undecided by
  the majority rule (a tie such as one against one), the side whose mean cosine similarity to
  the rest of the recalled set is lower by at least :data:`OUTLIER_MARGIN` (0.10) is flagged;
  it is the item that does not belong to the cluster the query found. With fewer than three
  items, or a smaller gap, nothing is flagged: two lessons that disagree are both shown, as
  nobody can tell which is right.

"Agree" means: the same topic (key-term overlap at least ``min_overlap`` with at least two
shared terms, as for a contradiction) and the same polarity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hindsight.guard.conflict import ConflictScore, key_terms, polarity
from hindsight.models import ExperienceKind

__all__ = ["ADVICE_KINDS", "MIN_OPPONENTS", "OUTLIER_MARGIN", "Outlier", "find_outliers"]

ADVICE_KINDS = frozenset(
    {ExperienceKind.RULE, ExperienceKind.IMPROVEMENT, ExperienceKind.ANTI_PATTERN}
)
"""Kinds that tell an agent what to do. Only these take part in the conflict test (and in the
consensus check after recall): two runs that ended differently, or two tools that failed with
different errors, are observations, not contradicting advice. Measured on the 200 real
tau-bench runs: testing every kind quarantined 36 of 673 harmless lessons (outcomes of similar
tasks "conflict"), testing advice kinds none (docs/security.md). An experience of any other
kind - above all an ``episode``, a factual summary of one run - is never conflict-tested, even
when ``existing`` is handed to
:meth:`hindsight.guard.screening.WriteScreen.check`; the rules and the taint check still
run on it (on an episode the review wrote, the rules read only the words it did not build from
the run's record: :func:`hindsight.guard.screening.episode_words`)."""

MIN_OPPONENTS = 2
"""Recalled items an outlier must contradict for the majority rule (A-MemGuard's consensus
check compares an entry with several others; two is the smallest majority against one)."""
OUTLIER_MARGIN = 0.10
"""Gap in mean cosine similarity (to the rest of the recalled set) that decides a one-to-one
contradiction for the embedding rule."""


@dataclass(frozen=True, slots=True)
class Outlier:
    """An item of the recalled set flagged by :func:`find_outliers`.

    ``index`` is its position in the input, ``against`` the positions of the items it
    contradicts, ``rule`` ``"majority"`` or ``"embedding"`` and ``reason`` one line for
    explanations.
    """

    index: int
    against: tuple[int, ...]
    rule: str
    reason: str


def _relations(texts: Sequence[str], min_overlap: float) -> tuple[list[set[int]], list[set[int]]]:
    terms = [key_terms(t) for t in texts]
    signs = [polarity(t) for t in texts]
    n = len(texts)
    contra: list[set[int]] = [set() for _ in range(n)]
    agree: list[set[int]] = [set() for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            shared = terms[i] & terms[j]
            smaller = min(len(terms[i]), len(terms[j]))
            score = ConflictScore(
                shared, len(shared) / smaller if smaller else 0.0, signs[i], signs[j]
            )
            if score.contradicts(min_overlap):
                contra[i].add(j)
                contra[j].add(i)
            elif signs[i] == signs[j] and len(shared) >= 2 and score.overlap >= min_overlap:
                agree[i].add(j)
                agree[j].add(i)
    return contra, agree


def _mean_similarity(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    sims = unit @ unit.T
    n = len(vectors)
    return np.asarray((sims.sum(axis=1) - np.diag(sims)) / max(1, n - 1), dtype=np.float64)


def find_outliers(
    texts: Sequence[str],
    vectors: npt.ArrayLike | Callable[[], npt.ArrayLike | None] | None = None,
    *,
    min_overlap: float = 0.6,
    min_opponents: int = MIN_OPPONENTS,
    margin: float = OUTLIER_MARGIN,
) -> list[Outlier]:
    """Flag the items of a recalled set that contradict its majority.

    Args:
        texts: the recalled experiences' contents, best first.
        vectors: optional embeddings, shape ``(len(texts), dimension)``, for the embedding
            rule, or a function returning them (called only when a contradiction is left for
            that rule to decide); ``None`` applies the majority rule only.
        min_overlap: key-term overlap (0-1) for two items to be on the same topic.
        min_opponents: contradictions needed by the majority rule.
        margin: mean-similarity gap (cosine) for the embedding rule.

    Returns:
        The flagged items, in input order; ``[]`` when the set agrees or nothing can be decided.

    Raises:
        ValueError: ``vectors`` does not have one row per text.
    """
    n = len(texts)
    if n < 2:
        return []
    contra, agree = _relations(texts, min_overlap)
    flagged: dict[int, Outlier] = {}
    for i in range(n):
        opponents = contra[i]
        if len(opponents) < min_opponents or len(opponents) <= len(agree[i]) + 1:
            continue
        if any(contra[j] & opponents for j in opponents):
            continue  # the opponents do not agree among themselves: no majority
        flagged[i] = Outlier(
            i,
            tuple(sorted(opponents)),
            "majority",
            f"contradicts {len(opponents)} other recalled experiences that agree with each other",
        )
    undecided = any(i not in flagged and contra[i] for i in range(n))
    if callable(vectors):
        vectors = vectors() if undecided and n >= 3 else None
    if vectors is not None and n >= 3 and undecided:
        array = np.asarray(vectors, dtype=np.float32)
        if array.ndim != 2 or array.shape[0] != n:
            raise ValueError(f"vectors must have shape ({n}, dimension), got {array.shape}")
        mean = _mean_similarity(array)
        for i in range(n):
            if i in flagged:
                continue
            for j in sorted(contra[i]):
                if j in flagged or i in flagged:
                    continue
                if len(contra[i]) < len(agree[i]) + 1:
                    continue
                if mean[j] - mean[i] >= margin:
                    flagged[i] = Outlier(
                        i,
                        (j,),
                        "embedding",
                        f"contradicts another recalled experience and is an outlier in the "
                        f"recalled set (mean similarity {mean[i]:.2f} vs {mean[j]:.2f})",
                    )
    return [flagged[i] for i in sorted(flagged)]
