"""Two transactions writing one tenant's experiences never deadlock (PostgreSQL).

Found in CI: eight threads adding and deleting experiences in three tenants, and one delete
failed with ``deadlock detected``. Every write of an experience bumps its tenant's stamp row
(a trigger), so a transaction that locked an experience row first and then wanted the stamp,
against one that held the stamp and then wanted that row, was a cycle. The store now takes
the stamp rows first, in tenant order, in every transaction that writes experiences.

Each case holds one transaction open after it wrote experience X (so it holds the stamp),
starts a second transaction that writes experience Y by one of the public write paths, waits
until that one is blocked, then writes Y in the first transaction. Before the fix the first
transaction's write of Y was chosen as the deadlock victim. SQLite runs the same cases (one
writer at a time: the second simply waits).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from hindsight.store import SqlStore
from tests.helpers import make_memory

TENANT = "acme"

#: The second transaction's write of Y, through each public path that writes an experience.
SECOND: dict[str, Callable[[SqlStore, str], Any]] = {
    "adjust_confidence": lambda s, y: s.adjust_confidence(TENANT, y, 0.1),
    "set_status": lambda s, y: s.set_status(TENANT, [y], "archived"),
    "forget": lambda s, y: s.forget(TENANT, experience_ids=[y]),
    "update_experience": lambda s, y: s.update_experience(
        s.get_experience(TENANT, y).model_copy(update={"confidence": 0.3})
    ),
}


def _blocked_backends(url: str) -> int:
    """How many sessions of this PostgreSQL database wait on a lock."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            query = text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            return int(conn.execute(query).scalar_one())
    finally:
        engine.dispose()


def _wait_until_blocked(url: str, worker: threading.Thread) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and worker.is_alive():
        if url.startswith("postgresql") and _blocked_backends(url) > 0:
            return
        if url.startswith("sqlite"):
            time.sleep(0.3)  # the second writer queues on the store's lock
            return
        time.sleep(0.02)


@pytest.mark.parametrize("second", sorted(SECOND))
def test_a_writer_holding_the_stamp_and_one_holding_a_row_never_deadlock(
    tmp_path: Path, database_url: str, second: str
) -> None:
    with make_memory(tmp_path, database_url, background_review=False) as mem:
        x = mem.add_experience("Retry order_query once when it times out", tenant_id=TENANT)
        y = mem.add_experience("Check the cabin before changing flights", tenant_id=TENANT)
        store: SqlStore = mem.aio.store
        errors: list[BaseException] = []

        def run_second() -> None:
            try:
                SECOND[second](store, y.id)
            except BaseException as exc:  # reported by the assertion below
                errors.append(exc)

        worker = threading.Thread(target=run_second)
        with store.batch():
            store.adjust_confidence(TENANT, x.id, 0.1)  # holds the stamp and X
            worker.start()
            _wait_until_blocked(database_url, worker)
            store.set_status(TENANT, [y.id], "archived")  # now Y, which the second wants
        worker.join(30)
        assert not worker.is_alive()
        assert errors == []
        assert store.get_experience(TENANT, x.id).confidence == pytest.approx(x.confidence + 0.1)
