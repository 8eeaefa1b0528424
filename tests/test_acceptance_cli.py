"""Cases C01, C02, C03 and C17 through the real command line (``python -m hindsight``).

The Python API paths are tested in test_engine.py and test_isolation.py; here every recall path
of the CLI (vector, vector + task_type filter, exact task_type mode, ``--explain``, text and
JSON output), ``stats``, ``experiences list`` and ``forget`` must keep tenants apart, refuse an
empty tenant with one line on stderr (exit 2), and delete by any id form.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hindsight import Memory
from tests.cli_helpers import assert_one_line_error, cli_json, run_cli

QUESTION = "how does Zephyr deploy?"


def _seed_zephyr(data: Path) -> tuple[str, list[str]]:
    """Tenant A: one Helm lesson. Tenant B: two Terraform lessons, more confident."""
    with Memory(data_dir=data) as mem:
        a = mem.add_experience("Project Zephyr deploys with Helm", tenant_id="A", task_type="ops")
        b = [
            mem.add_experience(text, tenant_id="B", task_type="ops", confidence=0.9).id
            for text in (
                "Project Zephyr deploys with Terraform",
                "Zephyr staging deploys run terraform apply from the infra repo",
            )
        ]
    return a.id, b


def test_c01_every_cli_recall_path_keeps_tenants_apart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    a_id, b_ids = _seed_zephyr(data)
    variants = {
        "vector": [QUESTION],
        "vector+task_type": [QUESTION, "--task-type", "ops"],
        "exact task_type": [QUESTION, "--mode", "task_type", "--task-type", "ops"],
        "exact, no query": ["", "--task-type", "ops"],
        "wide": [QUESTION, "--top-k", "50", "--explain"],
    }
    for name, args in variants.items():
        proc = run_cli("recall", *args, "--tenant", "A", "--json", data_dir=data)
        assert proc.returncode == 0, (name, proc.stderr)
        doc = json.loads(proc.stdout)
        assert [h["id"] for h in doc["hits"]] == [a_id], name
        assert "Helm" in doc["rendered"], name
        assert "Terraform" not in proc.stdout and not any(b in proc.stdout for b in b_ids), name
        if name.startswith("exact"):
            assert doc["hits"][0]["breakdown"]["mode"] == "task_type"
        if name not in ("vector", "exact task_type"):
            continue
        # text output, with the explanation of what was left out
        text = run_cli("recall", *args, "--tenant", "A", "--explain", data_dir=data)
        assert text.returncode == 0, (name, text.stderr)
        assert "Helm" in text.stdout and "Terraform" not in text.stdout, name
        assert not any(b in text.stdout for b in b_ids), name

    stats = cli_json("stats", "--tenant", "A", data_dir=data)
    assert stats["experiences"]["total"] == 1 and stats["vectors"] == 1
    listed = run_cli("experiences", "list", "--tenant", "A", "--json", data_dir=data)
    assert listed.returncode == 0, listed.stderr
    assert [e["id"] for e in json.loads(listed.stdout)] == [a_id]
    # B still sees its own
    b_hits = cli_json("recall", QUESTION, "--tenant", "B", "--top-k", "50", data_dir=data)["hits"]
    assert len(set(b_ids)) == 2 and b_ids[0] in {h["id"] for h in b_hits}


@pytest.mark.parametrize("tenant", ["", "   "])
def test_c17_empty_tenant_is_refused_by_every_command(tmp_path: Path, tenant: str) -> None:
    data = tmp_path / "data"
    a_id, _ = _seed_zephyr(data)
    log = tmp_path / "run.jsonl"
    log.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    commands = [
        ["recall", QUESTION, "--tenant", tenant],
        ["recall", QUESTION, "--tenant", tenant, "--json"],
        ["recall", "", "--tenant", tenant, "--mode", "task_type", "--task-type", "ops"],
        ["ingest", str(log), "--tenant", tenant],
        ["stats", "--tenant", tenant],
        ["experiences", "list", "--tenant", tenant],
        ["forget", "--tenant", tenant, "--all"],
    ]
    if tenant.strip() != tenant:  # blank, not empty: the same check, fewer (slow) CLI runs
        commands = [commands[0], commands[-1]]
    for args in commands:
        proc = run_cli(*args, data_dir=data)
        line = assert_one_line_error(proc, code=2)
        assert "tenant" in line.lower(), (args, line)
        assert proc.stdout == "", args
    # a missing --tenant is a usage error too, never "all tenants"
    proc = run_cli("recall", QUESTION, data_dir=data)
    assert "tenant" in assert_one_line_error(proc, code=2)
    # nothing was ingested or forgotten
    stats = cli_json("stats", data_dir=data)
    assert stats["trajectories"] == 0 and stats["experiences"]["total"] == 3
    assert [
        h["id"] for h in cli_json("recall", QUESTION, "--tenant", "A", data_dir=data)["hits"]
    ] == [a_id]


def test_c02_c03_forget_through_the_cli(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Memory(data_dir=data) as mem:
        ids = {
            t: [mem.add_experience(f"lesson {i} of tenant {t}", tenant_id=t).id for i in range(5)]
            for t in "ABC"
        }
        target = mem.add_experience("retry the payment API once on 502", tenant_id="C").id

    def vectors_match_sql() -> None:
        stats = cli_json("stats", data_dir=data)
        by_status = stats["experiences"]["by_status"]
        assert stats["vectors"] == sum(n for s, n in by_status.items() if s != "deleted")

    # C03: any id form; afterwards the same recall returns nothing and counts agree
    forms = (str.upper, lambda i: "{" + i + "}", lambda i: uuid.UUID(i).urn)
    for form in forms:
        given = form(target)
        removed = cli_json("forget", "--tenant", "C", "--experience", given, data_dir=data)
        assert removed == {"tenant_id": "C", "experiences_removed": 1}, given
        again = cli_json(
            "recall", "retry the payment API once on 502", "--tenant", "C", data_dir=data
        )
        assert target not in [h["id"] for h in again["hits"]]
        assert "502" not in again["rendered"]
        vectors_match_sql()
        with Memory(data_dir=data) as mem:  # put it back for the next id form
            target = mem.add_experience("retry the payment API once on 502", tenant_id="C").id
    unknown = run_cli("forget", "--tenant", "C", "--experience", str(uuid.uuid4()), data_dir=data)
    assert "not found" in assert_one_line_error(unknown, code=1)
    bad = run_cli("forget", "--tenant", "C", "--experience", "not-an-id", data_dir=data)
    assert "UUID" in assert_one_line_error(bad, code=2)
    # another tenant's id is "not found", not deleted
    foreign = run_cli("forget", "--tenant", "A", "--experience", ids["B"][0], data_dir=data)
    assert "not found" in assert_one_line_error(foreign, code=1)

    # C02: everything of A; empty or missing filters are refused, B and C unchanged
    assert cli_json("forget", "--tenant", "A", "--all", data_dir=data)["experiences_removed"] == 5
    assert_one_line_error(run_cli("forget", "--tenant", "B", data_dir=data), code=2)
    assert_one_line_error(run_cli("forget", "--all", data_dir=data), code=2)
    for tenant, n in (("A", 0), ("B", 5), ("C", 6)):
        stats = cli_json("stats", "--tenant", tenant, data_dir=data)
        assert stats["experiences"]["by_status"]["active"] == n and stats["vectors"] == n, tenant
    vectors_match_sql()
