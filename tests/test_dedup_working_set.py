"""The dedup working set (docs/benchmarks.md#the-write-path): rows kept between write batches, in
step with the store, on SQLite and PostgreSQL.

The same batches are written for two tenants of one database, one with the working set and
one without; between batches another memory on the same database (another process's) and the
writing memory itself change what the next batch's guard and dedup read: a confidence raised
over the conflict threshold, an edited text, an archive, a delete, a new lesson. Every batch's
results and the final rows are the same for both tenants, and the working set did serve rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hindsight import AddResult, Memory
from hindsight.bench._data import synthetic_lessons
from hindsight.writeback.dedup import WorkingSet
from tests.helpers import make_memory

CONFIRM = "Always confirm the order id with the customer before calling cancel_order."
AGAINST = "Never confirm the order id with the customer before calling cancel_order."
INVOICE = "When get_invoice returns 429, wait one second and retry."
INVOICE_EDITED = "When get_invoice returns 429, wait two seconds and retry."
RETRY = "Retry the payment API at most retry=3 times."
RETRY_NEW = "Retry the payment API at most retry=5 times; 3 failed."
PANDAS = "Run the export_report job with pandas 1.5 installed."
PANDAS_OTHER = "Run the export_report job with pandas 2.1 installed."  # a conflict (values)
FILLER = synthetic_lessons(120)
STATUSES = ["active", "archived", "superseded", "quarantined"]


def _items(texts: list[str]) -> list[dict[str, Any]]:
    return [
        {"content": t, "task_type": f"type-{i % 3}", "confidence": 0.5 + (i % 4) / 10}
        for i, t in enumerate(texts)
    ]


def _by_content(mem: Memory, tenant: str) -> dict[str, str]:
    rows = mem.aio.store.list_experiences(tenant, statuses=STATUSES, limit=1000)
    return {e.content: e.id for e in rows}


def _signature(mem: Memory, tenant: str, results: list[AddResult]) -> list[tuple[Any, ...]]:
    names = {v: k for k, v in _by_content(mem, tenant).items()}
    out = []
    for r in results:
        e = r.experience
        links = sorted(names.get(i, "?") for i in e.metadata.get("conflicts_with", []))
        out.append(
            (
                r.result,
                e.content,
                e.status.value,
                round(e.confidence, 6),
                e.version,
                e.support_count,
                tuple(e.metadata.get("quarantine_reasons", [])),
                tuple(links),
            )
        )
    return out


def _final(mem: Memory, tenant: str) -> list[tuple[Any, ...]]:
    rows = mem.aio.store.list_experiences(tenant, statuses=STATUSES, limit=1000)
    return sorted(
        (e.content, e.status.value, round(e.confidence, 6), e.version, e.support_count)
        for e in rows
    )


def _assert_exact(mem: Memory, working: WorkingSet, tenant: str) -> int:
    """Every row the working set would serve (its stamp is the store's) is the stored row;
    returns how many it keeps."""
    kept = dict(working._kept.get(tenant) or {})
    store = mem.aio.store
    if not kept or working._stamps.get(tenant) != store.experience_stamp(tenant):
        return 0
    stored = store.get_experiences(tenant, list(kept), pending_recalls=False)
    for eid, row in kept.items():
        assert row == stored.get(eid), eid
    return len(kept)


def test_batches_with_the_working_set_equal_batches_without(
    tmp_path: Path, database_url: str
) -> None:
    one = make_memory(tmp_path / "one", database_url)
    two = make_memory(tmp_path / "two", database_url)  # another process's memory, same SQL
    deduper = one.aio.deduper
    assert deduper is not None and isinstance(deduper.working_set, WorkingSet)
    working = deduper.working_set
    tenants = {"kept": working, "fresh": None}
    seen: dict[str, list[list[tuple[Any, ...]]]] = {t: [] for t in tenants}
    checked: list[int] = []

    def batch(texts: list[str]) -> None:
        for tenant, ws in tenants.items():
            deduper.working_set = ws
            results = one.add_experiences(_items(texts), tenant_id=tenant)
            seen[tenant].append(_signature(one, tenant, results))
        deduper.working_set = working
        checked.append(_assert_exact(one, working, "kept"))

    def change(step: int) -> None:
        for tenant in tenants:
            ids = _by_content(one, tenant)
            if step == 1:
                two.adjust_confidence(ids[CONFIRM], 0.35, tenant_id=tenant, reason="t")
                two.edit_experience(ids[INVOICE], tenant_id=tenant, content=INVOICE_EDITED)
                two.archive(ids[FILLER[3]], tenant_id=tenant)
                two.delete_experience(ids[FILLER[5]], tenant_id=tenant)
                one.adjust_confidence(ids[RETRY], 0.2, tenant_id=tenant, reason="t")
            else:
                two.adjust_confidence(ids[CONFIRM], -0.5, tenant_id=tenant, reason="t")
                two.add_experience(FILLER[70] + " Check twice.", tenant_id=tenant)

    try:
        batch([CONFIRM, INVOICE, RETRY, PANDAS, *FILLER[:40]])
        change(1)
        hits = working.hits
        batch([AGAINST, INVOICE_EDITED, RETRY_NEW, PANDAS_OTHER, FILLER[3], *FILLER[40:70]])
        batch([*FILLER[70:90], FILLER[41], FILLER[42].upper()])  # nothing changed in between
        assert working.hits > hits  # rows of the earlier batch served from memory
        change(2)
        batch([AGAINST, CONFIRM, *FILLER[90:120], FILLER[70] + " Check twice!"])
        for step, (kept, fresh) in enumerate(zip(seen["kept"], seen["fresh"], strict=True)):
            assert kept == fresh, f"batch {step}"
        assert _final(one, "kept") == _final(one, "fresh")
        flat = [row for rows in seen["kept"] for row in rows]
        assert {"created", "merged", "quarantined"} <= {r[0] for r in flat}
        assert any(r[7] for r in flat)  # conflicts were decided with the kept rows too
        assert all(checked[1:]) and len(checked) == 4  # kept rows (a new tenant: after its
        # first batch), all exact
    finally:
        one.close()
        two.close()


def test_a_failed_batch_drops_the_kept_rows(tmp_path: Path, database_url: str) -> None:
    one = make_memory(tmp_path / "one", database_url)
    try:
        one.add_experiences(_items(FILLER[:20]), tenant_id="acme")
        one.add_experiences(_items(FILLER[20:40]), tenant_id="acme")
        deduper = one.aio.deduper
        assert deduper is not None and deduper.working_set is not None
        working = deduper.working_set
        assert working._kept.get("acme")

        def boom(*_args: Any, **_kwargs: Any) -> None:
            raise RuntimeError("disk full")

        original = deduper._flush
        deduper._flush = boom  # type: ignore[method-assign]
        try:
            with pytest.raises(RuntimeError, match="disk full"):
                one.add_experiences(_items(FILLER[40:60]), tenant_id="acme")
        finally:
            deduper._flush = original  # type: ignore[method-assign]
        assert "acme" not in working._kept  # rolled back: nothing kept is trusted
        results = one.add_experiences(_items(FILLER[40:60]), tenant_id="acme")
        assert len(results) == 20
    finally:
        one.close()
