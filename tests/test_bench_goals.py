"""``hindsight bench goals`` runs at quick sizes and prints every goal of
docs/benchmarks.md#the-goals-in-one-run with its anchor and ratio (no assertion on time: the
figures are benchmarks, tests/benchmarks/bench_goals.py); a missing integration is a row that
says how to install it."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import assert_one_line_error, cli_env, run_cli

REPO = Path(__file__).resolve().parents[1]

EXPECTED = [
    "recall p50, 100 in 1 tenant",
    "recall p50, 300 in 1 tenant",
    "recall p50, 300 as 3 x 100",
    "public batch ingest at 20",
    "public batch ingest at 200",
    "ingest slowdown per 10x, 20 -> 200",
    "cold start, 20 lessons",
    "review CPU per tau-bench run (heuristic)",
    "capture overhead: LangChain handler",
    "capture overhead: LangChain HindsightMiddleware",
    "capture overhead: LangGraph nodes",
]


def _table(stdout: str) -> list[list[str]]:
    rows = [line for line in stdout.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def test_goals_quick_prints_every_row_with_anchor_and_ratio(
    tmp_path: Path, tau_bench_path: Path
) -> None:
    proc = run_cli(
        "bench",
        "goals",
        "--quick",
        "--tau-bench",
        str(tau_bench_path),
        "--ingest-repeats",
        "2",
        "--data-dir",
        str(tmp_path),
        data_dir=tmp_path / "global",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    head, *rows = _table(proc.stdout)
    assert head == ["goal", "measured (p50 wall, p50 CPU)", "anchor", "ratio", "goal", "met?"]
    assert [r[0] for r in rows] == EXPECTED
    for goal, measured, anchor, ratio, target, met in rows:
        assert "wall" in measured and "CPU" in measured, (goal, measured)
        assert anchor not in ("", "-") and target, goal
        assert "x wall" in ratio and "x CPU" in ratio, (goal, ratio)
        assert met in ("yes", "no", "CPU only", "wall only", "info"), (goal, met)
    by_goal = {r[0]: r for r in rows}
    assert by_goal["recall p50, 100 in 1 tenant"][2].startswith("raw Edge query, same filter")
    assert by_goal["cold start, 20 lessons"][2].startswith("new process loading the raw Edge")
    for name in EXPECTED[-3:]:
        assert by_goal[name][2].startswith("the same agent without hindsight"), by_goal[name]
    # the middleware and the nodes split their path into the framework's part and hindsight's
    for name in EXPECTED[-2:]:
        assert "(the framework's part, " in by_goal[name][1], by_goal[name]
        assert "; hindsight's: +" in by_goal[name][1], by_goal[name]
    assert "the framework's part" not in by_goal[EXPECTED[-3]][1]
    text = proc.stdout
    assert "load average (1/5/15 min) at start" in text and "CPUs" in text
    assert "the writer storing the trajectory, then its review" in text
    assert "vectors precomputed; medians of 2 stores" in text
    assert list(tmp_path.iterdir()) == []  # every temporary store removed


def test_review_row_is_skipped_with_a_note_without_the_file(tmp_path: Path) -> None:
    from hindsight.bench._goals import GoalSettings, _review_row

    row = _review_row(GoalSettings.quick(), tmp_path / "missing.json", tmp_path, print)
    assert row["measured"] == "skipped" and row["met"] == "not measured"
    assert "--tau-bench PATH" in row["note"] and "missing.json" in row["note"]


def test_bad_options_are_one_line_errors(tmp_path: Path) -> None:
    for args in (
        ("--repeats", "0"),
        ("--ingest-repeats", "0"),
        ("--sizes", "10,none"),
        ("--tau-bench", str(tmp_path / "nope.json")),
    ):
        proc = run_cli("bench", "goals", "--quick", *args, data_dir=tmp_path)
        assert_one_line_error(proc, 2)


_BLOCKED = """
import json, sys
for name in sys.argv[1:]:
    sys.modules[name] = None  # the framework is not installed
