"""The ``hindsight`` command line (typer). Entry point: :func:`main`.

:mod:`._common` holds the app and its global options; each module registers its commands on it
(:mod:`._app`: ingest, recall, stats, demo; the others one group each, imported here).

May import: everything (the core and the service: ``hindsight serve`` and ``hindsight mcp``
start it). Nothing imports the CLI but ``python -m hindsight``.
"""

# Registration order is the order of `hindsight --help`: _app's commands first.
from hindsight.cli import _app as _core_commands  # noqa: F401  (ingest, recall, stats, demo)
from hindsight.cli import _backup as _backup_commands  # noqa: F401
from hindsight.cli import _bench as _bench_command  # noqa: F401
from hindsight.cli import _bench_write as _bench_write_commands  # noqa: F401
from hindsight.cli import _experiences as _lifecycle_commands  # noqa: F401
from hindsight.cli import _guard as _guard_commands  # noqa: F401  (quarantine, guard scan)
from hindsight.cli import _jobs as _jobs_commands  # noqa: F401  (jobs, worker)
from hindsight.cli import _maintain as _maintain_commands  # noqa: F401
from hindsight.cli import _mcp as _mcp_command  # noqa: F401  (hindsight mcp)
from hindsight.cli import _serve as _serve_commands  # noqa: F401  (serve, keys)
from hindsight.cli import _trajectories as _trajectory_commands  # noqa: F401
from hindsight.cli._app import main
from hindsight.cli._common import app

__all__ = ["app", "main"]
