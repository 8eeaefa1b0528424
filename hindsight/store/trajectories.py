"""Trajectories and their events (episodic memory): idempotent ingest and scoped reads; their
system prompts (stored once per distinct text per tenant) and task groups
(docs/review.md#task-groups)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, bindparam, delete, insert, select, true, update
from sqlalchemy.engine import Connection

from hindsight._contract import outcome_conflict
from hindsight._errors import NotFoundError, UsageError
from hindsight._ids import new_id, normalize_id, validate_tenant
from hindsight._text import note
from hindsight.models import ExperienceKind, Outcome, Trajectory, validate_task_key
from hindsight.store._base import StoreCore, chunks, keyset_after, norm_ids
from hindsight.store.codec import (
    TASK_KEY_EXPLICIT,
    TASK_KEY_INTENT,
    event_rows,
    trajectory_from_rows,
    trajectory_row,
)
from hindsight.store.records import JobState, TrajectorySummary
from hindsight.store.schema import (
    events,
    experience_sources,
    experiences,
    prompts,
    review_jobs,
    trajectories,
)

__all__ = [
    "TrajectoryStore",
    "checked_task_key",
    "drop_orphan_prompts",
    "merge_trajectories",
    "require_trajectory",
    "taught_by_task_group",
]

PAUSED = "paused"
"""Trajectory metadata key: ``True`` while the run waits for a resume (an interrupt); a part
stored with it is not reviewed until the run's end merges into it."""


def _paused(traj: Trajectory) -> bool:
    return traj.metadata.get(PAUSED) is True


def merge_trajectories(stored: Trajectory, part: Trajectory) -> Trajectory:
    """One run stored in parts (paused, then resumed, possibly in another process): ``stored``
    (what the store has) and ``part`` (what arrives now) as one trajectory.

    * Events: the union by ``event_id`` (an event in both keeps ``part``'s version, which may
      be more complete), ordered by timestamp (stable: the stored order first).
    * Fields: when ``part`` is still paused but ``stored`` is not (an old part arriving late,
      e.g. retried from the unsaved area), ``stored`` keeps its fields; otherwise ``part``'s
      outcome, end, reward and labels win (``task``, ``task_type`` and context fields fall back
      to the stored ones when ``part`` has none), ``started_at`` is the earliest, metadata is
      ``{**stored, **part}`` and ``paused`` is kept only when ``part`` is paused.
    """
    mine = {e.event_id: e for e in part.events}
    joined = [mine.pop(e.event_id, e) for e in stored.events] + list(mine.values())
    joined.sort(key=lambda e: e.timestamp)
    if _paused(part) and not _paused(stored):
        return stored.model_copy(update={"events": joined})
    metadata = {**stored.metadata, **part.metadata}
    if not _paused(part):
        metadata.pop(PAUSED, None)
    return part.model_copy(
        update={
            "events": joined,
            "task": part.task or stored.task,
            "task_type": part.task_type or stored.task_type,
            "tags": list(dict.fromkeys([*stored.tags, *part.tags])),
            "started_at": min(stored.started_at, part.started_at),
            "reward": part.reward if part.reward is not None else stored.reward,
            "system_prompt": part.system_prompt or stored.system_prompt,
            "evidence": part.evidence or stored.evidence,
            "task_key": part.task_key or stored.task_key,
            "metadata": metadata,
        }
    )


#: Most rows one ``list_trajectories`` call returns.
MAX_TRAJECTORY_LIMIT = 10_000

_TASK_KEY_SOURCES = (TASK_KEY_EXPLICIT, TASK_KEY_INTENT)

#: How often :meth:`TrajectoryStore._keep_prompt` re-inserts a prompt that a concurrent
#: ``forget`` deleted between the insert and the lock (PostgreSQL only; once is the rule).
_PROMPT_RETRIES = 5

