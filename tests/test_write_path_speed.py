"""The write path's shortcuts (docs/benchmarks.md#the-write-path) decide and read exactly what the
full path does.

* :func:`hindsight.writeback.text.cannot_align` only answers "not aligned" when the full
  alignment agrees, and dedup's decisions are the same with and without it;
* :func:`hindsight.store.codec.experience_from_stored` (the row reader of ``get_experiences``)
  gives the same experience as full validation, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from sqlalchemy import select, update

from hindsight.models import (
    Experience,
    ExperienceKind,
    ExperienceStatus,
    Provenance,
    Trajectory,
    utcnow,
)
from hindsight.store import SqlStore
from hindsight.store.codec import EXPERIENCE_FIELDS, experience_from_row, experience_from_stored
from hindsight.store.schema import experiences as table
from hindsight.writeback import dedup
from hindsight.writeback.dedup import decide
from hindsight.writeback.text import cannot_align, compare_texts

# Wording, specifics (numbers, identifiers, names), correction words, slot keys, punctuation.
_WORDS = [
    *("when", "the", "call", "retry", "once", "then", "fall", "back", "to", "cache"),
    *("use", "for", "api", "order", "instead", "failed", "is", "version", "timeout"),
    *("3", "5", "100/min", "1000/min", "v2", "get_order", "HAT039", "Helm", "Terraform"),
    *("=", ":", ",", ".", ";", "pandas", "1.5", "2.1", "never", "always", "重试"),
]
_texts = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=24).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(older=_texts, newer=_texts)
def test_cannot_align_never_contradicts_the_full_alignment(older: str, newer: str) -> None:
    if cannot_align(older, newer):
        diff = compare_texts(older, newer)
        assert not diff.same_specifics
        assert not diff.aligned
        assert not diff.is_update


def test_cannot_align_skips_different_lessons_and_keeps_updates() -> None:
    far_a = "When get_order timed out at peak hours for premium members, retry once."
    far_b = "When cancel_booking rejected a date in the past, validate the date first."
    assert cannot_align(far_a, far_b)
    assert not compare_texts(far_a, far_b).aligned  # the full answer agrees
    # an update (one value in a slot) and a same-specifics pair are left to the alignment
    assert not cannot_align("use retry=3 for API X", "use retry=5 for API X; 3 failed")
    assert compare_texts("use retry=3 for API X", "use retry=5 for API X; 3 failed").is_update
    assert not cannot_align("retry once then fall back", "retry twice then give up")


def _exp(text: str, kind: ExperienceKind, **extra: object) -> Experience:
    return Experience(tenant_id="t", kind=kind, content=text, **extra)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    new=_texts,
    olds=st.lists(_texts, min_size=1, max_size=7),
    sims=st.lists(st.floats(0.0, 1.0), min_size=7, max_size=7),
    kind=st.sampled_from([ExperienceKind.RULE, ExperienceKind.OUTCOME]),
    support=st.integers(1, 4),
)
def test_dedup_decides_the_same_with_and_without_the_shortcut(
    new: str, olds: list[str], sims: list[float], kind: ExperienceKind, support: int
) -> None:
    cands = sorted(
        ((_exp(o, kind, support_count=support), s) for o, s in zip(olds, sims, strict=False)),
        key=lambda pair: -pair[1],
    )
    candidate = _exp(new, kind)
    fast = decide(candidate, cands, 0.8)
    original = dedup.cannot_align
    dedup.cannot_align = lambda _a, _b: False  # type: ignore[assignment]
    try:
        full = decide(candidate, cands, 0.8)
    finally:
        dedup.cannot_align = original
    assert (fast.op, fast.target, fast.similarity, fast.reason) == (
        full.op,
        full.target,
        full.similarity,
        full.reason,
    )


def _rows(store: SqlStore, tenant: str) -> list[tuple[object, ...]]:
    with store._tx() as conn:
        query = select(*[table.c[n] for n in EXPERIENCE_FIELDS]).where(table.c.tenant_id == tenant)
        return [tuple(r) for r in conn.execute(query)]


def test_stored_rows_decode_like_full_validation(tmp_path: Path, database_url: str) -> None:
    import numpy as np

    store = SqlStore(database_url)
    now = utcnow()
    runs = [Trajectory(tenant_id="t", task=f"run {i}") for i in range(2)]
    exps = [
        _exp("Retry order_query once, then fall back.", ExperienceKind.RULE),
        _exp(
            "重试一次，然后用缓存 ✓",
            ExperienceKind.TOOL_RELIABILITY,
            namespace="shared",
            task_type=None,
            tools=["order_query"],
            tags=["airline", "peak"],
            confidence=1,
            importance=0.25,
            trust=0.6,
            provenance=Provenance.TOOL,
            source_trajectory_ids=[r.id for r in runs],
            status=ExperienceStatus.QUARANTINED,
            metadata={"quarantine_reasons": ["x: y"], "nested": {"a": [1, 2.5, None]}},
            last_recalled_at=now,
            embedding_model="hash",
            reviewer="heuristic",
        ),
    ]
    try:
        for run in runs:
            store.add_trajectory(run, enqueue_review=False)
        store.add_experiences(exps, np.ones((2, 4), dtype=np.float32))
        rows = _rows(store, "t")
        assert len(rows) == 2
        for row in rows:
            fast = experience_from_stored(row)
            full = experience_from_row(dict(zip(EXPERIENCE_FIELDS, row, strict=True)))
            assert fast == full
            assert fast.model_fields_set == full.model_fields_set
            for name in EXPERIENCE_FIELDS:
                assert type(getattr(fast, name)) is type(getattr(full, name)), name
            assert fast.created_at.utcoffset() is not None
            fast.confidence = 0.4  # still a validating model
            with pytest.raises(ValidationError):
                fast.confidence = 2.0
        by_id = store.get_experiences("t", [e.id for e in exps])
        assert {e.id: e.content for e in exps} == {i: e.content for i, e in by_id.items()}
        assert by_id[exps[1].id].status is ExperienceStatus.QUARANTINED
        # A row edited by hand into something invalid is not passed through silently.
        with store._tx(write=True) as conn:
            conn.execute(update(table).where(table.c.id == exps[0].id).values(kind="bogus"))
        with pytest.raises(ValidationError):
            store.get_experiences("t", [exps[0].id])
    finally:
        store.close()
