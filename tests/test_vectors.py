"""Contract tests for every VectorIndex (Qdrant Edge, qdrant-client local, in-memory), plus the
Edge-only properties: reopen, background indexing, SIGKILL recovery and the one-process lock."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight._errors import (
    EmbedderMismatchError,
    StoreError,
    StoreLockedError,
    TenantRequiredError,
    UsageError,
)
from hindsight.ports import VectorIndex, VectorPoint
from hindsight.vectors import (
    EdgeVectorIndex,
    InMemoryVectorIndex,
    QdrantClientVectorIndex,
    open_vector_index,
)

# qdrant-client warns (possibly from a later test) when it cannot reach the server to check
# versions; test_unreachable_server_is_a_store_error points it at a closed port on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:Failed to obtain server version")

DIM = 4
REPO = Path(__file__).resolve().parents[1]
# A Qdrant server to run the contract against too (e.g. http://127.0.0.1:6333); each test gets
# its own collection, named after tmp_path's folder, deleted afterwards.
SERVER = os.environ.get("HINDSIGHT_TEST_QDRANT_URL")
KINDS = ["edge", "client", "memory"] + (["server"] if SERVER else [])


def make_index(kind: str, path: Path, dimension: int = DIM) -> Any:
    if kind == "edge":
        return EdgeVectorIndex(path / "shard", dimension)
    if kind == "client":
        return QdrantClientVectorIndex(":memory:", dimension)
    if kind == "server":
        assert SERVER is not None
        return QdrantClientVectorIndex(SERVER, dimension, collection=f"hs_test_{path.name}")
    return InMemoryVectorIndex(dimension)


@pytest.fixture(autouse=True)
def _drop_server_collection(tmp_path: Path) -> Iterator[None]:
    yield
    if SERVER:
        from qdrant_client import QdrantClient

        with QdrantClient(url=SERVER) as client:
            client.delete_collection(f"hs_test_{tmp_path.name}")


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def index(kind: str, tmp_path: Path) -> Iterator[Any]:
    idx = make_index(kind, tmp_path)
    yield idx
    idx.close()


def pid() -> str:
    return str(uuid.uuid4())


def point(
    vector: Any,
    *,
    tenant: str = "t1",
    namespace: str = "default",
    task_type: str | None = None,
    status: str = "active",
    point_id: str | None = None,
    kind: str = "rule",
) -> VectorPoint:
    return VectorPoint(
        id=point_id or pid(),
        vector=vector,
        payload={
            "tenant_id": tenant,
            "namespace": namespace,
            "task_type": task_type,
            "status": status,
            "kind": kind,
            "tags": ["a", "b"],
        },
    )


def unit(*values: float) -> list[float]:
    arr = np.asarray(values, dtype=np.float64)
    return list(arr / np.linalg.norm(arr))


def search(idx: Any, vector: Any, tenant: str = "t1", **kw: Any) -> list[tuple[str, float]]:
    kw.setdefault("namespaces", ["default"])
    kw.setdefault("limit", 10)
    return [(h.id, h.similarity) for h in idx.search(vector, tenant_id=tenant, **kw)]


# -- the contract ------------------------------------------------------------------------
def test_is_a_vector_index(index: Any) -> None:
    assert isinstance(index, VectorIndex)
    assert index.dimension == DIM


def test_upsert_count_all_ids(index: Any) -> None:
    pts = [point(unit(1, i, 0, 0)) for i in range(5)]
    index.upsert(pts)
    assert index.count() == 5
    assert index.count("t1") == 5
    assert index.all_ids() == {p.id for p in pts}


def test_upsert_is_idempotent_and_replaces_payload(index: Any) -> None:
    p = point(unit(1, 0, 0, 0))
    index.upsert([p])
    index.upsert([p])
    assert index.count() == 1
    moved = point(unit(1, 0, 0, 0), tenant="t2", point_id=p.id)
    index.upsert([moved])
    assert index.count() == 1
    assert index.count("t1") == 0
    assert [h[0] for h in search(index, unit(1, 0, 0, 0), tenant="t2")] == [p.id]
    assert search(index, unit(1, 0, 0, 0), tenant="t1") == []


def test_ids_are_canonical_uuid_strings(index: Any) -> None:
    raw = uuid.uuid4()
    index.upsert([point(unit(1, 0, 0, 0), point_id=str(raw).upper())])
    assert index.all_ids() == {str(raw)}
    assert search(index, unit(1, 0, 0, 0))[0][0] == str(raw)
    with pytest.raises(UsageError):
        index.upsert([point(unit(1, 0, 0, 0), point_id="not-a-uuid")])


def test_search_order_and_cosine_values(index: Any) -> None:
    same, diag, ortho, opposite = pid(), pid(), pid(), pid()
    index.upsert(
        [
            point([2.0, 0, 0, 0], point_id=same),  # not normalised: cosine ignores length
            point(unit(1, 1, 0, 0), point_id=diag),
            point(unit(0, 0, 1, 0), point_id=ortho),
            point(unit(-1, 0, 0, 0), point_id=opposite),
        ]
    )
    hits = search(index, [3.0, 0, 0, 0])
    assert [h[0] for h in hits] == [same, diag, ortho, opposite]
    expected = [1.0, 1 / math.sqrt(2), 0.0, -1.0]
    assert [h[1] for h in hits] == pytest.approx(expected, abs=1e-5)
    assert all(-1.0 <= h[1] <= 1.0 for h in hits)
    assert [h[0] for h in search(index, [3.0, 0, 0, 0], limit=2)] == [same, diag]
    assert search(index, [3.0, 0, 0, 0], limit=0) == []


def test_numpy_rows_are_accepted(index: Any) -> None:
    matrix = np.eye(DIM, dtype=np.float32)
    pts = [point(matrix[i]) for i in range(DIM)]
    index.upsert(pts)
    hits = search(index, matrix[2])
    assert hits[0][0] == pts[2].id
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)


def test_bad_vectors_are_refused(index: Any) -> None:
    with pytest.raises(UsageError, match="dimension 3"):
        index.upsert([point([1.0, 0, 0])])
    with pytest.raises(UsageError, match="NaN"):
        index.upsert([point([1.0, float("nan"), 0, 0])])
    with pytest.raises(UsageError, match="dimension 5"):
        search(index, [1.0, 0, 0, 0, 0])
    assert index.count() == 0


def test_large_upsert_is_batched(index: Any) -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((1300, DIM)).astype(np.float32)
    pts = [point(v, tenant=f"t{i % 3}") for i, v in enumerate(vectors)]
    index.upsert(pts)
    assert index.count() == 1300
    assert index.all_ids() == {p.id for p in pts}
    assert [index.count(f"t{i}") for i in range(3)] == [434, 433, 433]


def test_tenant_filter(index: Any) -> None:
    mine, theirs = point(unit(1, 0, 0, 0), tenant="t1"), point(unit(1, 0, 0, 0), tenant="t2")
    index.upsert([mine, theirs])
    assert [h[0] for h in search(index, unit(1, 0, 0, 0), tenant="t1")] == [mine.id]
    assert [h[0] for h in search(index, unit(1, 0, 0, 0), tenant="t2")] == [theirs.id]
    assert search(index, unit(1, 0, 0, 0), tenant="t3") == []
    # the tenant is stripped like everywhere else
    assert [h[0] for h in search(index, unit(1, 0, 0, 0), tenant=" t1 ")] == [mine.id]


def test_namespace_filter(index: Any) -> None:
    private = point(unit(1, 0, 0, 0), namespace="agent-a")
    shared = point(unit(1, 0.1, 0, 0), namespace="shared")
    other = point(unit(1, 0, 0, 0), namespace="agent-b")
    index.upsert([private, shared, other])
    got = search(index, unit(1, 0, 0, 0), namespaces=["agent-a", "shared"])
    assert [h[0] for h in got] == [private.id, shared.id]
    assert [h[0] for h in search(index, unit(1, 0, 0, 0), namespaces=["shared"])] == [shared.id]
    assert search(index, unit(1, 0, 0, 0), namespaces=[]) == []


def test_task_type_filter(index: Any) -> None:
    booking = point(unit(1, 0, 0, 0), task_type="booking")
    refund = point(unit(1, 0.2, 0, 0), task_type="refund")
    untyped = point(unit(1, 0.1, 0, 0), task_type=None)
    index.upsert([booking, refund, untyped])
    assert [h[0] for h in search(index, unit(1, 0, 0, 0), task_type="refund")] == [refund.id]
    assert len(search(index, unit(1, 0, 0, 0))) == 3  # None = any task_type


def test_kinds_filter(index: Any) -> None:
    episode = point(unit(1, 0, 0, 0), kind="episode")
    rule = point(unit(1, 0.1, 0, 0), kind="rule")
    tip = point(unit(1, 0.2, 0, 0), kind="improvement")
    index.upsert([episode, rule, tip])
    near = unit(1, 0, 0, 0)
    assert [h[0] for h in search(index, near, kinds=["episode"])] == [episode.id]
    assert [h[0] for h in search(index, near, kinds=("rule", "improvement"))] == [
        rule.id,
        tip.id,
    ]
    assert [h[0] for h in search(index, near, kinds=["rule"], limit=1)] == [rule.id]
    assert len(search(index, near)) == 3  # None = any kind
    assert search(index, near, kinds=[]) == []
    with pytest.raises(UsageError):
        search(index, near, kinds="rule")
    with pytest.raises(UsageError):
        search(index, near, kinds=[""])


def test_status_filter_and_set_status(index: Any) -> None:
    active = point(unit(1, 0, 0, 0))
    archived = point(unit(1, 0.1, 0, 0), status="archived")
    index.upsert([active, archived])
    assert [h[0] for h in search(index, unit(1, 0, 0, 0))] == [active.id]
    both = search(index, unit(1, 0, 0, 0), statuses=("active", "archived"))
    assert [h[0] for h in both] == [active.id, archived.id]
    assert search(index, unit(1, 0, 0, 0), statuses=()) == []

    index.set_status([active.id, pid()], "quarantined")  # unknown ids are ignored
    assert search(index, unit(1, 0, 0, 0)) == []
    assert [h[0] for h in search(index, unit(1, 0, 0, 0), statuses=["quarantined"])] == [active.id]
    assert index.count() == 2  # set_status keeps the point and its vector
    with pytest.raises(UsageError):
        index.set_status([active.id], "")


@pytest.mark.parametrize("tenant", [None, "", "  ", 7])
def test_tenant_is_required(index: Any, tenant: Any) -> None:
    index.upsert([point(unit(1, 0, 0, 0))])
    with pytest.raises(TenantRequiredError):
        index.search(unit(1, 0, 0, 0), tenant_id=tenant, namespaces=["default"], limit=5)
    with pytest.raises(TenantRequiredError):
        index.upsert([point(unit(1, 0, 0, 0), tenant=tenant)])
    if tenant is not None:
        with pytest.raises(TenantRequiredError):
            index.count(tenant)
    with pytest.raises(TenantRequiredError):
        index.delete_tenant(tenant)
    assert index.count() == 1


def test_payload_labels_are_required(index: Any) -> None:
    bad = VectorPoint(pid(), unit(1, 0, 0, 0), {"tenant_id": "t1", "status": "active"})
    with pytest.raises(UsageError, match="namespace"):
        index.upsert([bad])
    assert index.count() == 0


def test_delete(index: Any) -> None:
    a, b = point(unit(1, 0, 0, 0)), point(unit(0, 1, 0, 0))
    index.upsert([a, b])
    index.delete([a.id, pid()])  # unknown ids are ignored
    index.delete([a.id])  # idempotent
    assert index.all_ids() == {b.id}
    assert [h[0] for h in search(index, unit(1, 0, 0, 0))] == [b.id]
    index.delete([])
    assert index.count() == 1


def test_count_per_tenant_and_delete_tenant(index: Any) -> None:
    pts = [point(unit(1, i, 0, 0), tenant="t1") for i in range(3)]
    pts += [point(unit(0, 1, i, 0), tenant="t2") for i in range(2)]
    index.upsert(pts)
    assert (index.count(), index.count("t1"), index.count("t2"), index.count("nobody")) == (
        5,
        3,
        2,
        0,
    )
    index.delete_tenant("t1")
    assert (index.count(), index.count("t1"), index.count("t2")) == (2, 0, 2)
    assert index.all_ids() == {p.id for p in pts[3:]}
    assert len(search(index, unit(0, 1, 0, 0), tenant="t2")) == 2


def test_closed_index_refuses_calls(kind: str, tmp_path: Path) -> None:
    idx = make_index(kind, tmp_path)
    idx.upsert([point(unit(1, 0, 0, 0))])
    idx.close()
    idx.close()  # idempotent
    with pytest.raises(StoreError):
        idx.count()
    with pytest.raises(StoreError):
        search(idx, unit(1, 0, 0, 0))


def test_dimension_mismatch_at_open(kind: str, tmp_path: Path) -> None:
    if kind == "memory":
        pytest.skip("the in-memory index keeps nothing to mismatch with")
    if kind in ("edge", "server"):
        make_index(kind, tmp_path, 4).close()
        with pytest.raises(EmbedderMismatchError) as err:
            make_index(kind, tmp_path, 8)
    else:
        from qdrant_client import QdrantClient

        client = QdrantClient(":memory:")
        QdrantClientVectorIndex(":memory:", 4, client=client).close()
        with pytest.raises(EmbedderMismatchError) as err:
            QdrantClientVectorIndex(":memory:", 8, client=client)
        client.close()
    assert "4-d" in str(err.value) and "dimension 8" in str(err.value)


# -- Qdrant Edge specifics --------------------------------------------------------------
def test_edge_reopen_persists(tmp_path: Path) -> None:
    a, b = point(unit(1, 0, 0, 0)), point(unit(0, 1, 0, 0), status="archived", tenant="t2")
    with EdgeVectorIndex(tmp_path / "s", DIM) as idx:
        idx.upsert([a, b])
        idx.set_status([a.id], "active")
    with EdgeVectorIndex(tmp_path / "s", DIM) as idx:
        assert idx.all_ids() == {a.id, b.id}
        assert (idx.count("t1"), idx.count("t2")) == (1, 1)
        assert [h[0] for h in search(idx, unit(1, 0, 0, 0))] == [a.id]
        assert search(idx, unit(0, 1, 0, 0), tenant="t2") == []
        schema = set(idx._live().info().payload_schema)
    assert {"tenant_id", "namespace", "task_type", "status", "kind", "tags"} <= schema


def test_edge_dimension_backstop_without_config_file(tmp_path: Path) -> None:
    EdgeVectorIndex(tmp_path / "s", 4).close()
    (tmp_path / "s" / "edge_config.json").unlink()
    with pytest.raises(EmbedderMismatchError, match=r"4-d.*dimension 6"):
        EdgeVectorIndex(tmp_path / "s", 6)


def test_edge_second_open_in_process_is_refused(tmp_path: Path) -> None:
    with (
        EdgeVectorIndex(tmp_path / "s", DIM),
        pytest.raises(StoreLockedError, match="another live process"),
    ):
        EdgeVectorIndex(tmp_path / "s", DIM)
    EdgeVectorIndex(tmp_path / "s", DIM).close()  # released by close()


def _exact_top(vectors: np.ndarray, query: np.ndarray, ids: list[str], k: int) -> list[str]:
    normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    order = np.argsort(-(normed @ (query / np.linalg.norm(query))))
    return [ids[i] for i in order[:k]]


@pytest.mark.parametrize(("background", "hnsw"), [(False, False), (True, False), (True, True)])
def test_edge_indexes_in_bounded_segments(tmp_path: Path, background: bool, hnsw: bool) -> None:
    """With a tiny segment unit, ingest optimizes one segment at a time and search stays right."""
    dim = 16
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((3000, dim)).astype(np.float32)
    ids = [pid() for _ in range(3000)]
    tenants = ["big" if i % 4 else f"small{i % 8}" for i in range(3000)]
    with EdgeVectorIndex(
        tmp_path / "s", dim, segment_kb=32, background=background, hnsw=hnsw
    ) as idx:
        assert idx.segment_points == 512
        for start in range(0, 3000, 100):
            idx.upsert(
                [
                    point(vectors[i], tenant=tenants[i], point_id=ids[i])
                    for i in range(start, start + 100)
                ]
            )
        idx.optimize(wait=True)
        info = idx.info()
        assert info["points"] == 3000
        assert info["segments"] >= 3000 // (2 * 512)  # never one big segment
        assert info["indexed_vectors"] >= 3000 - 2 * 512
        big = [i for i in range(3000) if tenants[i] == "big"]
        for i in big[:40]:
            query = vectors[i] + rng.normal(0, 0.01, dim).astype(np.float32)
            hits = search(idx, query, tenant="big", limit=5)
            assert hits[0][0] == ids[i]
            assert hits[0][1] > 0.99
        small = [i for i in range(3000) if tenants[i] == "small0"]
        sub = vectors[small]
        query = rng.standard_normal(dim).astype(np.float32)
        got = [h[0] for h in search(idx, query, tenant="small0", limit=5)]
        assert got == _exact_top(sub, query, [ids[i] for i in small], 5)


def test_edge_background_thread_indexes_without_being_asked(tmp_path: Path) -> None:
    dim = 16
    rng = np.random.default_rng(3)
    with EdgeVectorIndex(tmp_path / "s", dim, segment_kb=16) as idx:
        inline: list[str] = []  # optimizations run on the writing thread
        optimize = idx._optimize_now

        def noted() -> bool:
            if threading.current_thread() is threading.main_thread():
                inline.append("optimize")
            return optimize()

        idx._optimize_now = noted  # type: ignore[method-assign]
        # 400 points: past one segment (256), below the inline backpressure mark (512)
        for chunk in np.array_split(rng.standard_normal((400, dim)).astype(np.float32), 8):
            idx.upsert([point(v) for v in chunk])
        # nothing was indexed inline (the background thread, woken by the writes, may have
        # indexed some already: reading `pending` here raced with it)
        assert inline == []
        deadline = time.monotonic() + 180  # a loaded 2-core CI machine took over 60 s once
        while idx.info()["indexed_vectors"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert idx.info()["indexed_vectors"] > 0
        assert idx.last_error is None


def test_edge_concurrent_reads_and_writes(tmp_path: Path) -> None:
    dim = 16
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((2000, dim)).astype(np.float32)
    errors: list[BaseException] = []
    with EdgeVectorIndex(tmp_path / "s", dim, segment_kb=32) as idx:
        first = point(vectors[0])
        idx.upsert([first])
        done = threading.Event()

        def reader() -> None:
            try:
                while not done.is_set():
                    hits = search(idx, vectors[0], limit=3)
                    assert hits[0][0] == first.id
                    idx.count("t1")
            except BaseException as err:  # pragma: no cover - reported below
                errors.append(err)

        readers = [threading.Thread(target=reader) for _ in range(3)]
        for t in readers:
            t.start()
        for start in range(1, 2000, 50):
            idx.upsert([point(v) for v in vectors[start : start + 50]])
        done.set()
        for t in readers:
            t.join()
        assert errors == []
        assert idx.count() == 2000
        assert idx.last_error is None


_CHILD_WRITER = textwrap.dedent(
    """
    import sys, uuid
    import numpy as np
    from hindsight.ports import VectorPoint
    from hindsight.vectors import EdgeVectorIndex

    path, seed = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(seed)
    idx = EdgeVectorIndex(path, 16, segment_kb=32)
    print("ready", flush=True)
    while True:
        batch = [
            VectorPoint(str(uuid.uuid4()), rng.standard_normal(16).astype(np.float32),
                        {"tenant_id": "t1", "namespace": "default", "status": "active"})
            for _ in range(int(rng.integers(1, 60)))
        ]
        idx.upsert(batch)
        for p in batch:  # acknowledged: upsert returned
            print(p.id, " ".join(repr(float(x)) for x in p.vector), flush=True)
    """
)


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.parametrize("round_", range(3))
def test_edge_survives_sigkill(tmp_path: Path, round_: int) -> None:
    path = tmp_path / "s"
    acked: dict[str, np.ndarray] = {}
    for life in range(2):  # the second child reopens what the first left behind
        child = _spawn(_CHILD_WRITER, str(path), str(round_ * 10 + life))
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", child.stderr
        target = len(acked) + 200 + 200 * round_ + int(np.random.default_rng().integers(0, 200))
        for line in child.stdout:
            pid_, *values = line.split()
            acked[pid_] = np.asarray([float(v) for v in values], dtype=np.float32)
            if len(acked) >= target:
                break
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        assert child.stderr is not None
        child.stderr.close()
    with EdgeVectorIndex(path, 16) as idx:
        ids = idx.all_ids()
        assert set(acked) <= ids
        assert idx.count("t1") == len(ids)
        for key in list(acked)[:: max(1, len(acked) // 20)]:
            hits = search(idx, acked[key], limit=1)
            assert hits[0][0] == key
            assert hits[0][1] == pytest.approx(1.0, abs=1e-4)


_CHILD_HOLDER = textwrap.dedent(
    """
    import sys, time
    from hindsight.vectors import EdgeVectorIndex

    idx = EdgeVectorIndex(sys.argv[1], 4)
    print("ready", flush=True)
    time.sleep(600)
    """
)


def test_edge_second_live_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    child = _spawn(_CHILD_HOLDER, str(path))
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError) as err:
            EdgeVectorIndex(path, 4)
        message = str(err.value)
        assert "\n" not in message
        assert str(path) in message and "hindsight serve" in message
    finally:
        child.kill()
        child.communicate()
    EdgeVectorIndex(path, 4).close()  # the dead process's lock is gone


def test_edge_process_exit_without_close(tmp_path: Path) -> None:
    """A program that forgets close() still exits (daemon thread, atexit close) and keeps data."""
    code = textwrap.dedent(
        """
        import sys, uuid
        import numpy as np
        from hindsight.ports import VectorPoint
        from hindsight.vectors import EdgeVectorIndex

        idx = EdgeVectorIndex(sys.argv[1], 16, segment_kb=32)
        rng = np.random.default_rng(0)
        idx.upsert([
            VectorPoint(str(uuid.uuid4()), rng.standard_normal(16),
                        {"tenant_id": "t1", "namespace": "default", "status": "active"})
            for _ in range(700)
        ])
        print("wrote", flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "s")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "wrote"
    with EdgeVectorIndex(tmp_path / "s", 16) as idx:
        assert idx.count("t1") == 700