from hindsight.bench._goals import capture_plugins
print(json.dumps([{k: v for k, v in p.items() if k != "fn"} | {"loaded": p["fn"] is not None}
                  for p in capture_plugins()]))
"""


def _plugins_without(*modules: str) -> dict[str, dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED, *modules],
        capture_output=True,
        text=True,
        timeout=300,
        env=cli_env(),
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    return {p["name"]: p for p in json.loads(done.stdout)}


def test_a_missing_integration_is_a_row_saying_how_to_install_it() -> None:
    plugins = _plugins_without("langgraph")
    assert plugins["langgraph_nodes"]["loaded"] is False
    assert "not installed: pip install 'hindsight-memory[langgraph]'" in str(
        plugins["langgraph_nodes"]["note"]
    )
    plugins = _plugins_without("langchain_core")
    for name in ("langchain_handler", "langchain_middleware"):
        assert plugins[name]["loaded"] is False
        assert "not installed: pip install 'hindsight-memory[langchain]'" in str(
            plugins[name]["note"]
        )
    assert all(p["loaded"] for p in _plugins_without().values())


def test_the_core_finds_the_plugins_by_entry_point_name_only() -> None:
    """pyproject.toml declares the entry points the core falls back to (same targets)."""
    import tomllib

    from hindsight.bench._goals import CAPTURE_PLUGINS, ENTRY_POINT_GROUP

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    assert declared[ENTRY_POINT_GROUP] == {name: target for name, _, _, target in CAPTURE_PLUGINS}


def test_the_benchmark_script_parses_its_arguments() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tests/benchmarks/bench_goals.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
    )
    assert done.returncode == 0 and "--quick" in done.stdout


def _hindsight_handlers() -> list[str]:
    """Names of hindsight's process-wide LangChain handlers a run configured now would get."""
    from langchain_core.callbacks.manager import CallbackManager

    manager = CallbackManager.configure()
    return sorted(
        type(h).__name__ for h in manager.handlers if type(h).__module__.startswith("hindsight")
    )


def test_each_side_of_the_capture_rows_sees_only_its_own_hindsight_handlers(
    tmp_path: Path,
) -> None:
    """Once a middleware started the LangChain watcher and the nodes the LangGraph router,
    every run of the process reports to both: the runs timed without hindsight must see
    neither, and each integration's runs only the one it registers itself."""
    pytest.importorskip("langgraph")
    from hindsight_langchain._bench import hindsight_hooks, no_hindsight_hooks
    from hindsight_langchain.middleware import HindsightMiddleware
    from hindsight_langgraph._capture import router

    from hindsight import Memory

    router()  # registered as add_hindsight does
    with Memory(data_dir=tmp_path / "data") as memory:
        HindsightMiddleware(memory, tenant_id="t")  # starts the watcher
        both = ["CaptureRouter", "_Watcher"]
        assert _hindsight_handlers() == both
        with no_hindsight_hooks():  # the without side of every row
            assert _hindsight_handlers() == []
        with hindsight_hooks(router=False, watcher=True):  # the middleware's runs
            assert _hindsight_handlers() == ["_Watcher"]
        with hindsight_hooks(router=True, watcher=False):  # the nodes' runs
            assert _hindsight_handlers() == ["CaptureRouter"]
            with hindsight_hooks(router=False, watcher=False):  # nested: restored after
                assert _hindsight_handlers() == []
            assert _hindsight_handlers() == ["CaptureRouter"]
        assert _hindsight_handlers() == both


