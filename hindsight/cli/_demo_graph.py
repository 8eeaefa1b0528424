"""``hindsight demo``: the LangGraph support agent that learns across runs
(docs/quickstart.md#see-it-work-hindsight-demo).

The agent lives in the ``hindsight_langgraph`` integration (the core stays framework-free), so
it is imported here only when the command runs. Without LangGraph installed, the command says
which extra brings it and runs the framework-free demo of :mod:`hindsight.cli._demo` instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hindsight.cli._common import err_console, escape, fail, print_json

__all__ = ["EXTRA", "run"]

EXTRA = 'pip install "hindsight-memory[langgraph]"'


def run(
    data_dir: Path | None,
    *,
    as_json: bool = False,
    reviewer: str | None = None,
    model: str | None = None,
) -> None:
    """Run the demo; see :func:`hindsight_langgraph.examples.support_agent.run_demo`.

    Raises:
        typer.Exit: (code 2) ``model`` was given but LangGraph is not installed.
    """
    try:
        from hindsight_langgraph.examples.support_agent import run_demo
    except ImportError as exc:
        if model is not None:
            # fail() prints rich markup: escape the extra's brackets.
            raise fail(escape(f"--model needs the LangGraph demo ({exc}): {EXTRA}"), 2) from None
        missing = exc.name or "langgraph"
        err_console.print(
            f"LangGraph is not installed (missing: {missing}), so this is the framework-free "
            f"demo. For the LangGraph support agent: {EXTRA}",
            highlight=False,
            markup=False,
        )
        from hindsight.cli._demo import run_demo as plain_demo

        plain_demo(data_dir, as_json=as_json, **({"reviewer": reviewer} if reviewer else {}))
        return
    if as_json:
        report: dict[str, Any] = run_demo(
            data_dir, model=model, reviewer=reviewer, out=lambda line: None
        )
        print_json(report)
    else:
        run_demo(data_dir, model=model, reviewer=reviewer, out=_print)


def _print(line: str) -> None:
    print(line, flush=True)