# Built once: building a statement per call (and its cache key) cost SQLAlchemy about as much
# as running it (docs/benchmarks.md#sql-statements).
_TRAJECTORY = select(trajectories).where(
    trajectories.c.tenant_id == bindparam("tenant"), trajectories.c.id == bindparam("id")
)
_PROMPT_TEXT = select(prompts.c.text).where(
    prompts.c.tenant_id == bindparam("tenant"), prompts.c.sha256 == bindparam("sha")
)
_PROMPT_HELD = (
    select(prompts.c.sha256)
    .where(prompts.c.tenant_id == bindparam("tenant"), prompts.c.sha256 == bindparam("sha"))
    .with_for_update(read=True)
)
"""A prompt row, read ``FOR SHARE`` on PostgreSQL (a concurrent ``forget`` waits)."""
_EVENTS = (
    select(events)
    .where(events.c.tenant_id == bindparam("tenant"), events.c.trajectory_id == bindparam("id"))
    .order_by(events.c.position)
)
_INSERT_EVENTS = insert(events)

_SUMMARY_COLUMNS = (
    trajectories.c.id,
    trajectories.c.tenant_id,
    trajectories.c.namespace,
    trajectories.c.task,
    trajectories.c.task_type,
    trajectories.c.tags,
    trajectories.c.outcome,
    trajectories.c.reward,
    trajectories.c.trust,
    trajectories.c.started_at,
    trajectories.c.ended_at,
    trajectories.c.stored_at,
    trajectories.c.event_count,
    trajectories.c.task_key,
    trajectories.c.task_key_source,
    trajectories.c.system_prompt_sha256,
    trajectories.c.evidence,
    review_jobs.c.state.label("review_state"),
    # Reviewed without a job (review_now) leaves the run's episode: it counts as reviewed too.
    select(experience_sources.c.experience_id)
    .join(experiences, experiences.c.id == experience_sources.c.experience_id)
    .where(
        experience_sources.c.tenant_id == trajectories.c.tenant_id,
        experience_sources.c.trajectory_id == trajectories.c.id,
        experiences.c.kind == ExperienceKind.EPISODE.value,
    )
    .exists()
    .label("has_episode"),
)


def _summary(row: Mapping[Any, Any]) -> TrajectorySummary:
    evidence = row["evidence"]
    reason = evidence.get("reason") if isinstance(evidence, dict) else None
    return TrajectorySummary(
        id=row["id"],
        tenant_id=row["tenant_id"],
        namespace=row["namespace"],
        task=row["task"],
        task_type=row["task_type"],
        tags=list(row["tags"]),
        outcome=Outcome(row["outcome"]),
        reward=row["reward"],
        trust=float(row["trust"]),
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        stored_at=row["stored_at"],
        event_count=int(row["event_count"]),
        task_key=row["task_key"],
        task_key_source=row["task_key_source"],
        system_prompt_sha256=row["system_prompt_sha256"],
        has_evidence=evidence is not None,
        reason=reason if isinstance(reason, str) else None,
        review_state=JobState(row["review_state"]) if row["review_state"] else None,
        reviewed=row["review_state"] == JobState.SUCCEEDED.value or bool(row["has_episode"]),
    )


def checked_task_key(value: Any) -> str:
    """A task key as :func:`hindsight.models.validate_task_key` accepts it.

    Raises:
        UsageError: ``None``, blank, too long, or not a string / int.
    """
    if value is None:
        raise UsageError("task_key must be a non-blank string, got None")
    try:
        key = validate_task_key(value)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    assert key is not None
    return key


def taught_by_task_group(experience_id: Any, tenant: str, task_key: Any) -> Any:
    """SQL condition: the experience whose id is the column ``experience_id`` was learned from
    a run of the tenant's task group ``task_key`` (one of its ``experience_sources`` rows is a
    run with that key, explicit or by intent).

    Raises:
        UsageError: a blank or too long key.
    """
    return (
        select(experience_sources.c.experience_id)
        .join(trajectories, trajectories.c.id == experience_sources.c.trajectory_id)
        .where(
            experience_sources.c.tenant_id == tenant,
            experience_sources.c.experience_id == experience_id,
            trajectories.c.tenant_id == tenant,
            trajectories.c.task_key == checked_task_key(task_key),
        )
        .exists()
    )


