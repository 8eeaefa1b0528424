"""The decision-time lookup's cache (docs/checks.md: a check at 10k lessons must be cheap):
answered from memory while the tenant's stamp (database triggers, Alembic revisions
``0007_experience_stamps`` and ``0010_stamp_skips_bookkeeping``) has not moved; any write of
the tenant's experiences other than the recall bookkeeping, by this process or another one,
makes the next lookup read the database again. On SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from hindsight import Memory
from hindsight.store.schema import experience_stamps
from tests.helpers import make_memory

RULE = "Before calling cancel_order, confirm which order the user means."


def _checked(mem: Memory, tenant: str = "acme") -> list[tuple[str, float]]:
    found = mem.check_action("cancel_order", {"order_id": "A1"}, tenant_id=tenant, record=False)
    return [(m.check.lesson_id, m.check.confidence) for m in found.checks]


def _stamp(store: Any, tenant: str) -> int:
    with store._tx() as conn:
        query = select(experience_stamps.c.stamp).where(experience_stamps.c.tenant_id == tenant)
        return int(conn.execute(query).scalar() or 0)


def test_every_write_by_any_process_is_seen_and_reads_are_cached(
    tmp_path: Path, database_url: str
) -> None:
    one = make_memory(tmp_path / "one", database_url)
    two = make_memory(tmp_path / "two", database_url)  # another process's memory, same SQL
    try:
        store = one.aio.store
        store.about_tool_max_age = 0  # read the stamp on every lookup (the default trusts it 1 s)
        assert _checked(one) == []
        first = two.add_experience(RULE, tenant_id="acme", tools=["cancel_order"],
                                   confidence=0.8)  # fmt: skip
        assert _checked(one) == [(first.id, 0.8)]  # an insert by the other one: seen
        cache = store._about_tool_cache
        hits = cache.hits
        assert _checked(one) == [(first.id, 0.8)]
        assert cache.hits == hits + 1  # nothing changed: from memory
        # another tenant's writes leave acme's lookups in memory
        two.add_experience(RULE, tenant_id="globex", tools=["cancel_order"], confidence=0.9)
        assert _checked(one) == [(first.id, 0.8)] and cache.hits == hits + 2
        assert _checked(one, "globex") != _checked(one)
        # an update (confidence), a status change (archive), a delete: each one seen at once
        before = _stamp(store, "acme")
        two.adjust_confidence(first.id, -0.3, tenant_id="acme", reason="test", actor="test")
        assert _stamp(store, "acme") > before
        assert _checked(one) == [(first.id, 0.5)]
        second = two.add_experience("Before calling cancel_order, read the order back.",
                                    tenant_id="acme", tools=["cancel_order"],
                                    confidence=0.7)  # fmt: skip
        assert [i for i, _ in _checked(one)] == [second.id, first.id]
        two.archive(second.id, tenant_id="acme")
        assert _checked(one) == [(first.id, 0.5)]
        two.delete_experience(first.id, tenant_id="acme")
        assert _checked(one) == []
        assert _stamp(store, "acme") > before + 3
    finally:
        one.close()
        two.close()


def test_the_migration_gives_existing_tenants_a_stamp_and_goes_down(
    tmp_path: Path, database_url: str
) -> None:
    from alembic import command

    from hindsight.store.migrate import alembic_config

    mem = make_memory(tmp_path / "one", database_url)
    try:
        mem.add_experience(RULE, tenant_id="acme", tools=["cancel_order"], confidence=0.8)
        store = mem.aio.store
        with store._tx(write=True) as conn:  # through 0010's downgrade and 0007's
            command.downgrade(alembic_config(conn), "0006_vector_log")
        with store._tx(write=True) as conn:
            command.upgrade(alembic_config(conn), "head")
        start = _stamp(store, "acme")
        assert start > 0 and _stamp(store, "globex") == 0  # backfilled; globex has nothing
        assert _checked(mem) != []
        mem.add_experience("Before calling cancel_order, read it back.", tenant_id="acme",
                           tools=["cancel_order"], confidence=0.7)  # fmt: skip
        assert _stamp(store, "acme") == start + 1 and len(_checked(mem)) == 2  # triggers back
    finally:
        mem.close()


def test_checks_are_compiled_once_per_lesson_version_and_again_after_its_write(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hindsight.checks import lookup
    from hindsight.checks.compile import COMPILED_KINDS as KINDS

    compiled: list[str] = []
    real = lookup.compile_checks

    def spy(exp: Any, asked: Any = ()) -> Any:
        compiled.append(exp.id)
        return real(exp, asked)

    monkeypatch.setattr(lookup, "compile_checks", spy)
    mem = make_memory(tmp_path / "one", database_url)
    try:
        first = mem.add_experience(RULE, tenant_id="acme", tools=["cancel_order"],
                                   confidence=0.8)  # fmt: skip
        second = mem.add_experience("Before calling cancel_order, read the order back.",
                                    tenant_id="acme", tools=["cancel_order"],
                                    confidence=0.6)  # fmt: skip
        assert _checked(mem) == [(first.id, 0.8), (second.id, 0.6)]
        assert sorted(compiled) == sorted([first.id, second.id])
        for _ in range(3):  # nothing written: neither read again nor compiled again
            assert _checked(mem) == [(first.id, 0.8), (second.id, 0.6)]
        assert len(compiled) == 2
        mem.adjust_confidence(first.id, 0.1, tenant_id="acme", reason="test", actor="test")
        assert _checked(mem) == [(first.id, 0.9), (second.id, 0.6)]  # the new confidence
        # the write gave the changed lesson a new object: it alone is compiled again
        assert compiled[2:] == [first.id]
        # a write of the tenant that touches neither lesson: read again, compiled again never
        mem.add_experience("Before calling refund_order, check the amount.",
                           tenant_id="acme", tools=["refund_order"])  # fmt: skip
        mem.add_experience("Reply in the customer's language.", tenant_id="acme")
        assert _checked(mem) == [(first.id, 0.9), (second.id, 0.6)]
        assert compiled[2:] == [first.id]
        edited = "Before calling cancel_order, confirm the order id."
        mem.edit_experience(second.id, tenant_id="acme", content=edited)
        found = mem.check_action("cancel_order", {}, tenant_id="acme", record=False)
        assert [m.check.advice for m in found.checks][1] == edited
        # what a lookup returns without validation is what validation would give: the rows
        about = mem.aio.store.experiences_about_tool(
            "acme", "cancel_order", namespaces=["default"], kinds=[k.value for k in KINDS]
        )
        assert about and about == [mem.get_experience(e.id, tenant_id="acme") for e in about]
        # and the matches
        again = type(found).model_validate(found.model_dump())
        assert again == found and again.model_dump_json() == found.model_dump_json()
    finally:
        mem.close()


def test_recall_bookkeeping_does_not_move_the_stamp_and_other_writes_do(
    tmp_path: Path, database_url: str
) -> None:
    """A recall writes ``recall_count`` and ``last_recalled_at`` of what it returned: that
    alone keeps the lookups in memory; a write of any other column (confidence, text, tags,
    status) still moves the stamp, as does the same statement setting both kinds."""
    from sqlalchemy import update

    from hindsight.store.schema import experiences

    one = make_memory(tmp_path / "one", database_url)
    two = make_memory(tmp_path / "two", database_url)  # another process's memory, same SQL
    try:
        store = one.aio.store
        store.about_tool_max_age = 0
        rule = two.add_experience(RULE, tenant_id="acme", tools=["cancel_order"], confidence=0.8)
        assert _checked(one) == [(rule.id, 0.8)]
        before, hits = _stamp(store, "acme"), store._about_tool_cache.hits
        for _ in range(2):  # recalls by the other process, written through the same SQL
            assert two.recall(RULE, tenant_id="acme").hits
            two.flush(timeout=30)
        assert two.get_experience(rule.id, tenant_id="acme").recall_count == 2  # written
        assert _stamp(store, "acme") == before
        assert _checked(one) == [(rule.id, 0.8)] and store._about_tool_cache.hits == hits + 1
        writes = [
            lambda: two.adjust_confidence(rule.id, -0.1, tenant_id="acme", reason="t", actor="t"),
            lambda: two.edit_experience(rule.id, tenant_id="acme", tags=["billing"]),
            lambda: two.edit_experience(rule.id, tenant_id="acme", content=RULE + " Always."),
            lambda: two.archive(rule.id, tenant_id="acme"),
        ]
        for write in writes:
            stamp = _stamp(store, "acme")
            write()
            assert _stamp(store, "acme") > stamp
        stamp = _stamp(store, "acme")
        with store._tx(write=True) as conn:  # bookkeeping and another column in one update
            conn.execute(
                update(experiences)
                .where(experiences.c.id == rule.id)
                .values(recall_count=experiences.c.recall_count + 1, confidence=0.2)
            )
        assert _stamp(store, "acme") == stamp + 1
    finally:
        one.close()
        two.close()


def test_a_stamp_read_is_trusted_for_a_while_unless_this_store_wrote(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within ``about_tool_max_age`` seconds of reading the stamp, a lookup reads nothing from
    the database; a write through this store is seen by the next lookup, one through another
    store once that time has passed."""
    from hindsight.store import experiences as module

    now = [1000.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: now[0])
    one = make_memory(tmp_path / "one", database_url)
    two = make_memory(tmp_path / "two", database_url)  # another process's memory, same SQL
    try:
        store = one.aio.store
        assert store.about_tool_max_age == module.ABOUT_TOOL_MAX_AGE == 1.0
        first = one.add_experience(RULE, tenant_id="acme", tools=["cancel_order"], confidence=0.8)
        assert _checked(one) == [(first.id, 0.8)]
        cache = store._about_tool_cache
        reads, hits = cache.stamp_reads, cache.hits
        for _ in range(3):
            assert _checked(one) == [(first.id, 0.8)]
        assert cache.stamp_reads == reads and cache.hits == hits + 3  # no database read
        # another store's write: not seen before the stamp is read again
        second = two.add_experience("Before calling cancel_order, read the order back.",
                                    tenant_id="acme", tools=["cancel_order"],
                                    confidence=0.9)  # fmt: skip
        now[0] += 0.5
        assert _checked(one) == [(first.id, 0.8)]
        now[0] += 0.5  # max_age after the read: read again, seen
        assert _checked(one) == [(second.id, 0.9), (first.id, 0.8)]
        assert cache.stamp_reads == reads + 1
        # this store's own write: seen at once, whatever the time
        one.adjust_confidence(first.id, 0.15, tenant_id="acme", reason="t", actor="t")
        assert _checked(one) == [(first.id, 0.95), (second.id, 0.9)]
        one.archive(second.id, tenant_id="acme")
        assert _checked(one) == [(first.id, 0.95)]
        store.about_tool_max_age = 0
        reads = cache.stamp_reads
        _checked(one)
        _checked(one)
        assert cache.stamp_reads == reads + 2
    finally:
        one.close()
        two.close()


