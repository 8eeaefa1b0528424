"""Tenant isolation, forgetting, ids in any form and an empty tenant through the real command
line (``python -m hindsight``).

The Python API paths are tested in test_engine.py and test_isolation.py, the recall paths of
the CLI (vector, task_type filter, exact mode, ``--explain``) and an empty tenant for
``recall`` / ``ingest`` / ``quarantine list`` in test_guard_cli.py. Here: the other commands
that read or delete a tenant's data (``stats``, ``experiences list``, ``forget``) keep tenants
apart and refuse an empty tenant with one line on stderr (exit 2), and ``forget`` deletes by
any id form and one tenant only.
"""

from __future__ import annotations

import uuid
from pathlib import Path

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


def test_listing_counts_and_json_recall_keep_tenants_apart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    a_id, b_ids = _seed_zephyr(data)
    proc = run_cli(
        "recall", QUESTION, "--tenant", "A", "--top-k", "50", "--explain", "--json", data_dir=data
    )
    assert proc.returncode == 0, proc.stderr
    assert "Terraform" not in proc.stdout and not any(b in proc.stdout for b in b_ids)
    listed_a = cli_json("experiences", "list", "--tenant", "A", data_dir=data)
    assert [h["id"] for h in listed_a["items"]] == [a_id] and listed_a["next_cursor"] is None
    for status in ("active", "deleted"):
        listed = cli_json("experiences", "list", "--tenant", "A", "--status", status, data_dir=data)
        assert not any(e["id"] in b_ids for e in listed["items"])
    stats = cli_json("stats", "--tenant", "A", data_dir=data)
    assert stats["experiences"]["total"] == 1 and stats["vectors"] == 1
    # B still sees its own
    b_hits = cli_json("recall", QUESTION, "--tenant", "B", "--top-k", "50", data_dir=data)["hits"]
    assert len(set(b_ids)) == 2 and b_ids[0] in {h["id"] for h in b_hits}
    assert a_id not in {h["id"] for h in b_hits}


def test_empty_tenant_is_refused_by_commands_that_read_or_delete(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _seed_zephyr(data)
    for args in (
        ["recall", QUESTION, "--tenant", "", "--json"],
        ["stats", "--tenant", ""],
        ["experiences", "list", "--tenant", ""],
        ["trajectories", "list", "--tenant", ""],
        ["forget", "--tenant", "", "--all"],
        ["forget", "--tenant", "   ", "--all"],
    ):
        proc = run_cli(*args, data_dir=data)
        line = assert_one_line_error(proc, code=2)
        assert "tenant" in line.lower(), (args, line)
        assert proc.stdout == "", args  # no half JSON document
    # nothing was forgotten
    stats = cli_json("stats", data_dir=data)
    assert stats["experiences"]["total"] == 3 and stats["vectors"] == 3


def test_forget_through_the_cli(tmp_path: Path) -> None:
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

    # any id form; afterwards the same recall returns nothing and counts agree
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

    # everything of A; empty or missing filters are refused, B and C unchanged
    assert cli_json("forget", "--tenant", "A", "--all", data_dir=data)["experiences_removed"] == 5
    assert_one_line_error(run_cli("forget", "--tenant", "B", data_dir=data), code=2)
    assert_one_line_error(run_cli("forget", "--all", data_dir=data), code=2)
    for tenant, n in (("A", 0), ("B", 5), ("C", 6)):
        stats = cli_json("stats", "--tenant", tenant, data_dir=data)
        assert stats["experiences"]["by_status"]["active"] == n and stats["vectors"] == n, tenant
    vectors_match_sql()