def require_trajectory(conn: Connection, tenant: str, tid: str) -> None:
    """Raise ``NotFoundError`` unless the tenant has the trajectory ``tid`` (canonical id)."""
    exists = conn.execute(
        select(trajectories.c.id).where(
            trajectories.c.tenant_id == tenant, trajectories.c.id == tid
        )
    ).first()
    if exists is None:
        raise NotFoundError(f"trajectory {tid} not found in tenant {tenant!r}")


def drop_orphan_prompts(conn: Connection, tenant: str, shas: Collection[str] | None) -> int:
    """Delete the tenant's prompts that no trajectory of the tenant references any more.

    ``shas``: the candidates (the prompts of the runs just deleted); ``None`` = every prompt
    of the tenant. The candidates are locked first (``FOR UPDATE`` on PostgreSQL), so a run
    being stored with one of them (which holds it ``FOR SHARE`` until it commits) is either
    seen as a reference or re-inserts the prompt after this commits. Returns how many went.
    """
    query = select(prompts.c.sha256).where(prompts.c.tenant_id == tenant)
    if shas is not None:
        wanted = sorted(set(shas))
        if not wanted:
            return 0
        locked: list[str] = []
        for part in chunks(wanted):
            locked += conn.execute(
                query.where(prompts.c.sha256.in_(part)).with_for_update()
            ).scalars()
    else:
        locked = list(conn.execute(query.with_for_update()).scalars())
    removed = 0
    for part in chunks(sorted(locked)):
        used = set(
            conn.execute(
                select(trajectories.c.system_prompt_sha256)
                .where(
                    trajectories.c.tenant_id == tenant,
                    trajectories.c.system_prompt_sha256.in_(part),
                )
                .distinct()
            ).scalars()
        )
        orphans = [sha for sha in part if sha not in used]
        if orphans:
            removed += conn.execute(
                delete(prompts).where(prompts.c.tenant_id == tenant, prompts.c.sha256.in_(orphans))
            ).rowcount
    return removed


def new_job_row(tenant_id: str, trajectory_id: str, now: Any) -> dict[str, Any]:
    """A fresh pending review job for ``trajectory_id``, runnable at once."""
    return {
        "id": new_id(),
        "tenant_id": tenant_id,
        "trajectory_id": trajectory_id,
        "state": JobState.PENDING.value,
        "attempts": 0,
        "lost_leases": 0,
        "last_error": None,
        "lease_owner": None,
        "lease_expires_at": None,
        "run_after": now,
        "created_at": now,
        "updated_at": now,
    }


