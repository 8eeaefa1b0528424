"""Human audit: a sample of about 20 experiences, the wrong ones marked (docs/console.md).

:func:`sample` draws active experiences at random; :func:`mark_wrong` quarantines one that a
human found wrong (``metadata["quarantine_reasons"]`` says so), as a new version, so it is
never recalled again until someone approves it (``hindsight quarantine approve``).

**Audit runs** (the console's audit view): :func:`start_run` draws a reproducible sample of
active lessons (episodes left out) and saves it with its seed; :func:`give_verdict` records a
human's verdict on one of them - ``correct``, ``wrong`` or ``needs_edit``, with a note - and
turns a wrong one into an audited lifecycle action (:data:`WRONG_ACTIONS`): ``archive`` (the
default: never recalled until restored), ``demote`` (confidence lowered by
:data:`AUDIT_DEMOTE_DELTA`) or ``quarantine`` (:func:`mark_wrong`). Each action is in the
experience's audit trail with actor ``audit:<run id>`` and the note as its reason.
"""

from __future__ import annotations

import random
import secrets
from datetime import datetime
from typing import Any

from hindsight._contract import integer
from hindsight._errors import UsageError
from hindsight.models import Experience, ExperienceKind, ExperienceStatus

__all__ = [
    "AUDIT_DEMOTE_DELTA",
    "AUDIT_REASON",
    "DEFAULT_SAMPLE",
    "WRONG_ACTIONS",
    "give_verdict",
    "mark_wrong",
    "sample",
    "start_run",
]

AUDIT_REASON = "marked wrong by a human audit"
DEFAULT_SAMPLE = 20
MAX_AUDIT_SAMPLE = 1000
"""Most lessons one audit sample draws."""
"""Experiences one audit shows by default."""
WRONG_ACTIONS = ("archive", "demote", "quarantine")
"""What becomes of a lesson an audit found wrong (see the module docstring)."""
AUDIT_DEMOTE_DELTA = 0.2
"""Confidence taken from a lesson demoted by an audit: as much as two failed runs that recalled
it (:data:`hindsight.writeback.confidence.OUTCOME_FAILURE_DELTA`, 0.10 each)."""
_PAGE = 5_000


def sample(
    store: Any,
    tenant: str,
    size: int,
    *,
    seed: int | None = None,
    lessons_only: bool = False,
) -> list[Experience]:
    """Up to ``size`` (1..1000) active experiences of ``tenant``, drawn at random.

    The pool is ordered by id before the draw, so the same ``seed`` over the same active
    experiences draws the same sample whatever changed in their confidence meanwhile.
    ``lessons_only`` leaves episodes (run summaries) out.
    """
    size = integer(size, "size", 1, MAX_AUDIT_SAMPLE)
    seed = None if seed is None else integer(seed, "seed", 0, 2**63 - 1)
    pool: list[Experience] = []
    offset = 0
    while True:
        page = store.list_experiences(tenant, limit=_PAGE, offset=offset)
        pool += page
        if len(page) < _PAGE:
            break
        offset += _PAGE
    if lessons_only:
        pool = [e for e in pool if e.kind is not ExperienceKind.EPISODE]
    pool.sort(key=lambda e: e.id)
    rng = random.Random(seed)
    return rng.sample(pool, min(size, len(pool)))


def start_run(
    store: Any,
    tenant: str,
    size: int = DEFAULT_SAMPLE,
    *,
    seed: int | None = None,
    actor: str = "user",
) -> dict[str, Any]:
    """Draw a sample of ``size`` active lessons (:func:`sample`, episodes left out) and save
    it as an audit run; ``seed`` ``None`` picks a random one (saved with the run, so the draw
    can be repeated). Returns the run (:meth:`hindsight.store.SqlStore.get_audit_run`).

    Raises:
        UsageError: a bad size or seed, or no active lesson to audit.
    """
    if seed is None:
        seed = secrets.randbelow(2**31)
    seed = integer(seed, "seed", 0, 2**63 - 1)
    drawn = sample(store, tenant, size, seed=seed, lessons_only=True)
    if not drawn:
        raise UsageError(f"tenant {tenant!r} has no active lesson to audit")
    run: dict[str, Any] = store.add_audit_run(
        tenant, seed=seed, size=size, experience_ids=[e.id for e in drawn], actor=actor
    )
    return run


def give_verdict(
    store: Any,
    tenant: str,
    run_id: str,
    experience_id: str,
    verdict: str,
    now: datetime,
    *,
    note: str | None = None,
    action: str = "archive",
) -> dict[str, Any]:
    """Record a verdict on one lesson of an audit run; a ``wrong`` one is archived, demoted or
    quarantined first (``action``, :data:`WRONG_ACTIONS`), audited with actor
    ``audit:<run id>``. Returns the run with its verdicts.

    Raises:
        NotFoundError: no such run or experience. UsageError: a bad verdict or action, an
        experience not in the run, or one the action cannot apply to (a wrong lesson that is
        not active any more: restore it first).
    """
    from hindsight.writeback import confidence, forgetting

    run = store.get_audit_run(tenant, run_id)
    actor = f"audit:{run['id']}"
    text = note.strip() if isinstance(note, str) and note.strip() else None
    done: str | None = None
    if verdict == "wrong":
        if action not in WRONG_ACTIONS:
            raise UsageError(
                f"action must be one of {', '.join(WRONG_ACTIONS)}, got {action!r:.40}"
            )
        if experience_id not in run["experience_ids"]:
            raise UsageError(
                f"experience {experience_id} is not in the sample of audit run {run['id']}"
            )
        reason = AUDIT_REASON + (f": {text}" if text else "")
        if action == "archive":
            forgetting.archive(store, tenant, experience_id, actor=actor, reason=reason)
        elif action == "demote":
            confidence.adjust(
                store, tenant, experience_id, -AUDIT_DEMOTE_DELTA, actor=actor, reason=reason
            )
        else:
            mark_wrong(store, tenant, experience_id, now, text)
        done = action
    result: dict[str, Any] = store.set_audit_verdict(
        tenant, run["id"], experience_id, verdict=verdict, note=text, action=done, actor=actor
    )
    return result


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
