"""Synthetic lessons and the small statistics the benchmark reports
(docs/benchmarks.md#hindsight-bench)."""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from hindsight.models import Experience, ExperienceKind

__all__ = [
    "KINDS",
    "TASK_TYPES",
    "TENANTS",
    "latency_summary",
    "peak_rss_mb",
    "percentile",
    "synthetic_experiences",
    "synthetic_lessons",
]

TENANTS = 10
"""Tenants the synthetic experiences are spread over (every recall is scoped to one)."""
TASK_TYPES = 7
"""Task types per tenant."""
KINDS = (ExperienceKind.IMPROVEMENT, ExperienceKind.RULE, ExperienceKind.TOOL_RELIABILITY)
"""Kinds cycled through: two advice kinds (guard conflict test on) and one observation."""

_TOOLS = [
    f"{verb}_{noun}"
    for verb in ("get", "update", "cancel", "search", "create", "sync", "charge", "lookup")
    for noun in ("order", "refund", "booking", "invoice", "address", "ticket", "profile")
]
_ERRORS = [
    "timed out at peak hours",
    "rejected an unknown payment method",
    "failed because the amounts were off by a cent",
    "returned 429 rate limited",
    "needed the reservation id",
    "returned stale data",
    "failed with a 502",
    "rejected a date in the past",
    "required user confirmation first",
    "answered with an empty page",
    "mixed up the time zones",
    "dropped the second passenger",
    "returned prices in the wrong currency",
    "was slow on large accounts",
    "lost the session after a redirect",
    "truncated long addresses",
]
_FIXES = [
    "retry once, then fall back to the cache",
    "ask the user for the missing id",
    "split the payment so it adds up to the total",
    "wait one second and retry",
    "confirm the details with the user before calling it",
    "use the cached copy from the morning",
    "validate the date before calling it",
    "page through the results in chunks of fifty",
    "convert every time to UTC first",
    "list each passenger separately",
    "read the currency field and convert",
    "call the batch endpoint at night",
    "keep the session token in the request",
    "send the address in two lines",
]
_CONTEXTS = [
    "for premium members",
    "during the holiday sale",
    "on mobile checkouts",
    "for group bookings",
    "right after a password reset",
    "for accounts older than a year",
    "on international orders",
    "when the cart has gift cards",
    "for partner agencies",
    "on the first login of the day",
    "for travel insurance add-ons",
    "when loyalty points are used",
]


def synthetic_lessons(n: int, seed: int = 7) -> list[str]:
    """``n`` distinct, realistic one-sentence lessons (deterministic for a ``seed``).

    Each combines a tool, an error, a context and a fix (56 x 16 x 12 x 14 = 150,528
    combinations, drawn without repeats while they last, then with a run number appended), so
    nearest neighbours usually differ in more than one clause: mostly new lessons for the write
    path, with a few near-duplicates and value conflicts, as in real reviews.

    Raises:
        ValueError: ``n`` is negative.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    space = len(_TOOLS) * len(_ERRORS) * len(_CONTEXTS) * len(_FIXES)
    picks = rng.sample(range(space), min(n, space))
    picks += [rng.randrange(space) for _ in range(n - len(picks))]
    out = []
    for i, code in enumerate(picks):
        code, tool = divmod(code, len(_TOOLS))
        code, err = divmod(code, len(_ERRORS))
        fix, ctx = divmod(code, len(_CONTEXTS))
        tail = "" if i < space else f" (run {i})"
        out.append(f"When {_TOOLS[tool]} {_ERRORS[err]} {_CONTEXTS[ctx]}, {_FIXES[fix]}{tail}.")
    return out


def synthetic_experiences(
    texts: Sequence[str], *, embedding_model: str, now: datetime, tenants: Sequence[str]
) -> list[Experience]:
    """One experience per text, spread round-robin over ``tenants``, :data:`TASK_TYPES` task
    types and :data:`KINDS`, with confidences 0.5-0.9 (the recall score's confidence term)."""
    return [
        Experience(
            tenant_id=tenants[i % len(tenants)],
            kind=KINDS[i % len(KINDS)],
            content=text,
            task_type=f"type-{i % TASK_TYPES}",
            confidence=0.5 + (i % 5) / 10,
            created_at=now,
            updated_at=now,
            embedding_model=embedding_model,
        )
        for i, text in enumerate(texts)
    ]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values``, linear interpolation (numpy's default).

    Raises:
        ValueError: ``values`` is empty.
    """
    if len(values) == 0:
        raise ValueError("percentile of no values")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def latency_summary(
    values: Sequence[float], quantiles: Sequence[int] = (50, 95, 99)
) -> dict[str, float]:
    """``{"p50": ..., "p95": ..., "p99": ...}`` of ``values`` (same unit as the values)."""
    return {f"p{q}": percentile(values, q) for q in quantiles}


def peak_rss_mb() -> float | None:
    """Peak resident memory of this process so far, in MiB (``resource.getrusage``; psutil's
    current RSS where ``resource`` is missing, i.e. Windows), or ``None`` when neither works."""
    try:
        import resource
    except ImportError:
        try:
            import psutil
        except ImportError:
            return None
        return float(psutil.Process().memory_info().rss) / 2**20
    peak = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB else
