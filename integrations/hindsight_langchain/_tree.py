"""The run tree: LangChain's ``run_id`` / ``parent_run_id`` stream -> one group per root run.

Every LLM call, tool call, chain and graph node is a run with its own id; the root has no
parent. Like tracing handlers (langfuse's), the tree maps each run id to its run and each run
to the group (the trajectory in progress) of its root. Trouble is kept, not dropped
(docs/integrations/langchain.md#never-breaking-the-host):

* a run whose parent is unknown starts an *orphan group* under a placeholder for that parent;
  when the parent shows up later (children reported before their parent), the placeholder
  becomes the real run and its group joins the parent's group (or becomes a root group);
* an orphan group whose parent never shows up is finished by :meth:`RunTree.sweep` after
  ``orphan_timeout`` seconds without activity, or by :meth:`RunTree.drain`;
* a run reported after its root ended goes to a new group that says which trajectory it is
  late for.

Not thread-safe by itself: the handler holds one lock around every call.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from hindsight._ids import new_id
from hindsight_langchain._buffer import EventBuffer

__all__ = ["Group", "Run", "RunTree"]

FINISHED_MEMORY = 10_000
"""How many finished root runs the tree remembers, to label late events."""

TOOL_KINDS = frozenset({"tool", "retriever"})


def run_key(run_id: Any) -> Any:
    """The dict key of a run id: a UUID's 128-bit integer (hashed in C; ``UUID.__hash__`` is
    Python code, and every callback looks up several runs), anything else (LangChain sends
    UUIDs only) as ``(None, run_id)``, so that no other id takes a UUID's key."""
    return run_id.int if isinstance(run_id, UUID) else (None, run_id)


@dataclass(eq=False, slots=True)
class Group:
    """One trajectory in progress: its buffer, its root run (once known) and its runs."""

    buffer: EventBuffer
    root: UUID | None
    runs: list[UUID] = field(default_factory=list)
    open_runs: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)
    root_name: str = ""
    touched: float = 0.0
    output: Any = None
    has_output: bool = False
    error: BaseException | None = None
    late_for: str | None = None
    orphan_of: UUID | None = None
    roots: list[UUID] = field(default_factory=list)  # every root run (a resume adds one)
    thread_id: str | None = None
    interrupts: list[Any] = field(default_factory=list)  # values of the pending interrupt
    resumed_from: str | None = None  # thread of a run resumed from another process
    merge: bool = False  # stored in parts: merge into what is stored under its id
    abandoned: bool = False
    paused: Any = None  # the paused part to store (a Trajectory), set at the pause
    recall_block: str = ""  # the block a HindsightRetriever.as_block() rendered in this run
    recall_ids: list[str] = field(default_factory=list)  # its experience ids
    recall_calls: int = 0  # model calls after it
    recall_seen: int = 0  # of those, the ones whose prompt had it


