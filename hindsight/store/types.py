"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import JSON, BigInteger, DateTime, Integer, LargeBinary, TypeDecorator
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

__all__ = ["AutoIncrement", "Embedding", "Json", "UtcDateTime"]

_LE_FLOAT32 = np.dtype("<f4")


class UtcDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC and always returned timezone-aware (UTC).

    PostgreSQL keeps ``timestamptz``. SQLite has no time zones: values are written as naive UTC
    (fixed-width text, so they sort chronologically) and given back their ``tzinfo`` on read.
    Naive input is taken to be UTC already, as in :mod:`hindsight.models`.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: Any | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):  # pragma: no cover - drivers always give datetimes
            raise TypeError(f"database returned {type(value).__name__} for a timestamp")
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class _Json(TypeDecorator[Any]):
    """A JSON document; ``jsonb`` on PostgreSQL (its dialect loads only there: a SQLite
    process never imports it, docs/architecture.md#cold-start)."""

    impl = JSON(none_as_null=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB(none_as_null=True))
        return dialect.type_descriptor(JSON(none_as_null=True))


#: JSON document (lists and dicts); ``jsonb`` on PostgreSQL so containment (``@>``) works.
#: Python ``None`` is stored as SQL ``NULL``.
Json: TypeEngine[Any] = _Json()

#: An auto-incrementing integer key: ``bigint`` (identity) on PostgreSQL, SQLite's rowid alias.
AutoIncrement: TypeEngine[int] = BigInteger().with_variant(Integer(), "sqlite")


class Embedding(TypeDecorator[npt.NDArray[np.float32]]):
    """An embedding: a 1-D float32 numpy array in Python.

    PostgreSQL: pgvector's ``vector`` type (no fixed dimension in the column; the HNSW index
    is built on ``embedding::vector(d)`` for the store's dimension, :mod:`.pgvector`), bound
    and read through the ``pgvector`` package's SQLAlchemy type. SQLite: little-endian float32
    bytes.
    """

    impl = LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from pgvector.sqlalchemy import VECTOR

            return dialect.type_descriptor(VECTOR())
        return dialect.type_descriptor(LargeBinary())

    def process_bind_param(self, value: Any | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        array = np.ascontiguousarray(value, dtype=_LE_FLOAT32)
        if array.ndim != 1:
            raise TypeError(f"an embedding is 1-dimensional, got shape {array.shape}")
        return array if dialect.name == "postgresql" else array.tobytes()

    def process_result_value(
        self, value: Any | None, dialect: Dialect
    ) -> npt.NDArray[np.float32] | None:
        if value is None:
            return None
        if isinstance(value, bytes | bytearray | memoryview):
            return np.frombuffer(value, dtype=_LE_FLOAT32).astype(np.float32)
        return np.asarray(value, dtype=np.float32)
