"""Tenant isolation as a property (docs/security.md#tenant-isolation).

A hypothesis state machine runs random multi-tenant, multi-namespace workloads - store, review,
recall (vector and exact task_type, with and without the shared namespace and episodes),
get, list, count, adjust, record_outcome, delete, forget (by experience, by trajectory,
everything), and calls with an empty tenant - against a reference model, and checks after
every step that nothing one tenant sees (hits, rendered blocks, explanations, counts, listings,
error messages) carries another tenant's data:

* every content written for tenant T carries T's unique marker word, so a marker of another
  tenant in any output is a leak; the same holds for the ids of other tenants' experiences and
  trajectories;
* an id of another tenant behaves exactly like an id that does not exist (same error, same
  message once the id is replaced): no existence oracle;
* counts (experiences, vectors, trajectories) are exact, so another tenant's rows counted in
  are caught too, and another tenant's calls never change them.

The suite talks to the memory through an :class:`IsolationClient`. :class:`PythonClient` drives
:class:`hindsight.Memory`; the HTTP and MCP interfaces plug in by implementing the same protocol and
calling :func:`run_isolation_suite`.
"""

from __future__ import annotations

import inspect
import itertools
import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from hindsight import HindsightError, Lesson, Memory, NotFoundError, TenantRequiredError
from hindsight.models import Event, Trajectory

TENANT_NAMES = ["acme", "ACME", "acme-2", "租户甲", "o'brien; drop table experiences", "%", "*"]
"""Tenants the workloads draw from: case variants, a prefix of another, non-ASCII, SQL
metacharacters and LIKE / glob wildcards (none of which may widen a tenant filter)."""
NAMESPACES = ["default", "agent-a", "shared"]
WORDS = [
    "cache",
    "retry",
    "order",
    "lookup",
    "invoice",
    "timeout",
    "search",
    "flight",
    "booking",
    "seat",
    "baggage",
    "weather",
    "report",
    "window",
    "upstream",
    "status",
]
TASK_TYPES = [None, "support", "billing"]
TASK_KEYS = [None, "task-1", "task-2"]
"""Task group keys; every tenant uses the same ones, so a group must never span tenants."""
EMPTY_TENANTS: list[Any] = [None, "", "   ", [], 0]
_COUNTER = itertools.count(1)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass
class Seen:
    """What one call showed the caller: all its text (hits, rendered block, explanation,
    listing, counts, error message) and the experience ids it returned."""

    text: str = ""
    ids: list[str] = field(default_factory=list)
    error: BaseException | None = None
    value: Any = None


