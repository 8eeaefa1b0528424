"""Review jobs: a durable queue with leases (at most one job per trajectory)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update

from hindsight._errors import NotFoundError, UsageError
from hindsight._ids import normalize_id, validate_tenant
from hindsight.store._base import StoreCore, keyset_after
from hindsight.store.codec import job_from_row
from hindsight.store.records import MAX_LOST_LEASES, JobState, ReviewJob
from hindsight.store.schema import review_jobs
from hindsight.store.trajectories import new_job_row, require_trajectory

__all__ = ["JobStore"]

_MAX_ERROR_CHARS = 4000
_IN_CHUNK = 500  # ids per IN (...) clause
_jobs = review_jobs.c


def _job_state(state: Any) -> str:
    try:
        return JobState(state).value
    except ValueError:
        raise UsageError(
            f"job state must be one of {[s.value for s in JobState]}, got {state!r:.40}"
        ) from None


def _seconds(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(f"{what} must be a finite number of seconds, got {value!r:.40}")
    if value < 0:
        raise UsageError(f"{what} must be >= 0 seconds, got {value}")
    return float(value)


class JobStore(StoreCore):
    """Review-job methods of :class:`~hindsight.store.SqlStore`."""

    def enqueue_review(self, tenant_id: str, trajectory_id: Any) -> bool:
        """Queue a pending review of a stored trajectory, runnable at once.

        Returns:
            ``True`` if queued, ``False`` if the trajectory already has a job (in any state):
            reviews are idempotent per trajectory.

        Raises:
            TenantRequiredError: empty or missing tenant.
            UsageError: the id is not a UUID.
            NotFoundError: the trajectory is not stored in this tenant.
        """
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory id")
        now = self._now()
        with self._tx(write=True) as conn:
            require_trajectory(conn, tenant, tid)
            inserted = conn.execute(
                self._insert_ignore(review_jobs, _jobs.id), new_job_row(tenant, tid, now)
            ).first()
            return inserted is not None

    def claim_review_job(self, worker_id: str, lease_seconds: float) -> ReviewJob | None:
        """Atomically take the oldest claimable job for ``worker_id``.

        Claimable: ``pending`` with ``run_after <= now``, or ``running`` with an expired lease
        (its worker died or hung). The job becomes ``running`` and the lease lasts
        ``lease_seconds``. A claim is not an attempt (``attempts`` counts only
        reviews that failed, :meth:`fail_review_job`); taking over an expired lease counts a
        lost lease instead, and a job whose worker died :data:`MAX_LOST_LEASES` times is left
        ``failed`` (the review may crash or hang its process) and the next job is claimed. Two
        workers (threads or processes) never get the same job: PostgreSQL uses ``FOR UPDATE
        SKIP LOCKED``, SQLite one writer at a time, and the update re-checks the claim
        condition.

        Returns:
            The claimed job, or ``None`` when nothing is claimable now.

        Raises:
            UsageError: empty ``worker_id`` or a negative / non-finite ``lease_seconds``.
        """
        if not isinstance(worker_id, str) or not worker_id.strip():
            raise UsageError("worker_id must be a non-empty string")
        lease = _seconds(lease_seconds, "lease_seconds")
        now = self._now()
        expired = and_(_jobs.state == JobState.RUNNING.value, _jobs.lease_expires_at <= now)
        claimable = or_(
            and_(_jobs.state == JobState.PENDING.value, _jobs.run_after <= now), expired
        )
        candidate = (
            select(_jobs.id, _jobs.state, _jobs.lost_leases)
            .where(claimable)
            .order_by(_jobs.created_at, _jobs.id)
            .limit(1)
        )
        if self.backend == "postgresql":
            candidate = candidate.with_for_update(skip_locked=True)
        with self._tx(write=True) as conn:
            for _ in range(20):
                found = conn.execute(candidate).first()
                if found is None:
                    return None
                job_id, state, lost = found[0], found[1], int(found[2] or 0)
                if state == JobState.RUNNING.value:
                    lost += 1
                    if lost >= MAX_LOST_LEASES:
                        conn.execute(
                            update(review_jobs)
                            .where(_jobs.id == job_id, expired)
                            .values(
                                state=JobState.FAILED.value,
                                lost_leases=lost,
                                last_error=(
                                    f"the worker running this review died {lost} times before "
                                    "it finished (the review may crash or hang its process; "
                                    "`hindsight jobs retry` runs it again)"
                                ),
                                lease_owner=None,
                                lease_expires_at=None,
                                updated_at=now,
                            )
                        )
                        continue
                row = (
                    conn.execute(
                        update(review_jobs)
                        .where(_jobs.id == job_id, claimable)
                        .values(
                            state=JobState.RUNNING.value,
                            lost_leases=lost,
                            lease_owner=worker_id.strip()[:200],
                            lease_expires_at=now + timedelta(seconds=lease),
                            updated_at=now,
                        )
                        .returning(*review_jobs.c)
                    )
                    .mappings()
                    .first()
                )
                if row is not None:
                    return job_from_row(row)
        return None

    def renew_review_lease(self, job_id: Any, worker_id: str, lease_seconds: float) -> bool:
        """Extend the lease of a job ``worker_id`` is running to ``lease_seconds`` from now
        (a worker renews it while a long review runs). ``False`` when the job is no longer
        this worker's (it finished, or another worker took it over).

        Raises:
            UsageError: a bad id, an empty ``worker_id`` or a bad ``lease_seconds``.
        """
        jid = normalize_id(job_id, "review job id")
        if not isinstance(worker_id, str) or not worker_id.strip():
            raise UsageError("worker_id must be a non-empty string")
        lease = _seconds(lease_seconds, "lease_seconds")
        now = self._now()
        with self._tx(write=True) as conn:
            result = conn.execute(
                update(review_jobs)
                .where(
                    _jobs.id == jid,
                    _jobs.state == JobState.RUNNING.value,
                    _jobs.lease_owner == worker_id.strip()[:200],
                )
                .values(lease_expires_at=now + timedelta(seconds=lease))
            )
            return int(result.rowcount or 0) == 1

    def release_dead_leases(self, host: str, alive: Callable[[int], bool]) -> int:
        """Put back to ``pending`` (runnable now, a lost lease counted, not an attempt) the
        ``running`` jobs leased by workers of ``host`` whose process is gone: lease owners are
        ``host:pid:...``, and ``alive(pid)`` says whether that process still runs. A worker
        calls it when it starts, so the jobs of a killed process on this machine run at once
        instead of after their lease expires.

        Returns:
            How many jobs were released.
        """
        if not isinstance(host, str) or not host.strip():
            raise UsageError("host must be a non-empty string")
        prefix = f"{host.strip()}:"
        query = select(_jobs.id, _jobs.lease_owner).where(
            _jobs.state == JobState.RUNNING.value, _jobs.lease_owner.startswith(prefix)
        )
        with self._tx() as conn:
            owners = list(conn.execute(query))
        dead: list[tuple[str, str]] = []
        for job_id, owner in owners:
            pid = str(owner)[len(prefix) :].split(":", 1)[0]
            if pid.isdigit() and not alive(int(pid)):
                dead.append((job_id, owner))
        if not dead:
            return 0
        now = self._now()
        released = 0
        with self._tx(write=True) as conn:
            for job_id, owner in dead:
                result = conn.execute(
                    update(review_jobs)
                    .where(
                        _jobs.id == job_id,
                        _jobs.state == JobState.RUNNING.value,
                        _jobs.lease_owner == owner,
                    )
                    .values(
                        state=JobState.PENDING.value,
                        lost_leases=_jobs.lost_leases + 1,
                        last_error="its worker process died (lease released)",
                        lease_owner=None,
                        lease_expires_at=None,
                        run_after=now,
                        updated_at=now,
                    )
                )
                released += int(result.rowcount or 0)
        return released

    def release_review_jobs(self, worker_id: str, error: str = "interrupted") -> int:
        """Put every ``running`` job leased by ``worker_id`` back to ``pending``, runnable now
        (a worker stopping with jobs in hand); ``error`` becomes their ``last_error``.

        Returns:
            how many jobs were released.

        Raises:
            UsageError: empty ``worker_id``.
        """
        if not isinstance(worker_id, str) or not worker_id.strip():
            raise UsageError("worker_id must be a non-empty string")
        now = self._now()
        with self._tx(write=True) as conn:
            result = conn.execute(
                update(review_jobs)
                .where(
                    _jobs.state == JobState.RUNNING.value,
                    _jobs.lease_owner == worker_id.strip()[:200],
                )
                .values(
                    state=JobState.PENDING.value,
                    last_error=str(error)[:_MAX_ERROR_CHARS],
                    lease_owner=None,
                    lease_expires_at=None,
                    run_after=now,
                    updated_at=now,
                )
            )
            return int(result.rowcount or 0)

    def complete_review_job(self, job_id: Any) -> None:
        """Mark a job ``succeeded`` and clear its lease and last error.

        Raises:
            UsageError: the id is not a UUID.
            NotFoundError: no such job (e.g. its trajectory was forgotten meanwhile).
        """
        self._finish(job_id, state=JobState.SUCCEEDED, error=None, run_after=None)

    def fail_review_job(
        self, job_id: Any, error: str, *, retry_after: float | None, attempt: bool = True
    ) -> None:
        """Record a failed review.

        Args:
            job_id: the job.
            error: what went wrong (kept as ``last_error``, cut to 4000 characters).
            retry_after: seconds (>= 0) until the job may be claimed again (state back to
                ``pending``); ``None`` gives up (state ``failed``, error kept, visible in
                :meth:`list_review_jobs`).
            attempt: count it as a failed attempt (``attempts + 1``): the review reached the
                model (or the reviewer) and failed. ``False`` for failures around it, such as
                the store being unavailable.

        Raises:
            UsageError: a bad id or a negative / non-finite ``retry_after``.
            NotFoundError: no such job.
        """
        text = str(error)[:_MAX_ERROR_CHARS] or "unknown error"
        more = 1 if attempt else 0
        if retry_after is None:
            self._finish(job_id, state=JobState.FAILED, error=text, run_after=None, attempts=more)
        else:
            delay = _seconds(retry_after, "retry_after")
            self._finish(job_id, state=JobState.PENDING, error=text, run_after=delay, attempts=more)

    def _finish(
        self,
        job_id: Any,
        *,
        state: JobState,
        error: str | None,
        run_after: float | None,
        attempts: int = 0,
    ) -> None:
        jid = normalize_id(job_id, "review job id")
        now = self._now()
        values: dict[str, Any] = {
            "state": state.value,
            "last_error": error,
            "lease_owner": None,
            "lease_expires_at": None,
            "updated_at": now,
        }
        if attempts:
            values["attempts"] = _jobs.attempts + attempts
        if run_after is not None:
            values["run_after"] = now + timedelta(seconds=run_after)
        with self._tx(write=True) as conn:
            result = conn.execute(update(review_jobs).where(_jobs.id == jid).values(**values))
            if result.rowcount != 1:
                raise NotFoundError(f"review job {jid} not found")

    def get_review_job(self, job_id: Any) -> ReviewJob:
        """One job by id.

        Raises:
            UsageError: the id is not a UUID.
            NotFoundError: no such job.
        """
        jid = normalize_id(job_id, "review job id")
        with self._tx() as conn:
            row = conn.execute(select(review_jobs).where(_jobs.id == jid)).mappings().first()
        if row is None:
            raise NotFoundError(f"review job {jid} not found")
        return job_from_row(row)

    def _job_filter(self, query: Any, state: str | None, tenant_id: str | None) -> Any:
        if state is not None:
            query = query.where(_jobs.state == _job_state(state))
        if tenant_id is not None:
            query = query.where(_jobs.tenant_id == validate_tenant(tenant_id))
        return query

    def count_review_jobs(self, state: str | None = None, tenant_id: str | None = None) -> int:
        """Number of jobs, optionally of one state and/or one tenant.

        ``tenant_id=None`` counts every tenant (workers and maintenance see the whole queue);
        an empty string is refused, never read as "all".

        Raises:
            UsageError: unknown state. TenantRequiredError: empty tenant string.
        """
        query = self._job_filter(select(func.count()).select_from(review_jobs), state, tenant_id)
        with self._tx() as conn:
            return int(conn.execute(query).scalar_one())

    def has_open_review_jobs(self) -> bool:
        """Pending jobs, or running ones, of any tenant: a dead worker's job is re-claimed once
        its lease expires, so it needs a worker too (a live lease makes the worker find
        nothing)."""
        open_states = (JobState.PENDING.value, JobState.RUNNING.value)
        query = select(_jobs.id).where(_jobs.state.in_(open_states)).limit(1)
        with self._tx() as conn:
            return conn.execute(query).first() is not None

    def review_job_summary(self) -> tuple[dict[str, int], Any]:
        """``({state: jobs}, created_at of the oldest pending job or None)`` over every
        tenant, in one grouped query (the gauges of docs/deploy.md#metrics). Every state is
        present, zero when unused."""
        query = select(_jobs.state, func.count(), func.min(_jobs.created_at)).group_by(_jobs.state)
        counts = {s.value: 0 for s in JobState}
        oldest = None
        with self._tx() as conn:
            for state, n, first in conn.execute(query):
                counts[state] = int(n)
                if state == JobState.PENDING.value:
                    oldest = first
        return counts, oldest

    def list_review_jobs(
        self,
        state: str | None = None,
        tenant_id: str | None = None,
        limit: int = 100,
        *,
        after: Sequence[Any] | None = None,
    ) -> list[ReviewJob]:
        """Jobs, oldest first, optionally of one state and/or tenant (as :meth:`count_review_jobs`).

        ``after``: keyset paging, only jobs after this ``(created_at, id)`` key.

        Raises:
            UsageError: unknown state or ``limit`` < 1. TenantRequiredError: empty tenant string.
        """
        if not isinstance(limit, int) or limit < 1:
            raise UsageError(f"limit must be a positive integer, got {limit!r}")
        query = self._job_filter(select(review_jobs), state, tenant_id)
        beyond = keyset_after([(_jobs.created_at, False), (_jobs.id, False)], after)
        if beyond is not None:
            query = query.where(beyond)
        query = query.order_by(_jobs.created_at, _jobs.id).limit(limit)
        with self._tx() as conn:
            return [job_from_row(row) for row in conn.execute(query).mappings()]

    def retry_review_jobs(
        self,
        job_ids: Sequence[Any] = (),
        *,
        all_failed: bool = False,
        tenant_id: str | None = None,
    ) -> list[ReviewJob]:
        """Put failed jobs back to ``pending``, runnable now, with ``attempts`` and
        ``lost_leases`` reset to 0.

        ``last_error`` is kept until the next attempt replaces it. Used by
        ``hindsight jobs retry``; a worker (in-process, ``hindsight worker``, or the next open
        of the store) then runs them.

        Args:
            job_ids: the jobs to retry (any UUID form); each must be ``failed``.
            all_failed: retry every failed job instead (of ``tenant_id`` when given).
            tenant_id: with ``all_failed``: only this tenant's; with ``job_ids``: the jobs
                must belong to it. ``None``: any tenant (operators).

        Returns:
            The retried jobs as now stored, oldest first.

        Raises:
            UsageError: neither or both of ``job_ids`` and ``all_failed``; a bad id; a job
                that is not ``failed`` (its state is named).
            NotFoundError: a job id that does not exist (in this tenant).
            TenantRequiredError: an empty tenant string.
        """
        if isinstance(job_ids, str | bytes):
            job_ids = [job_ids]
        ids = list(dict.fromkeys(normalize_id(j, "review job id") for j in job_ids))
        if bool(ids) == bool(all_failed):
            raise UsageError("retry needs job ids or all_failed=True (not both)")
        tenant = validate_tenant(tenant_id) if tenant_id is not None else None
        now = self._now()
        with self._tx(write=True) as conn:
            if all_failed:
                query = select(_jobs.id).where(_jobs.state == JobState.FAILED.value)
                if tenant is not None:
                    query = query.where(_jobs.tenant_id == tenant)
                ids = [row[0] for row in conn.execute(query)]
            else:
                found: dict[str, Any] = {}
                for start in range(0, len(ids), _IN_CHUNK):
                    chunk = ids[start : start + _IN_CHUNK]
                    query = select(_jobs.id, _jobs.state, _jobs.tenant_id).where(
                        _jobs.id.in_(chunk)
                    )
                    found.update({row[0]: row for row in conn.execute(query)})
                for jid in ids:
                    row = found.get(jid)
                    if row is None or (tenant is not None and row[2] != tenant):
                        where = f" in tenant {tenant!r}" if tenant is not None else ""
                        raise NotFoundError(f"review job {jid} not found{where}")
                    if row[1] != JobState.FAILED.value:
                        raise UsageError(
                            f"review job {jid} is {row[1]}, not failed: only failed jobs can "
                            "be retried"
                        )
            for start in range(0, len(ids), _IN_CHUNK):
                conn.execute(
                    update(review_jobs)
                    .where(
                        _jobs.id.in_(ids[start : start + _IN_CHUNK]),
                        _jobs.state == JobState.FAILED.value,
                    )
                    .values(
                        state=JobState.PENDING.value,
                        attempts=0,
                        lost_leases=0,
                        run_after=now,
                        lease_owner=None,
                        lease_expires_at=None,
                        updated_at=now,
                    )
                )
            rows: list[ReviewJob] = []
            for start in range(0, len(ids), _IN_CHUNK):
                query = select(review_jobs).where(_jobs.id.in_(ids[start : start + _IN_CHUNK]))
                rows.extend(job_from_row(row) for row in conn.execute(query).mappings())
        return sorted(rows, key=lambda j: (j.created_at, j.id))

    def review_job_states(self, tenant_id: str, trajectory_ids: Sequence[Any]) -> dict[str, int]:
        """How many of these trajectories' review jobs are in each state.

        Returns:
            ``{state: n}`` for every :class:`JobState` (zero when none); trajectories without a
            job are not counted. Used by ``hindsight ingest`` to wait for the reviews it queued.

        Raises:
            TenantRequiredError: empty or missing tenant. UsageError: an id is not a UUID.
        """
        tenant = validate_tenant(tenant_id)
        ids = list(dict.fromkeys(normalize_id(t, "trajectory id") for t in trajectory_ids))
        counts = {s.value: 0 for s in JobState}
        with self._tx() as conn:
            for start in range(0, len(ids), _IN_CHUNK):
                query = (
                    select(_jobs.state, func.count())
                    .where(
                        _jobs.tenant_id == tenant,
                        _jobs.trajectory_id.in_(ids[start : start + _IN_CHUNK]),
                    )
                    .group_by(_jobs.state)
                )
                for state, n in conn.execute(query):
                    counts[str(state)] = counts.get(str(state), 0) + int(n)
        return counts
