"""PostgreSQL side of ``hindsight backup`` / ``restore``: ``pg_dump`` and ``pg_restore``.

Both are the PostgreSQL client programs found on ``PATH``. ``pg_dump`` refuses a server of a
newer major version than itself: install the client matching the server (Debian:
``postgresql-client-16``) or, for the compose deployment, run the dump inside the ``postgres``
container (``examples/deploy/backup.sh``). The password goes through ``PGPASSWORD``, never on
a command line other users could read.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from sqlalchemy.engine import URL

from hindsight._errors import StoreError

__all__ = ["MAGIC", "dump", "restore"]

MAGIC = b"PGDMP"
"""The first bytes of a ``pg_dump --format=custom`` archive."""
# A TOC line of ``pg_restore --list`` for an extension or its comment ("; 1259 16389
# EXTENSION - vector", "; 0 0 COMMENT - EXTENSION vector").
_EXTENSION_ENTRY = re.compile(r"^\d+; \d+ \d+ (EXTENSION|COMMENT - EXTENSION) ")


def _program(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise StoreError(
            f"{name} not found on PATH: install the PostgreSQL client of the server's major "
            "version (Debian: apt-get install postgresql-client), or back up a docker compose "
            "deployment with examples/deploy/backup.sh (docs/deploy.md)"
        )
    return found


def _libpq(url: URL) -> tuple[str, dict[str, str]]:
    """A libpq connection URI without the password, and the environment carrying it."""
    env = dict(os.environ)
    if url.password is not None:
        env["PGPASSWORD"] = str(url.password)
    plain = url.set(drivername="postgresql", password=None)
    return plain.render_as_string(hide_password=False), env


def _run(args: list[str], env: dict[str, str], what: str) -> str:
    try:
        done = subprocess.run(
            args, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
        )
    except OSError as exc:
        raise StoreError(f"{what} failed to start: {exc}") from exc
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        detail = lines[0] if lines else f"exit code {done.returncode}"
        raise StoreError(f"{what} failed: {detail}")
    return done.stdout


def dump(url: URL, dest: Path) -> None:
    """``pg_dump --format=custom`` of the database ``url`` into the new file ``dest``
    (written under a temporary name and renamed, so a failed dump leaves nothing at ``dest``),
    then ``pg_restore --list`` checks the archive can be read back.

    Raises:
        StoreError: pg_dump is missing or failed (its first error line is in the message).
    """
    conninfo, env = _libpq(url)
    part = dest.with_name(f".{dest.name}.part")
    part.unlink(missing_ok=True)
    try:
        _run(
            [_program("pg_dump"), "--format=custom", "--no-owner", "--no-privileges",
             f"--file={part}", f"--dbname={conninfo}"],
            env, "pg_dump",
        )  # fmt: skip
        _run([_program("pg_restore"), "--list", str(part)], env, "pg_restore --list")
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)


def restore(url: URL, archive: Path) -> None:
    """Restore the ``pg_dump`` archive into the database ``url``, in one transaction: the
    objects of the archive are dropped and recreated (``--clean --if-exists``), and any error
    rolls everything back, leaving the database as it was.

    The pgvector extension is not part of what is dropped and recreated (only its owner, a
    superuser as a rule, may): it is created first when it is missing
    (:func:`hindsight.store.pgvector.ensure_pgvector`), and the archive's ``EXTENSION``
    entries are left out of the restore (``pg_restore --use-list``).

    Raises:
        StoreError: pg_restore is missing or failed, or pgvector cannot be created.
    """
    from sqlalchemy import create_engine

    from hindsight.store.pgvector import ensure_pgvector

    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            ensure_pgvector(conn)
    finally:
        engine.dispose()
    conninfo, env = _libpq(url)
    entries = _run([_program("pg_restore"), "--list", str(archive)], env, "pg_restore --list")
    wanted = [ln for ln in entries.splitlines() if not _EXTENSION_ENTRY.search(ln)]
    with tempfile.NamedTemporaryFile("w", suffix=".list", delete=False) as fh:
        fh.write("\n".join(wanted) + "\n")
    listing = Path(fh.name)
    try:
        _run(
            [_program("pg_restore"), "--clean", "--if-exists", "--no-owner", "--no-privileges",
             "--single-transaction", "--exit-on-error", f"--use-list={listing}",
             f"--dbname={conninfo}", str(archive)],
            env, "pg_restore",
        )  # fmt: skip
    finally:
        listing.unlink(missing_ok=True)
