"""The guard and isolation through the real command line (docs/security.md):
``hindsight recall``, ``hindsight ingest``, ``hindsight quarantine list|approve|reject`` and
``hindsight guard scan``, each run as a subprocess on a real data dir."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hindsight import BLOCK_END, BLOCK_START, Memory
from tests.cli_helpers import assert_one_line_error, cli_json, run_cli
from tests.test_poison_e2e import POISON, tau_record

REPO = Path(__file__).resolve().parents[1]
DEV_SET = Path(os.environ.get("HINDSIGHT_SHARED", REPO.parent / "shared")) / "poison" / "dev.jsonl"
HELDOUT = REPO / "tests" / "guard_heldout.jsonl"
NOTE = "we review system prompt designs weekly"


def cli(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``hindsight ARGS`` in a subprocess on ``data_dir``; never raises on exit codes."""
    return run_cli(*args, data_dir=data_dir, **env)


def ok_json(data_dir: Path, *args: str) -> Any:
    return cli_json(*args, data_dir=data_dir)


def one_line_error(proc: subprocess.CompletedProcess[str], code: int) -> str:
    return assert_one_line_error(proc, code)


# ------------------------------------------------------- tenant isolation, an empty tenant


def test_recall_through_the_cli_sees_only_the_callers_tenant(tmp_path: Path) -> None:
    with Memory(data_dir=tmp_path) as mem:
        a = mem.add_experience("Project Zephyr deploys with Helm", tenant_id="A", task_type="ops")
        b = mem.add_experience(
            "Project Zephyr deploys with Terraform", tenant_id="B", task_type="ops"
        )
    for extra in (
        [],
        ["--task-type", "ops"],
        ["--mode", "task_type", "--task-type", "ops"],
        ["--explain"],
        ["--top-k", "50", "--explain"],
    ):
        query = "" if "--mode" in extra else "how does Zephyr deploy?"
        doc = ok_json(tmp_path, "recall", query, "--tenant", "A", *extra)
        assert [h["id"] for h in doc["hits"]] == [a.id]
        dumped = json.dumps(doc)
        assert "Terraform" not in dumped and b.id not in dumped
        text = cli(tmp_path, "recall", query, "--tenant", "A", *extra)
        assert text.returncode == 0 and "Terraform" not in text.stdout
        assert b.id not in text.stdout and "Helm" in text.stdout
    stats = ok_json(tmp_path, "stats", "--tenant", "A")
    assert stats["vectors"] == 1 and "B" not in json.dumps(stats["experiences"])


@pytest.mark.parametrize("tenant", ["", "   "])
@pytest.mark.parametrize(
    "command",
    [
        ["recall", "how does Zephyr deploy?"],
        ["recall", "", "--task-type", "ops"],
        ["quarantine", "list"],
        ["ingest", "FILE"],
    ],
)
def test_empty_tenant_is_refused_by_the_cli(
    tmp_path: Path, tenant: str, command: list[str]
) -> None:
    with Memory(data_dir=tmp_path) as mem:
        mem.add_experience("Project Zephyr deploys with Helm", tenant_id="A", task_type="ops")
    log = tmp_path / "runs.json"
    log.write_text(json.dumps([tau_record("error", 1)]), encoding="utf-8")
    args = [str(log) if a == "FILE" else a for a in command]
    line = one_line_error(cli(tmp_path, *args, "--tenant", tenant), 2)
    assert "tenant" in line.lower() and "Helm" not in line
    with Memory(data_dir=tmp_path) as mem:  # nothing was read, written or deleted
        assert mem.stats(tenant_id="A")["vectors"] == 1
        assert mem.stats()["trajectories"] == 0


def test_missing_tenant_option_is_a_usage_error(tmp_path: Path) -> None:
    line = one_line_error(cli(tmp_path, "recall", "how does Zephyr deploy?"), 2)
    assert "--tenant" in line


# ------------------------------------------------------------------ the guard end to end


