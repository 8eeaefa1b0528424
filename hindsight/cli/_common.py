"""Shared CLI plumbing: the typer app and its global options, opening the memory, JSON output,
one-line errors. Every command module registers its commands on :data:`app`."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape as _markup_escape
from typer._click import Context  # typer vendors click: its parser, not the click package's
from typer._click.parser import _OptionParser
from typer.core import TyperCommand
from typer.models import CommandFunctionType

from hindsight._errors import HindsightError, UsageError
from hindsight._text import Replacements, collecting

__all__ = [
    "JsonOpt",
    "State",
    "TenantOpt",
    "app",
    "err_console",
    "escape",
    "fail",
    "guarded",
    "print_json",
    "state",
]

err_console = Console(stderr=True)
out_console = Console()

# Characters a terminal obeys rather than shows: C0 controls but tab and newline (ESC starts
# an ANSI sequence), DEL, C1 controls and the bidirectional overrides (U+202E turns the rest of
# a line around). Stored text may hold them; a listing shows them as escapes.
_UNSHOWABLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def escape(text: str) -> str:
    """``text`` for a rich console: markup escaped, and the characters a terminal would obey
    (control characters, bidirectional overrides) shown as ``\\uXXXX``."""
    return _markup_escape(_UNSHOWABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class State:
    """Global options given before the command."""

    data_dir: Path | None = None


_SIGNED_NUMBER = re.compile(r"-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class _SignedNumbersParser(_OptionParser):
    """Click's parser, except that ``-0.2`` or ``-3`` is an argument (a signed number), not
    an unknown option (``hindsight confidence ID -0.2``). No hindsight
    option looks like a number."""

    def _process_opts(self, arg: str, state: Any) -> None:
        if _SIGNED_NUMBER.fullmatch(arg) and arg not in self._short_opt:
            state.largs.append(arg)
            return
        super()._process_opts(arg, state)


class SignedNumbersCommand(TyperCommand):
    """Every hindsight command: negative numbers are arguments (:class:`_SignedNumbersParser`)."""

    def make_parser(self, ctx: Context) -> _OptionParser:
        parser = _SignedNumbersParser(ctx)
        for param in self.get_params(ctx):
            param.add_to_parser(parser, ctx)
        return parser


class HindsightTyper(typer.Typer):
    """A typer app whose commands accept negative numbers as arguments."""

    def command(
        self,
        name: str | None = None,
        *,
        cls: type[TyperCommand] | None = SignedNumbersCommand,
        **kwargs: Any,
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        return super().command(name, cls=cls, **kwargs)


app = HindsightTyper(
    name="hindsight",
    help="Experience memory for LLM agents: capture runs, review them, recall the lessons.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def path_value(value: str | Path) -> Path:
    """The parser of every path argument and option: an empty or blank value is refused
    (``Path("")`` is the current folder, so ``hindsight ingest ""`` would read the folder and
    ``--data-dir ""`` would write into it).

    Raises:
        typer.BadParameter: ``empty: give a path``.
    """
    if isinstance(value, Path):
        return value
    if not value.strip():
        raise typer.BadParameter("empty: give a path")
    return Path(value)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
CursorOpt = Annotated[
    str | None,
    typer.Option(
        "--cursor", help="Start after the previous page: the next_cursor it printed (--json)."
    ),
]
TenantOpt = Annotated[
    str,
    typer.Option("--tenant", envvar="HINDSIGHT_TENANT", help="Tenant to scope to (required)."),
]


@app.callback()
def _root(
    ctx: typer.Context,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar="HINDSIGHT_DATA_DIR",
            parser=path_value,
            help="Embedded store folder (default: the platform's user data dir).",
        ),
    ] = None,
) -> None:
    ctx.obj = State(data_dir=data_dir)


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, State) else State()


def print_json(doc: Any) -> None:
    """Print one JSON document on stdout."""
    sys.stdout.write(json.dumps(doc, ensure_ascii=False, default=str, indent=2) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` (one line) on stderr and return the Exit to raise."""
    first = " ".join(str(message).split())
    err_console.print(f"[bold red]error:[/] {first}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code)


def checked_file(path: Path, what: str, *, option: str | None = None) -> None:
    """Exit 2 with ``error: ...`` unless ``path`` is a file that can be read
    (:func:`hindsight._contract.input_file`; ``option`` prefixes the message)."""
    from hindsight._contract import input_file  # pydantic: not for `hindsight --help`

    try:
        input_file(path, what)
    except UsageError as err:
        raise fail(f"{option}: {err}" if option else str(err), 2) from None


def print_next_cursor(cursor: str | None) -> None:
    """The one-line hint after a page of a listing that has more: how to ask for the next."""
    if cursor is not None:
        out_console.print(f"more: --cursor {cursor}", highlight=False, soft_wrap=True)


MAX_SHOWN_WARNINGS = 10
"""``warning:`` lines a command prints, at most (then how many more)."""


@contextmanager
def guarded() -> Iterator[Replacements]:
    """Turn hindsight errors into one line on stderr and a non-zero exit code, and report
    the invalid values replaced in the input (:mod:`hindsight._text`) in one ``warning:``
    line on stderr, and each note of input kept in another form in one more (the first
    :data:`MAX_SHOWN_WARNINGS`, then how many more). Yields the replacements collected so
    far."""
    with collecting() as replaced:
        try:
            yield replaced
        except UsageError as exc:
            raise fail(str(exc), 2) from None
        except HindsightError as exc:
            raise fail(str(exc), 1) from None
        except (OSError, ValueError) as exc:
            raise fail(f"{type(exc).__name__}: {exc}", 1) from None
        finally:
            lines = replaced.lines()
            for line in lines[:MAX_SHOWN_WARNINGS]:
                err_console.print(
                    f"[yellow]warning:[/] {escape(line)}", highlight=False, soft_wrap=True
                )
            if len(lines) > MAX_SHOWN_WARNINGS:
                more = len(lines) - MAX_SHOWN_WARNINGS
                err_console.print(
                    f"[yellow]warning:[/] ... and {more} more",
                    highlight=False,
                    soft_wrap=True,
                )


@contextmanager
def open_memory(st: State, *, note_pending: bool = True, **overrides: Any) -> Iterator[Any]:
    """Open a :class:`hindsight.Memory` with the global options applied.

    ``note_pending``: when the memory found review jobs pending at open (its in-process worker
    started on them) and some are still pending when the command ends, say how many on stderr
    and who runs them.
    """
    from hindsight.config import load_config
    from hindsight.engine.memory import Memory

    kwargs: dict[str, Any] = dict(overrides)
    if st.data_dir is not None:
        kwargs["data_dir"] = st.data_dir
    mem = Memory(load_config(**kwargs))
    try:
        yield mem
        if note_pending and mem.aio.found_open_reviews:
            jobs = mem.aio.store.stats()["review_jobs"]
            left = jobs["pending"] + jobs["running"]
            if left:
                err_console.print(
                    f"note: {left} review job(s) pending in this store: they run in `hindsight "
                    "serve`, `hindsight worker`, or the next command that opens the store",
                    highlight=False,
                    soft_wrap=True,
                )
    finally:
        mem.close()
