"""A store made by the release before pgvector (the replica model: a vector log, a replica
registry, an Edge shard per process with its checkpoint) opens with this one: the migration
runs when it is opened (docs/deploy.md#upgrading-from-the-replica-model).

The old store is made by the previous release's own code, taken from this repository's history
(``git archive``) and run in a subprocess: lessons in two tenants, one archived, one deleted.
Then, opened with this release:

* SQLite: the Edge shard is rebuilt once from SQL (the store named no index yet), recall finds
  every lesson, the shard holds one point per live lesson, ``hindsight doctor`` is clean;
* PostgreSQL: the stored embeddings are pgvector vectors (converted in place, nothing
  re-embedded), the log and registry tables are gone, recall finds every lesson, ``hindsight
  doctor`` is clean.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import textwrap
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from store_fixtures import postgres_schema_url

from hindsight import Memory
from tests.cli_helpers import REPO, cli_env, run_cli

PREVIOUS = "388a055f601fa24fa8bd3873dc001f5c342db2b7"
"""The last commit of the replica model (its migration head: 0008_scoring_payload)."""

LESSONS = {
    "acme": [
        "when order_query times out at peak hours, read the order from the cache",
        "check the refund window before promising a refund",
        "escalate refunds over 500 EUR to a human before promising anything",
    ],
    "globex": ["when the payment API returns 429, wait for the Retry-After header"],
}

MAKE_OLD_STORE = textwrap.dedent(
    """
    import json, sys
    import hindsight
    from hindsight import Memory

    data_dir, url, lessons = sys.argv[1], sys.argv[2] or None, json.loads(sys.argv[3])
    with Memory(data_dir=data_dir, database_url=url, background_review=False) as mem:
        made = {t: [mem.add_experience(x, tenant_id=t).id for x in xs] for t, xs in lessons.items()}
        extra = mem.add_experience("a lesson archived before the upgrade", tenant_id="acme")
        mem.archive(extra.id, tenant_id="acme")
        gone = mem.add_experience("a lesson deleted before the upgrade", tenant_id="acme")
        mem.delete_experience(gone.id, tenant_id="acme")
        head = mem.aio.store.vector_log_state().head
    print(json.dumps({"module": hindsight.__file__, "made": made, "log_head": head}))
    """
)


def _previous_release(tmp_path: Path) -> Path:
    """The previous release's ``hindsight`` package, extracted under ``tmp_path``."""
    known = subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "-e", f"{PREVIOUS}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if known.returncode != 0:
        pytest.skip(f"commit {PREVIOUS[:7]} is not in this clone (a shallow clone?)")
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", PREVIOUS, "hindsight"],
        capture_output=True,
        check=True,
    )
    root = tmp_path / "previous"
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(root, filter="data")
    return root


def _make_old_store(tmp_path: Path, data_dir: Path, url: str | None) -> dict[str, object]:
    root = _previous_release(tmp_path)
    script = tmp_path / "make_old_store.py"
    script.write_text(MAKE_OLD_STORE, encoding="utf-8")
    env = cli_env(data_dir, PYTHONPATH=str(root))
    done = subprocess.run(
        [sys.executable, str(script), str(data_dir), url or "", json.dumps(LESSONS)],
        env=env, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    assert str(report["module"]).startswith(str(root))  # the old code made it
    assert int(str(report["log_head"])) > 0  # the replica model's vector log was written
    return report


def _check_upgraded(data_dir: Path, url: str | None) -> None:
    with Memory(data_dir=data_dir, database_url=url, background_review=False) as mem:
        for tenant, lessons in LESSONS.items():
            for text in lessons:
                hits = mem.recall(text, tenant_id=tenant, top_k=3).hits
                assert hits and hits[0].experience.content == text, (tenant, text)
        stats = mem.stats()
        live = stats["experiences"]["total"] - stats["experiences"]["by_status"]["deleted"]
        assert stats["vectors"] == live == 5 and stats["vectors_pending"] == 0
    env = {} if url is None else {"DATABASE_URL": url}
    doctor = run_cli("doctor", "--json", data_dir=data_dir, **env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    findings = json.loads(doctor.stdout)["findings"]
    assert all(f["ok"] for f in findings), findings


def test_a_sqlite_store_of_the_replica_model_upgrades(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _make_old_store(tmp_path, data, None)
    assert (data / "vectors" / "hindsight_replica.json").exists()  # the old checkpoint
    with Memory(data_dir=data, background_review=False) as mem:
        rebuilt = mem.aio.vectors.rebuilt
        assert rebuilt is not None and rebuilt["points"] == 5, rebuilt  # 4 + archived
    _check_upgraded(data, None)


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from postgres_schema_url()


@pytest.mark.postgres
def test_a_postgresql_store_of_the_replica_model_upgrades(tmp_path: Path, pg_url: str) -> None:
    report = _make_old_store(tmp_path, tmp_path / "old-server", pg_url)
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT id, embedding FROM experiences")).all()
            before = {str(r[0]): bytes(r[1]) for r in rows}
        assert len(before) == 6  # float32 bytes, deleted lesson included
        _check_upgraded(tmp_path / "new-server", pg_url)
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            kind = conn.execute(
                sa.text(
                    "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                    "WHERE attrelid = 'experiences'::regclass AND attname = 'embedding'"
                )
            ).scalar_one()
            rows = conn.execute(sa.text("SELECT id, embedding::text FROM experiences")).all()
            after = {str(r[0]): str(r[1]) for r in rows}
    finally:
        engine.dispose()
    assert {"vector_log", "vector_replicas"}.isdisjoint(tables) and "vector_outbox" in tables
    assert kind == "vector"
    made = report["made"]
    assert isinstance(made, dict) and len(made["acme"]) == 3
    for exp_id, blob in before.items():  # the same vectors, converted, not re-embedded
        old = np.frombuffer(blob, dtype="<f4")
        new = np.asarray(json.loads(after[exp_id]), dtype=np.float32)
        np.testing.assert_array_equal(old, new)
