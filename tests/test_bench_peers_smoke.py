"""The peer benchmark (tests/benchmarks/peers.py) at a tiny size: every system really stores
and finds the data, embedding stays out of the timed section, the report adds up.

Real mem0 (embedded: local Qdrant + SQLite history, no LLM) and LangGraph InMemoryStore
(extra ``bench``). No timing is asserted (shared machine).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchmarks._peers_systems import SYSTEMS  # sets MEM0_TELEMETRY before mem0 loads

pytest.importorskip("mem0", reason="extra 'bench' (mem0ai) is not installed")
pytest.importorskip("langgraph.store.memory")

from tests.benchmarks import peers
from tests.benchmarks._peers_data import (
    PLANTED,
    PrecomputedEmbedder,
    make_workload,
)


def test_workload_is_distinct_tenant_scoped_and_deterministic() -> None:
    wl = make_workload(200, tenants=4, queries=30, seed=3)
    assert len(set(wl.lessons)) == 200 and wl.lessons[0] == PLANTED
    assert wl.tenants == ["t0", "t1", "t2", "t3"]
    assert wl.queries[0].target == PLANTED and wl.queries[0].tenant == "t0"
    owner = dict(zip(wl.lessons, wl.tenant_of, strict=True))
    assert all(owner[q.target] == q.tenant for q in wl.queries)
    assert make_workload(200, tenants=4, queries=30, seed=3).lessons == wl.lessons
    with pytest.raises(ValueError, match="need n >= 2"):
        make_workload(1)


def test_precomputed_embedder_counts_only_unprimed_texts() -> None:
    emb = PrecomputedEmbedder(dimension=32)
    emb.prime(["a b", "c d"])
    first = emb.embed(["a b", "c d"])
    assert first.shape == (2, 32) and emb.misses == 0
    emb.embed(["new text"])
    assert emb.misses == 1
    assert emb.embed_lists(["a b"])[0] == pytest.approx(first[0].tolist())
    assert emb.as_langchain().embed_query("c d") == pytest.approx(first[1].tolist())


def test_run_size_measures_all_three_systems_on_the_same_data() -> None:
    out = peers.run_size(60, queries=12, repeats=2, k=5, tenants=3, progress=lambda _m: None)
    assert set(out["systems"]) == set(SYSTEMS)
    for name, res in out["systems"].items():
        assert res["stored"] == 60, name  # nothing merged, dropped or quarantined
        assert res["planted_rank"] == 1, name  # a real search, in the right tenant
        assert res["empty"] == 0, name
        assert res["hit_at_k"] >= 0.9, name
        assert res["embed_misses_timed"] == 0, name  # embedding excluded from timings
        ms = res["recall_ms"]
        assert 0 < ms["p50"] <= ms["p95"] <= ms["p99"], name
        assert res["ingest_per_s"] > 0 and res["ready_s"] >= 0
    for name in ("mem0", "langgraph"):
        ratio = out["ratios"][name]
        res, ours = out["systems"][name], out["systems"]["hindsight"]
        assert ratio["recall_p50"] == pytest.approx(
            res["recall_ms"]["p50"] / ours["recall_ms"]["p50"]
        )
        assert ratio["ingest"] == pytest.approx(res["ingest_per_s"] / ours["ingest_per_s"])


def test_tenant_filter_is_applied_by_every_system(tmp_path) -> None:
    emb = PrecomputedEmbedder()
    text = "When ledger_sync fails with error ZZ-91, rebuild the ledger index (ref 1)."
    emb.prime([text, "ledger sync error ZZ-91"])
    for name, cls in SYSTEMS.items():
        system = cls(tmp_path / name, emb)
        try:
            system.add(text, "owner")
            system.ready()
            assert system.search("ledger sync error ZZ-91", "owner", 5) == [text], name
            assert system.search("ledger sync error ZZ-91", "someone-else", 5) == [], name
        finally:
            system.close()


def test_cli_prints_json_a_plot_and_refuses_bad_arguments(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--sizes", "30", "--queries", "5", "--repeats", "1", "--systems", "hindsight,langgraph"]
    assert peers.main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["results"][0]["size"] == 30
    assert set(report["results"][0]["systems"]) == {"hindsight", "langgraph"}
    assert "not measured here" in report["published_anchor"]
    png = tmp_path / "img" / "peers.png"
    assert peers.main([*argv, "--plot", str(png)]) == 0
    text = capsys.readouterr().out
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 5000
    assert "x p50" in text and "not measured here" in text
    with pytest.raises(SystemExit) as exc:
        peers.main(["--sizes", "ten"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        peers.main(["--systems", "mem0"])  # hindsight is the reference
    assert "must include 'hindsight'" in capsys.readouterr().err


def test_plot_refuses_an_empty_report(tmp_path: Path) -> None:
    from tests.benchmarks._peers_plot import plot_report

    with pytest.raises(ValueError, match="no results"):
        plot_report({"results": []}, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
