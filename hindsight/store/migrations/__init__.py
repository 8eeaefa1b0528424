"""Alembic migrations of the SQL store, applied to head by :class:`hindsight.store.SqlStore`."""
