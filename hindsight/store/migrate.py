"""Apply the store's Alembic migrations programmatically (no ``alembic.ini`` needed)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection

__all__ = ["MIGRATIONS_DIR", "alembic_config", "current_revision", "head_revision", "upgrade"]

#: Folder of ``env.py`` and ``versions/``; shipped inside the package (and the wheel).
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

# Any constant; PostgreSQL sessions opening the same database migrate one after the other.
_PG_MIGRATION_LOCK = 0x68696E64


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config pointing at the shipped migrations, optionally bound to ``connection``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    """The newest revision shipped with this version of hindsight."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at (``None`` for an empty database)."""
    return MigrationContext.configure(connection).get_current_revision()


def upgrade(connection: Connection) -> None:
    """Upgrade the database behind ``connection`` to the newest revision.

    Must be called inside a transaction on ``connection``; on PostgreSQL it takes a
    transaction-level advisory lock first, so concurrent openers do not race.
    """
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
    command.upgrade(alembic_config(connection), "head")
