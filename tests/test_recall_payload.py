"""Recall scores its candidates from the vector payloads.

What scoring reads (confidence, trust, updated_at, kind, namespace, tags, tools, sources,
status) comes with each hit: built from the row by the same query with pgvector, from the
point's payload (kept in step through the vector outbox) with an index kept apart from SQL;
SQL rows are read for the selected hits only. Checked here against the reference - the same
recall scored from the SQL rows of the same candidates (``Recall.score_from_payload=False``):

* after any sequence of writes, outcomes, confidence changes, edits, lifecycle changes,
  deletes and clock moves, both give the same hits (rows, scores, breakdowns), exclusions and
  episodes, and the payload recall read no candidate row (hypothesis; Edge + SQLite and
  pgvector through ``database_url``);
* the in-memory index and a qdrant-client collection carry the payload too;
* a payload another process has not applied yet (its write committed, its outbox pending) is
  never used for a hit: the recall sees the new confidence;
* a store written before the scoring payload (points without it, schema at 0007) is
  rebuilt when it opens, and before that its points are scored from their rows.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qdrant_client import QdrantClient

from hindsight import Memory, NotFoundError, UsageError
from hindsight.clock import ManualClock
from hindsight.models import ExperienceKind
from hindsight.ports import VectorPoint
from hindsight.recall.pipeline import Recall
from hindsight.recall.result import RecallResult
from hindsight.store import vector_payload
from hindsight.testing import FakeEmbedder, InMemoryVectorIndex
from hindsight.vectors import QdrantClientVectorIndex
from tests.helpers import make_memory

WORDS = ["order_query", "refund", "timeout", "cache", "retry", "invoice", "address", "login"]
TAGS = ["billing", "shipping", "auth"]
TOOLS = ["order_query", "refund_tool", "login_tool"]
KINDS = ["rule", "anti_pattern", "improvement", "tool_reliability", "failure_cause", "key_step"]
#: lessons about one thing (metadata["subject"]): recall shows one of them
SUBJECTS = [None, "order_query:failure:timeout", "refund_tool:failure:denied"]
ADDED_KINDS = [*KINDS, "episode"]  # episodes: their own tier (include_episodes=True)


def _content(words: list[str]) -> str:
    return "When " + " ".join(words) + " happens, check it before acting."


class Reads:
    """What recalls of ``mem`` did: candidate rows read one by one (``rows``: the hits' rows
    are read in one call, ``hit_reads``) and the pipeline's runs (``runs``: ``True`` from the
    payloads, ``False`` from the rows)."""

    def __init__(self, mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
        store = mem.aio.store
        self.rows: list[str] = []
        self.runs: list[bool] = []
        plain, run, rows_of = store.get_experiences, Recall._run, Recall._rows_of
        self._in_hits = False

        def get_experiences(tenant: str, ids: Any, **kw: Any) -> Any:
            if not self._in_hits:
                self.rows += list(ids)
            return plain(tenant, ids, **kw)

        def counted_run(recall: Recall, req: Any, vec: Any, payload: bool) -> Any:
            self.runs.append(payload)
            return run(recall, req, vec, payload)

        def hits_rows(recall: Recall, *args: Any) -> Any:
            self._in_hits = True
            try:
                return rows_of(recall, *args)
            finally:
                self._in_hits = False

        store.get_experiences = get_experiences  # type: ignore[method-assign]
        monkeypatch.setattr(Recall, "_run", counted_run)
        monkeypatch.setattr(Recall, "_rows_of", hits_rows)

    def reset(self) -> None:
        self.rows, self.runs = [], []


def _shape(result: RecallResult) -> Any:
    return (
        [(h.experience, h.score, h.breakdown) for h in result.hits],
        result.excluded,
        [(h.experience, h.score, h.breakdown) for h in result.episodes],
    )


def _searched(mem: Memory, query: str, kw: dict[str, Any]) -> Any:
    """The lesson-tier points the recall of ``query`` searched (default namespaces)."""
    vector = mem.aio.embedder.embed([query])[0]
    kinds = [k.value for k in ExperienceKind if k is not ExperienceKind.EPISODE]
    return mem.aio.index.search(
        vector, tenant_id=kw["tenant_id"], namespaces=["default", "shared"], limit=20, kinds=kinds
    )


def _from_rows(mem: Memory, run: Callable[[], RecallResult]) -> RecallResult:
    """``run()`` with the recall scoring every candidate from its SQL row (the reference)."""
    fast = mem.aio._recall
    mem.aio._recall = dataclasses.replace(fast, score_from_payload=False)
    try:
        return run()
    finally:
        mem.aio._recall = fast


def assert_same_as_rows(
    mem: Memory, reads: Reads, query: str, *, expect: str = "payload", **kw: Any
) -> RecallResult:
    """The recall of ``query`` equals the rows-scored one, and it ran as ``expect`` says:
    ``payload`` - once, from the payloads, no candidate row read one by one; ``stale`` - from
    the payloads, then (a hit's row did not match its payload) again from the rows; ``old`` -
    once, every candidate read from SQL (points without the scoring payload)."""

    def run() -> RecallResult:
        return mem.recall(query, record=False, risk_checks=False, **kw)

    reads.reset()
    fast = run()
    assert reads.runs == ([True, False] if expect == "stale" else [True]), reads.runs
    if expect == "payload" and not kw.get("explain"):  # explain reads its near misses
        assert reads.rows == [], reads.rows
    if expect == "old":  # every candidate read from SQL, as before the change
        assert sorted(reads.rows) == sorted(h.id for h in _searched(mem, query, kw)), reads.rows
    slow = _from_rows(mem, run)
    assert _shape(fast) == _shape(slow)
    return fast


# -- the property -----------------------------------------------------------------------------
_ids = st.integers(0, 30)
OPS = st.one_of(
    st.tuples(
        st.just("add"),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
        st.sampled_from(ADDED_KINDS),
        st.lists(st.sampled_from(TAGS), max_size=2),
        st.lists(st.sampled_from(TOOLS), max_size=2),
        st.floats(0.05, 0.95),
        st.sampled_from(["default", "shared", "other"]),
        st.sampled_from(SUBJECTS),
    ),
    st.tuples(st.just("confidence"), _ids, st.sampled_from([-0.3, -0.1, 0.1, 0.25])),
    st.tuples(st.just("outcome"), st.lists(_ids, min_size=1, max_size=3), st.booleans()),
    st.tuples(
        st.just("edit"),
        _ids,
        st.lists(st.sampled_from(TAGS), max_size=2),
        st.lists(st.sampled_from(TOOLS), max_size=2),
        st.sampled_from(KINDS),
    ),
    st.tuples(st.just("archive"), _ids),
    st.tuples(st.just("restore"), _ids),
    st.tuples(st.just("wrong"), _ids),
    st.tuples(st.just("delete"), _ids),
    st.tuples(st.just("tick"), st.sampled_from([0.5, 3.0, 40.0])),
)
QUERIES = st.tuples(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.lists(st.sampled_from(TAGS), max_size=1),
    st.lists(st.sampled_from(TOOLS), max_size=1),
    st.integers(1, 6),
)


def _apply(
    mem: Memory, clock: ManualClock, tenant: str, ids: list[str], op: tuple[Any, ...]
) -> None:
    name = op[0]
    pick = (lambda i: ids[i % len(ids)]) if ids else None
    try:
        if name == "add":
            _, words, kind, tags, tools, conf, ns, subject = op
            exp = mem.add_experience(
                _content(words),
                tenant_id=tenant,
                kind=kind,
                tags=tags,
                tools=tools,
                confidence=conf,
                namespace=ns,
                metadata=None if subject is None else {"subject": subject},
            )
            ids.append(exp.id)
        elif pick is None:
            return
        elif name == "confidence":
            mem.adjust_confidence(pick(op[1]), op[2], tenant_id=tenant)
        elif name == "outcome":
            run = str(uuid.uuid4())
            mem.record_recall(run, [pick(i) for i in op[1]], tenant_id=tenant)
            mem.record_outcome(run, op[2], tenant_id=tenant)
        elif name == "edit":
            _, i, tags, tools, kind = op
            mem.edit_experience(pick(i), tenant_id=tenant, tags=tags, tools=tools, kind=kind)
        elif name == "archive":
            mem.archive(pick(op[1]), tenant_id=tenant)
        elif name == "restore":
            mem.restore(pick(op[1]), tenant_id=tenant)
        elif name == "wrong":
            mem.mark_wrong(pick(op[1]), tenant_id=tenant)
        elif name == "delete":
            mem.delete_experience(pick(op[1]), tenant_id=tenant)
        elif name == "tick":
            clock.advance(days=op[1])
    except (UsageError, NotFoundError):
        pass  # not allowed in that state (archiving an archived lesson ...): nothing changed


@pytest.fixture
def edge_memory(tmp_path: Path, database_url: str) -> Iterator[tuple[Memory, ManualClock]]:
    clock = ManualClock()
    mem = make_memory(tmp_path, database_url, clock=clock, embedder=FakeEmbedder(32))
    try:
        yield mem, clock
    finally:
        mem.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=st.lists(OPS, min_size=1, max_size=14), queries=st.lists(QUERIES, min_size=1, max_size=3)
)
def test_payload_recall_equals_rows_recall_after_any_history(
    edge_memory: tuple[Memory, ManualClock],
    monkeypatch: pytest.MonkeyPatch,
    ops: list[tuple[Any, ...]],
    queries: list[Any],
) -> None:
    mem, clock = edge_memory
    tenant = f"t-{uuid.uuid4().hex[:8]}"  # a fresh tenant per example, one store for all
    ids: list[str] = []
    with monkeypatch.context() as patch:
        reads = Reads(mem, patch)
        _check_history(mem, clock, reads, tenant, ids, ops, queries)


def _check_history(
    mem: Memory,
    clock: ManualClock,
    reads: Reads,
    tenant: str,
    ids: list[str],
    ops: list[tuple[Any, ...]],
    queries: list[Any],
) -> None:
    for op in ops:
        _apply(mem, clock, tenant, ids, op)
    for words, tags, tools, top_k in queries:
        assert_same_as_rows(
            mem, reads, " ".join(words), tenant_id=tenant, tags=tags, tools=tools, top_k=top_k
        )
        assert_same_as_rows(
            mem,
            reads,
            " ".join(words),
            tenant_id=tenant,
            namespace=["other", "default"],
            top_k=top_k,
            explain=True,
            include_episodes=True,
        )


# -- every backend ----------------------------------------------------------------------------
def _qdrant_index() -> Any:
    return QdrantClientVectorIndex("http://qdrant.test:6333", 32, client=QdrantClient(":memory:"))


@pytest.mark.parametrize(
    "make_index",
    [lambda: InMemoryVectorIndex(32), _qdrant_index],
    ids=["memory", "qdrant-client"],
)
def test_every_index_returns_the_scoring_payload(
    tmp_path: Path, make_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock()
    with Memory(
        data_dir=tmp_path,
        index=make_index(),
        embedder=FakeEmbedder(32),
        clock=clock,
        background_review=False,
    ) as mem:
        reads = Reads(mem, monkeypatch)
        a = mem.add_experience(_content(["refund", "cache"]), tenant_id="t", tags=["billing"])
        mem.add_experience(_content(["refund", "timeout"]), tenant_id="t", tools=["refund_tool"])
        clock.advance(days=10)
        mem.adjust_confidence(a.id, 0.3, tenant_id="t")
        hits = assert_same_as_rows(mem, reads, "refund cache", tenant_id="t", tags=["billing"])
        assert hits.hits[0].experience.id == a.id
        assert hits.hits[0].breakdown.confidence == pytest.approx(a.confidence + 0.3)


# -- a stale payload is never used for a hit ------------------------------------------------------
def test_a_change_not_applied_to_a_shared_index_yet_is_seen_for_the_hits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two memories on one SQL store and one shared collection (as two servers on a Qdrant
    server): ``a`` commits two confidence changes whose outbox rows are not applied yet (the
    moment between its commit and its apply); ``b``'s recall, scored from the old payloads,
    checks its hits against their rows and answers from the rows."""
    sql = f"sqlite:///{tmp_path / 'shared.db'}"
    client = QdrantClient(":memory:")
    clock = ManualClock()
    opened = [
        Memory(
            data_dir=tmp_path / name,
            database_url=sql,
            index=QdrantClientVectorIndex("http://qdrant.test:6333", 32, client=client),
            embedder=FakeEmbedder(32),
            clock=clock,
            background_review=False,
        )
        for name in ("a", "b")
    ]
    a, b = opened
    try:
        first = a.add_experience(_content(["login", "retry"]), tenant_id="t", confidence=0.9)
        second = a.add_experience(_content(["login", "cache"]), tenant_id="t", confidence=0.1)
        reads = Reads(b, monkeypatch)
        before = assert_same_as_rows(b, reads, "login", tenant_id="t")
        assert [h.experience.id for h in before.hits] == [first.id, second.id]
        with monkeypatch.context() as held:  # a's outbox rows stay pending
            held.setattr(a.aio._parts.vectors, "sync", lambda: 0)
            a.adjust_confidence(first.id, -0.5, tenant_id="t")
            a.adjust_confidence(second.id, 0.7, tenant_id="t")
        assert b.aio.vectors.status()["pending"] == 2
        after = assert_same_as_rows(b, reads, "login", tenant_id="t", expect="stale")
        assert [h.experience.id for h in after.hits] == [second.id, first.id]
        now = a.get_experience(second.id, tenant_id="t").confidence
        assert after.hits[0].breakdown.confidence == now == pytest.approx(0.8)
        b.aio.sync_vectors()  # b applies a's pending rows: the payloads answer again
        assert b.aio.vectors.status()["pending"] == 0
        assert_same_as_rows(b, reads, "login", tenant_id="t")
    finally:
        for mem in opened:
            mem.close()


# -- a store written before the scoring payload --------------------------------------------------
def _old_payloads(mem: Memory) -> None:
    """Make every point carry what hindsight wrote before the scoring payload (filter fields
    only)."""
    store, index = mem.aio.store, mem.aio.index
    old = ("tenant_id", "namespace", "task_type", "status", "kind", "tags")
    rows = store.list_experiences("t", limit=10_000)
    vectors = store.get_vectors([e.id for e in rows])
    index.upsert(
        [VectorPoint(e.id, vectors[e.id], {k: vector_payload(e)[k] for k in old}) for e in rows]
    )


def test_points_without_the_scoring_payload_are_scored_from_their_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory(data_dir=tmp_path, embedder=FakeEmbedder(32), background_review=False) as mem:
        for words in (["refund"], ["refund", "cache"], ["refund", "invoice"]):
            mem.add_experience(_content(words), tenant_id="t", tags=["billing"])
        _old_payloads(mem)
        reads = Reads(mem, monkeypatch)
        assert_same_as_rows(mem, reads, "refund cache", tenant_id="t", expect="old")


def test_a_store_written_before_the_change_is_rebuilt_when_it_opens(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store at schema 0007 (reached by the downgrades of 0009 and 0008) opens again at the
    head: with an index kept apart (SQLite: Edge) the index is rebuilt, its points carry the
    scoring payload; with pgvector the payload is the row."""
    from alembic import command

    from hindsight.store.migrate import alembic_config

    mem = make_memory(tmp_path, database_url, embedder=FakeEmbedder(32))
    try:
        for words in (["address"], ["address", "retry"], ["address", "login"]):
            mem.add_experience(_content(words), tenant_id="t")
        if database_url.startswith("sqlite"):
            _old_payloads(mem)  # the Edge shard as the older hindsight left it
        with mem.aio.store._tx(write=True) as conn:
            command.downgrade(alembic_config(conn), "0007_experience_stamps")
    finally:
        mem.close()
    mem = make_memory(tmp_path, database_url, embedder=FakeEmbedder(32))
    try:
        if database_url.startswith("sqlite"):
            assert mem.aio.vectors.rebuilt is not None
            assert "were kept in another index" in mem.aio.vectors.rebuilt["reason"]
        else:
            assert mem.aio.vectors.status()["kind"] == "pgvector"
        hits = mem.aio.index.search(
            FakeEmbedder(32).embed(["address"])[0], tenant_id="t", namespaces=["default"], limit=10
        )
        assert len(hits) == 3 and all(h.payload and h.payload["score_v"] == 1 for h in hits)
        assert_same_as_rows(mem, Reads(mem, monkeypatch), "address retry", tenant_id="t")
    finally:
        mem.close()
