"""The run tree of the LangChain handler (hindsight_langchain._tree) keys its runs by the value
of their ids (a UUID's integer, hashed in C), not by the id objects: an equal id from another
object finds the same run, ids that are not UUIDs work too, and the odd orders LangChain
reports (a child before its parent, a run after its root ended) are kept, as documented in
docs/integrations/langchain.md#never-breaking-the-host."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hindsight_langchain._tree import RunTree, run_key


def _tree() -> RunTree:
    return RunTree(max_chars=10_000, orphan_timeout=30.0)


IDS: dict[str, Callable[[], Any]] = {
    "uuid4": uuid.uuid4,
    "uuid1": uuid.uuid1,
    "string": lambda: f"run-{uuid.uuid4().hex[:8]}",
    "integer": lambda: uuid.uuid4().int % 10_000_019,
}


@pytest.mark.parametrize("kind", IDS)
def test_a_run_is_found_by_the_value_of_its_id(kind: str) -> None:
    make = IDS[kind]
    tree = _tree()
    root, child = make(), make()
    tree.start(root, None, "chain", name="graph")
    run = tree.start(child, root, "tool", name="lookup")
    same = uuid.UUID(str(child)) if isinstance(child, uuid.UUID) else child
    assert tree.get(same) is run
    assert same is not child or not isinstance(child, uuid.UUID)  # another object, equal
    assert run.group is tree.get(root).group  # type: ignore[union-attr]
    assert run.anchor == str(child)  # a tool's events hang under it
    assert tree.end(run) is None
    group = tree.end(tree.run_for(root, None, "chain"))
    assert group is not None and group.runs == [root, child]
    assert tree.get(root) is None and tree.get(child) is None
    assert run_key(root) in tree.finished


def test_a_child_reported_before_its_parent_joins_the_parents_group() -> None:
    tree = _tree()
    root, parent, child = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    tree.start(root, None, "chain")
    early = tree.start(child, parent, "llm")  # its parent is not known yet: a placeholder
    assert early.group is not tree.get(root).group  # type: ignore[union-attr]
    assert tree.get(parent).kind == "placeholder"  # type: ignore[union-attr]
    late_parent = tree.start(uuid.UUID(str(parent)), root, "chain")  # an equal id object
    assert tree.get(parent) is late_parent and late_parent.kind == "chain"
    assert early.group is late_parent.group is tree.get(root).group  # type: ignore[union-attr]
    assert not tree.orphans


def test_a_run_after_its_root_ended_goes_to_a_group_late_for_that_trajectory() -> None:
    tree = _tree()
    root, child = uuid.uuid4(), uuid.uuid4()
    tree.start(root, None, "chain")
    tree.start(child, root, "tool")
    tree.end(tree.run_for(child, root, "tool"))
    ended = tree.end(tree.run_for(root, None, "chain"))
    assert ended is not None
    again = tree.start(uuid.UUID(str(child)), root, "tool")  # reported again, after the end
    assert again.group is not ended and again.group.late_for == ended.buffer.trajectory_id
    assert tree.get(child) is again


def test_an_unmatched_end_is_kept_as_a_run() -> None:
    tree = _tree()
    lost = uuid.uuid4()
    run = tree.run_for(lost, None, "tool")  # an end whose start was never reported
    assert run.metadata == {"unmatched_end": True} and tree.get(str(lost)) is None
    assert tree.get(lost) is run


def test_a_uuid_and_another_id_of_the_same_value_are_two_runs() -> None:
    """The key of a UUID is its integer: an id of another type with that value (an ``int``,
    the UUID's string) is another run, as it was when the runs were keyed by the ids."""
    tree = _tree()
    root = uuid.uuid4()
    tree.start(root, None, "chain")
    as_uuid = tree.start(uuid.UUID(int=7), root, "tool", name="lookup_a")
    as_int = tree.start(7, root, "tool", name="lookup_b")
    as_text = tree.start(str(uuid.UUID(int=7)), root, "tool", name="lookup_c")
    assert len({id(as_uuid), id(as_int), id(as_text)}) == 3
    assert tree.get(7) is as_int and tree.get(uuid.UUID(int=7)) is as_uuid
    assert tree.get(str(uuid.UUID(int=7))) is as_text
    assert run_key(7) != run_key(uuid.UUID(int=7))
