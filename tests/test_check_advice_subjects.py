"""The advice next to a proposed call (docs/checks.md#checking-a-proposed-call): per subject
the failure and, of the repeated call and the fixes, the one the most runs stand on, so that
"do not repeat the same call" and "one retry worked" about the same error are never shown side
by side; and a line saying how many checks the token budget left out, never a silent cut."""

from __future__ import annotations

import re
from typing import Any

import pytest

from hindsight import Memory
from hindsight.checks.render import ADVICE_END, by_subject
from hindsight.testing import test_memory

TOOL = "sync_ledger"
ERROR = "Error: upstream connection reset"
REPEAT = "do not repeat the same call"
RETRY = "one retry with the same arguments worked"
FAILS = "can fail with 'upstream connection reset'"


def _run(mem: Memory, i: int, calls: list[tuple[dict[str, Any], str, str]], ok: bool) -> None:
    with mem.record(f"reconcile account batch {i}", tenant_id="ops") as run:
        run.user_message(f"please reconcile batch {i}")
        for args, status, out in calls:
            run.tool_call(TOOL, args)
            run.tool_result(TOOL, out, status=status)
        run.final_answer("done" if ok else "could not do it")
        run.set_outcome("success" if ok else "failure")


def _memory(repeated: int, retried: int, errors: tuple[str, ...] = (ERROR,)) -> Memory:
    """``repeated`` failed runs that repeated the failing call, ``retried`` runs where one
    retry of it worked, for each error."""
    mem = test_memory()
    i = 0
    for error in errors:
        for _ in range(repeated):
            _run(mem, i, [({"ledger": "main"}, "failure", error)] * 2, ok=False)
            i += 1
        for _ in range(retried):
            calls = [({"ledger": "main"}, "failure", error), ({"ledger": "main"}, "success", "{}")]
            _run(mem, i, calls, ok=True)
            i += 1
    mem.flush()
    return mem


def _items(block: str) -> list[str]:
    return [line for line in block.splitlines() if re.match(r"\d+\. \[", line)]


@pytest.mark.parametrize(
    ("repeated", "retried", "shown", "hidden"),
    [
        # the failure, and of the repeat and the retry the one more runs stand on (a fix counts
        # its runs twice)
        (1, 2, (FAILS, RETRY), REPEAT),
        (1, 4, (FAILS, RETRY), REPEAT),
        (4, 1, (FAILS, REPEAT), RETRY),
        (3, 0, (FAILS, REPEAT), RETRY),  # no retry worked
        (0, 3, (FAILS, RETRY), REPEAT),  # never repeated in vain
    ],
)
def test_the_failure_and_the_better_supported_of_repeat_and_retry(
    repeated: int, retried: int, shown: tuple[str, str], hidden: str
) -> None:
    with _memory(repeated, retried) as mem:
        result = mem.check_action(TOOL, {"ledger": "main"}, tenant_id="ops")
        subjects = {m.check.subject for m in result.checks}
        assert len(subjects) == 1 and len(result.checks) >= 2  # the data keep every match
        items = _items(result.render())
        assert len(items) == 2, items
        assert all(any(text in item for item in items) for text in shown), items
        assert not any(hidden in item for item in items), items


def test_the_budget_says_how_many_checks_it_left_out() -> None:
    errors = tuple(
        f"Error: {what}"
        for what in (
            "upstream connection reset",
            "ledger is locked by another job",
            "quota exceeded for the batch api",
            "checksum mismatch in the export",
        )
    )
    with _memory(1, 2, errors) as mem:
        result = mem.check_action(TOOL, {"ledger": "main"}, tenant_id="ops")
        subjects = {m.check.subject for m in result.checks}
        assert len(subjects) == 4
        shown = len(by_subject(result.checks))
        assert 4 < shown <= 8  # one or two for each error
        full = result.render(token_budget=2000)
        assert len(_items(full)) == shown and "left out" not in full
        short = result.render(token_budget=160)
        kept = len(_items(short))
        assert 1 <= kept < shown, short
        note = short.splitlines()[-2]
        left = shown - kept
        assert (
            note == f"({left} more matching check{'s' if left != 1 else ''} left out for length.)"
        )
        assert short.endswith(ADVICE_END)


@pytest.mark.parametrize(
    "error",
    [
        "Error: upstream connection reset",
        "HTTP 503 Service Unavailable",
        "Error: 429 Too Many Requests",
        "Error: service temporarily overloaded, try again later",
    ],
)
def test_do_not_repeat_never_advises_a_retry(error: str) -> None:
    """A transient error's advice is to retry; after the same call failed the same way again,
    "do not repeat the same call: retry once" would contradict itself."""
    with _memory(1, 0, (error,)) as mem:
        repeats = [e.content for e in mem.list_experiences(tenant_id="ops", kind="anti_pattern")]
        assert len(repeats) == 1, repeats
        assert "retry" not in repeats[0] and "重试" not in repeats[0], repeats[0]
        assert "fall back" in repeats[0] or "改用其他工具" in repeats[0], repeats[0]