class TrajectoryStore(StoreCore):
    """Trajectory methods of :class:`~hindsight.store.SqlStore`."""

    def add_trajectory(
        self, traj: Trajectory, *, enqueue_review: bool = True, merge: bool = False
    ) -> bool:
        """Store ``traj`` and its events, plus a pending review job, in one transaction.

        Events keep their list order; on read their ``trajectory_id`` is the trajectory's id.
        The system prompt is stored once per distinct text per tenant (table ``prompts``, keyed
        by its SHA-256); runs with the same prompt share the row. A ``task_key`` is stored as
        ``explicit``.

        Args:
            traj: the trajectory to store (its id decides idempotency).
            enqueue_review: also queue a pending review job for it (not while it is paused:
                ``metadata["paused"] is True``).
            merge: when this tenant already has a trajectory with this id, merge ``traj`` into
                it (:func:`merge_trajectories`: one run stored in parts, e.g. paused at an
                interrupt and resumed later) instead of leaving it unchanged.

        Returns:
            ``True`` if stored (or merged); ``False`` (and nothing changed) if this tenant
            already has a trajectory with this id and ``merge`` is False, so re-ingesting the
            same run is a no-op.

        Raises:
            UsageError: ``traj`` is not a :class:`~hindsight.models.Trajectory`, or its id
                belongs to a run of another tenant (ids are global; the message does not say
                whose).
            StoreError: the database failed.
        """
        if not isinstance(traj, Trajectory):
            raise UsageError(f"add_trajectory expects a Trajectory, got {type(traj).__name__}")
        now = self._now()
        rows = event_rows(traj)
        row = trajectory_row(traj, now)
        with self._tx(write=True) as conn:
            inserted = conn.execute(
                self._insert_ignore(trajectories, trajectories.c.id), row
            ).first()
            if inserted is None:
                owner = conn.execute(
                    select(trajectories.c.tenant_id).where(trajectories.c.id == traj.id)
                ).scalar_one_or_none()
                if owner is not None and owner != traj.tenant_id:
                    # Ids are global: never drop this tenant's run silently in favour of
                    # another tenant's (and never say whose it is).
                    raise UsageError(
                        f"trajectory id {traj.id} is already in use; send the run with a new id"
                    )
                if not merge or owner is None:
                    return False
                traj, row, rows = self._merge(conn, traj)
                conn.execute(delete(events).where(events.c.trajectory_id == traj.id))
            if traj.system_prompt is not None:
                self._keep_prompt(conn, traj.tenant_id, row["system_prompt_sha256"], traj, now)
            if rows:
                conn.execute(_INSERT_EVENTS, rows)
            if enqueue_review and not _paused(traj):
                conn.execute(
                    self._insert_ignore(review_jobs), new_job_row(traj.tenant_id, traj.id, now)
                )
        return True

    def _merge(
        self, conn: Connection, part: Trajectory
    ) -> tuple[Trajectory, dict[str, Any], list[dict[str, Any]]]:
        """Merge ``part`` into the stored trajectory of the same id: its row is updated in the
        caller's transaction; returns the merged trajectory, its row and its event rows (the
        caller replaces the events)."""
        row = (
            conn.execute(select(trajectories).where(trajectories.c.id == part.id).with_for_update())
            .mappings()
            .one()
        )
        prompt = None
        if row["system_prompt_sha256"] is not None:
            sha = {"tenant": row["tenant_id"], "sha": row["system_prompt_sha256"]}
            prompt = conn.execute(_PROMPT_TEXT, sha).scalar_one_or_none()
        old = list(
            conn.execute(
                select(events).where(events.c.trajectory_id == part.id).order_by(events.c.position)
            ).mappings()
        )
        merged = merge_trajectories(trajectory_from_rows(row, old, prompt), part)
        conflict = outcome_conflict(merged.outcome, merged.reward)
        if conflict is not None and outcome_conflict(part.outcome, part.reward) is None:
            # each part agreed with itself; together they do not (said once, kept as merged)
            note(f"trajectory {part.id} merged with its stored part: {conflict}")
        values = trajectory_row(merged, row["stored_at"])
        if part.task_key is None:  # keep the stored key and where it came from
            values["task_key"], values["task_key_source"] = row["task_key"], row["task_key_source"]
        del values["id"]
        conn.execute(update(trajectories).where(trajectories.c.id == part.id).values(**values))
        replaced = row["system_prompt_sha256"]
        if replaced is not None and replaced != values["system_prompt_sha256"]:
            drop_orphan_prompts(conn, row["tenant_id"], [replaced])
        return merged, values, event_rows(merged)

    def find_paused(self, tenant_id: str, thread_id: str, namespace: str) -> str | None:
        """Id of the latest stored trajectory of ``tenant_id`` in ``namespace`` still paused
        (``metadata["paused"] is True``) on the thread ``thread_id`` (``metadata["thread_id"]``),
        or ``None``: how a run resumed in another process finds the part stored before its
        interrupt.

        Raises:
            TenantRequiredError: empty or missing tenant.
        """
        tenant = validate_tenant(tenant_id)
        meta = trajectories.c.metadata
        query = (
            select(trajectories.c.id)
            .where(
                trajectories.c.tenant_id == tenant,
                trajectories.c.namespace == namespace,
                meta[PAUSED].as_boolean() == true(),
                meta["thread_id"].as_string() == str(thread_id),
            )
            .order_by(trajectories.c.stored_at.desc())
            .limit(1)
        )
        with self._tx() as conn:
            found = conn.execute(query).scalar_one_or_none()
        return str(found) if found is not None else None

    def has_trajectory(self, tenant_id: str, trajectory_id: Any) -> bool:
        """Whether ``trajectory_id`` (UUID, any spelling) is stored for ``tenant_id``.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: the id is not a UUID.
        """
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory id")
        query = select(trajectories.c.id).where(
            trajectories.c.tenant_id == tenant, trajectories.c.id == tid
        )
        with self._tx() as conn:
            return conn.execute(query).first() is not None

    def trajectory_trusts(self, tenant_id: str, trajectory_ids: Sequence[Any]) -> dict[str, float]:
        """``{trajectory id: trust}`` of the tenant's stored runs among ``trajectory_ids``
        (absent ones left out): the weight of a run's evidence for a lesson.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: an id is not a UUID.
        """
        tenant = validate_tenant(tenant_id)
        wanted = norm_ids(trajectory_ids, "trajectory id")
        found: dict[str, float] = {}
        with self._tx() as conn:
            for part in chunks(wanted):
                query = select(trajectories.c.id, trajectories.c.trust).where(
                    trajectories.c.tenant_id == tenant, trajectories.c.id.in_(part)
                )
                found.update((tid, float(trust)) for tid, trust in conn.execute(query))
        return found

    def trajectory_tasks(
        self, tenant_id: str, trajectory_ids: Sequence[Any]
    ) -> dict[str, tuple[str, str | None]]:
        """``{trajectory id: (task, task_key)}`` of the tenant's stored runs among
        ``trajectory_ids`` (absent ones left out), each id spelled canonically (lower-case,
        dashed) whatever spelling was given: what grouping a run by intent reads of the
        earlier runs (docs/review.md#task-groups), without their events.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: an id is not a UUID.
        """
        tenant = validate_tenant(tenant_id)
        wanted = norm_ids(trajectory_ids, "trajectory id")
        found: dict[str, tuple[str, str | None]] = {}
        with self._tx() as conn:
            for part in chunks(wanted):
                query = select(
                    trajectories.c.id, trajectories.c.task, trajectories.c.task_key
                ).where(trajectories.c.tenant_id == tenant, trajectories.c.id.in_(part))
                found.update((tid, (task, key)) for tid, task, key in conn.execute(query))
        return found

    def get_trajectory(self, tenant_id: str, trajectory_id: Any) -> Trajectory:
        """The stored trajectory with its events in their original order, its system prompt
        (the full text), its outcome evidence and its task key (explicit or by intent).

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: the id is not a UUID.
            NotFoundError: no such trajectory in this tenant.
        """
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory id")
        with self._tx() as conn:
            keys = {"tenant": tenant, "id": tid}
            row = conn.execute(_TRAJECTORY, keys).mappings().first()
            if row is None:
                raise NotFoundError(f"trajectory {tid} not found in tenant {tenant!r}")
            prompt = None
            if row["system_prompt_sha256"] is not None:
                sha = {"tenant": tenant, "sha": row["system_prompt_sha256"]}
                prompt = conn.execute(_PROMPT_TEXT, sha).scalar_one_or_none()
            event_list = list(conn.execute(_EVENTS, keys).mappings())
        return trajectory_from_rows(row, event_list, prompt)

    def list_trajectory_ids(self, tenant_id: str) -> list[str]:
        """Ids of the tenant's trajectories, oldest stored first.

        Raises:
            TenantRequiredError: empty or missing tenant.
        """
        tenant = validate_tenant(tenant_id)
        query = (
            select(trajectories.c.id)
            .where(trajectories.c.tenant_id == tenant)
            .order_by(trajectories.c.stored_at, trajectories.c.id)
        )
        with self._tx() as conn:
            return list(conn.execute(query).scalars())

    def _keep_prompt(
        self, conn: Connection, tenant: str, sha: str, traj: Trajectory, now: Any
    ) -> None:
        """Make sure the tenant's prompt ``sha`` exists, and hold it (``FOR SHARE``) until the
        transaction ends, so a concurrent ``forget`` cannot drop it under the new run."""
        values = {"tenant_id": tenant, "sha256": sha, "text": traj.system_prompt, "created_at": now}
        for _ in range(_PROMPT_RETRIES):
            conn.execute(self._insert_ignore(prompts), values)
            if conn.execute(_PROMPT_HELD, {"tenant": tenant, "sha": sha}).first() is not None:
                return
        raise UsageError(f"the system prompt of trajectory {traj.id} could not be stored; retry")

    def get_prompt(self, tenant_id: str, sha256: str) -> str:
        """The text of the tenant's system prompt whose SHA-256 hex digest is ``sha256``.

        Raises:
            TenantRequiredError: empty or missing tenant.
            NotFoundError: no such prompt in this tenant.
        """
        tenant = validate_tenant(tenant_id)
        with self._tx() as conn:
            sha = {"tenant": tenant, "sha": str(sha256).lower()}
            text = conn.execute(_PROMPT_TEXT, sha).scalar_one_or_none()
        if text is None:
            raise NotFoundError(f"prompt {sha256!s:.80} not found in tenant {tenant!r}")
        return str(text)

    def count_prompts(self, tenant_id: str) -> int:
        """How many distinct system prompts the tenant has stored.

        Raises:
            TenantRequiredError: empty or missing tenant.
        """
        tenant = validate_tenant(tenant_id)
        with self._tx() as conn:
            return len(
                conn.execute(select(prompts.c.sha256).where(prompts.c.tenant_id == tenant)).all()
            )

    def set_task_key(self, tenant_id: str, trajectory_id: Any, task_key: Any, source: str) -> bool:
        """Put a run into the task group ``task_key``.

        Args:
            tenant_id: the tenant (required).
            trajectory_id: the run (UUID, any spelling).
            task_key: the group key (non-blank, at most 200 characters).
            source: ``"explicit"`` (the caller's or the source's key) or ``"intent"`` (assigned
                by the review from a similar earlier run).

        Returns:
            ``True`` if stored; ``False`` (nothing changed) when ``source`` is ``"intent"`` and
            the run already has an explicit key: a key by intent never replaces an explicit
            one.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: a malformed id, a blank or too long key, an unknown source.
            NotFoundError: no such trajectory in this tenant.
        """
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory id")
        key = checked_task_key(task_key)
        if source not in _TASK_KEY_SOURCES:
            raise UsageError(f"source must be one of {list(_TASK_KEY_SOURCES)}, got {source!r:.40}")
        where: list[ColumnElement[bool]] = [
            trajectories.c.tenant_id == tenant,
            trajectories.c.id == tid,
        ]
        if source == TASK_KEY_INTENT:
            where.append(
                (trajectories.c.task_key_source != TASK_KEY_EXPLICIT)
                | trajectories.c.task_key_source.is_(None)
            )
        with self._tx(write=True) as conn:
            changed = conn.execute(
                update(trajectories).where(*where).values(task_key=key, task_key_source=source)
            ).rowcount
            if not changed:
                require_trajectory(conn, tenant, tid)
        return bool(changed)

    def list_trajectories(
        self,
        tenant_id: str,
        *,
        task_key: Any = None,
        outcome: Any = None,
        task_type: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        newest_first: bool = False,
        limit: int = 100,
        offset: int = 0,
        after: Sequence[Any] | None = None,
    ) -> list[TrajectorySummary]:
        """The tenant's runs matching every filter, oldest stored first (then by id), so that
        pages stay stable while new runs arrive; ``newest_first`` reverses the order (the
        console's list).

        Args:
            tenant_id: the tenant (required).
            task_key: only runs of this task group (explicit or by intent); ``None`` = any.
            outcome: only runs with this outcome (``Outcome`` or its value); ``None`` = any.
            task_type: exact task type; ``None`` = any.
            since, until: only runs that started at or after ``since`` / before ``until``
                (aware datetimes; naive ones are UTC).
            limit: 1..10000 rows; offset: rows to skip (>= 0).
            after: keyset paging: only runs after this ``(stored_at, id)`` key in the
                listing's order (:func:`trajectory_key` of the previous page's last run).

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: a blank or too long task key, an unknown outcome, a bad limit/offset,
                ``since``/``until`` not datetimes.
        """
        tenant = validate_tenant(tenant_id)
        if (
            not isinstance(limit, int)
            or isinstance(limit, bool)
            or not (1 <= limit <= MAX_TRAJECTORY_LIMIT)
        ):
            raise UsageError(
                f"limit must be an integer in 1..{MAX_TRAJECTORY_LIMIT}, got {limit!r:.40}"
            )
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise UsageError(f"offset must be a non-negative integer, got {offset!r:.40}")
        where: list[ColumnElement[bool]] = [trajectories.c.tenant_id == tenant]
        if task_key is not None:
            where.append(trajectories.c.task_key == checked_task_key(task_key))
        if outcome is not None:
            try:
                where.append(trajectories.c.outcome == Outcome(outcome).value)
            except ValueError:
                choices = [o.value for o in Outcome]
                raise UsageError(f"outcome must be one of {choices}, got {outcome!r:.40}") from None
        if task_type is not None:
            if not isinstance(task_type, str):
                raise UsageError(f"task_type must be a string, got {type(task_type).__name__}")
            where.append(trajectories.c.task_type == task_type)
        for name, bound in (("since", since), ("until", until)):
            if bound is not None and not isinstance(bound, datetime):
                raise UsageError(f"{name} must be a datetime, got {type(bound).__name__}")
        if since is not None:
            where.append(trajectories.c.started_at >= since)
        if until is not None:
            where.append(trajectories.c.started_at < until)
        order = [(trajectories.c.stored_at, newest_first), (trajectories.c.id, newest_first)]
        beyond = keyset_after(order, after)
        if beyond is not None:
            where.append(beyond)
        return self._summaries(where, limit=limit, offset=offset, newest_first=newest_first)

    def runs_of_task(self, tenant_id: str, task_key: Any) -> list[TrajectorySummary]:
        """Every run of the tenant's task group ``task_key``, oldest stored first: each with
        its id, outcome, reward and review state (``reviewed``). ``[]`` for an unknown key.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: a blank or too long key.
        """
        tenant = validate_tenant(tenant_id)
        key = checked_task_key(task_key)
        return self._summaries([trajectories.c.tenant_id == tenant, trajectories.c.task_key == key])

    def _summaries(
        self,
        where: list[ColumnElement[bool]],
        *,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = False,
    ) -> list[TrajectorySummary]:
        order: tuple[Any, ...] = (trajectories.c.stored_at, trajectories.c.id)
        if newest_first:
            order = (trajectories.c.stored_at.desc(), trajectories.c.id.desc())
        query = (
            select(*_SUMMARY_COLUMNS)
            .select_from(
                trajectories.outerjoin(
                    review_jobs, review_jobs.c.trajectory_id == trajectories.c.id
                )
            )
            .where(*where)
            .order_by(*order)
            .offset(offset)
        )
        if limit is not None:
            query = query.limit(limit)
        with self._tx() as conn:
            return [_summary(row) for row in conn.execute(query).mappings()]