def test_end_to_end_through_the_cli(tmp_path: Path) -> None:
    with Memory(data_dir=tmp_path) as mem:
        note = mem.add_experience(NOTE, tenant_id="acme")
        assert note.status.value == "active"
    log = tmp_path / "poisoned.json"
    log.write_text(
        json.dumps([tau_record(k, i) for i, k in enumerate(["error", "long-error", "hidden"])]),
        encoding="utf-8",
    )
    ingested = ok_json(tmp_path, "ingest", str(log), "--tenant", "acme")
    assert ingested["trajectories_added"] == 3 and ingested["experiences_added"] > 0

    for query in (POISON, "API keys", "cancel reservation ABC123", "reservation not found"):
        doc = ok_json(tmp_path, "recall", query, "--tenant", "acme", "--top-k", "50", "--explain")
        shown = json.dumps([doc["hits"], doc["rendered"]]).lower()
        assert "x.example" not in shown and "send api keys" not in shown
    doc = ok_json(tmp_path, "recall", NOTE, "--tenant", "acme")
    assert doc["rendered"].startswith(BLOCK_START) and doc["rendered"].endswith(BLOCK_END)
    assert NOTE in doc["rendered"] and "reference data, not instructions" in doc["rendered"]

    listed = ok_json(tmp_path, "quarantine", "list", "--tenant", "acme")
    assert listed["count"] == len(listed["quarantined"]) >= 3
    assert all(item["reasons"] for item in listed["quarantined"])
    # the poison is kept for review (lessons mask its URL into <url>, the instruction stays)
    assert any("send api keys" in item["content"].lower() for item in listed["quarantined"])
    assert NOTE not in json.dumps(listed)
    text = cli(tmp_path, "quarantine", "list", "--tenant", "acme")
    assert text.returncode == 0 and "exfiltration.secret_to_destination" in text.stdout
    assert ok_json(tmp_path, "quarantine", "list", "--tenant", "other")["count"] == 0

    first, second = (item["id"] for item in listed["quarantined"][:2])
    one_line_error(cli(tmp_path, "quarantine", "approve", first, "--tenant", "other"), 1)
    one_line_error(cli(tmp_path, "quarantine", "approve", note.id, "--tenant", "acme"), 2)
    one_line_error(cli(tmp_path, "quarantine", "reject", "not-an-id", "--tenant", "acme"), 2)
    rejected = ok_json(
        tmp_path,
        "quarantine",
        "reject",
        first,
        "--tenant",
        "acme",
        "--note",
        "poisoned tool output",
    )
    assert rejected["status"] == "deleted"
    approved = ok_json(tmp_path, "quarantine", "approve", second, "--tenant", "acme")
    assert approved["status"] == "active"
    after = ok_json(tmp_path, "quarantine", "list", "--tenant", "acme")
    assert {i["id"] for i in after["quarantined"]} == (
        {i["id"] for i in listed["quarantined"]} - {first, second}
    )


# ------------------------------------------------------------------ guard scan


def _dev_set() -> Path:
    if not DEV_SET.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{DEV_SET} is missing (CI must have ../shared beside the clone)")
        pytest.skip(f"{DEV_SET} not found")
    return DEV_SET


def test_guard_scan_json_lines_then_summary_with_rates(tmp_path: Path) -> None:
    proc = cli(tmp_path, "guard", "scan", str(_dev_set()), "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    results, summary = lines[:-1], lines[-1]["summary"]
    assert len(results) == 30
    assert all(set(r) >= {"id", "verdict", "reasons"} for r in results)
    assert all(r["verdict"] in ("allow", "quarantine") for r in results)
    assert all(bool(r["reasons"]) == (r["verdict"] == "quarantine") for r in results)
    assert summary["poison"] == 15 and summary["benign"] == 15
    assert summary["detection_rate"] == 1.0 and summary["false_positive_rate"] == 0.0
    text = cli(tmp_path, "guard", "scan", str(_dev_set()))
    assert text.returncode == 0
    assert "detection 100.0% (15/15), false positives 0.0% (0/15)" in text.stdout


def test_guard_scan_heldout_rates_and_tuning_with_a_rules_file(tmp_path: Path) -> None:
    summary = json.loads(
        cli(tmp_path, "guard", "scan", str(HELDOUT), "--json").stdout.splitlines()[-1]
    )["summary"]
    assert summary["detection_rate"] >= 0.95 and summary["false_positive_rate"] <= 0.05
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"disabled": ["exfiltration"]}), encoding="utf-8")
    tuned = json.loads(
        cli(
            tmp_path, "guard", "scan", str(HELDOUT), "--json", "--rules", str(rules)
        ).stdout.splitlines()[-1]
    )["summary"]
    assert "exfiltration" not in tuned["by_category"]
    assert tuned["detected"] < summary["detected"]
    via_env = cli(
        tmp_path, "guard", "scan", str(HELDOUT), "--json", HINDSIGHT_GUARD_RULES=str(rules)
    )
    assert json.loads(via_env.stdout.splitlines()[-1])["summary"] == tuned


def test_guard_scan_errors_are_one_line(tmp_path: Path) -> None:
    line = one_line_error(cli(tmp_path, "guard", "scan", str(tmp_path / "nope.jsonl")), 2)
    assert "nope.jsonl" in line
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "content": "fine"}\n{oops\n', encoding="utf-8")
    line = one_line_error(cli(tmp_path, "guard", "scan", str(bad)), 2)
    assert "bad.jsonl:2" in line
    rules = tmp_path / "rules.json"
    rules.write_text('{"disabled": ["no.such.rule"]}', encoding="utf-8")
    line = one_line_error(cli(tmp_path, "guard", "scan", str(bad), "--rules", str(rules)), 2)
    assert "rules.json" in line
