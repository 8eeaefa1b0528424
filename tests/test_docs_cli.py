"""Every ```console block of docs/**/*.md and README.md runs, and its output matches.

Convention for documenting the command line (```bash blocks are not run; use ```console for
examples whose output is shown):

* a line starting with ``$ `` is a command, run with bash; a trailing ``\\`` continues it;
* the lines after it, up to the next command, are the expected output (stdout and stderr
  together). Each expected line must equal an output line, in order, other output lines may
  come between (so an example can show only the key lines); ``...`` inside a line stands for
  any text (ids, scores, timings);
* a command whose expected output has a line starting with ``error:`` must fail (exit code
  not 0); every other command must succeed;
* the blocks of one page run in order in one fresh working directory, with
  ``HINDSIGHT_DATA_DIR`` set to a fresh folder (so a page may build on its earlier commands),
  ``hindsight`` on the PATH, ``examples/`` of the repository linked in, and
  ``gpt-4o-airline.json`` linked to the tau-bench file of ../shared when the page uses it;
* a block preceded by the line ``<!-- not-tested: reason -->`` is skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import cli_env
from tests.conftest import shared_file

REPO = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^```console[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_SKIP = re.compile(r"<!--\s*not-tested:\s*\S.*?-->\s*$")
TAU_NAME = "gpt-4o-airline.json"


@dataclass
class Step:
    command: str
    where: str
    expected: list[str] = field(default_factory=list)


def parse_console(text: str, name: str) -> list[Step]:
    """The commands and expected output lines of every tested console block of ``text``."""
    steps: list[Step] = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if _SKIP.search(before):
            continue
        first_line = text.count("\n", 0, match.start()) + 2
        lines = match.group(1).splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("$ "):
                command, start = line[2:], i
                while command.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    command = command[:-1].rstrip() + " " + lines[i].strip()
                steps.append(Step(command.strip(), f"{name}:{first_line + start}"))
            elif line.strip():
                if not steps:
                    raise AssertionError(f"{name}:{first_line + i}: output before any command")
                steps[-1].expected.append(line.rstrip())
            i += 1
    return steps


def line_pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split("...")))


def match_in_order(expected: list[str], actual: list[str]) -> str | None:
    """None when every expected line matches an actual line, in order; else the first miss."""
    pos = 0
    for want in expected:
        pattern = line_pattern(want)
        while pos < len(actual) and not pattern.fullmatch(actual[pos]):
            pos += 1
        if pos == len(actual):
            return want
        pos += 1
    return None


def _pages() -> list[Path]:
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [p for p in pages if p.exists() and parse_console(p.read_text("utf-8"), p.name)]


def test_the_matcher_is_strict() -> None:
    steps = parse_console("```console\n$ a \\\n  --b\nx ... y\n\n$ c\n```\n", "t.md")
    assert [(s.command, s.expected) for s in steps] == [("a --b", ["x ... y"]), ("c", [])]
    assert match_in_order(["x ... y"], ["x 1 y"]) is None
    assert match_in_order(["x ... y"], ["x 1 z"]) == "x ... y"
    assert match_in_order(["b", "a"], ["a", "b"]) == "a"  # order matters
    assert match_in_order(["a"], ["a b"]) == "a"  # whole lines only
    skipped = "<!-- not-tested: needs a server -->\n```console\n$ x\n```\n"
    assert parse_console(skipped, "t.md") == []


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_console_examples_run(page: Path, tmp_path: Path) -> None:
    text = page.read_text(encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(REPO / "examples", target_is_directory=True)
    if TAU_NAME in text:
        (work / TAU_NAME).symlink_to(shared_file(f"data/tau-bench/{TAU_NAME}"))
    env = cli_env(tmp_path / "data")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for step in parse_console(text, str(page.relative_to(REPO))):
        proc = subprocess.run(
            ["bash", "-c", step.command],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        output = (proc.stdout + proc.stderr).splitlines()
        should_fail = any(line.startswith("error:") for line in step.expected)
        assert (proc.returncode != 0) == should_fail, (
            f"{step.where}: `{step.command}` exited {proc.returncode}\n{proc.stderr[-2000:]}"
        )
        missing = match_in_order(step.expected, [line.rstrip() for line in output])
        assert missing is None, (
            f"{step.where}: `{step.command}` printed no line matching {missing!r} (in order); "
            f"it printed:\n" + "\n".join(output[-60:])
        )


def _commands() -> list[tuple[str, list[str]]]:
    """Every command path of the CLI with the names of its options and arguments."""
    import typer

    from hindsight.cli import app

    found: list[tuple[str, list[str]]] = []

    def walk(command: Any, path: list[str]) -> None:
        names = []
        for param in command.params:
            opts = [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
            dashed = [o for o in opts if o.startswith("--")]
            names.extend(dashed if dashed else [str(param.name).upper()])
        subcommands = getattr(command, "commands", None)
        if not subcommands or names:  # leaves, and groups with options of their own
            found.append((" ".join(["hindsight", *path]), names))
        for name, sub in (subcommands or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def test_cli_page_documents_every_command_and_option() -> None:
    """docs/cli.md has a section per command (a heading naming it) that names every option."""
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    sections: dict[str, str] = {}
    for match in re.finditer(r"^## `(hindsight[^`]*)`\n(.*?)(?=^## |\Z)", text, re.M | re.S):
        sections[match.group(1)] = match.group(2)
    problems = []
    for command, names in _commands():
        if command == "hindsight":  # global options
            problems += [f"global option {n} not described" for n in names if n not in text]
            continue
        if command not in sections:
            problems.append(f"no section '## `{command}`'")
            continue
        problems += [f"{command}: {n} not described" for n in names if n not in sections[command]]
    assert not problems, "docs/cli.md is out of date:\n" + "\n".join(problems)
