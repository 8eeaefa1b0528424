"""``hindsight bench``: the real command at tiny sizes, its JSON shape and
sanity of its numbers (never their values: timings belong to benchmarks), the plot, flag
validation, and the clean-up of a shared deployment."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from hindsight.bench import parse_sizes, synthetic_lessons
from hindsight.bench._data import latency_summary, peak_rss_mb
from tests.cli_helpers import run_cli

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _positive(value: Any, what: str) -> None:
    assert isinstance(value, int | float) and math.isfinite(value) and value > 0, (what, value)


def _check_report(doc: dict[str, Any], sizes: list[int], queries: int) -> None:
    assert doc["deployment"]["embedder"] == "hash"
    assert doc["machine"]["cpus"] >= 1
    assert [r["size"] for r in doc["results"]] == sizes
    for r in doc["results"]:
        rec = r["recall_ms"]
        for key in ("p50", "p95", "p99"):
            _positive(rec[key], f"recall {key}")
        assert rec["p50"] <= rec["p95"] <= rec["p99"]
        q = r["queue_ms"]
        _positive(q["p50"], "queue p50")
        assert q["p50"] <= q["p99"]
        ing = r["ingest_per_s"]
        _positive(ing["excluding_embedding"], "ingest without embedding")
        _positive(ing["including_embedding"], "ingest with embedding")
        # Embedding takes time, so including it can only be slower.
        assert ing["including_embedding"] < ing["excluding_embedding"]
        stored = r["stored"]
        assert stored["rows"] + stored["folded"] == r["size"]
        assert stored["active"] + stored["quarantined"] == stored["rows"]
        assert stored["rows"] >= 0.9 * r["size"]  # synthetic lessons are mostly distinct
        _positive(r["peak_rss_mb"], "peak RSS")
        _positive(r["cold_start_ms"], "cold start")
    for name in ("back_to_back", "with_100ms_agent_time"):
        q = doc["queue_with_worker_ms"][name]
        for mode in ("with_review", "without_review"):
            assert 0 < q[mode]["p50"] <= q[mode]["p99"]
        assert q["added_p99"] == pytest.approx(q["with_review"]["p99"] - q["without_review"]["p99"])
        assert 0 <= q["reviewed_during_runs"] <= q["reviewed"]
        assert q["reviewed"] > 0  # the worker reviewed the queued runs (flushed at the end)


def test_bench_json_and_plot(tmp_path: Path) -> None:
    """The real command: two tiny sizes, --json on stdout only, a PNG plot, temp stores gone."""
    parent = tmp_path / "stores"
    parent.mkdir()
    plot = tmp_path / "latency.png"
    proc = run_cli(
        "bench",
        "--sizes",
        "300,150",
        "--queries",
        "30",
        "--json",
        "--plot",
        str(plot),
        "--data-dir",
        str(parent),
        data_dir=tmp_path / "unused",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # one JSON document, nothing else on stdout
    _check_report(doc, [150, 300], 30)
    assert doc["plot"] == str(plot)
    data = plot.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5000
    assert list(parent.iterdir()) == []  # every temporary store was removed
    assert not (tmp_path / "unused").exists()  # the global data dir was never opened


def test_bench_text_output(tmp_path: Path) -> None:
    proc = run_cli("bench", "--sizes", "100", "--queries", "10", data_dir=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("hindsight ") and "embedder: hash" in lines[0]
    assert "100 experiences: recall p50 " in lines[1] and "cold start" in lines[1]
    assert sum("end of a run with the worker on" in line for line in lines) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sizes", "0"], "error: --sizes: 0 is outside 1..10,000,000"),
        (["--sizes", "10,ten"], "error: --sizes: 'ten' is not a whole number"),
        (["--sizes", " , "], "error: --sizes needs at least one size"),
        (["--sizes", "20000000"], "error: --sizes: 20000000 is outside"),
        (["--queries", "0"], "error: --queries must be in 1..100000, got 0"),
        (["--data-dir", "/nonexistent/hindsight-bench"], "is not an existing folder"),
        (["--plot", "latency.svg"], "error: --plot writes a PNG"),
        (["--plot", "/nonexistent/dir/latency.png"], "error: --plot: folder"),
    ],
)
def test_bench_rejects_bad_flags_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    proc = run_cli("bench", *args, data_dir=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and message in errors[0], proc.stderr


def test_bench_plot_without_matplotlib_names_the_install(tmp_path: Path) -> None:
    """With matplotlib not importable, --plot fails at once with the pip command."""
    blocker = tmp_path / "block"
    (blocker / "matplotlib").mkdir(parents=True)
    (blocker / "matplotlib" / "__init__.py").write_text(
        "raise ImportError('No module named matplotlib')\n"
    )
    env_path = os.pathsep.join([str(blocker), str(Path(__file__).resolve().parents[1])])
    proc = run_cli(
        "bench", "--plot", str(tmp_path / "x.png"), data_dir=tmp_path, PYTHONPATH=env_path
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: --plot needs matplotlib: pip install matplotlib"


def test_parse_sizes() -> None:
    assert parse_sizes("1000,10000") == [1000, 10000]
    assert parse_sizes("10k, 1_000,1000,") == [1000, 10000]
    with pytest.raises(ValueError, match="not a whole number"):
        parse_sizes("1.5k")
    with pytest.raises(ValueError, match="outside"):
        parse_sizes("-3")


def test_synthetic_lessons_are_distinct_and_deterministic() -> None:
    lessons = synthetic_lessons(5000)
    assert len(set(lessons)) == 5000
    assert lessons == synthetic_lessons(5000)
    assert synthetic_lessons(3, seed=1) != synthetic_lessons(3, seed=2)
    with pytest.raises(ValueError):
        synthetic_lessons(-1)


def test_latency_summary_and_rss() -> None:
    summary = latency_summary([1.0, 2.0, 3.0, 4.0, 100.0])
    assert summary["p50"] == 3.0 and summary["p50"] <= summary["p95"] <= summary["p99"] <= 100
    with pytest.raises(ValueError):
        latency_summary([])
    rss = peak_rss_mb()
    assert rss is not None and rss > 10  # this interpreter alone holds more than 10 MiB


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_bench_on_postgresql_cleans_up_its_tenants(tmp_path: Path, database_url: str) -> None:
    """Against a configured DATABASE_URL the bench writes into tenants of its own and
    deletes every row of them afterwards (vectors included: pgvector keeps them in the rows);
    the user's own tenants are left alone."""
    from hindsight import Memory

    with Memory(data_dir=tmp_path / "own", database_url=database_url) as mem:
        mine = mem.add_experience("Retry the flaky export once.", tenant_id="acme")
    proc = run_cli(
        "bench",
        "--sizes",
        "60",
        "--queries",
        "5",
        "--json",
        data_dir=tmp_path / "unused",
        timeout=600,
        DATABASE_URL=database_url,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["deployment"]["sql"].startswith("postgresql")
    assert doc["results"][0]["stored"]["rows"] == 60
    engine = sa.create_engine(database_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            checked = 0
            for table in inspector.get_table_names():
                columns = {c["name"] for c in inspector.get_columns(table)}
                if "tenant_id" not in columns:
                    continue
                checked += 1
                left = conn.execute(
                    sa.text(f"SELECT count(*) FROM {table} WHERE tenant_id <> 'acme'")
                ).scalar_one()
                assert left == 0, table
            assert checked >= 5
            kept = conn.execute(sa.text("SELECT id FROM experiences")).scalars().all()
            assert kept == [mine.id]
    finally:
        engine.dispose()
