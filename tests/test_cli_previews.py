"""The human listings show a long text cut at a word and marked with an ellipsis (the full
text is in --json and in `show`), never cut mid-word as if it were the whole text."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight import Memory
from tests.cli_helpers import run_cli
from tests.helpers import ScriptedReviewer

LONG = (
    "When resize_volume fails with 'quota exceeded for project atlas', check the quota left "
    "first, then ask for no more than that or choose another option; never repeat the call"
)


@pytest.mark.parametrize("command", [("experiences", "list"), ("experiences", "history")])
def test_a_long_lesson_is_cut_at_a_word_with_an_ellipsis(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    data = tmp_path / "data"
    with Memory(data_dir=data, reviewer=ScriptedReviewer([])) as mem:
        exp = mem.add_experience(LONG, tenant_id="t")
        short = mem.add_experience("Retry once.", tenant_id="t")
    for target, text in ((exp, LONG), (short, "Retry once.")):
        args = (*command, "--tenant", "t") if command[1] == "list" else (*command, target.id)
        extra = ("--tenant", "t") if command[1] == "history" else ()
        proc = run_cli(*args, *extra, data_dir=data)
        assert proc.returncode == 0, proc.stderr
        line = next(ln for ln in proc.stdout.splitlines() if text[:30] in ln)
        shown = line[line.index(text[:30]) :].rstrip()
        if text is LONG:
            assert shown.endswith("…") and len(shown) <= 120
            assert text.startswith(shown[:-1].rstrip()) and text[len(shown) - 1] in " ,;'"
        else:
            assert shown == text
