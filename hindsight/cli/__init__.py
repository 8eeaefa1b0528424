"""The ``hindsight`` command line (typer). Entry point: :func:`main`.

:mod:`._common` holds the app and its global options; each module registers its commands on it
(:mod:`._app`: ingest, recall, stats, demo; the others one group each). They are imported when
the command line runs or ``app`` is first used (PEP 562), not by ``import hindsight.cli``:
``hindsight version`` answers before any of them loads (docs/cli.md#hindsight-version).

May import: everything (the core and the service: ``hindsight serve`` and ``hindsight mcp``
start it). Nothing imports the CLI but ``python -m hindsight``.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["app", "main"]

# Registration order is the order of `hindsight --help`: _app's commands first.
_COMMAND_MODULES = (
    "_app",  # ingest, recall, stats, demo, version
    "_backup",
    "_bench",
    "_bench_write",
    "_experiences",
    "_guard",  # quarantine, guard scan
    "_jobs",  # jobs, worker
    "_maintain",
    "_mcp",  # hindsight mcp
    "_serve",  # serve, keys
    "_trajectories",
)


def _registered() -> Any:
    """The typer app with every command registered on it."""
    from importlib import import_module

    for name in _COMMAND_MODULES:
        import_module(f"hindsight.cli.{name}")
    from hindsight.cli._common import app

    return app


def installed_version() -> str:
    """The installed distribution's version, or ``hindsight.__version__`` in a source tree
    that is not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("hindsight")
    except PackageNotFoundError:
        from hindsight import __version__

        return __version__


def print_version(as_json: bool) -> None:
    """What ``hindsight version [--json]`` prints on stdout."""
    found = installed_version()
    if as_json:
        import json

        sys.stdout.write(json.dumps({"version": found}, indent=2) + "\n")
    else:
        sys.stdout.write(f"hindsight {found}\n")
    sys.stdout.flush()


def main() -> None:
    """Console-script entry point: usage errors are one line on stderr, exit code 2.

    ``hindsight version`` and ``hindsight version --json`` with no other option print the
    version without loading the command line (a health check a script may run often); any
    other arguments go to typer, ``version`` among them."""
    args = sys.argv[1:]
    if args in (["version"], ["version", "--json"]):
        print_version(as_json=len(args) == 2)
        sys.exit(0)
    _registered()
    from hindsight.cli._app import main as run

    run()


def __getattr__(name: str) -> Any:
    if name == "app":
        return _registered()
    raise AttributeError(f"module 'hindsight.cli' has no attribute {name!r}")
