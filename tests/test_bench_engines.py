"""``hindsight bench engines``: the real command at tiny sizes on PostgreSQL with pgvector and
the embedded default, its JSON shape and the sanity of its numbers (never their values:
timings belong to docs/benchmarks.md), and that it leaves nothing behind (its schemas dropped,
its temporary data dirs removed)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from store_fixtures import postgres_schema_url

from tests.cli_helpers import assert_one_line_error, run_cli

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from postgres_schema_url()


def _positive(value: Any, what: str) -> None:
    assert isinstance(value, int | float) and math.isfinite(value) and value > 0, (what, value)


def test_bench_engines_json_and_text(tmp_path: Path, pg_url: str) -> None:
    parent = tmp_path / "stores"
    parent.mkdir()
    args = ("--layouts", "120,150x3", "--queries", "8", "--repeats", "2", "--ingest-batch", "20")
    proc = run_cli(
        "bench", "engines", "--database-url", pg_url, *args, "--json", "--data-dir",
        str(parent), data_dir=tmp_path / "unused", timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["engines"]
    assert (report["queries"], report["repeats"], report["overlap_k"]) == (8, 2, 5)
    assert report["embedder"].startswith("hash")
    rows = [(r["engine"], r["size"], r["tenants"], r["per_tenant"]) for r in report["results"]]
    assert rows == [
        ("embedded", 120, 1, 120), ("pgvector", 120, 1, 120),
        ("embedded", 150, 3, 50), ("pgvector", 150, 3, 50),
    ]  # fmt: skip
    for r in report["results"]:
        for clock in ("wall", "cpu"):
            p50, p95 = r["recall_ms"][clock]["p50"], r["recall_ms"][clock]["p95"]
            _positive(p95, f"{r['engine']} {clock} p95")
            assert 0 <= p50 <= p95
            _positive(r["ingest_per_s"][clock], f"{r['engine']} ingest {clock}")
        assert 0.0 <= r["overlap"] <= 1.0
    # tiny layouts: the planner scans the tenant's rows exactly, Edge rescores on float32
    assert all(r["overlap"] >= 0.8 for r in report["results"]), report["results"]
    assert list(parent.iterdir()) == []  # the temporary data dirs were removed
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            left = conn.execute(
                sa.text(
                    "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'hindsight_bench_%'"
                )
            ).scalar_one()
    finally:
        engine.dispose()
    assert left == 0  # every layout's schema was dropped

    quick = ("--queries", "3", "--repeats", "1", "--ingest-batch", "5")
    text = run_cli(
        "bench", "engines", "--database-url", pg_url, *args[:2], *quick, data_dir=tmp_path,
        timeout=900,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["120 in 1 tenant", "150 as 3 x 50"]
    assert all("pgvector" in x and "embedded" in x and "overlap@5" in x for x in lines)


def test_bench_engines_refuses_without_postgresql(tmp_path: Path) -> None:
    line = assert_one_line_error(run_cli("bench", "engines", data_dir=tmp_path))
    assert "PostgreSQL" in line and "--database-url" in line
