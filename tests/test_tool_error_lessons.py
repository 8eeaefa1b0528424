"""The lessons of one tool error across runs (docs/review.md#lesson-keys).

Lessons of one subject (the failure, the repeated call and the fix of one tool error) are
facets the review wrote from what the runs showed: the conflict test does not set one against
another (docs/security.md#layer-1-before-write), so a fix that worked is never quarantined as
"conflicting" with "do not repeat the same call". An argument the error echoes back is quoted
as its key, so the runs of every value share one lesson."""

from __future__ import annotations

from typing import Any

import pytest

from hindsight import ExperienceKind, Memory
from hindsight.testing import test_memory


def _run(
    mem: Memory, i: int, tool: str, calls: list[tuple[dict[str, Any], str, str]], ok: bool
) -> None:
    with mem.record(f"task {i} with {tool}", tenant_id="ops") as run:
        run.user_message(f"please run {tool} for item {i}")
        for args, status, out in calls:
            run.tool_call(tool, args)
            run.tool_result(tool, out, status=status)
        run.final_answer("done" if ok else "could not do it")
        run.set_outcome("success" if ok else "failure")


@pytest.mark.parametrize(
    ("tool", "arg", "bad", "good", "error"),
    [
        (
            "resize_volume",
            "size_gb",
            5000,
            700,
            "Error: quota exceeded: 5000 GB requested, 800 left",
        ),
        ("scale_service", "replicas", 40, 8, "Error: not enough capacity for 40 replicas"),
        ("export_report", "format", "xlsx", "csv", "Error: format not supported"),
    ],
)
def test_a_fix_that_worked_lives_beside_do_not_repeat(
    tool: str, arg: str, bad: Any, good: Any, error: str
) -> None:
    with test_memory() as mem:
        for i in range(4):  # the same call again failed the same way
            _run(mem, i, tool, [({arg: bad}, "failure", error)] * 2, ok=False)
        for i in range(4, 8):  # another value worked
            _run(
                mem,
                i,
                tool,
                [({arg: bad}, "failure", error), ({arg: good}, "success", "{}")],
                ok=True,
            )
        mem.flush()
        live = mem.list_experiences(tenant_id="ops", limit=100)
        quarantined = mem.list_quarantined(tenant_id="ops")
        texts = [e.content for e in live if e.kind is not ExperienceKind.EPISODE]
        assert any("do not repeat the same call" in t for t in texts)
        fixes = [t for t in texts if "calling it again with" in t and t.endswith("worked.")]
        assert len(fixes) == 1 and arg in fixes[0]
        assert not [e.content for e in quarantined]


@pytest.mark.parametrize("error", ["Error: payment method not found", "Error: slot not found"])
def test_a_fix_of_one_tool_lives_beside_do_not_repeat_of_another(error: str) -> None:
    with test_memory() as mem:
        for i in range(4):  # book: the same call again failed the same way
            _run(mem, i, "book", [({"method": "m1"}, "failure", error)] * 2, ok=False)
        for i in range(4, 6):  # update: another value worked
            calls = [({"method": "m1"}, "failure", error), ({"method": "m2"}, "success", "{}")]
            _run(mem, i, "update", calls, ok=True)
        mem.flush()
        texts = [e.content for e in mem.list_experiences(tenant_id="ops", limit=100)]
        assert any(t.startswith("When update fails") and "calling it again" in t for t in texts)
        assert mem.list_quarantined(tenant_id="ops") == []


def test_opposed_advice_of_other_subjects_is_still_quarantined() -> None:
    advice = [
        ("Always verify the refund amount before calling issue_refund.", 0.95, "system", "amount"),
        ("Never verify the refund amount before calling issue_refund.", 0.5, "tool", "other"),
    ]
    with test_memory() as mem:
        ids = [
            mem.add_experience(
                text,
                tenant_id="ops",
                kind="rule",
                confidence=confidence,
                source=source,
                metadata={"subject": f"issue_refund:failure:{subject}"},
            ).id
            for text, confidence, source, subject in advice
        ]
        status = [mem.get_experience(i, tenant_id="ops").status.value for i in ids]
        assert status == ["active", "quarantined"]


@pytest.mark.parametrize(
    ("tool", "key", "values", "error"),
    [
        (
            "resize_volume",
            "project",
            ["atlas", "zeus", "hermes"],
            "Error: quota exceeded for project {}",
        ),
        (
            "send_invoice",
            "channel",
            ["fax", "telex", "pager"],
            "Error: channel '{}' is not enabled",
        ),
        (
            "open_ticket",
            "queue",
            ["Billing EU", "Ops-West", "L2 Core"],
            "ValueError: queue {} is closed",
        ),
    ],
)
def test_an_error_that_echoes_its_argument_is_one_lesson_whatever_the_value(
    tool: str, key: str, values: list[str], error: str
) -> None:
    with test_memory() as mem:
        for i, value in enumerate(values):
            _run(mem, i, tool, [({key: value}, "failure", error.format(value))], ok=False)
        mem.flush()
        lessons = [
            e.content
            for e in mem.list_experiences(tenant_id="ops", limit=100)
            if e.kind is ExperienceKind.TOOL_RELIABILITY
        ]
        assert len(lessons) == 1, lessons
        assert f"<{key}>" in lessons[0]
        assert not any(v.lower() in lessons[0].lower() for v in values)


@pytest.mark.parametrize(
    ("bad", "good", "amounts"),
    [
        # kinds and amounts changed: the kinds alone are not the fix
        ([{"source": "voucher_1", "amount": 299}],
         [{"source": "gift_card_2", "amount": 128}, {"source": "credit_card_3", "amount": 247}],
         True),
        # the same amount, another kind: the kind is the change
        ([{"source": "voucher_1", "amount": 375}], [{"source": "gift_card_2", "amount": 375}],
         False),
        # an item dropped: its amount went with it
        ([{"source": "voucher_1", "amount": 100}, {"source": "voucher_2", "amount": 275}],
         [{"source": "voucher_1", "amount": 100}], False),
    ],
)  # fmt: skip
def test_a_fix_says_when_the_amounts_changed_with_the_kinds(
    bad: list[dict[str, Any]], good: list[dict[str, Any]], amounts: bool
) -> None:
    error = "Error: payment amount does not add up, total is 375"
    with test_memory() as mem:
        for i in range(3):
            calls = [({"payments": bad}, "failure", error), ({"payments": good}, "success", "{}")]
            _run(mem, i, "pay_order", calls, ok=True)
        mem.flush()
        texts = [e.content for e in mem.list_experiences(tenant_id="ops", limit=100)]
        [fix] = [t for t in texts if "calling it again with" in t]
        assert ("(other amounts)" in fix) is amounts, fix
