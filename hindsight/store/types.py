"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, Integer, TypeDecorator
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

__all__ = ["AutoIncrement", "Json", "UtcDateTime"]


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


#: JSON document (lists and dicts); ``jsonb`` on PostgreSQL so containment (``@>``) works.
#: Python ``None`` is stored as SQL ``NULL``.
Json: TypeEngine[Any] = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")

#: An auto-incrementing integer key: ``bigint`` (identity) on PostgreSQL, SQLite's rowid alias.
AutoIncrement: TypeEngine[int] = BigInteger().with_variant(Integer(), "sqlite")