def test_a_closed_store_refuses_a_lookup_it_could_answer_from_memory(
    tmp_path: Path, database_url: str
) -> None:
    from hindsight import StoreError
    from hindsight.checks.compile import COMPILED_KINDS as KINDS

    mem = make_memory(tmp_path / "one", database_url)
    mem.add_experience(RULE, tenant_id="acme", tools=["cancel_order"], confidence=0.8)
    store = mem.aio.store
    kinds = [k.value for k in KINDS]
    assert store.experiences_about_tool("acme", "cancel_order", namespaces=["default"], kinds=kinds)
    mem.close()
    with pytest.raises(StoreError, match="closed"):
        store.experiences_about_tool("acme", "cancel_order", namespaces=["default"], kinds=kinds)


def test_the_update_trigger_watches_every_column_but_the_recall_bookkeeping(
    tmp_path: Path, database_url: str
) -> None:
    """A column added to ``experiences`` without creating the triggers again would move no
    stamp when only it changes: the schema and the trigger must name the same columns."""
    from sqlalchemy import text

    from hindsight.store.schema import experiences

    mem = make_memory(tmp_path / "one", database_url)
    try:
        with mem.aio.store._tx() as conn:
            if database_url.startswith("postgresql"):
                sql = conn.execute(
                    text(
                        "SELECT pg_get_triggerdef(oid) FROM pg_trigger "
                        "WHERE tgname = 'experiences_stamp'"
                    )
                ).scalar()
            else:
                sql = conn.execute(
                    text("SELECT sql FROM sqlite_master WHERE name = 'experiences_stamp_update'")
                ).scalar()
        watched = sql.split("UPDATE OF", 1)[1].split(" ON ", 1)[0]
        names = {n.strip().strip('"') for n in watched.split(",")}
        assert names == {c.name for c in experiences.c} - {"recall_count", "last_recalled_at"}
    finally:
        mem.close()


