"""The public batch write (docs/lifecycle.md, adding lessons in a batch): ``add_experiences``
on SQLite and PostgreSQL.

A batch gives the same results as the same items added one by one, merges duplicates inside
the batch, is validated as a whole before anything is written, is written in one SQL
transaction, and stays inside its tenant.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from hindsight import AddResult, Memory, TenantRequiredError, UsageError
from hindsight.guard import canonical_source
from tests.conftest import shared_file
from tests.helpers import make_memory


def _dev_items() -> list[dict[str, Any]]:
    # looked up when a test runs: a clone without ../shared skips these tests, not the module
    dev_set = shared_file("poison/dev.jsonl")
    rows = [json.loads(line) for line in dev_set.read_text().splitlines() if line.strip()]
    return [{"content": r["content"], "source": canonical_source(r["source"])} for r in rows]


def _items() -> list[dict[str, Any]]:
    """Dev-set lessons (poison and benign), with duplicates of earlier items (case, space and
    punctuation changed), value changes of an earlier lesson, and the same lesson in other
    namespaces."""
    base = _dev_items()
    refund = "Before a refund, confirm the order id with the customer."
    extra = [
        {"content": refund, "tools": ["refund"]},
        {"content": "before a refund confirm the order id with the customer", "tools": ["refund"]},
        {"content": "Retry the payment API at most retry=3 times.", "tags": ["payments"]},
        {"content": "Retry the payment API at most retry=5 times.", "tags": ["payments"]},
        {"content": refund, "namespace": "b"},
        {"content": base[-1]["content"].upper(), "source": base[-1]["source"]},
    ]
    return [*base[:10], *extra[:3], *base[10:], *extra[3:]]


def _table(mem: Memory, tenant: str) -> list[tuple[Any, ...]]:
    rows = []
    for status in ("active", "quarantined", "superseded"):
        for ns in ("default", "b"):
            for e in mem.list_experiences(tenant_id=tenant, status=status, namespace=ns, limit=500):
                row = (e.content, e.namespace, e.status.value, e.support_count)
                rows.append((*row, round(e.confidence, 6)))
    return sorted(rows)


def _commits_with_writes(mem: Memory) -> list[int]:
    """Counts, in ``[0]``, the committed transactions of ``mem``'s store that wrote a row."""
    engine = mem.aio.store._info.engine
    counter = [0]

    def executed(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
            conn.info["wrote"] = True

    def committed(conn: Any) -> None:
        if conn.info.pop("wrote", False):
            counter[0] += 1

    event.listen(engine, "after_cursor_execute", executed)
    event.listen(engine, "commit", committed)
    return counter


def test_batch_equals_one_by_one(tmp_path: Path, database_url: str) -> None:
    items = _items()
    one = make_memory(tmp_path / "one", database_url)
    postgres = database_url.startswith("postgresql")
    batch = make_memory(
        tmp_path / "batch", database_url if postgres else f"sqlite:///{tmp_path / 'batch.db'}"
    )
    try:
        seen: set[str] = set()
        singles: list[tuple[str, str]] = []
        for item in _items():
            content = item.pop("content")
            exp = one.add_experience(content, tenant_id="t", **item)
            result = (
                "quarantined"
                if exp.status.value == "quarantined"
                else "merged"
                if exp.id in seen
                else "created"
            )
            seen.add(exp.id)
            singles.append((result, exp.content))
        tenant = "u" if postgres else "t"  # one PostgreSQL database for both memories
        commits = _commits_with_writes(batch)
        results = batch.add_experiences(_items(), tenant_id=tenant)
        # the whole batch is one write transaction; with the Edge shard (SQLite) a second one
        # deletes the batch's vector-outbox rows once the shard has them (pgvector: no outbox)
        assert commits[0] == (1 if postgres else 2), "the whole batch is one write transaction"
        assert [r.index for r in results] == list(range(len(items)))
        assert [(r.result, r.experience.content) for r in results] == singles
        assert _table(batch, tenant) == _table(one, "t")
        kinds = {r.result for r in results}
        assert kinds == {"created", "merged", "quarantined"}
        # every result names a stored experience of the tenant, as it is stored now
        for r in results:
            assert batch.get_experience(r.id, tenant_id=tenant).id == r.experience.id == r.id
        # the vectors were upserted after the commit: the new lessons are recalled at once
        hits = batch.recall("confirm the order id before a refund", tenant_id=tenant, top_k=3)
        assert results[10].id in {h.experience.id for h in hits.hits}
    finally:
        one.close()
        batch.close()


def test_duplicates_inside_a_batch_merge(tmp_path: Path, database_url: str) -> None:
    with make_memory(tmp_path / "d", database_url) as mem:
        results = mem.add_experiences(
            [
                {"content": "Check the seat map before changing a flight.", "tags": ["a"]},
                {"content": "Ask for the booking code first."},
                {"content": "check the seat map, before changing a flight", "tags": ["b"]},
                {"content": "CHECK THE SEAT MAP BEFORE CHANGING A FLIGHT!"},
            ],
            tenant_id="t",
        )
        assert [r.result for r in results] == ["created", "created", "merged", "merged"]
        assert results[2].id == results[3].id == results[0].id
        # every result of the merged lesson shows it as it is after the batch
        assert results[0].experience == results[3].experience
        stored = mem.list_experiences(tenant_id="t")
        assert len(stored) == 2
        merged = mem.get_experience(results[0].id, tenant_id="t")
        assert merged.content == "Check the seat map before changing a flight."
        assert merged == results[0].experience


def test_batch_stays_in_its_tenant(tmp_path: Path, database_url: str) -> None:
    with make_memory(tmp_path / "i", database_url) as mem:
        text = "Verify the customer's identity before any refund."
        (first,) = mem.add_experiences([{"content": text}], tenant_id="t1")
        results = mem.add_experiences([{"content": text}, {"content": text}], tenant_id="t2")
        assert [r.result for r in results] == ["created", "merged"]
        assert results[0].id != first.id
        assert {r.experience.tenant_id for r in results} == {"t2"}
        assert mem.get_experience(first.id, tenant_id="t1").support_count == 1
        assert [e.id for e in mem.list_experiences(tenant_id="t1")] == [first.id]
        with pytest.raises(TenantRequiredError):
            mem.add_experiences([{"content": text}], tenant_id="")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"content": ""}, "item 2: content must be a non-empty string"),
        ({"content": "x", "confidence": 1.5}, "item 2: confidence must be a number from 0 to 1"),
        ({"content": "x", "kind": "nonsense"}, "item 2: kind must be one of"),
        ({"content": "x", "source": 3}, "item 2: source must be one of"),
        ({"content": "x", "source": "usr"}, "item 2: source must be one of"),
        ({"content": "x", "tools": [""]}, "item 2: tools must be tool names of 1..200"),
        ({"content": "x", "tags": 5}, "item 2: tags must be"),
        ({"content": "x", "tenant_id": "other"}, "item 2: 'tenant_id': unknown field"),
        ({"kind": "rule"}, "item 2: content: field required"),
        ("just text", "item 2: must be an object"),
    ],
)
def test_an_invalid_item_refuses_the_whole_batch(tmp_path: Path, bad: Any, message: str) -> None:
    with make_memory(tmp_path / "v", f"sqlite:///{tmp_path / 'v.db'}") as mem:
        items = [{"content": "Lesson one."}, {"content": "Lesson two."}, bad]
        with pytest.raises(UsageError) as err:
            mem.add_experiences(items, tenant_id="t")
        assert str(err.value).startswith(message)
        assert "\n" not in str(err.value)
        assert mem.list_experiences(tenant_id="t") == []
        assert mem.add_experiences([], tenant_id="t") == []
        with pytest.raises(UsageError, match="items must be a list"):
            mem.add_experiences({"content": "x"}, tenant_id="t")  # type: ignore[arg-type]