@dataclass(eq=False, slots=True)
class Run:
    """One LangChain run: kind (chain, llm, tool, retriever or placeholder), its group and
    the event ids its events and its children's events refer to."""

    run_id: UUID
    parent: UUID | None
    group: Group
    kind: str
    name: str = ""
    event_id: str = ""
    anchor: str | None = None
    parent_anchor: str | None = None
    tool_call_id: str | None = None
    started: float = 0.0
    open: bool = True
    metadata: Mapping[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


class RunTree:
    """Runs by id and groups by root.

    Args:
        max_chars: passed to each group's :class:`EventBuffer`.
        orphan_timeout: seconds an orphan group may stay idle before :meth:`sweep` ends it.
        clock: monotonic seconds (``time.monotonic``); tests pass their own.
    """

    def __init__(
        self,
        *,
        max_chars: int,
        orphan_timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.runs: dict[Any, Run] = {}  # run key (:func:`run_key`) -> run
        self.orphans: list[Group] = []
        self.finished: OrderedDict[Any, str] = OrderedDict()  # run key -> trajectory id
        self.max_chars = max_chars
        self.orphan_timeout = orphan_timeout
        self.clock = clock

    def get(self, run_id: Any) -> Run | None:
        """The run ``run_id`` (placeholders included), or ``None``."""
        return self.runs.get(run_key(run_id))

    # -- starting ---------------------------------------------------------------------
    def _new_group(self, trajectory_id: str, root: UUID | None) -> Group:
        return Group(EventBuffer(trajectory_id, self.max_chars), root, touched=self.clock())

    def start(
        self,
        run_id: UUID,
        parent: UUID | None,
        kind: str,
        *,
        name: str = "",
        metadata: Mapping[str, Any] | None = None,
        tool_call_id: str | None = None,
    ) -> Run:
        """Register a run that starts now and return it (placed in its root's group)."""
        key = run_key(run_id)
        existing = self.runs.get(key)
        if existing is not None and existing.kind != "placeholder":
            # Reported twice: keep the first, count the run once.
            return existing
        late = key in self.finished
        parent_run = self.runs.get(run_key(parent)) if parent is not None else None
        if late:  # its end came first and ended a group already: kept in a late group
            group = (
                existing.group
                if existing is not None
                else self._late_group(self.finished[key], run_id)
            )
        else:
            group = self._group_for(parent, run_id, parent_run)
        run = Run(
            run_id,
            parent,
            group,
            kind,
            name=name,
            event_id=str(run_id),
            tool_call_id=tool_call_id,
            started=time.perf_counter(),
            metadata=metadata or {},
        )
        inherited = parent_run.anchor if parent_run is not None else None
        run.parent_anchor = inherited
        run.anchor = run.event_id if kind in TOOL_KINDS else inherited
        if existing is not None and not late:  # a placeholder: its children came first
            self._adopt(existing, run)
        elif existing is None:
            group.runs.append(run_id)
        self.runs[key] = run
        group = run.group
        group.open_runs += 1
        group.touched = self.clock()
        if run.parent is None and group.root == run_id:
            group.metadata = metadata or {}
            group.root_name = name
            group.roots.append(run_id)
        elif not group.metadata and metadata:
            group.metadata = metadata
        return run

    def _group_for(self, parent: UUID | None, run_id: UUID, parent_run: Run | None) -> Group:
        """The group of a run starting under ``parent`` (whose run, if known, is
        ``parent_run``)."""
        if parent is None:
            return self._new_group(str(run_id), run_id)
        if parent_run is not None:
            return parent_run.group
        # Unknown parent: an orphan group under a placeholder for the parent.
        group = self._new_group(new_id(), None)
        group.orphan_of = parent
        group.late_for = self.finished.get(run_key(parent))
        placeholder = Run(parent, None, group, "placeholder", open=False)
        self.runs[run_key(parent)] = placeholder
        group.runs.append(parent)
        self.orphans.append(group)
        return group

    def _late_group(self, late_for: str, run_id: UUID) -> Group:
        group = self._new_group(new_id(), None)
        group.orphan_of, group.late_for = run_id, late_for
        self.orphans.append(group)
        return group

    def _adopt(self, placeholder: Run, run: Run) -> None:
        """``run`` is the real start of ``placeholder``: merge the orphan group where the
        run belongs (a new root group, or its parent's group)."""
        orphan = placeholder.group
        target = run.group
        if target is orphan:
            return
        if orphan in self.orphans:
            self.orphans.remove(orphan)
        target.buffer.merge(orphan.buffer)
        target.open_runs += orphan.open_runs
        for rid in orphan.runs:
            member = self.runs.get(run_key(rid))
            if member is not None:
                member.group = target
            if rid not in target.runs:
                target.runs.append(rid)
        run.group = target

    def run_for(self, run_id: UUID, parent: UUID | None, kind: str) -> Run:
        """The run ``run_id``; one whose start was never reported is started now (its end
        or event is kept, not dropped)."""
        run = self.runs.get(run_key(run_id))
        if run is None or run.kind == "placeholder":
            run = self.start(run_id, parent, kind, metadata={"unmatched_end": True})
        return run

    def group_of(self, run_id: UUID) -> tuple[Group, str | None]:
        """The group and anchor event id of the run ``run_id``; for an unknown run, an
        orphan group under a placeholder for it."""
        run = self.runs.get(run_key(run_id))
        if run is not None:
            return run.group, run.anchor
        group = self._group_for(run_id, run_id, None)
        group.touched = self.clock()
        return group, None

    # -- ending -----------------------------------------------------------------------
    def end(self, run: Run) -> Group | None:
        """Mark ``run`` ended; returns its group when that was the group's root (the group
        is then removed from the tree: the caller stores it)."""
        if run.open:
            run.open = False
            run.group.open_runs -= 1
        group = run.group
        group.touched = self.clock()
        if run.parent is None and group.root == run.run_id:
            self._forget(group)
            return group
        return None

    def _forget(self, group: Group) -> None:
        for rid in group.runs:
            key = run_key(rid)
            self.runs.pop(key, None)
            self.finished[key] = group.buffer.trajectory_id
        while len(self.finished) > FINISHED_MEMORY:
            self.finished.popitem(last=False)
        if group in self.orphans:
            self.orphans.remove(group)

    def sweep(self) -> list[Group]:
        """Orphan groups idle for ``orphan_timeout`` seconds with no open run: removed and
        returned for storing."""
        if not self.orphans:
            return []
        now = self.clock()
        done = [
            g for g in self.orphans if g.open_runs <= 0 and now - g.touched >= self.orphan_timeout
        ]
        for group in done:
            self._forget(group)
        return done

    def reopen(
        self, group: Group, run_id: UUID, *, name: str, metadata: Mapping[str, Any] | None
    ) -> Run:
        """Continue ``group`` (a run paused at an interrupt) with the root run ``run_id`` of
        its resume: its runs join the same trajectory."""
        run = Run(
            run_id,
            None,
            group,
            "chain",
            name=name,
            event_id=str(run_id),
            started=time.perf_counter(),
            metadata=metadata or {},
        )
        group.root = run_id
        group.roots.append(run_id)
        group.runs = [run_id]
        group.open_runs = 1
        group.touched = self.clock()
        group.metadata = metadata or group.metadata
        group.output, group.has_output = None, False
        self.runs[run_key(run_id)] = run
        return run

    def detach(self, root: UUID) -> Group | None:
        """The group of the root run ``root``, removed from the tree (the caller owns it
        now); ``None`` when ``root`` is not an open root run of this tree."""
        run = self.runs.get(run_key(root))
        if run is None or run.parent is not None or run.group.root != root:
            return None
        self._forget(run.group)
        return run.group

    def drain(self) -> list[Group]:
        """Every group still in the tree (open roots and orphans), removed and returned:
        used at flush / close so that nothing captured is lost."""
        groups: list[Group] = []
        for run in list(self.runs.values()):
            if run.group not in groups:
                groups.append(run.group)
        for group in groups:
            self._forget(group)
        return groups