NAMES = [
    "cancel_order",
    "Cancel_Order",
    "100%_refund",
    'say "hi"',
    "back\\slash",
    "café.pay",
    "退款",
    "mcp:shop/refund",
    "tab\there",
    "q",
]


@pytest.mark.parametrize("name", NAMES)
def test_a_lesson_is_about_each_tool_its_tools_list_names_whatever_the_characters(
    tmp_path: Path, database_url: str, name: str
) -> None:
    """The lookup finds a lesson by the tool names in its ``tools`` (its text never names the
    tool here), with the same names only: not a longer name that holds it, not one it holds,
    and on SQLite not the same letters in another case."""
    from hindsight.checks.compile import COMPILED_KINDS as KINDS

    kinds = [k.value for k in KINDS]
    mem = make_memory(tmp_path / "one", database_url)
    try:
        text = "Confirm which order the user means before calling it."
        about = mem.add_experience(text, tenant_id="acme", tools=["other", name])
        longer = mem.add_experience(
            "Read the order back first.", tenant_id="acme", tools=[f"{name}_v2"]
        )
        store = mem.aio.store

        def found(tool: str) -> set[str]:
            rows = store.experiences_about_tool("acme", tool, namespaces=["default"], kinds=kinds)
            return {e.id for e in rows}

        assert found(name) == {about.id}
        assert found(f"{name}_v2") == {longer.id}
        assert about.id not in found(name[:-1] or "x")
        if name.upper() != name:
            assert about.id not in found(name.upper())
    finally:
        mem.close()


