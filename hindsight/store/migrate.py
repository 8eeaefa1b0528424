"""Apply the store's Alembic migrations programmatically (no ``alembic.ini`` needed).

Opening a store whose schema is current does not import Alembic (cold
start): :func:`shipped_head` reads the revision ids of ``migrations/versions`` from their
source text, :func:`stored_revision` reads ``alembic_version`` with SQLAlchemy, and only when
they differ is Alembic imported to run :func:`upgrade`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = [
    "MIGRATIONS_DIR",
    "MigrationError",
    "UnversionedSchemaError",
    "alembic_config",
    "check_versioned",
    "current_revision",
    "head_revision",
    "needs_upgrade",
    "shipped_head",
    "stored_revision",
    "upgrade",
]

#: Folder of ``env.py`` and ``versions/``; shipped inside the package (and the wheel).
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

# Any constant; PostgreSQL sessions opening the same database migrate one after the other.
_PG_MIGRATION_LOCK = 0x68696E64

_REVISION = re.compile(r"^revision\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
_DOWN = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(?:None|['\"]([^'\"]+)['\"])", re.MULTILINE)


class MigrationError(Exception):
    """Alembic could not bring the schema to the shipped head (e.g. a database written by a
    newer hindsight, at a revision this version does not know)."""


class UnversionedSchemaError(MigrationError):
    """The database has hindsight's tables but no ``alembic_version`` table: its schema version
    is unknown, and migrating it as if it were empty fails half-way ("table ... already
    exists")."""


def check_versioned(connection: Connection) -> None:
    """Refuse a database that holds hindsight tables without a recorded revision.

    Raises:
        UnversionedSchemaError: one line saying what was found and what to do.
    """
    if stored_revision(connection) is not None:
        return
    from hindsight.store.schema import metadata

    found = sorted(set(inspect(connection).get_table_names()) & set(metadata.tables))
    if found:
        shown = ", ".join(found[:4]) + (", ..." if len(found) > 4 else "")
        raise UnversionedSchemaError(
            f"it has hindsight tables ({shown}) but no alembic_version table, so the version "
            "of its schema is unknown; point DATABASE_URL (or --data-dir) at an empty "
            "database, or restore a backup of this one (hindsight restore)"
        )


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config pointing at the shipped migrations, optionally bound to ``connection``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    """The newest revision shipped with this version of hindsight, as Alembic computes it."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


@lru_cache(maxsize=1)
def shipped_head() -> str:
    """The head revision id of ``migrations/versions``, read from the revision files' source
    text (their ``revision = "..."`` and ``down_revision = ...`` lines) without importing
    Alembic: the one revision no other revision names as its ``down_revision``.

    Raises:
        RuntimeError: the files do not form one chain with a single head.
    """
    revisions: set[str] = set()
    downs: set[str] = set()
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        rev = _REVISION.search(source)
        if rev is None:
            continue
        revisions.add(rev.group(1))
        down = _DOWN.search(source)
        if down is not None and down.group(1):
            downs.add(down.group(1))
    heads = sorted(revisions - downs)
    if len(heads) != 1:
        raise RuntimeError(f"the shipped migrations must have one head, found {heads}")
    return heads[0]


def stored_revision(connection: Connection) -> str | None:
    """The revision recorded in the database's ``alembic_version`` table, read with
    SQLAlchemy (``None``: no table or no row, an empty database)."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    rows = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return rows[0] if len(rows) == 1 else None


def needs_upgrade(connection: Connection) -> bool:
    """Whether the database is not at :func:`shipped_head` (then :func:`upgrade` runs; a
    revision unknown to this version makes it raise :class:`MigrationError`)."""
    return stored_revision(connection) != shipped_head()


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at (``None`` for an empty database), as Alembic reads it."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def upgrade(connection: Connection) -> None:
    """Upgrade the database behind ``connection`` to the newest revision (imports Alembic).

    Must be called inside a transaction on ``connection``; on PostgreSQL it takes a
    transaction-level advisory lock first, so concurrent openers do not race.

    Raises:
        MigrationError: Alembic refused (e.g. the database is at an unknown revision).
    """
    from alembic import command
    from alembic.util.exc import CommandError

    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
    try:
        command.upgrade(alembic_config(connection), "head")
    except CommandError as exc:
        raise MigrationError(str(exc)) from exc
