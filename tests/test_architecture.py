"""The package layout of docs/architecture.md holds: one package per pipeline stage,
no import circles, the rules enforced by import-linter, a light ``import hindsight``, and a
public API that does not move.

The import rules live in pyproject.toml (``[tool.importlinter]``); ``lint-imports`` checks them
from the command line too.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest

import hindsight

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "hindsight"

PUBLIC_API = [
    "AddResult",
    "BLOCK_END",
    "BLOCK_START",
    "AsyncMemory",
    "AuthenticationError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "EpisodeReceipt",
    "Event",
    "EventStatus",
    "EventType",
    "Exclusion",
    "ExpectedAction",
    "Experience",
    "ExperienceKind",
    "ExperienceStatus",
    "HindsightError",
    "InvalidTextWarning",
    "InvalidTrajectoryError",
    "Lesson",
    "Memory",
    "MemoryClosedError",
    "MemoryConfig",
    "NotFoundError",
    "Outcome",
    "OutcomeEvidence",
    "Page",
    "Provenance",
    "RecallHit",
    "RecallResult",
    "RecallWeights",
    "ReviewError",
    "RunRecorder",
    "ScoreBreakdown",
    "ServiceError",
    "StoreError",
    "StoreLockedError",
    "TenantRequiredError",
    "Trajectory",
    "UsageError",
    "__version__",
]

STAGES = {
    "capture",
    "review",
    "writeback",
    "recall",
    "guard",
    "store",
    "vectors",
    "embedders",
    "ops",
    "bench",
    "engine",
    "service",
    "cli",
}


def _lint(config: Path) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        "from importlinter.cli import lint_imports\n"
        f"sys.exit(lint_imports(config_filename={str(config)!r}, no_cache=True, no_logo=True))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=240
    )


def _layers() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    [layers] = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [m.strip() for layer in layers for m in layer.replace(":", "|").split("|")]


def test_the_import_rules_of_pyproject_hold() -> None:
    done = _lint(REPO / "pyproject.toml")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_import_checker_reports_a_broken_rule(tmp_path: Path) -> None:
    """The check above can fail: a rule the code breaks (the engine imports recall) is
    reported, with the import that breaks it."""
    config = tmp_path / "broken.toml"
    config.write_text(
        "[tool.importlinter]\n"
        'root_packages = ["hindsight"]\n'
        "[[tool.importlinter.contracts]]\n"
        'name = "engine without recall"\n'
        'type = "forbidden"\n'
        'source_modules = ["hindsight.engine"]\n'
        'forbidden_modules = ["hindsight.recall"]\n',
        encoding="utf-8",
    )
    done = _lint(config)
    assert done.returncode == 1, done.stdout
    assert "hindsight.engine" in done.stdout and "hindsight.recall" in done.stdout


def test_every_first_level_module_is_in_a_layer() -> None:
    """A new package or top-level module cannot escape the rules: it has to be placed."""
    layered = set(_layers())
    names = {
        f"hindsight.{p.stem if p.is_file() else p.name}"
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" and p.stem not in ("__init__", "__main__"))
        or (p.is_dir() and (p / "__init__.py").exists())
    }
    assert names - layered == set()
    assert layered - names == set()
    assert {n.removeprefix("hindsight.") for n in names} >= STAGES


def test_no_import_circle_between_first_level_packages() -> None:
    graph = grimp.build_graph("hindsight")

    def top(module: str) -> str:
        return ".".join(module.split(".")[:2])

    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if top(module) != top(imported):
                edges.setdefault(top(module), set()).add(top(imported))
    # Depth-first search for a back edge; report the circle it closes.
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (circle := visit(nxt)) is not None:
                return circle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(edges):
        if node not in state:
            circle = visit(node)
            assert circle is None, " -> ".join(circle)


def test_import_hindsight_loads_no_service_cli_integration_or_heavy_client() -> None:
    # the engine, as the first call would load it (``import hindsight`` alone loads nothing:
    # tests/test_cold_start.py)
    code = (
        "import json, sys\nimport hindsight\nhindsight.Memory\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "hindsight.engine" in loaded  # the check sees what it should
    unwanted = (
        "hindsight.service",
        "hindsight.cli",
        "hindsight.client",
        "hindsight.server",
        "hindsight_langchain",
        "hindsight_langgraph",
        "hindsight_llamaindex",
        "litellm",
        "httpx",
        "fastapi",
        "mcp",
        "typer",
        "alembic",
    )
    assert [m for m in loaded if m.split(".")[0] in unwanted or m.startswith(unwanted)] == []


def test_opening_a_current_store_does_not_import_alembic(tmp_path: Path) -> None:
    """Cold start (docs/benchmarks.md): the schema revision is checked with SQLAlchemy against
    the shipped head; Alembic is imported only when an upgrade is needed (the first open)."""
    code = (
        "import json, sys\n"
        "from hindsight import Memory\n"
        f"with Memory(data_dir={str(tmp_path / 'data')!r}) as m:\n"
        "    n = len(m.recall('seat map', tenant_id='t').hits)\n"
        "    if not n: m.add_experience('Check the seat map first.', tenant_id='t')\n"
        "print(json.dumps([n, sorted(k for k in sys.modules if k.split('.')[0] in "
        "('alembic', 'litellm', 'fastapi', 'mcp', 'uvicorn', 'httpx', 'sentence_transformers', "
        "'hindsight_langchain', 'hindsight_langgraph', 'hindsight_llamaindex'))]))\n"
    )

    def run() -> list[Any]:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return list(json.loads(done.stdout.splitlines()[-1]))

    first_hits, first = run()
    assert first_hits == 0 and "alembic" in first  # a new store is migrated: the check sees it
    hits, loaded = run()
    assert hits == 1 and loaded == []  # a current store: no Alembic, server, LLM or integration


def test_the_public_api_is_pinned() -> None:
    assert sorted(hindsight.__all__) == sorted(PUBLIC_API)
    assert all(getattr(hindsight, name, None) is not None for name in PUBLIC_API)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_every_stage_says_what_it_owns_and_may_import(stage: str) -> None:
    init = PACKAGE / stage / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    assert "May import" in doc, f"hindsight/{stage}/__init__.py: say what it may import"
    assert len(doc.split()) >= 20, f"hindsight/{stage}/__init__.py: say what it owns"


def test_the_documented_doors_are_the_service_objects() -> None:
    from hindsight import client, server
    from hindsight.service import client as service_client
    from hindsight.service import http, mcp

    assert client.HindsightClient is service_client.HindsightClient
    assert client.AsyncHindsightClient is service_client.AsyncHindsightClient
    assert server.create_app is http.create_app and server.KeyRing is http.KeyRing
    assert server.build_mcp_server is mcp.build_mcp_server
    assert server.fixed_tenant is mcp.fixed_tenant
