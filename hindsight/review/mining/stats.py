"""The statistics condition mining decides with (docs/review.md#condition-mining).

* :func:`fisher_greater`: Fisher's exact test, one-sided: is the rate of bad decisions
  higher where a condition holds than where it does not? (R. A. Fisher, 1922; the
  hypergeometric tail, computed exactly.)
* :func:`wilson_lower`: the Wilson score interval's lower bound of a rate (E. B. Wilson,
  1927), so that 3 of 3 is not taken for certainty.
* :func:`benjamini_hochberg`: which of many tests stand at a false discovery rate
  (Benjamini and Hochberg, 1995): the miner tries many conditions, and some would look
  separating by chance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["benjamini_hochberg", "fisher_greater", "wilson_lower"]


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_greater(a: int, b: int, c: int, d: int) -> float:
    """One-sided p-value of the 2x2 table ``[[a, b], [c, d]]`` (rows: condition holds / not;
    columns: bad / good) that the first row's bad rate is the higher: the probability, with
    the margins fixed, of ``a`` or more bad decisions in the first row. In [0, 1]."""
    row, col, n = a + b, a + c, a + b + c + d
    if row == 0 or col == 0 or n == 0:
        return 1.0
    denom = _log_comb(n, col)
    top = min(row, col)
    p = sum(
        math.exp(_log_comb(row, k) + _log_comb(n - row, col - k) - denom)
        for k in range(a, top + 1)
        if col - k <= n - row
    )
    return min(1.0, p)


def wilson_lower(hits: int, n: int, z: float = 1.96) -> float:
    """Lower bound of the Wilson score interval of ``hits`` of ``n`` (95% for ``z`` 1.96);
    0 for ``n`` 0."""
    if n <= 0:
        return 0.0
    p = hits / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z * z / n))


def benjamini_hochberg(pvalues: Sequence[float], fdr: float) -> list[bool]:
    """Which of ``pvalues`` are discoveries at false discovery rate ``fdr`` (in (0, 1)):
    the largest ``k`` with ``p_(k) <= k / m * fdr``, and every test at or below it."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    cut = -1
    for rank, i in enumerate(order, start=1):
        if pvalues[i] <= rank / m * fdr:
            cut = rank
    keep = [False] * m
    for rank, i in enumerate(order, start=1):
        keep[i] = rank <= cut
    return keep
