"""Tenant isolation, proven by property-based tests (docs/security.md#tenant-isolation; cases C01,
C02, C17).

The workloads and checks are in :mod:`tests.isolation_suite` (reusable for HTTP and MCP). Here
they run on the in-memory fakes (hundreds of seeded workloads) and, fewer, on the real stack:
the embedded Qdrant Edge index with SQLite and with PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

from hindsight.testing import ScriptedReviewer, test_memory
from tests.helpers import make_memory
from tests.isolation_suite import (
    fresh_clients,
    run_isolation_suite,
    scripted_lessons,
    shared_client,
)

IN_MEMORY_EXAMPLES = 300
"""Seeded workloads on the fakes (12 steps each): enough to hit every rule in many orders."""
REAL_STACK_EXAMPLES = 60
"""Workloads on Qdrant Edge + SQL, sharing one store so data piles up across workloads."""


def test_isolation_holds_for_random_workloads_on_the_fakes() -> None:
    factory, close = fresh_clients(lambda: test_memory(reviewer=ScriptedReviewer(scripted_lessons)))
    try:
        run_isolation_suite(factory, max_examples=IN_MEMORY_EXAMPLES)
    finally:
        close()


def test_isolation_holds_on_qdrant_edge_and_sql(tmp_path: Path, database_url: str) -> None:
    with make_memory(tmp_path, database_url, reviewer=ScriptedReviewer(scripted_lessons)) as mem:
        clients = shared_client(mem)
        run_isolation_suite(lambda: next(clients), max_examples=REAL_STACK_EXAMPLES)