def test_a_row_changed_since_the_last_lookup_is_read_again_the_others_kept(
    tmp_path: Path, database_url: str
) -> None:
    """After a write, the lookup keeps the objects (and their compiled checks) of the rows
    that did not change and reads the changed ones again with their types."""
    mem = make_memory(tmp_path / "one", database_url)
    try:
        from hindsight.checks.compile import COMPILED_KINDS as KINDS

        kinds = [k.value for k in KINDS]
        first = mem.add_experience(RULE, tenant_id="acme", tools=["cancel_order"], confidence=0.8)
        second = mem.add_experience(
            "Before calling cancel_order, read the order back.",
            tenant_id="acme",
            tools=["cancel_order"],
            confidence=0.6,
        )
        store = mem.aio.store

        def lookup() -> dict[str, Any]:
            rows = store.experiences_about_tool(
                "acme", "cancel_order", namespaces=["default"], kinds=kinds
            )
            return {e.id: e for e in rows}

        before = lookup()
        mem.adjust_confidence(second.id, 0.3, tenant_id="acme", reason="test", actor="test")
        after = lookup()
        assert after[first.id] is before[first.id]  # unchanged: the same object
        assert after[second.id] is not before[second.id]
        assert after[second.id] == mem.get_experience(second.id, tenant_id="acme")
        assert after[second.id].confidence == pytest.approx(0.9)
        assert after[second.id].updated_at.tzinfo is not None  # typed: UTC-aware
        assert list(after) == [second.id, first.id]  # most confident first
        mem.delete_experience(first.id, tenant_id="acme")
        assert list(lookup()) == [second.id]
    finally:
        mem.close()


def test_a_lesson_about_other_tools_is_no_candidate_for_a_name_its_text_holds(
    tmp_path: Path, database_url: str
) -> None:
    """``lookup`` is written in the text of lessons about ``lookup_invoice``: those are about
    their own tools, so only the lessons that can be about ``lookup`` are read - its name in
    their tools list, in the text of a lesson with no tools list, or in the text of a lesson
    whose condition or comparison names a tool - and its checks are those of the lessons
    that name it."""
    from hindsight.checks.compile import COMPILED_KINDS as KINDS

    kinds = [k.value for k in KINDS]
    mem = make_memory(tmp_path / "one", database_url)
    try:
        for i in range(5):
            mem.add_experience(
                f"When lookup_invoice needs the id {i}, ask for it.",
                tenant_id="acme",
                tools=["lookup_invoice"],
            )
        listed = mem.add_experience("Retry once on a timeout.", tenant_id="acme", tools=["lookup"])
        untooled = mem.add_experience("Before lookup, confirm the key.", tenant_id="acme")
        conditioned = mem.add_experience(
            "Call lookup before refund when the key is new.",
            tenant_id="acme",
            tools=["refund"],
            metadata={"condition": {"tool": "lookup", "form": "x", "predicates": [
                {"feature": "args.key", "op": "eq", "value": "new"}]}},
        )  # fmt: skip
        compared = mem.add_experience(  # a missing-call rule: it triggers on lookup
            "Read the order with lookup before a refund.",
            tenant_id="acme",
            tools=["refund"],
            metadata={"contrast": {"op": "missing", "tool": "refund", "instead": ["lookup"]}},
        )
        nulled = mem.add_experience(  # a null condition: about its tools only
            "When lookup is slow, refund later.",
            tenant_id="acme",
            tools=["refund"],
            metadata={"condition": None},
        )
        store = mem.aio.store
        rows = store.experiences_about_tool("acme", "lookup", namespaces=["default"], kinds=kinds)
        wanted = {listed.id, untooled.id, conditioned.id, compared.id}
        assert wanted <= {e.id for e in rows} <= wanted | {nulled.id}
        checks = mem.check_action("lookup", {"key": "k1"}, tenant_id="acme", record=False)
        shown = {m.check.lesson_id for m in checks.checks}
        assert {listed.id, compared.id} <= shown <= wanted
        invoice = store.experiences_about_tool(
            "acme", "lookup_invoice", namespaces=["default"], kinds=kinds
        )
        assert len(invoice) == 5
    finally:
        mem.close()