class IsolationClient(Protocol):
    """One interface to the memory (Python, HTTP, MCP). Every method returns what the caller
    saw; a :class:`hindsight.HindsightError` (or its wire equivalent) goes into
    ``Seen.error`` instead of being raised."""

    def add(self, tenant: Any, namespace: str, content: str, task_type: str | None) -> Seen: ...

    def review(
        self,
        tenant: str,
        namespace: str,
        task: str,
        task_type: str | None,
        lessons: int,
        task_key: str | None = None,
    ) -> Seen:
        """Store a run (``Seen.value`` = trajectory id) in task group ``task_key`` and review
        it now; ``Seen.ids`` are the experiences written (lessons and episode)."""
        ...

    def task_group(self, tenant: str, task_key: str) -> Seen:
        """The runs of a task group and the experiences learned from them
        (docs/review.md#task-groups): ``Seen.value`` = ``{"runs": [trajectory ids], "experiences":
        bool}`` (False when the interface cannot list experiences by task key); ``Seen.ids`` = those
        experiences."""
        ...

    def recall(
        self,
        tenant: Any,
        query: str,
        *,
        namespaces: list[str],
        include_shared: bool,
        task_type: str | None,
        mode: str,
        trajectory_id: str | None,
        episodes: bool,
    ) -> Seen: ...

    def check(
        self,
        tenant: Any,
        tool: str,
        args: dict[str, Any],
        *,
        namespaces: list[str],
        include_shared: bool,
        task_type: str | None,
        trajectory_id: str | None,
    ) -> Seen:
        """The risk checks of a proposed call (docs/checks.md); ``Seen.ids`` = the lessons behind
        them."""
        ...

    def get(self, tenant: str, experience_id: str) -> Seen: ...

    def listing(self, tenant: Any, status: str) -> Seen: ...

    def counts(self, tenant: str) -> Seen:
        """``Seen.value`` = ``{"experiences": total rows, "vectors": points,
        "trajectories": runs}`` of the tenant."""
        ...

    def delete(self, tenant: str, experience_id: str) -> Seen: ...

    def forget(
        self,
        tenant: Any,
        *,
        experience_id: str | None = None,
        trajectory_id: str | None = None,
        everything: bool = False,
    ) -> Seen:
        """``Seen.value`` = the number of experiences removed."""
        ...

    def record_outcome(self, tenant: str, trajectory_id: str, success: bool) -> Seen:
        """``Seen.ids`` = the experiences updated; ``Seen.value`` = their statuses by id."""
        ...

    def adjust(self, tenant: str, experience_id: str, delta: float) -> Seen | None:
        """Adjust confidence; ``None`` when the interface has no such call yet."""
        ...


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class PythonClient:
    """:class:`IsolationClient` over the Python API (:class:`hindsight.Memory`)."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    @staticmethod
    def _call(fn: Callable[[], Seen]) -> Seen:
        try:
            return fn()
        except HindsightError as exc:
            return Seen(text=str(exc), error=exc)

    def add(self, tenant: Any, namespace: str, content: str, task_type: str | None) -> Seen:
        def run() -> Seen:
            exp = self.mem.add_experience(
                content, tenant_id=tenant, namespace=namespace, task_type=task_type
            )
            return Seen(text=exp.model_dump_json(), ids=[exp.id], value=exp.status.value)

        return self._call(run)

    def review(
        self,
        tenant: str,
        namespace: str,
        task: str,
        task_type: str | None,
        lessons: int,
        task_key: str | None = None,
    ) -> Seen:
        def run() -> Seen:
            traj = Trajectory(
                tenant_id=tenant,
                namespace=namespace,
                task=task,
                task_type=task_type,
                task_key=task_key,
                outcome="failure",
                events=[
                    Event(event_type="user_message", content=task),
                    Event(event_type="tool_call", tool_name="order_lookup", tool_args={"q": task}),
                    Event(
                        event_type="tool_result",
                        tool_name="order_lookup",
                        status="timeout",
                        content=f"{task} timed out",
                    ),
                ],
                metadata={"lessons": lessons},
            )
            receipt = self.mem.store_episode(traj, review=False)
            exps = self.mem.review_now(traj.id, tenant_id=tenant)
            text = _dump(dict(receipt)) + _dump([e.model_dump(mode="json") for e in exps])
            return Seen(text=text, ids=[e.id for e in exps], value=traj.id)

        return self._call(run)

    def recall(
        self,
        tenant: Any,
        query: str,
        *,
        namespaces: list[str],
        include_shared: bool,
        task_type: str | None,
        mode: str,
        trajectory_id: str | None,
        episodes: bool,
    ) -> Seen:
        def run() -> Seen:
            result = self.mem.recall(
                query,
                tenant_id=tenant,
                namespace=namespaces,
                include_shared=include_shared,
                task_type=task_type,
                mode=mode,
                trajectory_id=trajectory_id,  # type: ignore[arg-type]
                similarity_floor=-1.0,
                top_k=50,
                include_episodes=episodes,
            )
            doc = result.to_json(explain=True)
            text = result.model_dump_json() + result.render() + _dump(doc)
            ids = [h.experience.id for h in [*result.hits, *result.episodes]]
            return Seen(text=text, ids=ids)

        return self._call(run)

    def check(
        self,
        tenant: Any,
        tool: str,
        args: dict[str, Any],
        *,
        namespaces: list[str],
        include_shared: bool,
        task_type: str | None,
        trajectory_id: str | None,
    ) -> Seen:
        def run() -> Seen:
            result = self.mem.check_action(
                tool,
                args,
                tenant_id=tenant,
                namespace=namespaces,
                include_shared=include_shared,
                task_type=task_type,
                trajectory_id=trajectory_id,
                top_k=50,
            )
            return Seen(text=result.model_dump_json() + result.render(), ids=result.lesson_ids)

        return self._call(run)

    def task_group(self, tenant: str, task_key: str) -> Seen:
        def run() -> Seen:
            runs = self.mem.list_trajectories(tenant_id=tenant, task_key=task_key, limit=10000)
            exps = self.mem.list_experiences(tenant_id=tenant, task_key=task_key, limit=10000)
            text = _dump([r.to_json() for r in runs]) + _dump(
                [e.model_dump(mode="json") for e in exps]
            )
            value = {"runs": [r.id for r in runs], "experiences": True}
            return Seen(text=text, ids=[e.id for e in exps], value=value)

        return self._call(run)

    def get(self, tenant: str, experience_id: str) -> Seen:
        def run() -> Seen:
            exp = self.mem.get_experience(experience_id, tenant_id=tenant)
            return Seen(text=exp.model_dump_json(), ids=[exp.id], value=exp.status.value)

        return self._call(run)

    def listing(self, tenant: Any, status: str) -> Seen:
        def run() -> Seen:
            if status == "quarantined":
                exps = self.mem.list_quarantined(tenant_id=tenant, limit=10000)
            else:
                exps = self.mem.list_experiences(tenant_id=tenant, status=status, limit=10000)
            return Seen(
                text=_dump([e.model_dump(mode="json") for e in exps]), ids=[e.id for e in exps]
            )

        return self._call(run)

    def counts(self, tenant: str) -> Seen:
        def run() -> Seen:
            stats = self.mem.stats(tenant_id=tenant)
            value = {
                "experiences": stats["experiences"]["total"],
                "vectors": stats["vectors"],
                "trajectories": stats["trajectories"],
            }
            return Seen(text=_dump(stats), value=value)

        return self._call(run)

    def delete(self, tenant: str, experience_id: str) -> Seen:
        def run() -> Seen:
            self.mem.delete_experience(experience_id, tenant_id=tenant)
            return Seen()

        return self._call(run)

    def forget(
        self,
        tenant: Any,
        *,
        experience_id: str | None = None,
        trajectory_id: str | None = None,
        everything: bool = False,
    ) -> Seen:
        def run() -> Seen:
            n = self.mem.forget(
                tenant_id=tenant,
                experience_id=experience_id,
                trajectory_id=trajectory_id,
                everything=everything,
            )
            return Seen(text=str(n), value=n)

        return self._call(run)

    def record_outcome(self, tenant: str, trajectory_id: str, success: bool) -> Seen:
        def run() -> Seen:
            exps = self.mem.record_outcome(trajectory_id, success, tenant_id=tenant)
            return Seen(
                text=_dump([e.model_dump(mode="json") for e in exps]),
                ids=[e.id for e in exps],
                value={e.id: e.status.value for e in exps},
            )

        return self._call(run)

    def adjust(self, tenant: str, experience_id: str, delta: float) -> Seen | None:
        fn = getattr(self.mem, "adjust_confidence", None)
        if fn is None:
            return None  # not there yet
        params = inspect.signature(fn).parameters.values()
        if not any(p.name == "tenant_id" or p.kind is p.VAR_KEYWORD for p in params):
            return None

        def run() -> Seen:
            exp = fn(experience_id, delta, tenant_id=tenant)
            text = exp.model_dump_json() if hasattr(exp, "model_dump_json") else _dump(exp)
            return Seen(text=text, ids=[getattr(exp, "id", experience_id)])

        return self._call(run)


# ------------------------------------------------------------------ the reference model


@dataclass
class Row:
    tenant: str
    trajectory_id: str | None
    status: str = "active"


@dataclass
class Model:
    """What the memory must hold: experiences and runs, by tenant."""

    rows: dict[str, Row] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)  # trajectory id -> tenant
    run_keys: dict[str, str | None] = field(default_factory=dict)  # trajectory id -> task key
    recalled_runs: dict[str, str] = field(default_factory=dict)  # run that recalled -> tenant
    markers: dict[str, str] = field(default_factory=dict)  # tenant -> marker word

    def ids_of(self, tenant: str) -> set[str]:
        return {i for i, r in self.rows.items() if r.tenant == tenant}

    def foreign(self, tenant: str) -> tuple[list[str], set[str]]:
        """Markers and ids (experiences, runs) of every tenant but ``tenant``."""
        markers = [m for t, m in self.markers.items() if t != tenant]
        ids = {i for i, r in self.rows.items() if r.tenant != tenant}
        ids |= {i for i, t in self.runs.items() if t != tenant}
        ids |= {i for i, t in self.recalled_runs.items() if t != tenant}
        return markers, ids

    def expected_counts(self, tenant: str) -> dict[str, int]:
        mine = [r for r in self.rows.values() if r.tenant == tenant]
        return {
            "experiences": len(mine),
            "vectors": sum(r.status != "deleted" for r in mine),
            "trajectories": sum(t == tenant for t in self.runs.values()),
        }


class IsolationMachine(RuleBasedStateMachine):
    """The workload. Subclasses set :attr:`client_factory` (see :func:`run_isolation_suite`)."""

    client_factory: Callable[[], tuple[IsolationClient, str]]

    def __init__(self) -> None:
        super().__init__()
        self.client, prefix = type(self).client_factory()
        self.prefix = prefix
        self.model = Model()
        self.tenants: list[str] = []
        self.words: dict[str, list[str]] = {}  # tenant -> words its lessons hold

    # -- helpers ------------------------------------------------------------------------------
    def check(self, tenant: str, seen: Seen, *, allowed: str = "") -> None:
        """Nothing ``tenant`` saw belongs to another tenant (``allowed``: text the caller
        itself sent, such as its query, removed before the check)."""
        markers, foreign_ids = self.model.foreign(tenant)
        text = seen.text.replace(allowed, " ") if allowed else seen.text
        for marker in markers:
            assert marker not in text, f"{tenant!r} saw marker {marker!r}: {text[:500]}"
        for found in _UUID.findall(text.lower()):
            assert found not in foreign_ids, f"{tenant!r} saw another tenant's id {found}"
        for eid in seen.ids:
            assert eid in self.model.ids_of(tenant), f"{tenant!r} got id {eid} not its own"

    def content(self, tenant: str, words: list[str]) -> str:
        """Words, the tenant's marker and a unique number (no two contents are equal)."""
        self.words.setdefault(tenant, []).extend(w for w in words if w not in self.words[tenant])
        return " ".join([*words[:2], self.model.markers[tenant], *words[2:], f"n{next(_COUNTER)}"])

    def not_found_like_unknown(self, seen: Seen, given: str, probe: Callable[[str], Seen]) -> None:
        """A foreign id fails exactly like an id that exists nowhere."""
        unknown = str(uuid.uuid4())
        other = probe(unknown)
        assert seen.error is not None, f"another tenant's id {given} was accepted: {seen}"
        assert type(seen.error) is type(other.error), (seen.error, other.error)
        assert seen.text.replace(given, "<id>") == other.text.replace(unknown, "<id>")

    # -- setup --------------------------------------------------------------------------------
    @initialize(names=st.lists(st.sampled_from(TENANT_NAMES), min_size=2, max_size=4, unique=True))
    def setup(self, names: list[str]) -> None:
        self.tenants = [f"{self.prefix}{n}" for n in names]
        run = next(_COUNTER)
        for i, tenant in enumerate(self.tenants):
            self.model.markers[tenant] = f"mkr{i}q{run}z"

    # -- writes -------------------------------------------------------------------------------
    @rule(data=st.data(), words=st.lists(st.sampled_from(WORDS), min_size=2, max_size=6))
    def add(self, data: st.DataObject, words: list[str]) -> None:
        tenant = data.draw(st.sampled_from(self.tenants))
        ns = data.draw(st.sampled_from(NAMESPACES))
        seen = self.client.add(
            tenant, ns, self.content(tenant, words), data.draw(st.sampled_from(TASK_TYPES))
        )
        assert seen.error is None, seen.error
        self.model.rows[seen.ids[0]] = Row(tenant, None, seen.value)
        self.check(tenant, seen)
        # the risk checks of a tool the new lesson names: the tenant's own only
        found = self.client.check(
            tenant, words[0], {}, namespaces=[ns], include_shared=True, task_type=None,
            trajectory_id=None,
        )  # fmt: skip
        assert found.error is None, found.error
        self.check(tenant, found)
        for eid in found.ids:
            assert self.model.rows[eid].status == "active", (eid, self.model.rows[eid])

    @rule(
        data=st.data(),
        words=st.lists(st.sampled_from(WORDS), min_size=2, max_size=5),
        lessons=st.integers(1, 3),
        task_key=st.sampled_from(TASK_KEYS),
    )
    def review(
        self, data: st.DataObject, words: list[str], lessons: int, task_key: str | None
    ) -> None:
        tenant = data.draw(st.sampled_from(self.tenants))
        ns = data.draw(st.sampled_from(NAMESPACES))
        task_type = data.draw(st.sampled_from(TASK_TYPES))
        seen = self.client.review(
            tenant, ns, self.content(tenant, words), task_type, lessons, task_key
        )
        assert seen.error is None, seen.error
        self.model.runs[seen.value] = tenant
        self.model.run_keys[seen.value] = task_key
        for eid in seen.ids:
            self.model.rows.setdefault(eid, Row(tenant, seen.value))
        self.check(tenant, seen)

    # -- reads --------------------------------------------------------------------------------
    @rule(
        data=st.data(),
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
        mode=st.sampled_from(["vector", "task_type"]),
        shared=st.booleans(),
        episodes=st.booleans(),
        attack=st.booleans(),
    )
    def recall(
        self,
        data: st.DataObject,
        words: list[str],
        mode: str,
        shared: bool,
        episodes: bool,
        attack: bool,
    ) -> None:
        tenant = data.draw(st.sampled_from(self.tenants))
        namespaces = data.draw(
            st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2, unique=True)
        )
        query = " ".join(words)
        if attack:  # ask with another tenant's marker: similarity must not cross tenants
            query += " " + data.draw(st.sampled_from(list(self.model.markers.values())))
        task_type = data.draw(st.sampled_from(TASK_TYPES[1:])) if mode == "task_type" else None
        run = str(uuid.uuid4())
        seen = self.client.recall(
            tenant,
            "" if mode == "task_type" else query,
            namespaces=namespaces,
            include_shared=shared,
            task_type=task_type,
            mode=mode,
            trajectory_id=run,
            episodes=episodes,
        )
        assert seen.error is None, seen.error
        self.model.recalled_runs[run] = tenant
        self.check(tenant, seen, allowed=query)
        for eid in seen.ids:
            assert self.model.rows[eid].status == "active", (eid, self.model.rows[eid])

    @rule(
        data=st.data(),
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
        tool=st.sampled_from(["own", "other", "order_lookup", "%", "_", "*"]),
        shared=st.booleans(),
        attack=st.booleans(),
    )
    def check_action(
        self, data: st.DataObject, words: list[str], tool: str, shared: bool, attack: bool
    ) -> None:
        """Risk checks (docs/checks.md): found by tool name (also named in a lesson's text: the
        suite's lessons name WORDS), never another tenant's, never an inactive lesson's;
        wildcard tool names widen nothing."""
        tenant = data.draw(st.sampled_from(self.tenants))
        namespaces = data.draw(
            st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2, unique=True)
        )
        if tool in ("own", "other"):  # a word the tenant's (or another tenant's) lessons hold
            pool = [w for t, ws in self.words.items() if (t == tenant) == (tool == "own")
                    for w in ws]  # fmt: skip
            tool = data.draw(st.sampled_from(pool or WORDS))
        if attack:  # a tool name that is another tenant's marker
            tool = data.draw(st.sampled_from(list(self.model.markers.values())))
        own = tool in self.words.get(tenant, ())
        task_type = None if own else data.draw(st.sampled_from(TASK_TYPES))
        run = str(uuid.uuid4())
        seen = self.client.check(
            tenant,
            tool,
            {"q": " ".join(words)},
            namespaces=NAMESPACES if own else namespaces,  # own word, widest scope: checks found
            include_shared=shared,
            task_type=task_type,
            trajectory_id=run,
        )
        assert seen.error is None, seen.error
        self.model.recalled_runs[run] = tenant
        self.check(tenant, seen, allowed=tool if attack else "")
        for eid in seen.ids:
            assert self.model.rows[eid].status == "active", (eid, self.model.rows[eid])

    @rule(data=st.data(), foreign=st.booleans())
    def get(self, data: st.DataObject, foreign: bool) -> None:
        tenant = data.draw(st.sampled_from(self.tenants))
        pool = (
            sorted(set(self.model.rows) - self.model.ids_of(tenant))
            if foreign
            else sorted(self.model.ids_of(tenant))
        )
        if not pool:
            return
        eid = data.draw(st.sampled_from(pool))
        seen = self.client.get(tenant, eid)
        if foreign:
            self.not_found_like_unknown(seen, eid, lambda i: self.client.get(tenant, i))
        else:
            assert seen.error is None, seen.error
            self.check(tenant, seen)

    @rule(data=st.data(), status=st.sampled_from(["active", "quarantined", "deleted"]))
    def listing(self, data: st.DataObject, status: str) -> None:
        tenant = data.draw(st.sampled_from(self.tenants))
        seen = self.client.listing(tenant, status)
        assert seen.error is None, seen.error
        self.check(tenant, seen)
        expected = {
            i for i, r in self.model.rows.items() if r.tenant == tenant and r.status == status
        }
        assert set(seen.ids) == expected

    @rule(data=st.data(), task_key=st.sampled_from(TASK_KEYS[1:]))
    def task_group(self, data: st.DataObject, task_key: str) -> None:
        """A task group lists exactly the tenant's runs with that key, and the experiences
        learned from them, never another tenant's (every tenant uses the same keys)."""
        tenant = data.draw(st.sampled_from(self.tenants))
        seen = self.client.task_group(tenant, task_key)
        assert seen.error is None, seen.error
        self.check(tenant, seen)
        group = {
            run
            for run, owner in self.model.runs.items()
            if owner == tenant and self.model.run_keys.get(run) == task_key
        }
        assert set(seen.value["runs"]) == group
        if seen.value["experiences"]:
            taught = {
                i
                for i, r in self.model.rows.items()
                if r.trajectory_id in group and r.status == "active"
            }
            assert taught <= set(seen.ids), (taught, seen.ids)

    # -- changes --------------------------------------------------------------------------------
    @rule(data=st.data(), foreign=st.booleans())
    def delete(self, data: st.DataObject, foreign: bool) -> None:
        tenant = data.draw(st.sampled_from(self.tenants))
        mine = self.model.ids_of(tenant)
        pool = sorted(set(self.model.rows) - mine) if foreign else sorted(mine)
        if not pool:
            return
        eid = data.draw(st.sampled_from(pool))
        seen = self.client.delete(tenant, eid)
        if foreign:
            self.not_found_like_unknown(seen, eid, lambda i: self.client.delete(tenant, i))
            return
        row = self.model.rows[eid]
        if row.status == "deleted":
            assert isinstance(seen.error, NotFoundError)
        else:
            assert seen.error is None, seen.error
            row.status = "deleted"
        self.check(tenant, seen, allowed=eid)

    @rule(
        data=st.data(),
        how=st.sampled_from(["experience", "trajectory", "everything"]),
        foreign=st.booleans(),
    )
    def forget(self, data: st.DataObject, how: str, foreign: bool) -> None:
        tenant = data.draw(st.sampled_from(self.tenants))
        if how == "everything":
            seen = self.client.forget(tenant, everything=True)
            assert seen.error is None, seen.error
            gone = self.model.ids_of(tenant)
            assert seen.value == len(gone)
            for eid in gone:
                del self.model.rows[eid]
            self.model.runs = {k: v for k, v in self.model.runs.items() if v != tenant}
            self.check(tenant, seen)
            return
        if how == "experience":
            mine = self.model.ids_of(tenant)
            pool = sorted(set(self.model.rows) - mine) if foreign else sorted(mine)
            if not pool:
                return
            eid = data.draw(st.sampled_from(pool))
            seen = self.client.forget(tenant, experience_id=eid)
            if foreign:
                self.not_found_like_unknown(
                    seen, eid, lambda i: self.client.forget(tenant, experience_id=i)
                )
                return
            assert seen.error is None and seen.value == 1, seen
            del self.model.rows[eid]
            self.check(tenant, seen)
            return
        runs = sorted(t for t, owner in self.model.runs.items() if (owner != tenant) == foreign)
        if not runs:
            return
        tid = data.draw(st.sampled_from(runs))
        seen = self.client.forget(tenant, trajectory_id=tid)
        if foreign:
            assert seen.error is not None or seen.value == 0, seen
            self.check(tenant, seen, allowed=tid)
            return
        assert seen.error is None, seen.error
        gone = {i for i, r in self.model.rows.items() if r.trajectory_id == tid}
        assert seen.value == len(gone), (seen.value, len(gone))
        for eid in gone:
            del self.model.rows[eid]
        del self.model.runs[tid]
        self.check(tenant, seen)

    @precondition(lambda self: bool(self.model.recalled_runs))
    @rule(data=st.data(), success=st.booleans())
    def record_outcome(self, data: st.DataObject, success: bool) -> None:
        tenant = data.draw(st.sampled_from(self.tenants))
        run = data.draw(st.sampled_from(sorted(self.model.recalled_runs)))
        seen = self.client.record_outcome(tenant, run, success)
        assert seen.error is None, seen.error
        if self.model.recalled_runs[run] != tenant:
            assert seen.ids == [], "another tenant's run credited this tenant's experiences"
        self.check(tenant, seen, allowed=run)
        for eid, status in (seen.value or {}).items():
            self.model.rows[eid].status = status  # the misled policy may quarantine

    @rule(data=st.data(), delta=st.sampled_from([-0.2, 0.1]), foreign=st.booleans())
    def adjust(self, data: st.DataObject, delta: float, foreign: bool) -> None:
        tenant = data.draw(st.sampled_from(self.tenants))
        mine = self.model.ids_of(tenant)
        pool = (
            sorted(set(self.model.rows) - mine)
            if foreign
            else sorted(i for i in mine if self.model.rows[i].status == "active")
        )
        if not pool:
            return
        eid = data.draw(st.sampled_from(pool))
        seen = self.client.adjust(tenant, eid, delta)
        if seen is None:
            return  # this interface has no adjust_confidence yet
        if foreign:
            self.not_found_like_unknown(
                seen, eid, lambda i: self.client.adjust(tenant, i, delta) or Seen()
            )
        else:
            self.check(tenant, seen)

    @rule(
        bad=st.sampled_from(EMPTY_TENANTS),
        call=st.sampled_from(["recall", "task_type", "add", "listing", "forget"]),
    )
    def empty_tenant_is_refused(self, bad: Any, call: str) -> None:
        before = {t: self.client.counts(t).value for t in self.tenants}
        if call == "recall":
            seen = self.client.recall(
                bad,
                "cache order",
                namespaces=["default"],
                include_shared=True,
                task_type=None,
                mode="vector",
                trajectory_id=None,
                episodes=False,
            )
        elif call == "task_type":
            seen = self.client.recall(
                bad,
                "",
                namespaces=["default"],
                include_shared=True,
                task_type="support",
                mode="task_type",
                trajectory_id=None,
                episodes=False,
            )
        elif call == "add":
            seen = self.client.add(bad, "default", "cache order lookups", None)
        elif call == "listing":
            seen = self.client.listing(bad, "active")
        else:
            seen = self.client.forget(bad, everything=True)
        assert isinstance(seen.error, TenantRequiredError), seen
        assert "tenant" in seen.text.lower()
        for tenant in self.tenants:
            self.check(tenant, seen)
        assert {t: self.client.counts(t).value for t in self.tenants} == before

    # -- after every step ---------------------------------------------------------------------
    @invariant()
    def counts_are_exact_and_private(self) -> None:
        for tenant in self.tenants:
            seen = self.client.counts(tenant)
            assert seen.error is None, seen.error
            self.check(tenant, seen)
            assert seen.value == self.model.expected_counts(tenant), tenant