def test_async_memory_add_experiences(tmp_path: Path) -> None:
    mem = make_memory(tmp_path / "a", f"sqlite:///{tmp_path / 'a.db'}")
    try:
        results = asyncio.run(
            mem.aio.add_experiences(
                [{"content": "Confirm the cabin class before booking.", "kind": "anti_pattern"}],
                tenant_id="t",
            )
        )
        assert isinstance(results[0], AddResult)
        assert results[0].experience.kind.value == "anti_pattern"
        assert results[0].experience.content == "Confirm the cabin class before booking."
    finally:
        mem.close()


def test_a_repeat_far_down_a_long_batch_still_merges(tmp_path: Path, database_url: str) -> None:
    """A lesson is compared with its nearest earlier lessons of the batch, and always with the
    earlier one of the same text up to case and punctuation, however many lessons closer in
    embedding space came between (dedup.EarlierInBatch); other lessons stay apart."""
    from hindsight.writeback.dedup import CANDIDATES

    tools = [f"tool_{i:03d}" for i in range(3 * CANDIDATES)]
    items = [{"content": "Check the seat map before changing a flight."}]
    items += [
        {"content": f"When {t} times out, retry it once, then call {t}_cached."} for t in tools
    ]
    items += [{"content": "CHECK THE SEAT MAP, before changing a flight!"}]
    with make_memory(tmp_path / "d", database_url) as mem:
        results = mem.add_experiences(items, tenant_id="t")
        assert [r.result for r in results] == ["created"] * (len(items) - 1) + ["merged"]
        assert results[-1].id == results[0].id
        assert len(mem.list_experiences(tenant_id="t", limit=500)) == len(items) - 1


def test_the_nearest_earlier_lessons_are_those_a_full_scan_ranks_first() -> None:
    import numpy as np

    from hindsight.models import Experience
    from hindsight.writeback.dedup import EarlierInBatch

    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(200, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exps = [
        Experience(tenant_id="t", kind="rule", content=f"lesson number {i}") for i in range(200)
    ]
    earlier = EarlierInBatch()
    for exp, vec in zip(exps, vectors, strict=True):
        earlier.append(exp, vec)
    for q in range(0, 200, 37):
        query = vectors[q]
        full = sorted(range(200), key=lambda i: -float(vectors[i] @ query))[:10]
        got = earlier.nearest(query, "a text no lesson has", 10)
        assert sorted(e.content for e, _ in got) == sorted(exps[i].content for i in full)
        # the same text key is always there, even when it is not among the nearest
        far = full[-1] if q else 199
        with_key = earlier.nearest(query, exps[far].content.upper() + ".", 3)
        assert exps[far].id in {e.id for e, _ in with_key}
    assert len(earlier) == 200 and [e for e, _ in earlier] == exps
