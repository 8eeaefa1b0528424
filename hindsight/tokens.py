"""Cheap, offline token estimates for prompt budgets.

hindsight never downloads a tokenizer. The estimate counts one token per CJK character and one
per ~4 characters of other text (the usual rule of thumb for English BPE vocabularies), which
errs on the high side for English prose, so a block that fits the estimate fits the model.
"""

from __future__ import annotations

import math
import re

__all__ = ["estimate_tokens", "truncate_to_tokens"]

_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text`` (int >= 0): CJK chars count 1, other chars 1/4."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def truncate_to_tokens(text: str, max_tokens: int, marker: str = " …[truncated]") -> str:
    """Cut ``text`` so that it (with ``marker``) fits ``max_tokens`` estimated tokens.

    Returns ``text`` unchanged when it fits already.
    """
    if estimate_tokens(text) <= max_tokens:
        return text
    budget = max(0, max_tokens - estimate_tokens(marker))
    lo, hi = 0, len(text)
    while lo < hi:  # largest prefix that fits
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + marker
