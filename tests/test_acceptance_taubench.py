"""Acceptance: the real tau-bench airline file through the real CLI, SQLite and PostgreSQL.

Done when: ingesting ``gpt-4o-airline.json`` with defaults stores all 200 trajectories and more
than 150 experiences, a second ingest adds none, and a payment lesson of
``book_reservation`` is recalled for tenant t1 and nothing for tenant t2. The ingest time is
printed (the goal is under 60 s on the 2-core machine), never asserted.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.cli_helpers import cli_json

QUERY = "book a one-way flight paying with a travel certificate and a credit card"


def _store_env(database_url: str) -> dict[str, str]:
    """SQLite: pure defaults (the file in the data dir). PostgreSQL: DATABASE_URL."""
    return {} if database_url.startswith("sqlite") else {"DATABASE_URL": database_url}


def test_tau_bench_ingest_recall_and_isolation(
    tmp_path: Path, tau_bench_path: Path, database_url: str
) -> None:
    data = tmp_path / "data"
    env = _store_env(database_url)

    started = time.perf_counter()
    first = cli_json("ingest", str(tau_bench_path), "--tenant", "t1", data_dir=data, **env)
    elapsed = time.perf_counter() - started
    backend = "postgresql" if env else "sqlite"
    print(
        f"\ntau-bench ingest ({backend}): {elapsed:.1f} s wall for the CLI process, "
        f"{first['seconds']} s inside; {first['experiences_added']} experiences (goal < 60 s)"
    )
    assert first["trajectories_added"] == 200 and first["trajectories_skipped"] == 0
    assert first["reviews_queued"] == 200 and first["reviews_pending"] == 0
    assert first["events_added"] > 200 * 5
    assert first["experiences_added"] > 150

    stats = cli_json("stats", "--tenant", "t1", data_dir=data, **env)
    assert stats["trajectories"] == 200
    assert stats["experiences"]["total"] == first["experiences_added"]
    by_status = stats["experiences"]["by_status"]
    assert stats["vectors"] == sum(n for status, n in by_status.items() if status != "deleted")
    assert stats["review_jobs"]["succeeded"] == 200 and stats["review_jobs"]["failed"] == 0
    assert stats["vectors_pending"] == 0
    # the guard quarantines none of what the reviewer learned from real runs (lessons that
    # differ in one part, e.g. the tool, must never look like opposed advice)
    assert by_status.get("quarantined", 0) == 0, by_status

    again = cli_json("ingest", str(tau_bench_path), "--tenant", "t1", data_dir=data, **env)
    assert again["trajectories_added"] == 0 and again["trajectories_skipped"] == 200
    assert again["experiences_added"] == 0 and again["events_added"] == 0
    assert again["reviews_queued"] == 0
    after = cli_json("stats", "--tenant", "t1", data_dir=data, **env)
    assert after["experiences"] == stats["experiences"] and after["trajectories"] == 200

    t1 = cli_json("recall", QUERY, "--tenant", "t1", data_dir=data, **env)
    assert 1 <= len(t1["hits"]) <= 5  # top_k default 5
    payment = [
        h for h in t1["hits"] if "book_reservation" in h["content"] and "payment" in h["content"]
    ]
    assert payment, [h["content"] for h in t1["hits"]]
    hit = payment[0]
    assert hit["kind"] in {"tool_reliability", "rule", "improvement", "anti_pattern"}
    assert hit["task_type"] == "tau-bench" and len(hit["source_trajectory_ids"]) >= 1
    b = hit["breakdown"]
    assert set(b["weights"]) == {"similarity", "confidence", "recency"}
    assert hit["score"] > 0 and 0 < b["similarity"] <= 1
    assert "book_reservation" in t1["rendered"] and "payment" in t1["rendered"]

    t2 = cli_json("recall", QUERY, "--tenant", "t2", data_dir=data, **env)
    assert t2["hits"] == [] and t2["rendered"] == ""
    t2_stats = cli_json("stats", "--tenant", "t2", data_dir=data, **env)
    assert t2_stats["trajectories"] == 0 and t2_stats["vectors"] == 0