def test_the_capture_rows_time_each_side_with_the_handlers_of_its_own_integration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows as the goals run calls them, in its order and in one process (the middleware
    registers the watcher, the nodes the router, for every later run): which of hindsight's
    process-wide handlers each timed run reports to."""
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain.agents")
    import hindsight_langchain._bench as langchain_bench
    import hindsight_langgraph._bench as langgraph_bench
    from hindsight_langchain import _seen
    from hindsight_langgraph import _capture

    seen: dict[str, int] = {}
    for handler, name in ((_seen._WATCHER, "watcher"), (_capture._ROUTER, "router")):
        method = handler.on_chat_model_start

        def counted(*args: Any, _method: Any = method, _name: str = name, **kwargs: Any) -> Any:
            seen[_name] = seen.get(_name, 0) + 1
            return _method(*args, **kwargs)

        monkeypatch.setattr(handler, "on_chat_model_start", counted)
    sides: list[tuple[str, str, list[str]]] = []

    def spy(row: str) -> Any:
        def added_cost(
            without: Any, with_: Any, *, quiet: Any = contextlib.nullcontext, **options: Any
        ) -> dict[str, Any]:
            for side, run, around in (("without", without, quiet), ("with", with_, None)):
                seen.clear()
                with around() if around is not None else contextlib.nullcontext():
                    run()
                sides.append((row, side, sorted(seen)))
            options["background"]()  # the run is stored before the row checks it was
            return {k: {"wall_ms": 0.0, "cpu_ms": 0.0} for k in ("without", "on_path_added")}

        return added_cost

    rows = (
        ("handler", langchain_bench, langchain_bench.handler_overhead),
        ("middleware", langchain_bench, langchain_bench.middleware_overhead),
        ("nodes", langgraph_bench, langgraph_bench.nodes_overhead),
    )
    for row, module, measure in rows:
        monkeypatch.setattr(module, "added_cost", spy(row))
        measure(runs=1, repeats=1, tools=2, seeded=5, data_dir=tmp_path / row)
    assert sides[:6] == [
        ("handler", "without", []),
        ("handler", "with", []),
        ("middleware", "without", []),
        ("middleware", "with", ["watcher"]),
        ("middleware", "without", []),  # its floor: LangChain alone, both sides
        ("middleware", "with", []),
    ]
    assert sides[6:] == [
        ("nodes", "without", []),
        ("nodes", "with", ["router"]),
        ("nodes", "without", []),  # its floor
        ("nodes", "with", []),
    ]


def test_the_middleware_floor_reports_every_run_to_a_stand_in_of_the_watcher(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The framework's part of the middleware's row holds LangChain's cost of the watcher a
    ``HindsightMiddleware`` registers for every run (as the nodes' floor holds an empty
    stand-in of the capture router): its with side reports each event the watcher handles to
    a handler with the same callback methods (empty), its without side to none."""
    pytest.importorskip("langchain.agents")
    import hindsight_langchain._bench as langchain_bench
    from hindsight_langchain._seen import _Watcher
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.callbacks import manager as callbacks_manager

    watcher_methods = {n for n in vars(_Watcher) if n.startswith("on_")}
    assert set(langchain_bench.WATCHER_METHODS) == watcher_methods
    handled = callbacks_manager.handle_event
    seen: list[tuple[str, Any]] = []

    def recording(handlers: list[Any], event: str, *args: Any, **kwargs: Any) -> None:
        seen.extend((event, h) for h in handlers)
        return handled(handlers, event, *args, **kwargs)

    monkeypatch.setattr(callbacks_manager, "handle_event", recording)
    sides: dict[str, list[tuple[str, Any]]] = {}

    def added_cost(without: Any, with_: Any, **options: Any) -> dict[str, Any]:
        for side, run in (("without", without), ("with", with_)):
            seen.clear()
            run()
            sides[side] = list(seen)
        return {"on_path_added": {"wall_ms": 0.0, "cpu_ms": 0.0}}

    monkeypatch.setattr(langchain_bench, "added_cost", added_cost)
    with langchain_bench.no_hindsight_hooks():
        langchain_bench.middleware_floor(runs=1, repeats=1, tools=2)
    assert sides["without"] == []
    stand_ins = {type(h) for _, h in sides["with"]}
    assert len(stand_ins) == 1
    (stand_in,) = stand_ins
    overridden = {n for n in vars(stand_in) if n.startswith("on_")}
    assert overridden == watcher_methods
    assert stand_in.run_inline is _Watcher.run_inline
    assert all(getattr(stand_in, n) is not getattr(BaseCallbackHandler, n) for n in overridden)
    events = {event for event, _ in sides["with"]}
    assert {"on_chain_start", "on_chain_end", "on_chat_model_start"} <= events
