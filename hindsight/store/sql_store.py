"""The SQL store: the source of truth of hindsight (trajectories, experiences with their
embeddings, jobs, the vector outbox)."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, Self

from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from hindsight._errors import StoreError, UsageError
from hindsight._ids import validate_tenant
from hindsight.clock import SystemClock, utc_clock
from hindsight.models import ExperienceKind, ExperienceStatus
from hindsight.ports import Clock
from hindsight.store import migrate
from hindsight.store._base import StoreCore, _one_line
from hindsight.store.audits import AuditStore
from hindsight.store.browse import BrowseStore
from hindsight.store.connect import BEGIN_OPTION, open_engine
from hindsight.store.experiences import ExperienceStore
from hindsight.store.forget import ForgetStore
from hindsight.store.jobs import JobStore
from hindsight.store.lifecycle import LifecycleStore
from hindsight.store.outbox import INDEX_KEY, OutboxStore
from hindsight.store.recall_buffer import RecallBuffer
from hindsight.store.records import JobState
from hindsight.store.schema import (
    events,
    experiences,
    meta,
    recalls,
    review_jobs,
    trajectories,
)
from hindsight.store.trajectories import TrajectoryStore

__all__ = ["SqlStore"]


def _pairs(rows: Any) -> list[tuple[Any, Any]]:
    return [(row[0], row[1]) for row in rows]


def _check_key(key: Any) -> str:
    if not isinstance(key, str) or not key.strip() or len(key) > 200:
        raise UsageError(
            f"meta key must be a non-empty string of <= 200 characters, got {key!r:.80}"
        )
    return key


class SqlStore(
    TrajectoryStore,
    ExperienceStore,
    LifecycleStore,
    ForgetStore,
    OutboxStore,
    JobStore,
    BrowseStore,
    AuditStore,
    StoreCore,
):
    """SQL source of truth on SQLite (default) or PostgreSQL; safe to share between threads.

    Opening applies the shipped Alembic migrations up to the newest revision. Every method
    that takes a ``tenant_id`` refuses a missing or empty one (``TenantRequiredError``) and
    scopes all its SQL to it. Ids are accepted as ``uuid.UUID`` or any UUID spelling and
    returned in canonical lower-case form. Datetimes are timezone-aware UTC.

    Args:
        url: SQLAlchemy URL: ``sqlite:///path/to/file.db`` (parent folders are created),
            ``sqlite://`` (in memory, one shared connection; the fake used by
            ``hindsight.testing``) or ``postgresql+psycopg://user:pw@host:5432/db``
            (``postgresql://`` and ``postgres://`` also accepted).
        clock: source of "now" for stored, updated and lease times (default: system UTC).

    Raises:
        UsageError: a malformed or unsupported URL, or psycopg missing for PostgreSQL.
        StoreError: the database cannot be opened or migrated.
    """

    def __init__(self, url: str, *, clock: Clock | None = None) -> None:
        self._closed = True
        self._clock = utc_clock(clock if clock is not None else SystemClock())
        self._lock = threading.RLock()
        self._info = open_engine(url)
        try:
            with self._info.engine.connect() as conn:
                if self._info.backend == "sqlite":
                    conn.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})
                with conn.begin():
                    if self._info.backend == "postgresql":
                        from hindsight.store.pgvector import ensure_pgvector

                        ensure_pgvector(conn)  # the embedding column's type
                    if migrate.needs_upgrade(conn):  # Alembic is imported only then
                        migrate.check_versioned(conn)
                        migrate.upgrade(conn)
                    index = conn.execute(select(meta.c.value).where(meta.c.key == INDEX_KEY))
                    self._vector_outbox = index.scalar() != "pgvector"
        except StoreError as exc:  # pgvector missing: one line saying what to run
            self._info.engine.dispose()
            raise StoreError(f"cannot open the SQL store {self.url}: {exc}") from None
        except SQLAlchemyError as exc:
            self._info.engine.dispose()
            raise StoreError(f"cannot open the SQL store {self.url}: {_one_line(exc)}") from exc
        except migrate.UnversionedSchemaError as exc:
            self._info.engine.dispose()
            raise StoreError(f"cannot open the SQL store {self.url}: {exc}") from exc
        except migrate.MigrationError as exc:
            self._info.engine.dispose()
            raise StoreError(
                f"cannot migrate the SQL store {self.url}: {exc} (was it created by a newer "
                "version of hindsight? upgrade hindsight)"
            ) from exc
        self._recall_buffer = RecallBuffer(self._write_recalls)
        self._closed = False

    def __repr__(self) -> str:
        return f"SqlStore({self.url!r})"

    def close(self) -> None:
        """Release all connections. Idempotent; later calls raise ``StoreError``."""
        if not self._closed:
            buffer, self._recall_buffer = self._recall_buffer, None
            if buffer is not None:
                buffer.close()  # the pending recall bookkeeping is written first
            self._closed = True
            self._info.engine.dispose()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def get_meta(self, key: str) -> str | None:
        """The value stored under ``key`` in the ``meta`` table, or ``None``.

        Used for store-wide facts such as the embedding model name and dimension.

        Raises:
            UsageError: empty key or longer than 200 characters.
        """
        query = select(meta.c.value).where(meta.c.key == _check_key(key))
        with self._tx() as conn:
            value = conn.execute(query).scalar_one_or_none()
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` (a string) under ``key``, replacing any previous value.

        Raises:
            UsageError: empty/over-long key, or ``value`` not a string.
        """
        _check_key(key)
        if not isinstance(value, str):
            raise UsageError(f"meta value must be a string, got {type(value).__name__}")
        stmt = (
            self._upsert_insert(meta)
            .values(key=key, value=value)
            .on_conflict_do_update(index_elements=[meta.c.key], set_={"value": value})
        )
        with self._tx(write=True) as conn:
            conn.execute(stmt)

    def stats(self, tenant_id: str | None = None) -> dict[str, Any]:
        """Counts for the CLI ``stats`` command and diagnostics (docs/cli.md).

        Args:
            tenant_id: one tenant, or ``None`` for the whole store (an empty string is refused).

        Returns:
            ``{"tenant_id", "trajectories", "events", "experiences": {"total", "by_status",
            "by_kind"}, "review_jobs": {state: n}, "recalls"}`` plus
            ``"tenants"`` (number of distinct tenants) for the whole store. Every status, kind
            and job state is present, zero when unused.

        Raises:
            TenantRequiredError: ``tenant_id`` is an empty or non-string value.
        """
        tenant = None if tenant_id is None else validate_tenant(tenant_id)

        def count(table: Any) -> Any:
            query = select(func.count()).select_from(table)
            return query if tenant is None else query.where(table.c.tenant_id == tenant)

        def grouped(table: Any, column: Any) -> Any:
            query = select(column, func.count()).group_by(column)
            return query if tenant is None else query.where(table.c.tenant_id == tenant)

        with self._tx() as conn:
            by_status = {s.value: 0 for s in ExperienceStatus}
            by_status.update(dict(_pairs(conn.execute(grouped(experiences, experiences.c.status)))))
            by_kind = {k.value: 0 for k in ExperienceKind}
            by_kind.update(dict(_pairs(conn.execute(grouped(experiences, experiences.c.kind)))))
            jobs = {s.value: 0 for s in JobState}
            jobs.update(dict(_pairs(conn.execute(grouped(review_jobs, review_jobs.c.state)))))
            result: dict[str, Any] = {
                "tenant_id": tenant,
                "trajectories": conn.execute(count(trajectories)).scalar_one(),
                "events": conn.execute(count(events)).scalar_one(),
                "experiences": {
                    "total": sum(by_status.values()),
                    "by_status": by_status,
                    "by_kind": by_kind,
                },
                "review_jobs": jobs,
                "recalls": conn.execute(count(recalls)).scalar_one(),
            }
            if tenant is None:
                names = select(trajectories.c.tenant_id).union(select(experiences.c.tenant_id))
                result["tenants"] = conn.execute(
                    select(func.count()).select_from(names.subquery())
                ).scalar_one()
        return result
