"""Argument checks shared by every :class:`hindsight.ports.VectorIndex` implementation.

Every index (pgvector in the SQL store; Qdrant Edge, qdrant-client and in-memory in
``hindsight.vectors``) runs the same checks, so they refuse the same inputs with the same
errors: ids are canonical UUID strings, vectors are finite and of
the index's dimension, every point names its tenant, and every search is scoped to one tenant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hindsight._errors import UsageError
from hindsight._ids import normalize_id, validate_tenant
from hindsight.ports import VectorPoint

__all__ = [
    "FILTER_FIELDS",
    "CheckedPoint",
    "SearchScope",
    "check_dimension",
    "check_ids",
    "check_points",
    "check_search",
    "check_vector",
    "clamp_similarity",
]

# Payload fields that get a keyword index; search filters on the first four.
FILTER_FIELDS: tuple[str, ...] = ("tenant_id", "namespace", "task_type", "status", "kind", "tags")


@dataclass(frozen=True, slots=True)
class CheckedPoint:
    """A validated point: canonical id, float32 vector of shape ``(dimension,)``, payload."""

    id: str
    vector: npt.NDArray[np.float32]
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SearchScope:
    """A validated search: query vector (float32, ``(dimension,)``), one tenant, its
    namespaces, optional task_type, statuses and limit."""

    vector: npt.NDArray[np.float32]
    tenant_id: str
    namespaces: list[str]
    task_type: str | None
    statuses: list[str]
    limit: int
    kinds: list[str] | None = None

    @property
    def empty(self) -> bool:
        """True when the scope can match nothing (no namespace, no status or ``limit == 0``)."""
        return not self.namespaces or not self.statuses or self.limit == 0 or self.kinds == []


def check_dimension(dimension: Any) -> int:
    """Return ``dimension`` if it is a positive int.

    Raises:
        UsageError: not a positive integer.
    """
    if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension <= 0:
        raise UsageError(f"dimension must be a positive integer, got {dimension!r}")
    return dimension


def check_vector(vector: Any, dimension: int, what: str = "vector") -> npt.NDArray[np.float32]:
    """Return ``vector`` (a sequence of floats or a 1-d array) as float32, shape ``(dimension,)``.

    Raises:
        UsageError: wrong shape or length, or a NaN / infinite component.
    """
    try:
        arr = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise UsageError(
            f"{what} must be a sequence of floats, got {type(vector).__name__}"
        ) from None
    if arr.ndim != 1:
        raise UsageError(f"{what} must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] != dimension:
        raise UsageError(
            f"{what} has dimension {arr.shape[0]}, but this index stores {dimension}-d vectors"
        )
    if not np.all(np.isfinite(arr)):
        raise UsageError(f"{what} contains NaN or infinite values")
    return arr


def check_ids(ids: Sequence[Any]) -> list[str]:
    """Canonical lower-case UUID strings for ``ids``, duplicates removed, order kept.

    Raises:
        UsageError: an id is not a UUID, or ``ids`` is a single string instead of a sequence.
    """
    if isinstance(ids, str | bytes):
        raise UsageError("ids must be a sequence of UUID strings, not a single string")
    return list(dict.fromkeys(normalize_id(i, "point id") for i in ids))


def _check_label(payload: dict[str, Any], key: str, point_id: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"point {point_id}: payload[{key!r}] must be a non-empty string")
    return value.strip()


def check_points(points: Sequence[VectorPoint], dimension: int) -> list[CheckedPoint]:
    """Validate points before any is written (all or nothing at the validation stage).

    The payload must hold ``tenant_id`` (validated like every tenant), ``namespace`` and
    ``status`` (non-empty strings); ``task_type``, ``kind`` and ``tags`` are optional. Tenant
    and labels are stored stripped. When an id repeats, the last point wins (as in Qdrant).

    Raises:
        TenantRequiredError: a point has no usable ``tenant_id``.
        UsageError: bad id, vector or payload.
    """
    checked: dict[str, CheckedPoint] = {}
    for point in points:
        if not isinstance(point, VectorPoint):
            raise UsageError(f"points must be VectorPoint objects, got {type(point).__name__}")
        pid = normalize_id(point.id, "point id")
        vector = check_vector(point.vector, dimension, f"vector of point {pid}")
        if not isinstance(point.payload, dict):
            raise UsageError(f"point {pid}: payload must be a dict")
        payload = dict(point.payload)
        payload["tenant_id"] = validate_tenant(payload.get("tenant_id"))
        payload["namespace"] = _check_label(payload, "namespace", pid)
        payload["status"] = _check_label(payload, "status", pid)
        tags = payload.get("tags")
        if tags is not None and (
            isinstance(tags, str) or not all(isinstance(t, str) for t in tags)
        ):
            raise UsageError(f"point {pid}: payload['tags'] must be a list of strings")
        checked.pop(pid, None)
        checked[pid] = CheckedPoint(pid, vector, payload)
    return list(checked.values())


def _check_labels(values: Sequence[str], what: str) -> list[str]:
    if isinstance(values, str | bytes):
        raise UsageError(f"{what} must be a sequence of strings, not a single string")
    out: list[str] = []
    for value in values:
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"{what} must hold non-empty strings, got {value!r:.80}")
        out.append(value.strip())
    return list(dict.fromkeys(out))


def check_search(
    dimension: int,
    vector: Any,
    tenant_id: Any,
    namespaces: Sequence[str],
    limit: int,
    task_type: str | None,
    statuses: Sequence[str],
    kinds: Sequence[str] | None = None,
) -> SearchScope:
    """Validate the arguments of :meth:`hindsight.ports.VectorIndex.search`.

    Raises:
        TenantRequiredError: ``tenant_id`` is ``None``, empty, blank or not a string.
        UsageError: bad query vector; ``limit`` negative or not an int; a namespace, status or
            kind is not a non-empty string.
    """
    tenant = validate_tenant(tenant_id)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise UsageError(f"limit must be a non-negative integer, got {limit!r}")
    if task_type is not None and (not isinstance(task_type, str) or not task_type.strip()):
        raise UsageError(f"task_type must be None or a non-empty string, got {task_type!r:.80}")
    return SearchScope(
        vector=check_vector(vector, dimension, "query vector"),
        tenant_id=tenant,
        namespaces=_check_labels(namespaces, "namespaces"),
        task_type=task_type.strip() if task_type is not None else None,
        statuses=_check_labels(statuses, "statuses"),
        limit=limit,
        kinds=None if kinds is None else _check_labels(kinds, "kinds"),
    )


def clamp_similarity(score: float) -> float:
    """A cosine score clamped into [-1, 1] (float rounding can leave it at 1.0000001)."""
    return max(-1.0, min(1.0, float(score)))