def run_isolation_suite(
    client_factory: Callable[[], tuple[IsolationClient, str]],
    *,
    max_examples: int,
    steps: int = 12,
) -> None:
    """Run the isolation state machine.

    Args:
        client_factory: called once per example; returns a client and a tenant-name prefix
            (``""`` for a fresh memory per example, a unique prefix when one memory is shared
            by all examples, so earlier examples' data are other tenants to this one).
        max_examples: hypothesis examples (workloads).
        steps: steps per workload.

    Deterministic: ``derandomize=True`` (a fixed seed derived from the test), no example
    database; a failure prints the shrunk workload.
    """
    machine = type(
        "Isolation", (IsolationMachine,), {"client_factory": staticmethod(client_factory)}
    )
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=max_examples,
            stateful_step_count=steps,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.filter_too_much,
                HealthCheck.data_too_large,
            ],
        ),
    )


def fresh_clients(
    make: Callable[[], Memory],
) -> tuple[Callable[[], tuple[IsolationClient, str]], Callable[[], None]]:
    """A factory giving a new memory per example, and a function closing the last one."""
    current: list[Memory] = []

    def factory() -> tuple[IsolationClient, str]:
        close()
        current.append(make())
        return PythonClient(current[-1]), ""

    def close() -> None:
        while current:
            current.pop().close()

    return factory, close


def shared_client(mem: Memory) -> Iterator[tuple[IsolationClient, str]]:
    """One memory for every example, with a fresh tenant prefix each time."""
    n = 0
    while True:
        n += 1
        yield PythonClient(mem), f"x{n}·"


def scripted_lessons(traj: Trajectory) -> list[Lesson]:
    """The reviewer of the suite: lessons that repeat the run's task (and so its marker)."""
    n = int(traj.metadata.get("lessons", 1))
    return [
        Lesson(kind="rule", content=f"{traj.task} lesson {i}", confidence=0.6) for i in range(n)
    ]
