"""The lesson listings show a lesson's whole text on one line, however long and whatever the
terminal's width: a rule's evidence comes last, and a cut would drop it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight import Memory
from tests.cli_helpers import run_cli
from tests.helpers import ScriptedReviewer

LONG = (
    "When resize_volume fails with 'quota exceeded for project atlas', check the quota left "
    "first, then ask for no more than that or choose another option; never repeat the call "
    "unchanged: the runs that did failed (7 of 7 tasks), against 0 of 12 otherwise, and the "
    "runs that asked for less then went well in 11 of 12."
)


@pytest.mark.parametrize("command", [("experiences", "list"), ("experiences", "history")])
def test_a_long_lesson_is_shown_whole_on_one_line(tmp_path: Path, command: tuple[str, ...]) -> None:
    data = tmp_path / "data"
    with Memory(data_dir=data, reviewer=ScriptedReviewer([])) as mem:
        exp = mem.add_experience(LONG, tenant_id="t")
        short = mem.add_experience("Retry once.", tenant_id="t")
        broken = mem.add_experience("Check the quota first.\n\nThen  resize.", tenant_id="t")
    for target, text in (
        (exp, LONG),
        (short, "Retry once."),
        (broken, "Check the quota first. Then resize."),  # its line breaks as spaces
    ):
        args = (*command, "--tenant", "t") if command[1] == "list" else (*command, target.id)
        extra = ("--tenant", "t") if command[1] == "history" else ()
        proc = run_cli(*args, *extra, data_dir=data)
        assert proc.returncode == 0, proc.stderr
        line = next(ln for ln in proc.stdout.splitlines() if text[:30] in ln)
        assert line[line.index(text[:30]) :].rstrip() == text
