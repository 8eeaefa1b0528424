"""The recall hot path looks experiences up by primary key on SQLite (a query-plan check).

Without ANALYZE statistics SQLite estimated ``tenant_id = ?`` cheaper than an IN list of 20
primary keys and scanned the whole tenant through a ``(tenant_id, ...)`` index: recall p50 at
100k experiences was ~107 ms instead of ~4 ms (``python -m hindsight.bench``). This checks the
plan, not the time: every statement ``get_experiences`` and ``record_recall`` run must search
``experiences`` by its primary key.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from hindsight.models import Experience, ExperienceKind
from hindsight.store import SqlStore

N_IDS = 20  # recall fetches max(4 * top_k, 20) candidates


def _plans(store: SqlStore, call: Any) -> list[str]:
    engine = store._info.engine
    statements: list[tuple[str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        if "experiences" in statement and statement.lstrip().upper().startswith(
            ("SELECT", "UPDATE")
        ):
            statements.append((statement, params))

    sa.event.listen(engine, "before_cursor_execute", grab)
    try:
        call()
    finally:
        sa.event.remove(engine, "before_cursor_execute", grab)
    assert statements
    plans = []
    with engine.connect() as conn:
        for statement, params in statements:
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).fetchall()
            plans.append(" | ".join(str(r[-1]) for r in rows))
    return plans


def test_recall_lookups_use_the_primary_key(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'hindsight.db'}")
    try:
        exps = [
            Experience(
                tenant_id=f"t{i % 3}",
                kind=ExperienceKind.RULE,
                content=f"lesson {i}",
                task_type=f"type{i % 4}",
            )
            for i in range(300)
        ]
        store.add_experiences(exps, None)
        ids = [e.id for e in exps if e.tenant_id == "t0"][:N_IDS]
        assert len(store.get_experiences("t0", ids)) == N_IDS
        assert store.get_experiences("t1", ids) == {}  # the tenant still filters
        at = datetime.now(UTC)
        for call in (
            lambda: store.get_experiences("t0", ids),
            lambda: store.record_recall("t0", ids, at),
        ):
            for plan in _plans(store, call):
                if "experiences" not in plan.lower() or "recalls" in plan.lower():
                    continue
                assert "sqlite_autoindex_experiences_1 (id=?)" in plan or "PRIMARY KEY" in plan, (
                    plan
                )
                assert "tenant_id=?" not in plan, plan
    finally:
        store.close()
