"""A brute-force in-memory :class:`~hindsight.ports.VectorIndex` on numpy, for tests."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hindsight._errors import StoreError, UsageError
from hindsight._ids import validate_tenant
from hindsight._vector_contract import (
    check_dimension,
    check_ids,
    check_points,
    check_search,
    clamp_similarity,
)
from hindsight.ports import FloatMatrix, VectorHit, VectorPoint

__all__ = ["InMemoryVectorIndex"]


class InMemoryVectorIndex:
    """Exact cosine search over vectors kept in a dict; nothing touches the disk.

    Same semantics and errors as :class:`hindsight.vectors.EdgeVectorIndex` (the shared contract
    tests run on both), thread-safe (one lock around every call), O(n) per search: meant for
    tests and tiny stores. Vectors are L2-normalised on insert; a zero vector has similarity 0
    with everything, as in Qdrant.

    Args:
        dimension: vector length (positive int).

    Raises:
        UsageError: ``dimension`` is not a positive int.
    """

    def __init__(self, dimension: int) -> None:
        self.dimension = check_dimension(dimension)
        self._lock = threading.Lock()
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        self._payloads: dict[str, dict[str, Any]] = {}
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the in-memory vector index is closed")

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace ``points`` by id; the payload is replaced as a whole.

        Raises:
            TenantRequiredError: a point's payload has no usable ``tenant_id``.
            UsageError: bad id, vector (wrong dimension, NaN) or payload.
        """
        checked = check_points(points, self.dimension)
        with self._lock:
            self._check_open()
            for point in checked:
                norm = float(np.linalg.norm(point.vector))
                vec = point.vector / norm if norm > 0 else point.vector
                self._vectors[point.id] = vec.astype(np.float32)
                self._payloads[point.id] = point.payload

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids are ignored.

        Raises:
            UsageError: an id is not a UUID.
        """
        wanted = check_ids(ids)
        with self._lock:
            self._check_open()
            for pid in wanted:
                self._vectors.pop(pid, None)
                self._payloads.pop(pid, None)

    def set_status(self, ids: Sequence[str], status: str) -> None:
        """Set payload ``status`` of the given points; unknown ids are ignored.

        Raises:
            UsageError: an id is not a UUID or ``status`` is empty.
        """
        wanted = check_ids(ids)
        if not isinstance(status, str) or not status.strip():
            raise UsageError(f"status must be a non-empty string, got {status!r:.80}")
        with self._lock:
            self._check_open()
            for pid in wanted:
                if pid in self._payloads:
                    self._payloads[pid] = {**self._payloads[pid], "status": status.strip()}

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
        """The ``limit`` most similar points of ``tenant_id`` whose namespace is one of
        ``namespaces``, whose status is one of ``statuses`` and (if given) whose task_type is
        ``task_type``; best first, ``similarity`` = cosine in [-1, 1], ties broken by id.

        Raises:
            TenantRequiredError: ``tenant_id`` is None, empty or blank.
            UsageError: wrong vector dimension, NaN, negative ``limit``.
        """
        scope = check_search(
            self.dimension, vector, tenant_id, namespaces, limit, task_type, statuses, kinds
        )
        if scope.empty:
            return []
        query = scope.vector
        norm = float(np.linalg.norm(query))
        if norm > 0:
            query = query / norm
        namespaces_set, statuses_set = set(scope.namespaces), set(scope.statuses)
        with self._lock:
            self._check_open()
            ids = [
                pid
                for pid, payload in self._payloads.items()
                if payload.get("tenant_id") == scope.tenant_id
                and payload.get("namespace") in namespaces_set
                and payload.get("status") in statuses_set
                and (scope.task_type is None or payload.get("task_type") == scope.task_type)
                and (scope.kinds is None or payload.get("kind") in scope.kinds)
            ]
            if not ids:
                return []
            matrix = np.stack([self._vectors[pid] for pid in ids])
            payloads = [self._payloads[pid] for pid in ids]  # replaced whole, never mutated
        scores = matrix @ query
        order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))
        return [
            VectorHit(ids[i], clamp_similarity(scores[i]), dict(payloads[i]))
            for i in order[: scope.limit]
        ]

    def count(self, tenant_id: str | None = None) -> int:
        """Exact number of points, of one tenant or (``None``) of all tenants.

        Raises:
            TenantRequiredError: ``tenant_id`` is given but empty or blank.
        """
        tenant = None if tenant_id is None else validate_tenant(tenant_id)
        with self._lock:
            self._check_open()
            if tenant is None:
                return len(self._payloads)
            return sum(1 for p in self._payloads.values() if p.get("tenant_id") == tenant)

    def all_ids(self) -> set[str]:
        """Every point id (canonical UUID strings)."""
        with self._lock:
            self._check_open()
            return set(self._payloads)

    def delete_tenant(self, tenant_id: str) -> None:
        """Delete every point of ``tenant_id``; other tenants are untouched.

        Raises:
            TenantRequiredError: ``tenant_id`` is None, empty or blank.
        """
        tenant = validate_tenant(tenant_id)
        with self._lock:
            self._check_open()
            doomed = [pid for pid, p in self._payloads.items() if p.get("tenant_id") == tenant]
            for pid in doomed:
                del self._payloads[pid]
                del self._vectors[pid]

    def close(self) -> None:
        """Drop every point; later calls raise :class:`StoreError`. Idempotent."""
        with self._lock:
            self._closed = True
            self._vectors.clear()
            self._payloads.clear()

    def __enter__(self) -> InMemoryVectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"InMemoryVectorIndex(dimension={self.dimension}, points={len(self._payloads)})"
