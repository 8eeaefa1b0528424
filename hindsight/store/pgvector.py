"""PostgreSQL with pgvector: the vectors are a column of the experience rows.

``experiences.embedding`` is pgvector's ``vector`` type on PostgreSQL, so a lesson and its
vector are one row, written, re-embedded, re-statused or deleted in one transaction: no other
process ever sees one without the other, and there is nothing to follow or rebuild. Recall
searches the table itself (:class:`PgVectorIndex`):

* an HNSW index (cosine) on ``embedding::vector(d)`` for the store's dimension ``d`` (the
  column has no fixed dimension, so a re-embed to another model replaces the index,
  https://github.com/pgvector/pgvector#indexing-vectors-with-different-dimensions);
* the filters recall uses (tenant, namespaces, status, task_type, kind) in the same
  ``WHERE``, with pgvector 0.8's iterative index scans (``hnsw.iterative_scan =
  relaxed_order``): the scan goes on until ``limit`` rows pass the filter, so a small tenant
  in a big table still gets its ``top_k``; the planner prefers an exact scan of the tenant's
  rows (the ``(tenant_id, ...)`` btree indexes) where that is cheaper;
* the payload of each hit is built from the row's columns in the same query, so recall scores
  its candidates from rows that cannot be stale.

The extension is created when a store is opened (:func:`ensure_pgvector`; it needs a role
allowed to ``CREATE EXTENSION``, or a database where it exists already).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, cast, func, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from hindsight._errors import StoreError
from hindsight._ids import validate_tenant
from hindsight._vector_contract import check_dimension, check_search, clamp_similarity
from hindsight.models import ExperienceStatus
from hindsight.ports import FloatMatrix, VectorHit
from hindsight.store.codec import PAYLOAD_COLUMNS, payload_of_row
from hindsight.store.schema import experiences as _exp

__all__ = ["MIN_VERSION", "PgVectorIndex", "drop_hnsw", "ensure_pgvector", "hnsw_index_name"]

MIN_VERSION = (0, 8, 0)
"""The oldest pgvector with iterative index scans (filtered searches that still fill top_k)."""
EF_SEARCH = 100
"""``hnsw.ef_search`` of a search for up to 50 rows (more rows: twice the limit, at most
1000): the candidates the graph walk keeps; sets recall quality against speed
(docs/benchmarks.md has overlap@5 with an exact scan)."""
_HOWTO = (
    "PostgreSQL needs the pgvector extension (0.8 or newer) in this database: as a superuser "
    "run `CREATE EXTENSION vector;` (pgvector ships with the managed PostgreSQL services and "
    "the pgvector/pgvector images; docs/deploy.md#postgresql-and-pgvector)"
)
_DELETED = ExperienceStatus.DELETED.value
_ROW = tuple(_exp.c[name] for name in PAYLOAD_COLUMNS)
_SETTINGS = text(
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    "set_config('hnsw.ef_search', :ef, true)"
)


def _version(value: str) -> tuple[int, ...]:
    return tuple(int(part) for part in value.split(".")[:3] if part.isdigit())


def ensure_pgvector(conn: Connection) -> str:
    """Make sure the ``vector`` extension is in the database of ``conn`` (created when it is
    missing and the role may create it); returns its version.

    Raises:
        StoreError: it is missing and cannot be created, or older than :data:`MIN_VERSION`
            (one line saying what to run).
    """
    query = text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    version = conn.execute(query).scalar()
    if version is None:
        try:
            with conn.begin_nested():
                conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
            raise StoreError(f"{_HOWTO}; creating it failed: {reason}") from None
        version = conn.execute(query).scalar_one()
    if _version(str(version)) < MIN_VERSION:
        raise StoreError(
            f"{_HOWTO}; this database has pgvector {version}: run `ALTER EXTENSION vector "
            "UPDATE;` after installing a newer pgvector"
        )
    return str(version)


def drop_hnsw(conn: Connection, *, keep: str | None = None) -> list[str]:
    """Drop the HNSW indexes of ``experiences`` but ``keep`` (a re-embed to another dimension
    drops them all before it writes the new vectors), one opener at a time; returns the names
    there were."""
    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _HNSW_LOCK})
    names = list(
        conn.execute(
            text(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'experiences' AND "
                "schemaname = current_schema() AND "
                "indexname LIKE 'ix\\_experiences\\_embedding\\_hnsw\\_%'"
            )
        ).scalars()
    )
    for name in names:
        if name != keep:
            conn.execute(text(f'DROP INDEX IF EXISTS "{name}"'))
    return names


def hnsw_index_name(dimension: int) -> str:
    """The name of the HNSW index of ``dimension``-d embeddings."""
    return f"ix_experiences_embedding_hnsw_{dimension}"


class PgVectorIndex:
    """The :class:`~hindsight.ports.VectorIndex` of a PostgreSQL store with pgvector: a
    search of the ``experiences`` table (see the module docstring). Nothing to write: the
    points are the rows.

    Opening creates the HNSW index of ``dimension`` when it is missing (on a large store
    that takes a while, once: pgvector builds it from every row), and drops the HNSW indexes
    of other dimensions (a re-embed changed the model).

    Args:
        store: an open :class:`~hindsight.store.SqlStore` on PostgreSQL.
        dimension: the embedder's vector length.

    Raises:
        UsageError: ``store`` is not on PostgreSQL.
        StoreError: the index cannot be created.
    """

    kind = "pgvector"

    def __init__(self, store: Any, dimension: int) -> None:
        if store.backend != "postgresql":
            raise StoreError("pgvector needs a PostgreSQL store")
        self.dimension = check_dimension(dimension)
        self.store = store
        self.index_name = hnsw_index_name(dimension)
        self._as_vector = cast(_exp.c.embedding, _vector_type(dimension))
        self._queries: dict[tuple[int, bool, bool], Any] = {}
        with store._tx(write=True) as conn:
            self.version = ensure_pgvector(conn)
            if self.index_name not in drop_hnsw(conn, keep=self.index_name):
                conn.execute(
                    text(
                        f'CREATE INDEX IF NOT EXISTS "{self.index_name}" ON experiences USING '
                        f"hnsw ((embedding::vector({self.dimension})) vector_cosine_ops)"
                    )
                )
            self.server_version = str(conn.execute(text("SHOW server_version")).scalar_one())

    def _query(self, limit: int, by_task_type: bool, by_kinds: bool) -> Any:
        """The nearest-rows statement for ``limit`` rows, with the task type and kinds
        conditions when asked (bound as ``task_type`` and ``kinds``); built once per shape
        and kept (docs/benchmarks.md#sql-statements): the limit stays a literal, so the
        planner sees it."""
        key = (limit, by_task_type, by_kinds)
        query = self._queries.get(key)
        if query is not None:
            return query
        distance = self._as_vector.cosine_distance(bindparam("q", type_=_vector_type(None)))
        query = (
            select(*_ROW, distance.label("distance"))
            .where(
                _exp.c.tenant_id == bindparam("tenant"),
                _exp.c.namespace.in_(bindparam("namespaces", expanding=True)),
                _exp.c.status.in_(bindparam("statuses", expanding=True)),
                _exp.c.status != _DELETED,
                _exp.c.embedding.is_not(None),
            )
            .order_by(distance)
            .limit(limit)
        )
        if by_task_type:
            query = query.where(_exp.c.task_type == bindparam("task_type"))
        if by_kinds:
            query = query.where(_exp.c.kind.in_(bindparam("kinds", expanding=True)))
        if len(self._queries) < 256:
            self._queries[key] = query
        return query

    def search(
        self,
        vector: Sequence[float] | FloatMatrix,
        *,
        tenant_id: str,
        namespaces: Sequence[str],
        limit: int,
        task_type: str | None = None,
        statuses: Sequence[str] = ("active",),
        kinds: Sequence[str] | None = None,
    ) -> list[VectorHit]:
        """The ``limit`` nearest experiences of ``tenant_id`` whose namespace is one of
        ``namespaces``, whose status is one of ``statuses`` (never ``deleted``) and, if given,
        whose task_type is ``task_type`` and kind one of ``kinds``; best first,
        ``similarity`` = cosine in [-1, 1], ``payload`` built from the row. ``[]`` without a
        query when ``namespaces``, ``statuses`` or ``kinds`` is empty or ``limit`` is 0.

        Raises:
            TenantRequiredError: ``tenant_id`` is None, empty or blank.
            UsageError: wrong vector dimension, NaN, negative ``limit``.
            StoreError: the database failed.
        """
        return self.search_many(
            [vector],
            tenant_id=tenant_id,
            namespaces=namespaces,
            limit=limit,
            task_type=task_type,
            statuses=statuses,
            kinds=kinds,
        )[0]

    def search_many(
        self,
        vectors: Sequence[Sequence[float] | FloatMatrix] | FloatMatrix,
        *,
        tenant_id: str,
        namespaces: Sequence[str],
        limit: int,
        task_type: str | None = None,
        statuses: Sequence[str] = ("active",),
        kinds: Sequence[str] | None = None,
        payload: bool = True,
    ) -> list[list[VectorHit]]:
        """:meth:`search` of each row of ``vectors`` with the same filter, in one transaction.
        ``payload=False``: the hits carry ids and similarities only (``payload`` ``None``).

        Raises:
            As :meth:`search`.
        """
        scopes = [
            check_search(
                self.dimension, row, tenant_id, namespaces, limit, task_type, statuses, kinds
            )
            for row in vectors
        ]
        if not scopes or scopes[0].empty:
            return [[] for _ in scopes]
        first = scopes[0]
        query = self._query(first.limit, first.task_type is not None, first.kinds is not None)
        params: dict[str, Any] = {
            "tenant": first.tenant_id,
            "namespaces": first.namespaces,
            "statuses": first.statuses,
        }
        if first.task_type is not None:
            params["task_type"] = first.task_type
        if first.kinds is not None:
            params["kinds"] = list(first.kinds)
        ef = str(EF_SEARCH if first.limit <= 50 else min(2 * first.limit, 1000))
        found: list[list[VectorHit]] = []
        with self.store._tx() as conn:
            conn.execute(_SETTINGS, {"ef": ef})
            for scope in scopes:
                rows = conn.execute(query, {**params, "q": scope.vector}).mappings().all()
                found.append(_hits(rows, payload))
        return found

    def count(self, tenant_id: str | None = None) -> int:
        """Experiences with an embedding that are not deleted, of one tenant or (``None``)
        of all tenants.

        Raises:
            TenantRequiredError: ``tenant_id`` is given but empty or blank.
        """
        query = (
            select(func.count())
            .select_from(_exp)
            .where(_exp.c.status != _DELETED, _exp.c.embedding.is_not(None))
        )
        if tenant_id is not None:
            query = query.where(_exp.c.tenant_id == validate_tenant(tenant_id))
        with self.store._tx() as conn:
            return int(conn.execute(query).scalar_one())

    def describe(self) -> str:
        """One line for ``hindsight doctor``: versions and the index."""
        return (
            f"pgvector {self.version} in PostgreSQL {self.server_version}: vectors in the "
            f"experience rows, HNSW index {self.index_name} (cosine), iterative scans"
        )

    def close(self) -> None:
        """Nothing to release: the store owns the connections."""

    def __repr__(self) -> str:
        return f"PgVectorIndex(dimension={self.dimension}, index={self.index_name!r})"


_HNSW_LOCK = 0x68736877  # any constant: openers create or drop the HNSW index one at a time


def _vector_type(dimension: int | None) -> Any:
    from pgvector.sqlalchemy import VECTOR

    return VECTOR(dimension)


def _hits(rows: Sequence[Any], payload: bool = True) -> list[VectorHit]:
    hits = []
    for row in rows:
        distance = row["distance"]
        similarity = 0.0 if distance is None or math.isnan(distance) else 1.0 - float(distance)
        found = payload_of_row(row) if payload else None
        hits.append(VectorHit(row["id"], clamp_similarity(similarity), found))
    # relaxed_order may return rows slightly out of distance order: sort them (stable by id)
    hits.sort(key=lambda h: (-h.similarity, h.id))
    return hits
