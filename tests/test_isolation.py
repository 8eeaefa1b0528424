"""Tenant isolation, proven by property-based tests (docs/security.md#tenant-isolation): no
tenant reads, counts, changes or deletes another's data, whatever the order of operations.

The workloads and checks are in :mod:`tests.isolation_suite` (reusable for HTTP and MCP). Here
they run on the in-memory fakes (a hundred seeded workloads) and, fewer, on the real stack:
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

IN_MEMORY_EXAMPLES = 100
"""Seeded workloads on the fakes (12 steps each, 1,200 steps): every rule comes up in many
orders. About 26 s alone on a quiet 2-core machine; 300 took 77 s, and more than the 300 s
per-test timeout on a loaded CI machine."""
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
