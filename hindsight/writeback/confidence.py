"""Confidence from outcomes and by hand (MISSION S3, issue 4 item 2).

Amounts (documented in docs/lifecycle.md):

* :data:`OUTCOME_SUCCESS_DELTA` (+0.05) to every experience a **successful** run recalled, and
  ``helped_count + 1``;
* :data:`OUTCOME_FAILURE_DELTA` (-0.10) to every experience a **failed** run recalled, and
  ``misled_count + 1`` (the memory guard, issue 5, demotes and quarantines repeat offenders
  from ``misled_count``);
* :data:`SUPPORT_BONUS` (+0.05) when the same lesson is learned again (write-back dedup);
* :data:`SUPERSEDE_PENALTY` (-0.20) when a newer lesson supersedes it.

Every change is clamped to [0, 1], done in one SQL transaction and written to the audit table
(``hindsight.store.lifecycle``), so concurrent outcomes add up and nothing changes unrecorded.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from hindsight.models import Experience
from hindsight.writeback.dedup import SUPERSEDE_PENALTY, SUPPORT_BONUS

__all__ = [
    "OUTCOME_FAILURE_DELTA",
    "OUTCOME_SUCCESS_DELTA",
    "SUPERSEDE_PENALTY",
    "SUPPORT_BONUS",
    "adjust",
    "record_outcome",
]

OUTCOME_SUCCESS_DELTA = 0.05
"""Confidence added to each experience a successful run recalled (MISSION S3 "raised")."""

OUTCOME_FAILURE_DELTA = 0.10
"""Confidence taken from each experience a failed run recalled: a misleading lesson costs more
than a missing one, so failures weigh double. From 0.6, five failed runs leave 0.1 and the
sixth brings a lesson under the recall floor ``MemoryConfig.min_confidence`` (0.1)."""


def record_outcome(
    store: Any,
    tenant: str,
    trajectory_id: str,
    success: bool,
    *,
    policy: Callable[[Experience, datetime], Experience] | None = None,
) -> list[Experience] | None:
    """Apply a run's outcome to what it recalled, once per run (see
    :meth:`hindsight.store.SqlStore.apply_outcome`). ``policy`` (the guard's misled policy)
    may change each updated experience inside the same transaction.

    Returns:
        The updated experiences, or ``None`` when the outcome was recorded before.
    """
    changes = store.apply_outcome(
        tenant,
        trajectory_id,
        success,
        success_delta=OUTCOME_SUCCESS_DELTA,
        failure_delta=OUTCOME_FAILURE_DELTA,
        policy=policy,
    )
    if changes is None:
        return None
    found = store.get_experiences(tenant, [c["experience_id"] for c in changes])
    return [found[c["experience_id"]] for c in changes if c["experience_id"] in found]


def adjust(
    store: Any, tenant: str, experience_id: str, delta: float, *, actor: str, reason: str | None
) -> Experience:
    """Add ``delta`` (in [-1, 1]) to an experience's confidence by hand, clamped to [0, 1] and
    audited with ``actor`` and ``reason`` (MISSION S7 ``adjust_confidence``); returns it.

    Raises:
        NotFoundError: no such experience in this tenant. UsageError: bad delta or actor.
    """
    store.adjust_confidence(tenant, experience_id, delta, actor=actor, reason=reason)
    found: Experience = store.get_experience(tenant, experience_id)
    return found
