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
