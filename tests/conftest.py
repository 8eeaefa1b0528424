"""Shared fixtures: SQL backends (SQLite and PostgreSQL), data dirs, the tau-bench file."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Nothing a test does may land in the user's real data dir (e.g. the unsaved area of an
# integration pointed at a server that is down): a default data dir of its own per session.
os.environ.setdefault("HINDSIGHT_DATA_DIR", tempfile.mkdtemp(prefix="hindsight-tests-"))

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HINDSIGHT_SHARED", REPO.parent / "shared"))
IN_CI = bool(os.environ.get("CI"))


def shared_file(relative: str) -> Path:
    """A file from ../shared; skipped when absent locally, an error under CI."""
    path = SHARED / relative
    if not path.exists():
        if IN_CI:
            pytest.fail(f"{path} is missing (CI must have ../shared beside the clone)")
        pytest.skip(f"{path} not found")
    return path


@pytest.fixture(scope="session")
def tau_bench_path() -> Path:
    return shared_file("data/tau-bench/gpt-4o-airline.json")


def _pg_admin_url() -> str | None:
    return os.environ.get("HINDSIGHT_TEST_DATABASE_URL")


def _new_pg_database(admin_url: str) -> tuple[str, str]:
    import sqlalchemy as sa

    name = f"hs_{uuid.uuid4().hex[:12]}"
    eng = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with eng.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    eng.dispose()
    url = sa.engine.make_url(admin_url).set(database=name)
    return url.render_as_string(hide_password=False), name


def _drop_pg_database(admin_url: str, name: str) -> None:
    """Drop a test database. ``WITH (FORCE)`` ends the test's own leftover sessions, but not
    one of another role (an autovacuum worker that just connected: "must be a member of the
    role whose process is being terminated"); that is retried for a few seconds, then the
    database is left behind (a test's cleanup never fails the test)."""
    import time

    import sqlalchemy as sa

    eng = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        for attempt in range(10):
            try:
                with eng.connect() as conn:
                    conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                return
            except sa.exc.OperationalError:
                raise
            except sa.exc.DBAPIError:
                if attempt == 9:
                    import warnings

                    warnings.warn(f"test database {name} left behind", stacklevel=2)
                    return
                time.sleep(0.5)
    finally:
        eng.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty SQL database URL: a SQLite file, or a new PostgreSQL database.

    PostgreSQL comes from ``HINDSIGHT_TEST_DATABASE_URL`` (an account allowed to create
    databases); without it the postgres variant is skipped locally and fails under CI.
    """
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'hindsight.db'}"
        return
    yield from fresh_pg_database()


def fresh_pg_database() -> Iterator[str]:
    """Yield the URL of a new PostgreSQL database, dropped afterwards; skipped without
    ``HINDSIGHT_TEST_DATABASE_URL``, failed under CI (where PostgreSQL must be tested)."""
    admin = _pg_admin_url()
    if not admin:
        if IN_CI:
            pytest.fail("HINDSIGHT_TEST_DATABASE_URL is not set under CI")
        pytest.skip("HINDSIGHT_TEST_DATABASE_URL not set")
    url, name = _new_pg_database(admin)
    try:
        yield url
    finally:
        _drop_pg_database(admin, name)


@pytest.fixture
def opened() -> Iterator[list[Any]]:
    """Memories a test opens on files (append them); closed after it."""
    mems: list[Any] = []
    yield mems
    for mem in mems:
        mem.close()
