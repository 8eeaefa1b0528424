"""Ranking metrics of the learning benchmark, and their exact values under random ranking.

For one query: ``ranked`` is the list the system returned (best first, at most ``k`` long),
``relevant`` the set of ids that count as relevant, ``pool`` the number of candidates the
system ranks (every active lesson of the tenant).

* ``recall@k = |ranked[:k] & relevant| / |relevant|`` (0 <= recall@k <= min(1, k/|relevant|));
* ``normalized recall@k = |ranked[:k] & relevant| / min(k, |relevant|)``: 1.0 when the top
  ``k`` is as full of relevant items as it can be (the usual recall cannot reach 1 when a
  query has more than ``k`` relevant items);
* ``hit@k = 1`` if any of ``ranked[:k]`` is relevant, else 0 (older reports call its mean
  "recall@5": the share of queries with at least one relevant item in the top 5);
* ``RR@k = 1 / rank`` of the first relevant item within ``ranked[:k]``, 0 if none (MRR is its
  mean over queries).

:func:`random_expectation` gives the exact expected values when the ``pool`` candidates, ``r``
of them relevant, are ranked uniformly at random (no sampling): each relevant item lands in
the top ``k`` with probability ``min(k, pool) / pool``; the chance that the first ``i-1``
places hold no relevant item is ``prod_{j<i-1} (pool-r-j)/(pool-j)``.
:func:`random_subset_probability` is the exact chance that ``k`` items drawn at random from a
pool, each carrying a set of flags, together carry an accepted combination of flags (the
"random block" of the corrective-block figure).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from fractions import Fraction
from math import comb

__all__ = [
    "hit_at_k",
    "normalized_recall_at_k",
    "random_expectation",
    "random_subset_probability",
    "recall_at_k",
    "reciprocal_rank",
]


def _check(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of ``relevant`` found in ``ranked[:k]``.

    Raises:
        ValueError: ``k < 1`` or ``relevant`` is empty (recall is undefined then).
    """
    _check(k)
    if not relevant:
        raise ValueError("recall@k is undefined for a query with no relevant item")
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def normalized_recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """``|ranked[:k] & relevant| / min(k, |relevant|)``, in [0, 1].

    Raises:
        ValueError: ``k < 1`` or ``relevant`` is empty.
    """
    _check(k)
    if not relevant:
        raise ValueError("recall@k is undefined for a query with no relevant item")
    return len(set(ranked[:k]) & set(relevant)) / min(k, len(relevant))


def hit_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 if ``ranked[:k]`` holds a relevant id, else 0.0. Raises ValueError for ``k < 1``."""
    _check(k)
    return 1.0 if set(ranked[:k]) & set(relevant) else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """``1/rank`` (1-based) of the first relevant id in ``ranked[:k]``, 0.0 if there is none.

    Raises:
        ValueError: ``k < 1``.
    """
    _check(k)
    for rank, item in enumerate(ranked[:k], start=1):
        if item in relevant:
            return 1.0 / rank
    return 0.0


def random_expectation(pool: int, relevant: int, k: int) -> dict[str, float]:
    """Exact ``{"recall", "normalized_recall", "hit", "rr"}`` expected at ``k`` for a
    uniformly random ranking of ``pool`` candidates.

    Args:
        pool: candidates ranked (>= 1).
        relevant: how many of them are relevant (1 <= relevant <= pool).
        k: cutoff (>= 1).

    Raises:
        ValueError: out-of-range arguments.
    """
    _check(k)
    if pool < 1 or not 1 <= relevant <= pool:
        raise ValueError(f"need pool >= 1 and 1 <= relevant <= pool, got {pool}, {relevant}")
    shown = min(k, pool)
    miss_all = comb(pool - relevant, shown) / comb(pool, shown)
    rr, none_before = 0.0, 1.0
    for i in range(1, shown + 1):
        # P(first relevant at place i) = P(none in the first i-1) * r / (pool - (i-1))
        rr += none_before * relevant / (pool - i + 1) / i
        none_before *= (pool - relevant - (i - 1)) / (pool - (i - 1))
    found = shown * relevant / pool  # expected relevant items in the top k
    return {
        "recall": shown / pool,
        "normalized_recall": found / min(k, relevant),
        "hit": 1.0 - miss_all,
        "rr": rr,
    }


def random_subset_probability(flags: Sequence[int], k: int, accept: Callable[[int], bool]) -> float:
    """Exact probability that ``min(k, len(flags))`` items drawn uniformly without replacement
    carry, together, an accepted combination of flags.

    Args:
        flags: one bit mask per item of the pool (bit ``i`` set: the item carries flag ``i``).
        k: items drawn (>= 1).
        accept: ``accept(union of the drawn items' masks) -> bool``.

    Returns:
        The probability in [0, 1] (0.0 for an empty pool). Computed by counting subsets per
        union of masks (items with the same mask are interchangeable), in exact fractions.

    Raises:
        ValueError: ``k < 1``.
    """
    _check(k)
    if not flags:
        return 0.0
    draw = min(k, len(flags))
    # ways[j][mask] = number of j-item subsets (of the groups seen so far) whose union is mask
    ways: list[Counter[int]] = [Counter({0: 1})] + [Counter() for _ in range(draw)]
    for mask, count in Counter(flags).items():
        nxt: list[Counter[int]] = [Counter(c) for c in ways]
        for j in range(draw + 1):
            for union, n in ways[j].items():
                for t in range(1, min(count, draw - j) + 1):
                    nxt[j + t][union | mask] += n * comb(count, t)
        ways = nxt
    hits = sum(n for union, n in ways[draw].items() if accept(union))
    return float(Fraction(hits, comb(len(flags), draw)))
