"""The ``hindsight`` command line (typer). Entry point: :func:`main`."""

from hindsight.cli._app import app, main

__all__ = ["app", "main"]