# -- factory and import cost -------------------------------------------------------------
def test_open_vector_index_factory(tmp_path: Path) -> None:
    cases: list[tuple[str | None, type]] = [
        (None, EdgeVectorIndex),
        ("memory://", InMemoryVectorIndex),
        (":memory:", QdrantClientVectorIndex),
    ]
    for url, cls in cases:
        idx = open_vector_index(url, data_dir=tmp_path, dimension=DIM)
        try:
            assert type(idx) is cls
            assert idx.dimension == DIM
        finally:
            idx.close()
    assert (tmp_path / "vectors" / "edge_config.json").exists()
    with pytest.raises(UsageError, match="VECTOR_DB_URL"):
        open_vector_index("ftp://example.org", data_dir=tmp_path, dimension=DIM)


def test_unreachable_server_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"127\.0\.0\.1:9"):
        open_vector_index("http://127.0.0.1:9", data_dir=tmp_path, dimension=DIM)


def test_qdrant_client_is_imported_lazily() -> None:
    code = (
        "import sys, hindsight.vectors as v\n"
        "assert 'qdrant_client' not in sys.modules, 'imported eagerly'\n"
        "assert v.QdrantClientVectorIndex.__name__ == 'QdrantClientVectorIndex'\n"
        "assert 'qdrant_client' in sys.modules\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_factories_build_fresh_indexes(tmp_path: Path) -> None:
    builders: list[Callable[[], Any]] = [
        lambda: InMemoryVectorIndex(DIM),
        lambda: QdrantClientVectorIndex(":memory:", DIM),
    ]
    for build in builders:
        first, second = build(), build()
        first.upsert([point(unit(1, 0, 0, 0))])
        assert (first.count(), second.count()) == (1, 0)
        first.close()
        second.close()
