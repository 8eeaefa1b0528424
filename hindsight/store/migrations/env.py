"""Alembic environment of the SQL store.

Normally run by :func:`hindsight.store.migrate.upgrade`, which passes an open connection in
``config.attributes["connection"]``. To write a new revision after changing ``schema.py``::

    from alembic import command
    from hindsight.store.migrate import alembic_config

    cfg = alembic_config()
    cfg.set_main_option("sqlalchemy.url", "sqlite:////tmp/dev.db")
    command.upgrade(cfg, "head")
    command.revision(cfg, "what changed", autogenerate=True)

then review the generated file in ``versions/`` (spell types out as ``0001_initial`` does).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection

from hindsight.store.schema import metadata

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=True,  # SQLite cannot ALTER most things: batch mode copies the table
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


_connection = config.attributes.get("connection")
if isinstance(_connection, Connection):
    _run(_connection)
else:
    _url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not _url:
        raise SystemExit("pass the database with: alembic -x url=<sqlalchemy url> ...")
    _engine = create_engine(_url)
    try:
        with _engine.begin() as _conn:
            _run(_conn)
    finally:
        _engine.dispose()
