"""PostgreSQL with pgvector: the vectors are the experience rows (hindsight.store.pgvector).

* the search answers what an exact scan answers, with every recall filter (tenant,
  namespaces, statuses, task_type, kinds), in the same order with the same similarities;
* a selective filter inside a big tenant, on the HNSW path (the planner made to take it): the
  search still fills its limit (iterative index scans), where the same query without them
  comes back short;
* one transaction: a reader searching while a writer supersedes a lesson over and over finds
  exactly one version, never two or none (the new row and its vector, and the old one's status,
  commit together);
* ``hindsight reembed`` to another dimension replaces the HNSW index;
* a PostgreSQL without the extension (Debian's, in CI) refuses to open with one line saying
  what to run, from Python and from the CLI.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from store_fixtures import postgres_schema_url

from hindsight import Memory, MemoryConfig
from hindsight._errors import StoreError, TenantRequiredError, UsageError
from hindsight.models import Experience, ExperienceStatus
from hindsight.ports import VectorPoint
from hindsight.store import SqlStore, vector_payload
from hindsight.store.pgvector import PgVectorIndex, hnsw_index_name
from hindsight.testing import FakeEmbedder, InMemoryVectorIndex
from tests.cli_helpers import assert_one_line_error, run_cli

pytestmark = pytest.mark.postgres

DIM = 16
PLAIN_ENV = "HINDSIGHT_TEST_PLAIN_POSTGRES_URL"


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from postgres_schema_url()


@pytest.fixture
def store(pg_url: str) -> Iterator[SqlStore]:
    with SqlStore(pg_url) as opened:
        yield opened


def _rows(n: int, seed: int, **fields: Any) -> tuple[list[Experience], np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return [Experience(content=f"lesson {seed}-{i}", **fields) for i in range(n)], vectors


def _exact(store: SqlStore, items: list[Experience]) -> InMemoryVectorIndex:
    """The same points in an exact (brute force) index."""
    exact = InMemoryVectorIndex(DIM)
    stored = store.get_vectors([e.id for e in items])
    current = {e.id: e for t in {e.tenant_id for e in items} for e in _all(store, t)}
    exact.upsert(
        [
            VectorPoint(e.id, stored[e.id], vector_payload(current[e.id]))
            for e in items
            if current[e.id].status is not ExperienceStatus.DELETED
        ]
    )
    return exact


def _all(store: SqlStore, tenant: str) -> list[Experience]:
    statuses = [s.value for s in ExperienceStatus]
    return store.list_experiences(tenant, statuses=statuses, limit=10_000)


def test_the_search_answers_what_an_exact_scan_answers(store: SqlStore) -> None:
    items: list[Experience] = []
    for seed, fields in enumerate(
        [
            {"tenant_id": "acme", "kind": "rule", "task_type": "support"},
            {"tenant_id": "acme", "kind": "episode", "task_type": "support"},
            {"tenant_id": "acme", "kind": "anti_pattern", "namespace": "shared"},
            {"tenant_id": "globex", "kind": "rule", "task_type": "support"},
        ]
    ):
        made, vectors = _rows(40, seed, **fields)
        store.add_experiences(made, vectors)
        items += made
    store.set_status("acme", [e.id for e in items[:10]], "archived")
    store.delete_experiences("acme", [e.id for e in items[10:15]])
    index, exact = PgVectorIndex(store, DIM), _exact(store, items)
    queries = np.random.default_rng(99).standard_normal((5, DIM)).astype(np.float32)
    scopes: list[dict[str, Any]] = [
        {"tenant_id": "acme", "namespaces": ["default"]},
        {"tenant_id": "acme", "namespaces": ["default", "shared"], "kinds": ["rule"]},
        {"tenant_id": "acme", "namespaces": ["default"], "statuses": ["active", "archived"]},
        {"tenant_id": "acme", "namespaces": ["default"], "task_type": "support"},
        {"tenant_id": "globex", "namespaces": ["default"], "kinds": ["episode"]},
        {"tenant_id": "acme", "namespaces": ["default"], "statuses": ["deleted"]},
    ]
    for scope in scopes:
        for limit in (1, 7, 200):
            for q in queries:
                got = index.search(q, limit=limit, **scope)
                want = exact.search(q, limit=limit, **scope)
                assert [h.id for h in got] == [h.id for h in want], scope
                assert [h.similarity for h in got] == pytest.approx(
                    [h.similarity for h in want], abs=1e-5
                )
                rows = store.get_experiences(scope["tenant_id"], [h.id for h in got])
                assert all(h.payload == vector_payload(rows[h.id]) for h in got)
    assert index.count("acme") == 120 - 5 and index.count(None) == 155
    assert index.search_many(queries[:2], tenant_id="acme", namespaces=["default"], limit=3) == [
        index.search(q, tenant_id="acme", namespaces=["default"], limit=3) for q in queries[:2]
    ]
    bare = index.search_many(
        queries[:2], tenant_id="acme", namespaces=["default"], limit=3, payload=False
    )
    assert [[(h.id, h.similarity, h.payload) for h in hits] for hits in bare] == [
        [
            (h.id, h.similarity, None)
            for h in index.search(q, tenant_id="acme", namespaces=["default"], limit=3)
        ]
        for q in queries[:2]
    ]


def test_bad_arguments_get_the_errors_every_index_gives(store: SqlStore) -> None:
    index = PgVectorIndex(store, DIM)
    q = np.ones(DIM, np.float32)
    for tenant in ("", None, "  "):
        with pytest.raises(TenantRequiredError):
            index.search(q, tenant_id=tenant, namespaces=["default"], limit=3)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="dimension 3"):
        index.search([1.0, 2.0, 3.0], tenant_id="t", namespaces=["default"], limit=3)
    with pytest.raises(UsageError, match="NaN"):
        index.search(np.full(DIM, np.nan), tenant_id="t", namespaces=["default"], limit=3)
    with pytest.raises(UsageError, match="limit"):
        index.search(q, tenant_id="t", namespaces=["default"], limit=-1)
    assert index.search(q, tenant_id="t", namespaces=[], limit=3) == []
    assert index.search(q, tenant_id="t", namespaces=["default"], limit=0) == []


def _on_hnsw(pg_url: str) -> str:
    """``pg_url`` whose sessions cannot sort: the planner must read the HNSW index, which
    gives the rows in distance order (an exact scan would sort them)."""
    url = sa.engine.make_url(pg_url)
    options = f"{url.query['options']} -cenable_sort=off -cenable_seqscan=off"
    return url.update_query_dict({"options": options}).render_as_string(hide_password=False)


def test_a_selective_filter_in_a_big_tenant_still_fills_the_limit(pg_url: str) -> None:
    """5,000 lessons and 30 episodes in one tenant: the HNSW walk meets an episode rarely.
    Without iterative scans the query stops after ``hnsw.ef_search`` candidates and comes back
    short; the search goes on until the limit is filled, with the exact answer."""
    with SqlStore(pg_url) as store:
        lessons, vectors = _rows(5000, 1, tenant_id="big", kind="rule")
        store.add_experiences(lessons, vectors)
        episodes, vectors = _rows(30, 2, tenant_id="big", kind="episode")
        store.add_experiences(episodes, vectors)
        PgVectorIndex(store, DIM)  # the HNSW index, built over the rows
        with store._tx(write=True) as conn:
            conn.execute(sa.text("ANALYZE experiences"))
        exact = _exact(store, episodes)
    with SqlStore(_on_hnsw(pg_url)) as forced:
        index = PgVectorIndex(forced, DIM)
        q = np.random.default_rng(5).standard_normal(DIM).astype(np.float32)
        scope: dict[str, Any] = {"tenant_id": "big", "namespaces": ["default"]}
        with forced._tx() as conn:
            plan = "\n".join(
                conn.execute(
                    sa.text(f"EXPLAIN {_raw_query(DIM)}"), {"q": str(q.tolist()), "k": 20}
                ).scalars()
            )
            assert hnsw_index_name(DIM) in plan, plan
            conn.execute(sa.text("SELECT set_config('hnsw.iterative_scan', 'off', true)"))
            short = conn.execute(sa.text(_raw_query(DIM)), {"q": str(q.tolist()), "k": 20}).all()
        assert len(short) < 20  # what a filtered HNSW query gives without iterative scans
        got = index.search(q, limit=20, kinds=["episode"], **scope)
        want = exact.search(q, limit=20, kinds=["episode"], **scope)
        assert len(got) == 20
        assert len({h.id for h in got} & {h.id for h in want}) >= 19  # approximate, but full


def _raw_query(dimension: int) -> str:
    return (
        "SELECT id FROM experiences WHERE tenant_id = 'big' AND kind = 'episode' "
        f"ORDER BY embedding::vector({dimension}) <=> CAST(:q AS vector) LIMIT :k"
    )


def test_a_reader_never_sees_a_lesson_without_its_vector_or_two_versions(
    store: SqlStore, pg_url: str
) -> None:
    """A writer supersedes a lesson again and again (the old version archived and the new one,
    with its vector, added in one transaction); a reader searching meanwhile through its own
    connections finds exactly one version once the first exists: never two, never none."""
    PgVectorIndex(store, DIM)  # the HNSW index
    first, vectors = _rows(1, 7, tenant_id="t", kind="rule")
    store.add_experiences(first, vectors)
    stop = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def read() -> None:
        with SqlStore(pg_url) as other:
            reader = PgVectorIndex(other, DIM)
            while not stop.is_set():
                try:
                    hits = reader.search(
                        vectors[0], tenant_id="t", namespaces=["default"], limit=50
                    )
                    seen.append(
                        sum(1 for h in hits if h.payload and h.payload["kind"] == "improvement")
                    )
                except BaseException as exc:
                    errors.append(exc)
                    return

    thread = threading.Thread(target=read)
    thread.start()
    try:
        current: Experience | None = None
        for step in range(60):
            new, vec = _rows(1, 100 + step, tenant_id="t", kind="improvement")
            with store.batch():
                if current is not None:
                    store.set_status("t", [current.id], "archived")
                store.add_experiences(new, vec * 0.01 + vectors[0])
            current = new[0]
    finally:
        stop.set()
        thread.join(60)
    assert not errors, errors[:1]
    assert set(seen) <= {0, 1} and 1 in seen  # one version at a time, never two or none after
    assert seen[seen.index(1) :].count(0) == 0


def test_reembed_to_another_dimension_replaces_the_hnsw_index(tmp_path: Path, pg_url: str) -> None:
    from hindsight.ops.reembed import reembed

    config = MemoryConfig(data_dir=tmp_path, database_url=pg_url)
    with Memory(config, embedder=FakeEmbedder(8)) as mem:
        made = mem.add_experience("check the refund window first", tenant_id="acme")
    done = reembed(config, "hash:32", embedder=FakeEmbedder(32, name="fake-32"))
    assert (done["experiences"], done["points"]) == (1, 1)
    with Memory(config, embedder=FakeEmbedder(32, name="fake-32")) as mem:
        hits = mem.recall("the refund window", tenant_id="acme").hits
        assert [h.experience.id for h in hits] == [made.id]
        with mem.aio.store._tx() as conn:
            names = conn.execute(
                sa.text("SELECT indexname FROM pg_indexes WHERE indexname LIKE '%hnsw%' "
                        "AND schemaname = current_schema()")
            ).scalars().all()  # fmt: skip
        assert names == [hnsw_index_name(32)]


# -- a PostgreSQL without pgvector ------------------------------------------------------------
@pytest.fixture
def plain_url() -> Iterator[str]:
    """A new database on a PostgreSQL that has no pgvector (``HINDSIGHT_TEST_PLAIN_POSTGRES_URL``,
    Debian's PostgreSQL in CI); skipped locally without it, failed under CI."""
    admin = os.environ.get(PLAIN_ENV, "").strip()
    if not admin:
        if os.environ.get("CI"):
            pytest.fail(f"{PLAIN_ENV} is not set under CI (.ci/run sets it)")
        pytest.skip(f"{PLAIN_ENV} not set (a PostgreSQL without pgvector)")
    name = f"hs_plain_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        available = conn.execute(
            sa.text("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")
        ).scalar_one()
        if available:
            pytest.skip(f"{PLAIN_ENV} has pgvector: not the server this test needs")
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(admin).set(database=name).render_as_string(hide_password=False)
    finally:
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()


def test_without_the_extension_the_store_says_what_to_run(plain_url: str, tmp_path: Path) -> None:
    with pytest.raises(StoreError) as info:
        SqlStore(plain_url)
    message = str(info.value)
    assert "\n" not in message and "CREATE EXTENSION vector" in message
    assert "password" not in message.lower() or "***" in message
    with pytest.raises(StoreError, match="pgvector extension"):
        Memory(data_dir=tmp_path, database_url=plain_url)
    line = assert_one_line_error(run_cli("stats", data_dir=tmp_path, DATABASE_URL=plain_url))
    assert "pgvector" in line and "CREATE EXTENSION vector" in line
