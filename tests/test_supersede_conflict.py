"""Superseded facts and undecidable conflicts (docs/lifecycle.md): a newer
lesson that corrects a number, version or limit supersedes the older one (kept in history);
when the write-back cannot tell which is right, both stay, both are marked in the rendered
block and the older one's confidence is lowered. On SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight import ExperienceStatus
from tests.helpers import make_memory

UPDATES = [
    ("The orders API rate limit is 100 requests per minute",
     "The orders API rate limit is 1000 requests per minute"),
    ("Set retry=3 for the payments client", "Set retry=5 for the payments client"),
]
CONFLICTS = [
    ("Deploy with helm chart v2 for the billing service",
     "Deploy with helm chart v3 for the billing service"),
    ("Use a timeout of 30 s for order_query", "Use a timeout of 60 s for order_query"),
    ("Always retry order_query after a 502", "Never retry order_query after a 502"),
    # a code name in the text, the same one on both sides (or only its digits differ)
    ("Run the export_report job with pandas 1.5 installed.",
     "Run the export_report job with pandas 2.1 installed."),
    ("Call the orders_v1 endpoint for refunds over 100 dollars.",
     "Call the orders_v2 endpoint for refunds over 100 dollars."),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new"), UPDATES)
def test_a_corrected_value_supersedes_the_older_lesson(
    tmp_path: Path, database_url: str, old: str, new: str
) -> None:
    with make_memory(tmp_path / "data", database_url) as mem:
        older = mem.add_experience(old, tenant_id="t")
        newer = mem.add_experience(new, tenant_id="t")
        got = mem.get_experience(older.id, tenant_id="t")
        assert got.status is ExperienceStatus.SUPERSEDED
        assert got.metadata["superseded_by"] == newer.id
        assert got.confidence < older.confidence
        [first, current] = mem.history(older.id, tenant_id="t")  # kept in history
        assert first["experience"].content == old and first["change"] == "supersede"
        assert current["experience"].status is ExperienceStatus.SUPERSEDED
        block = mem.recall(old, tenant_id="t", similarity_floor=-1.0).render()
        assert new in block and old not in block


@pytest.mark.parametrize(("old", "new"), CONFLICTS)
def test_an_undecidable_conflict_is_marked_and_lowers_the_older(
    tmp_path: Path, database_url: str, old: str, new: str
) -> None:
    with make_memory(tmp_path / "data", database_url) as mem:
        older = mem.add_experience(old, tenant_id="t")
        newer = mem.add_experience(new, tenant_id="t")
        got = mem.get_experience(older.id, tenant_id="t")
        assert got.status is ExperienceStatus.ACTIVE
        assert newer.metadata["conflicts_with"] == [older.id]
        assert got.metadata["conflicts_with"] == [newer.id]
        assert got.confidence < older.confidence == newer.confidence
        assert got.version == older.version + 1  # the lowering is a version, audited
        result = mem.recall(old, tenant_id="t", similarity_floor=-1.0)
        lines = [line for line in result.render().splitlines() if line[:1].isdigit()]
        by_text = {line.split("] ", 1)[1]: line for line in lines}
        n_old = lines.index(by_text[old]) + 1
        n_new = lines.index(by_text[new]) + 1
        assert f"conflicts with item {n_new}]" in by_text[old]
        assert f"conflicts with item {n_old}]" in by_text[new]
        # a third lesson unrelated to either is not marked
        mem.add_experience("Page the on-call engineer when checkout errors exceed 5%",
                           tenant_id="t")
        block = mem.recall("on-call checkout", tenant_id="t", similarity_floor=-1.0).render()
        [page] = [line for line in block.splitlines() if "on-call" in line]
        assert "conflicts with" not in page


# Pairs that differ only in what they are about: the tool, or (with the reviewer's keys) the
# argument or the error. Each is two lessons, never a conflict, a supersede or a merge.
OTHER_SUBJECTS = [
    (("Before calling book_trip, check passengers against the user's request.",
      {"tools": ["book_trip"]}),
     ("Before calling pay_order, check passengers against the user's request.",
      {"tools": ["pay_order"]})),
    (("Use a timeout of 30 s for order_query", {"tools": ["order_query"]}),
     ("Use a timeout of 60 s for invoice_query", {"tools": ["invoice_query"]})),
    (("Always retry order_query after a 502", {"tools": ["order_query"]}),
     ("Never retry invoice_query after a 502", {"tools": ["invoice_query"]})),
    (("Before calling book_trip, check cabin against the user's request.",
      {"tools": ["book_trip"], "metadata": {"lesson_key": "contrast:arg:book_trip:cabin:class"}}),
     ("Before calling book_trip, check passengers against the user's request.",
      {"tools": ["book_trip"],
       "metadata": {"lesson_key": "contrast:arg:book_trip:passengers:class"}})),
    (("Set retry=3 for the payments client", {"tools": ["payments_client"]}),
     ("Set retry=5 for the orders client", {"tools": ["orders_client"]})),
    # no tools list (a lesson written by hand, or by a model): the code names of the text
    (("When create_address rejected an unknown payment method, ask the user for the id.", {}),
     ("When sync_order rejected an unknown payment method, ask the user for the id.", {})),
    (("When cancel_refund lost the session after a redirect, wait one second and retry.", {}),
     ("When sync_refund lost the session after a redirect, wait one second and retry.", {})),
    (("Always retry orderQuery after a 502", {}), ("Never retry invoiceQuery after a 502", {})),
    (("Set retry_count to 3 for the payments client", {}),
     ("Set timeout_ms to 3 for the payments client", {})),
    (("调用 book_trip 之前，先核对乘客人数。", {}), ("调用 pay_order 之前，先核对乘客人数。", {})),
    (("Before calling book_trip, check passengers.", {"tools": ["book_trip"]}),
     ("Before calling pay_order, check passengers.", {})),
]  # fmt: skip



@pytest.mark.parametrize(("old", "new"), OTHER_SUBJECTS)
def test_lessons_about_other_subjects_are_neither_conflicts_nor_updates(
    tmp_path: Path, database_url: str, old: tuple[str, dict], new: tuple[str, dict]
) -> None:
    with make_memory(tmp_path / "data", database_url) as mem:
        older = mem.add_experience(old[0], tenant_id="t", **old[1])
        newer = mem.add_experience(new[0], tenant_id="t", **new[1])
        got = mem.get_experience(older.id, tenant_id="t")
        assert newer.id != older.id and newer.content == new[0]
        assert got.status is ExperienceStatus.ACTIVE and got.version == older.version
        assert got.confidence == older.confidence
        assert "conflicts_with" not in got.metadata and "conflicts_with" not in newer.metadata
        block = mem.recall(old[0], tenant_id="t", similarity_floor=-1.0).render()
        assert old[0] in block and new[0] in block and "conflicts with" not in block


@pytest.mark.parametrize(("old", "new"), CONFLICTS)
def test_a_conflict_about_one_tool_stays_a_conflict(
    tmp_path: Path, database_url: str, old: str, new: str
) -> None:
    """Naming the same tool (or a tool list that overlaps) keeps the rules' effect."""
    with make_memory(tmp_path / "data", database_url) as mem:
        older = mem.add_experience(old, tenant_id="t", tools=["order_query", "billing"])
        newer = mem.add_experience(new, tenant_id="t", tools=["order_query"])
        assert newer.metadata["conflicts_with"] == [older.id]