_BOOKKEEPING = {"recall_count", "last_recalled_at"}


@pytest.mark.parametrize("change", ["confidence", "edit", "archive", "tools", "bookkeeping"])
def test_after_a_write_only_the_changed_lessons_are_read_again(
    tmp_path: Path, database_url: str, change: str
) -> None:
    """A lookup after the stamp moved reads the rows unconverted and decodes only those that
    differ from the ones read before: the others keep their objects (and compiled checks); the
    changed one is new and current, whatever column changed; one that left the lookup is gone."""
    from hindsight.checks.compile import COMPILED_KINDS as KINDS

    one = make_memory(tmp_path / "one", database_url)
    two = make_memory(tmp_path / "two", database_url)  # another process's memory, same SQL
    try:
        store = one.aio.store
        store.about_tool_max_age = 0
        kinds = [k.value for k in KINDS]
        made = [
            two.add_experience(
                f"Before calling cancel_order, check item {i} of the order.",
                tenant_id="acme",
                tools=["cancel_order"],
                confidence=0.5 + i / 10,
            )
            for i in range(4)
        ]

        def lookup() -> dict[str, Any]:
            found = store.experiences_about_tool(
                "acme", "cancel_order", namespaces=["default"], kinds=kinds
            )
            return {e.id: e for e in found}

        before = lookup()
        assert set(before) == {e.id for e in made}
        target = made[1].id
        if change == "confidence":
            two.adjust_confidence(target, 0.05, tenant_id="acme", reason="t", actor="t")
        elif change == "edit":  # in place (its history keeps the old text)
            edited = two.edit_experience(target, content="Before calling cancel_order, ask "
                                         "which order.", tenant_id="acme")  # fmt: skip
        elif change == "archive":
            two.archive(target, tenant_id="acme")
        elif change == "tools":
            two.edit_experience(target, tools=["refund"], tenant_id="acme")
        else:  # the recall bookkeeping does not move the stamp: an insert elsewhere does
            two.recall("cancel an order", tenant_id="acme", tools=["cancel_order"])
            two.flush()
        two.add_experience(
            "Before calling refund, read the policy.", tenant_id="acme", tools=["refund"]
        )  # fmt: skip
        after = lookup()
        assert target in after or change in ("archive", "tools")
        for eid, exp in after.items():
            fresh = two.get_experience(eid, tenant_id="acme")
            if eid in before and before[eid].model_dump(exclude=_BOOKKEEPING) == fresh.model_dump(
                exclude=_BOOKKEEPING
            ):
                counted = exp.recall_count != before[eid].recall_count
                assert exp is before[eid] or counted  # unchanged: kept
            else:
                assert exp is not before.get(eid)  # changed: read again, current
            assert exp.model_dump(exclude=_BOOKKEEPING) == fresh.model_dump(exclude=_BOOKKEEPING)
        if change == "edit":
            assert after[target].content == edited.content
        if change == "confidence":
            assert after[target] is not before[target]
        kept = [eid for eid in after if eid in before and after[eid] is before[eid]]
        # most rows were not decoded again (recalled ones were: their counters changed)
        assert len(kept) >= (0 if change == "bookkeeping" else 2)
    finally:
        one.close()
        two.close()
