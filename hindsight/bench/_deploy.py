"""Where ``hindsight bench`` runs: a temporary embedded store, or the configured deployment
(``DATABASE_URL`` / ``VECTOR_DB_URL``) in tenants of its own that it removes afterwards."""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import delete

from hindsight.bench._data import TENANTS
from hindsight.config import MemoryConfig

__all__ = ["Deployment", "describe", "open_deployment"]


@dataclass
class Deployment:
    """One open store for one benchmark size.

    Attributes:
        memory: the open :class:`hindsight.Memory`.
        tenants: the tenants the benchmark writes to (``bench-<random>-<k>`` on a configured
            deployment, so nothing of the user's is read or changed).
        data_dir: the temporary data dir (embedded SQLite and/or vectors), removed at exit.
        config: the configuration it was opened with.
    """

    memory: Any
    tenants: list[str]
    data_dir: Path
    config: MemoryConfig
    owned: list[str] = field(default_factory=list)


def describe(config: MemoryConfig) -> dict[str, str]:
    """``{"sql": ..., "vectors": ..., "embedder": ...}``: where the benchmark runs, with
    passwords masked (for the report)."""
    from sqlalchemy.engine import make_url

    sql = (
        make_url(config.sql_url()).render_as_string(hide_password=True)
        if config.database_url
        else "SQLite in a temporary data dir"
    )
    vectors = config.vector_db_url or "Qdrant Edge in a temporary data dir"
    return {"sql": sql, "vectors": vectors, "embedder": config.embedding_model}


@contextmanager
def open_deployment(
    parent: Path | None = None, *, background_review: bool = False
) -> Iterator[Deployment]:
    """Open the store the benchmark measures, and clean up after it.

    Embedded (neither ``DATABASE_URL`` nor ``VECTOR_DB_URL`` set): a fresh data dir under
    ``parent`` (default: the system temp dir), deleted at exit. Otherwise the configured
    deployment, with the local parts (if any) in that temporary data dir and the benchmark's
    own random tenants, whose rows and vectors are deleted at exit (also on errors).

    Args:
        parent: folder for the temporary data dir.
        background_review: run the in-process review worker.

    Raises:
        HindsightError: the store cannot be opened.
    """
    from hindsight.engine.memory import Memory

    root = Path(tempfile.mkdtemp(prefix="hindsight-bench-", dir=parent))
    try:
        config = MemoryConfig(data_dir=root, background_review=background_review)
        shared = config.database_url is not None or config.vector_db_url is not None
        token = secrets.token_hex(4)
        tenants = [f"bench-{token}-{k}" if shared else f"tenant-{k}" for k in range(TENANTS)]
        mem = Memory(config)
        try:
            yield Deployment(mem, tenants, root, config)
        finally:
            mem.close()  # the benchmark may have closed it already (cold start)
            if shared:
                with Memory(config) as again:
                    for tenant in tenants:
                        purge_tenant(again, tenant)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def purge_tenant(mem: Any, tenant: str) -> None:
    """Delete every row and vector of ``tenant`` (a benchmark tenant on a shared deployment):
    ``forget(everything=True)``, then any row left in a table with a ``tenant_id`` column
    (versions, audit, outcomes), once the vector index is synced."""
    from hindsight.store.schema import metadata

    store = mem.aio.store
    store.forget(tenant, everything=True)
    mem.aio.sync_vectors()  # applies the forget to the vector index
    with store._tx(write=True) as conn:
        for table in reversed(metadata.sorted_tables):
            if "tenant_id" in table.c:
                conn.execute(delete(table).where(table.c.tenant_id == tenant))
