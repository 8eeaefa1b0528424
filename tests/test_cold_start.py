"""What a new process loads before its first call (docs/cli.md#hindsight-version).

Structural, not timed (the figures are in docs/benchmarks.md): ``import hindsight`` loads
no engine, store or vector code until a public name is used, and listing the command line's
commands loads none of them either.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import hindsight

HEAVY = ("hindsight.engine", "hindsight.store", "hindsight.vectors", "sqlalchemy", "qdrant_edge")


def _loaded(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "code",
    [
        "import hindsight",
        "import hindsight; hindsight.__version__",
        "from hindsight import UsageError, HindsightError",
        "from hindsight.cli import app",
        "from hindsight.cli import main\nimport sys; sys.argv = ['hindsight', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass",
        "from hindsight.cli import main\nimport sys; sys.argv = ['hindsight', 'version']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass",
    ],
)
def test_nothing_heavy_before_the_first_call(code: str) -> None:
    loaded = _loaded(code)
    assert [m for m in loaded if m.startswith(HEAVY)] == []


def test_the_command_list_loads_no_validation_or_event_loop() -> None:
    """``hindsight --help`` renders the commands without pydantic or asyncio: the commands
    that need them import them when they run."""
    loaded = _loaded(
        "from hindsight.cli import main\nimport sys; sys.argv = ['hindsight', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert "hindsight.cli" in loaded  # the check sees what it should
    assert [m for m in loaded if m.split(".")[0] in ("pydantic", "asyncio")] == []


def _main(*args: str) -> str:
    argv = ["hindsight", *args]
    code = f"import sys; sys.argv = {argv!r}\nfrom hindsight.cli import main\nmain()"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_version_loads_not_even_the_command_line() -> None:
    """``hindsight version`` answers before typer, rich or pydantic load; with anything else
    on the line (an option, ``--help``) the command line runs as for any command."""
    loaded = _loaded(
        "from hindsight.cli import main\nimport sys; sys.argv = ['hindsight', 'version']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert "hindsight.cli" in loaded
    assert [m for m in loaded if m.split(".")[0] in ("typer", "rich", "pydantic")] == []
    for line in ("from hindsight.cli import main", "import hindsight.cli"):
        assert "typer" not in _loaded(line)
    assert _main("version") == f"hindsight {hindsight.__version__}\n"
    assert json.loads(_main("version", "--json")) == {"version": hindsight.__version__}
    assert "--json" in _main("version", "--help")  # typer's help of the command
    with_option = _main("--data-dir", "/nonexistent/hindsight-test", "version")
    assert with_option == f"hindsight {hindsight.__version__}\n"


def test_a_public_name_loads_its_module_on_first_use() -> None:
    loaded = _loaded("import hindsight\nhindsight.Memory")
    assert "hindsight.engine.memory" in loaded
    assert hindsight.Memory.__module__ == "hindsight.engine.memory"
    assert set(hindsight.__all__) <= set(dir(hindsight))
    for name in hindsight.__all__:
        assert getattr(hindsight, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Memroy'"):
        hindsight.Memroy  # noqa: B018


def test_version_command() -> None:
    from hindsight.cli import app

    plain = CliRunner().invoke(app, ["version"])
    assert plain.exit_code == 0 and plain.stdout.strip() == f"hindsight {hindsight.__version__}"
    as_json = CliRunner().invoke(app, ["version", "--json"])
    assert json.loads(as_json.stdout) == {"version": hindsight.__version__}


# -- a memory that only recalls loads no write side (docs/architecture.md#cold-start) ----------

WRITE_SIDE = (
    "hindsight.guard.checker",
    "hindsight.guard.screening",
    "hindsight.review.runner",
    "hindsight.review.heuristic",
    "hindsight.review.mining",
    "hindsight.writeback.pipeline",
    "hindsight.writeback.dedup",
    "hindsight.checks.lookup",
    "hindsight.ops.doctor",
    "sqlalchemy.dialects.postgresql",
)


def _open_and(data_dir: str, then: str, **settings: object) -> str:
    args = "".join(f", {k}={v!r}" for k, v in settings.items())
    return (
        "from hindsight import Memory\n"
        f"m = Memory(data_dir={data_dir!r}, background_review=False{args})\n"
        f"{then}\n"
        "m.close()"
    )


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> str:
    """A store made (and migrated) before: the process under test only opens it."""
    from hindsight import Memory

    data = tmp_path_factory.mktemp("cold") / "mem"
    with Memory(data_dir=data, background_review=False) as mem:
        mem.add_experience("When the order lookup times out, retry once.", tenant_id="t")
    return str(data)


@pytest.mark.parametrize(
    "then",
    [
        "assert m.recall('order lookup timed out', tenant_id='t').hits",
        "m.recall('order lookup timed out', tenant_id='t', top_k=3)",
        "m.stats(tenant_id='t')",
        "m.list_experiences(tenant_id='t')",
    ],
)
def test_a_memory_that_only_reads_loads_no_write_side(store_dir: str, then: str) -> None:
    loaded = _loaded(_open_and(store_dir, then))
    assert "hindsight.recall.pipeline" in loaded  # the check sees what it should
    assert [m for m in loaded if m.startswith(WRITE_SIDE)] == []


@pytest.mark.parametrize(
    "then",
    [
        "m.add_experience('Check the order id before calling lookup.', tenant_id='t')",
        "m.aio.guard",
        "m.aio.reviews",
    ],
)
def test_the_write_side_loads_at_its_first_use(tmp_path, then: str) -> None:
    loaded = _loaded(_open_and(str(tmp_path / "mem"), then))
    assert "hindsight.writeback.pipeline" in loaded
    assert "hindsight.review.runner" in loaded


@pytest.mark.parametrize(
    "settings",
    [
        {"guard_layers": "rules"},
        {"reviewer": "llm", "reflection_model": "openai/x"},
        {"reflection_model": "openai/x"},
    ],
)
def test_a_setting_of_the_write_side_is_checked_at_open(tmp_path, settings) -> None:
    """Where a setting of the write side can be wrong, the reviewer and the guard it names are
    built at open (so checked there); the write path still waits for its first use."""
    loaded = _loaded(_open_and(str(tmp_path / "mem"), "", **settings))
    assert "hindsight.guard.rules_file" in loaded
    assert "hindsight.review.combined" in loaded
    assert "hindsight.review.runner" not in loaded  # the reviews: at their first use


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"guard_layers": "rules,bogus"}, "guard layers must be"),
        ({"reviewer": "bogus"}, "unknown reviewer"),
        ({"reviewer": "llm"}, "REFLECTION_MODEL"),
        ({"guard": False, "guard_layers": "rules,bogus"}, "guard layers must be"),
        ({"guard": False, "guard_layers": ""}, "guard layers must be"),
    ],
)
def test_a_wrong_setting_of_the_write_side_is_refused_at_open(tmp_path, settings, message):
    """... before any file is made: a wrong setting leaves no new store behind."""
    from hindsight import Memory, UsageError

    with pytest.raises(UsageError, match=message):
        Memory(data_dir=tmp_path / "mem", background_review=False, **settings)
    assert not (tmp_path / "mem").exists()


def test_a_bad_guard_rules_file_is_refused_at_open(tmp_path) -> None:
    from hindsight import Memory, UsageError

    rules = tmp_path / "rules.toml"
    rules.write_text("[[rules]]\nid = 'x'\npattern = '('\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"rules\.toml"):
        Memory(data_dir=tmp_path / "mem", background_review=False, guard_rules=rules)
    assert not (tmp_path / "mem").exists()


@pytest.mark.parametrize(
    "then",
    [
        "m.store_episode({'task': 'look up order 1', 'tenant_id': 't'}, review=False)",
        "m.flush()",
    ],
)
def test_calls_that_need_no_review_wire_no_write_side(store_dir: str, then: str) -> None:
    loaded = _loaded(_open_and(store_dir, then))
    assert [m for m in loaded if m.startswith(WRITE_SIDE)] == []


@pytest.mark.parametrize("success", [True, False])
def test_an_outcome_wires_no_write_side(tmp_path, success: bool) -> None:
    """An outcome changes confidences in the store; the guard's policy on a failed run needs
    only the guard switch, not the guard."""
    from hindsight import Memory

    with Memory(data_dir=tmp_path / "mem", background_review=False) as mem:
        run = mem.store_episode({"task": "look up order 1", "tenant_id": "t"}, review=False)
        mem.record_outcome(run.trajectory_id, success=success, tenant_id="t")
        assert mem.aio._parts.wired is None


def test_a_worker_wires_the_reviews_off_its_event_loop(tmp_path, wiring_threads) -> None:
    import asyncio
    import threading

    from hindsight import AsyncMemory
    from hindsight.review.workers import run_workers

    async def one_pass() -> str:
        mem = AsyncMemory(data_dir=tmp_path / "mem", background_review=False)
        try:
            stop = asyncio.Event()
            stop.set()
            await run_workers(mem, stop=stop)
        finally:
            await mem.aclose()
        return threading.current_thread().name

    loop_thread = asyncio.run(one_pass())
    assert len(wiring_threads) == 1 and loop_thread not in wiring_threads


def test_threads_that_write_first_share_one_write_side(tmp_path) -> None:
    """The first writes of several threads wire the write side once, and all are stored."""
    from concurrent.futures import ThreadPoolExecutor

    from hindsight import Memory

    with Memory(data_dir=tmp_path / "mem", background_review=False) as mem:
        barrier = __import__("threading").Barrier(6)

        def first_write(i: int) -> object:
            barrier.wait()
            mem.add_experience(f"Lesson {i}: check the order id {i * 7919} first.", tenant_id="t")
            return mem.aio.writeback

        with ThreadPoolExecutor(6) as pool:
            wired = list(pool.map(first_write, range(6)))
        assert len({id(w) for w in wired}) == 1
        assert len(mem.list_experiences(tenant_id="t")) == 6
        assert mem.aio.writeback.metrics is mem.aio.metrics


def test_the_guard_package_gives_every_name_and_normalize_stays_a_function() -> None:
    loaded = _loaded(
        "import hindsight.guard.normalize, hindsight.guard as g\n"
        "assert callable(g.normalize) and not hasattr(g.normalize, '__file__')\n"
        "assert all(getattr(g, n) is not None for n in g.__all__)"
    )
    assert "hindsight.guard.checker" in loaded
    assert [m for m in _loaded("import hindsight.guard") if m.startswith(WRITE_SIDE)] == []


@pytest.mark.parametrize("then", ["m.aio.writeback", "m.aio.reviews", "m.aio.guard"])
def test_the_write_side_of_a_closed_memory_is_refused_not_wired(tmp_path, then: str) -> None:
    from hindsight import Memory, MemoryClosedError

    m = Memory(data_dir=tmp_path / "mem", background_review=False)
    m.close()
    with pytest.raises(MemoryClosedError):
        eval(then)
    assert m.aio._parts.wired is None


@pytest.fixture
def wiring_threads(monkeypatch) -> list[str]:
    """The names of the threads the write side is wired in (once per memory)."""
    import threading

    from hindsight.engine import _open

    threads: list[str] = []
    wire = _open._wire_writes

    def spy(parts):
        threads.append(threading.current_thread().name)
        return wire(parts)

    monkeypatch.setattr(_open, "_wire_writes", spy)
    return threads


def test_a_coroutine_wires_the_write_side_off_the_event_loop(tmp_path, wiring_threads) -> None:
    """The first write of an async caller builds the write side in a worker thread."""
    import asyncio
    import threading

    from hindsight import AsyncMemory

    async def first_writes() -> str:
        mem = AsyncMemory(data_dir=tmp_path / "mem", background_review=False)
        try:
            await mem.add_experience("Check the order id before lookup.", tenant_id="t")
        finally:
            await mem.aclose()
        return threading.current_thread().name

    loop_thread = asyncio.run(first_writes())
    assert len(wiring_threads) == 1 and loop_thread not in wiring_threads


def test_defaults_written_out_match_their_constants() -> None:
    """Signature defaults that repeat a constant of a module the engine loads lazily."""
    import inspect

    from hindsight import AsyncMemory
    from hindsight.checks.distill import MIN_SOURCES
    from hindsight.writeback.audit import DEFAULT_SAMPLE

    def default(method, name):
        return inspect.signature(method).parameters[name].default

    assert default(AsyncMemory.distill, "min_sources") == MIN_SOURCES
    assert default(AsyncMemory.start_audit, "size") == DEFAULT_SAMPLE
    assert default(AsyncMemory.audit_sample, "size") == DEFAULT_SAMPLE


def test_the_guard_package_lists_its_lazy_names() -> None:
    import hindsight.guard as g

    assert set(g.__all__) <= set(dir(g))
