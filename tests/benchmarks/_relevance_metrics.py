"""Ranking metrics of the relevance benchmark, and their exact values under random ranking.

For one query: ``ranked`` is the list the system returned (best first, at most ``k`` long),
``relevant`` the set of ids that count as relevant, ``pool`` the number of candidates the
system ranks (every active lesson of the tenant).

* ``recall@k = |ranked[:k] & relevant| / |relevant|`` (0 <= recall@k <= min(1, k/|relevant|));
* ``hit@k = 1`` if any of ``ranked[:k]`` is relevant, else 0;
* ``RR@k = 1 / rank`` of the first relevant item within ``ranked[:k]``, 0 if none (MRR is its
  mean over queries).

:func:`random_expectation` gives the exact expected values when the ``pool`` candidates, ``r``
of them relevant, are ranked uniformly at random (no sampling): each relevant item lands in
the top ``k`` with probability ``min(k, pool) / pool``; the chance that the first ``i-1``
places hold no relevant item is ``prod_{j<i-1} (pool-r-j)/(pool-j)``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from math import comb

__all__ = ["hit_at_k", "random_expectation", "recall_at_k", "reciprocal_rank"]


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
    """Exact ``{"recall", "hit", "rr"}`` expected at ``k`` for a uniformly random ranking.

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
    return {"recall": shown / pool, "hit": 1.0 - miss_all, "rr": rr}
