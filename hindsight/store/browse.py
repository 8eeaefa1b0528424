"""Read-only, tenant-scoped queries for the audit console (docs/console.md).

What the console shows beyond the engine's own reads: a filtered, counted page of experiences,
the confidence distribution, and per-day series of runs, recalls and outcomes. Every query is
scoped to one tenant (docs/concepts.md#tenants-and-namespaces): no count or plot ever mixes
tenants.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypedDict

from sqlalchemy import ColumnElement, and_, case, func, select

from hindsight._errors import UsageError
from hindsight._ids import normalize_id, validate_tenant
from hindsight.models import Experience
from hindsight.store._base import StoreCore, norm_statuses
from hindsight.store.codec import EXPERIENCE_FIELDS, experience_from_row, job_from_row
from hindsight.store.lifecycle_schema import outcomes
from hindsight.store.records import ReviewJob
from hindsight.store.schema import experience_sources, recalls, review_jobs, trajectories
from hindsight.store.schema import experiences as _table
from hindsight.store.trajectories import taught_by_task_group

__all__ = ["BrowseStore", "ExperienceFilter"]

_COLUMNS = [_table.c[name] for name in EXPERIENCE_FIELDS]
MAX_PAGE = 500


class ExperienceFilter(TypedDict, total=False):
    """Filters of :meth:`BrowseStore.browse_experiences`, every key optional: ``statuses``,
    ``kinds`` (lists of values), ``task_type``, ``namespace``, ``min_confidence``,
    ``max_confidence`` (in [0, 1], inclusive), ``text`` (case-insensitive substring of the
    content), ``source_trajectory_id`` (lessons learned from that run), ``task_key`` (lessons
    learned from a run of that task group)."""

    statuses: Sequence[str]
    kinds: Sequence[str]
    task_type: str | None
    namespace: str | None
    min_confidence: float | None
    max_confidence: float | None
    text: str | None
    source_trajectory_id: str | None
    task_key: str | None


def _unit(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise UsageError(f"{name} must be a number in [0, 1], got {value!r:.40}")
    return float(value)


class BrowseStore(StoreCore):
    """Console reads of :class:`~hindsight.store.SqlStore` (see the module docstring)."""

    def _day(self, column: Any) -> ColumnElement[str]:
        """``YYYY-MM-DD`` (UTC) of a timestamp column, on either backend."""
        if self._info.backend == "postgresql":
            return func.to_char(func.timezone("UTC", column), "YYYY-MM-DD")
        return func.substr(column, 1, 10)  # SQLite keeps naive UTC text: "YYYY-MM-DD HH:..."

    def _experience_conditions(self, tenant: str, where: ExperienceFilter) -> list[Any]:
        conds: list[Any] = [_table.c.tenant_id == tenant]
        if where.get("statuses"):
            conds.append(_table.c.status.in_(norm_statuses(where["statuses"])))
        if where.get("kinds"):
            conds.append(_table.c.kind.in_([str(k) for k in where["kinds"]]))
        if where.get("task_type"):
            conds.append(_table.c.task_type == str(where["task_type"]))
        if where.get("namespace"):
            conds.append(_table.c.namespace == str(where["namespace"]))
        low = _unit(where.get("min_confidence"), "min_confidence")
        high = _unit(where.get("max_confidence"), "max_confidence")
        if low is not None:
            conds.append(_table.c.confidence >= low)
        if high is not None:
            conds.append(_table.c.confidence <= high)
        text = where.get("text")
        if text:
            conds.append(_table.c.content.icontains(str(text), autoescape=True))
        source = where.get("source_trajectory_id")
        if source:
            tid = normalize_id(source, "trajectory id")
            conds.append(
                select(experience_sources.c.experience_id)
                .where(
                    experience_sources.c.tenant_id == tenant,
                    experience_sources.c.trajectory_id == tid,
                    experience_sources.c.experience_id == _table.c.id,
                )
                .exists()
            )
        key = where.get("task_key")
        if key:
            conds.append(taught_by_task_group(_table.c.id, tenant, key))
        return conds

    def browse_experiences(
        self,
        tenant_id: str,
        where: ExperienceFilter | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[Experience], int]:
        """One page of the tenant's experiences matching ``where``, most recently changed
        first, and how many match in all.

        Args:
            tenant_id: the tenant (required).
            where: see :class:`ExperienceFilter`; empty = every experience of every status.
            limit: 1..500 rows; offset: rows to skip (>= 0).

        Returns:
            ``(page, total)``.

        Raises:
            TenantRequiredError: empty tenant. UsageError: a bad filter, limit or offset.
        """
        tenant = validate_tenant(tenant_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise UsageError(f"limit must be an integer in 1..{MAX_PAGE}, got {limit!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise UsageError(f"offset must be a non-negative integer, got {offset!r}")
        conds = self._experience_conditions(tenant, where or ExperienceFilter())
        page = (
            select(*_COLUMNS)
            .where(*conds)
            .order_by(_table.c.updated_at.desc(), _table.c.id)
            .limit(limit)
            .offset(offset)
        )
        with self._tx() as conn:
            total = int(conn.execute(select(func.count()).where(*conds)).scalar_one())
            items = [experience_from_row(r) for r in conn.execute(page).mappings()]
        return items, total

    def confidence_histogram(
        self, tenant_id: str, *, bins: int = 10, statuses: Sequence[str] = ("active",)
    ) -> list[int]:
        """How many of the tenant's experiences (of ``statuses``) fall in each of ``bins``
        equal slices of [0, 1]; the last slice includes 1.0.

        Raises:
            TenantRequiredError: empty tenant. UsageError: ``bins`` not in 1..100.
        """
        tenant = validate_tenant(tenant_id)
        if isinstance(bins, bool) or not isinstance(bins, int) or not 1 <= bins <= 100:
            raise UsageError(f"bins must be an integer in 1..100, got {bins!r}")
        conf = _table.c.confidence
        edges = [i / bins for i in range(bins)] + [1.0]
        columns = [
            func.coalesce(
                func.sum(
                    case(
                        (and_(conf >= lo, conf < hi if i < bins - 1 else conf <= hi), 1),
                        else_=0,
                    )
                ),
                0,
            )
            for i, (lo, hi) in enumerate(itertools.pairwise(edges))
        ]
        query = select(*columns).where(
            _table.c.tenant_id == tenant, _table.c.status.in_(norm_statuses(statuses))
        )
        with self._tx() as conn:
            row = conn.execute(query).one()
        return [int(v) for v in row]

    def runs_by_day(self, tenant_id: str, since: datetime) -> dict[str, tuple[int, int]]:
        """Per UTC day (``YYYY-MM-DD``) since ``since``: ``(runs stored, runs that recalled at
        least one experience)`` of the tenant; days without runs are left out.

        Raises:
            TenantRequiredError: empty tenant.
        """
        tenant = validate_tenant(tenant_id)
        day = self._day(trajectories.c.stored_at).label("day")
        recalled = (
            select(recalls.c.id)
            .where(recalls.c.tenant_id == tenant, recalls.c.trajectory_id == trajectories.c.id)
            .exists()
        )
        query = (
            select(day, func.count(), func.sum(case((recalled, 1), else_=0)))
            .where(trajectories.c.tenant_id == tenant, trajectories.c.stored_at >= since)
            .group_by(day)
        )
        with self._tx() as conn:
            return {str(d): (int(n), int(hit or 0)) for d, n, hit in conn.execute(query)}

    def outcomes_by_day(self, tenant_id: str, since: datetime) -> dict[str, dict[str, int]]:
        """Per UTC day since ``since``, the tenant's recorded run outcomes:
        ``{"success", "failure"}`` (runs), ``"credited"`` / ``"blamed"`` (experiences whose
        confidence a successful / failed run changed: outcome attribution,
        docs/concepts.md#experiences-and-confidence).

        Raises:
            TenantRequiredError: empty tenant.
        """
        tenant = validate_tenant(tenant_id)
        day = self._day(outcomes.c.recorded_at).label("day")
        query = select(day, outcomes.c.success, outcomes.c.experiences).where(
            outcomes.c.tenant_id == tenant, outcomes.c.recorded_at >= since
        )
        out: dict[str, dict[str, int]] = {}
        with self._tx() as conn:
            for d, success, credited in conn.execute(query):
                slot = out.setdefault(
                    str(d), {"success": 0, "failure": 0, "credited": 0, "blamed": 0}
                )
                slot["success" if success else "failure"] += 1
                slot["credited" if success else "blamed"] += len(credited or [])
        return out

    def review_job_of(self, tenant_id: str, trajectory_id: Any) -> ReviewJob | None:
        """The review job of one of the tenant's runs (``None``: never queued).

        Raises:
            TenantRequiredError: empty tenant. UsageError: the id is not a UUID.
        """
        tenant = validate_tenant(tenant_id)
        tid = normalize_id(trajectory_id, "trajectory id")
        query = select(review_jobs).where(
            review_jobs.c.tenant_id == tenant, review_jobs.c.trajectory_id == tid
        )
        with self._tx() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else job_from_row(row)
