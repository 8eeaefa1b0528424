"""Human audit (MISSION S12 "sample ~20 experiences, mark wrong ones"; issue 4 item 8).

:func:`sample` draws active experiences at random; :func:`mark_wrong` quarantines one that a
human found wrong (``metadata["quarantine_reasons"]`` says so), as a new version, so it is
never recalled again until someone approves it (``hindsight quarantine approve``).
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from hindsight._errors import UsageError
from hindsight.models import Experience, ExperienceStatus

__all__ = ["AUDIT_REASON", "mark_wrong", "sample"]

AUDIT_REASON = "marked wrong by a human audit"
_PAGE = 5_000


def sample(store: Any, tenant: str, size: int, *, seed: int | None = None) -> list[Experience]:
    """Up to ``size`` (1..1000) active experiences of ``tenant``, drawn at random."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 1000:
        raise UsageError(f"sample size must be an integer from 1 to 1000, got {size!r}")
    pool: list[Experience] = []
    offset = 0
    while True:
        page = store.list_experiences(tenant, limit=_PAGE, offset=offset)
        pool += page
        if len(page) < _PAGE:
            break
        offset += _PAGE
    rng = random.Random(seed)
    return rng.sample(pool, min(size, len(pool)))


def mark_wrong(
    store: Any, tenant: str, experience_id: str, now: datetime, note: str | None = None
) -> Experience:
    """Quarantine an experience a human marked wrong; returns it as stored.

    Raises:
        NotFoundError: no such experience. UsageError: it is deleted or quarantined already.
    """
    from hindsight.guard.screening import quarantine

    exp = store.get_experience(tenant, experience_id)
    if exp.status in (ExperienceStatus.DELETED, ExperienceStatus.QUARANTINED):
        raise UsageError(f"experience {exp.id} is {exp.status.value} already")
    reason = AUDIT_REASON + (f": {note.strip()}" if note and note.strip() else "")
    stored: Experience = store.save_version(
        quarantine(exp, [reason], now), change="audit", actor="audit", reason=reason
    )
    return stored
