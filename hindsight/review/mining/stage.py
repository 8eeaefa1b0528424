"""Condition mining as a stage of the review: mine a tenant's runs, keep its rules in step.

:class:`ConditionMining` is told which tenants had a run reviewed (:meth:`touched`) and,
when the reviews settle (the review queue is empty, or ``flush``), mines each of them
(:func:`hindsight.review.mining.mine` over its newest :data:`MAX_RUNS` runs, per namespace)
and keeps the tenant's mined rules equal to what the runs support
(docs/review.md#condition-mining):

* a new rule is written through the write path (guard and dedup, like any lesson), as an
  experience of kind ``rule`` with reviewer :data:`REVIEWER`, tag ``condition``,
  ``metadata["lesson_key"]`` the rule's key and ``metadata["condition"]`` its structured
  form (:func:`condition_metadata`);
* a rule whose counts changed gets a new version (its history keeps the old text);
* a rule the runs no longer support is archived (audited, restorable).

Its confidence is ``0.5 + 0.45 * w``, ``w`` the Wilson lower bound of its bad rate; its
trust and provenance are those of the runs it was mined from (the median run's trust times
its source's weight, :data:`hindsight.writeback.PROVENANCE_TRUST`).
"""

from __future__ import annotations

import hashlib
import logging
import statistics
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any

from hindsight._ids import stable_id
from hindsight.guard.screening import GUARD_METADATA_KEYS
from hindsight.models import Experience, ExperienceKind, ExperienceStatus, Provenance
from hindsight.ports import Clock
from hindsight.review.mining.features import RunRecord, record_of
from hindsight.review.mining.miner import MinedRule, mine
from hindsight.review.mining.render import render_rule
from hindsight.review.mining.stats import wilson_lower

__all__ = [
    "MAX_RUNS",
    "MIN_INTERVAL",
    "REVIEWER",
    "ConditionMining",
    "condition_metadata",
    "mined_conditions",
]

log = logging.getLogger("hindsight")

REVIEWER = "condition-miner"
"""The ``reviewer`` of every mined rule."""
TAG = "condition"
MAX_RUNS = 2000
"""Newest runs of a tenant a mining pass reads (older ones are left out)."""
MIN_INTERVAL = 30.0
"""Seconds between two passes for one tenant when the queue empties (``flush`` always mines)."""
_RECORDS_KEPT = 20000
_OWN_KEYS = ("lesson_key", "condition", "subject", "mined_text_sha256")
"""The metadata keys a mined rule's evidence sets (:meth:`ConditionMining._experience`)."""


def _text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def condition_metadata(rule: MinedRule) -> dict[str, Any]:
    """``metadata["condition"]`` of a mined rule: ``{"tool", "form", "predicates": [{"feature",
    "op", "value"}], "message", "evidence": {...}}`` (JSON; read by the risk checks,
    :mod:`hindsight.checks`)."""
    return {
        "tool": rule.tool,
        "form": rule.form,
        "predicates": [p.as_dict() for p in rule.predicates],
        "message": rule.message,
        "evidence": rule.evidence(),
    }


def mined_conditions(store: Any, traj: Any, limit: int = 20) -> list[str]:
    """The texts of the active mined rules of ``traj``'s tenant and namespace that concern
    ``traj``: about a tool it called, or with a condition on a tool it called (a rule to call
    a tool the run never called matters most there), most confident first (at most
    ``limit``): what the LLM reviewer is shown as ``<conditions>``
    (docs/review.md#condition-mining)."""
    tools = {e.tool_name for e in traj.events if e.tool_name}
    if not tools:
        return []
    rows = store.list_experiences(
        traj.tenant_id, namespaces=[traj.namespace], tags=[TAG], limit=500
    )

    def concerns(cond: dict[str, Any]) -> bool:
        sources = {str(p.get("feature", "")).split(".", 1)[0] for p in cond.get("predicates", [])}
        return cond.get("tool") in tools or bool(sources & tools)

    return [
        e.content
        for e in rows
        if e.reviewer == REVIEWER and concerns(e.metadata.get("condition") or {})
    ][:limit]


class ConditionMining:
    """See the module docstring.

    Args:
        store: the SQL store (runs, the rules).
        write: the write path for new rules (``WriteBack.write``).
        edit: ``edit(tenant, experience_id, content, metadata)``: a new version of a rule.
        archive: ``archive(tenant, experience_id)``: archive a rule no longer supported.
        clock: the memory's clock.
        embedding_model: recorded on each rule.
        enabled: ``False`` mines nothing (``condition_mining`` setting).
    """

    def __init__(
        self,
        store: Any,
        write: Callable[[list[Experience]], Any],
        edit: Callable[[str, str, str, dict[str, Any]], Any],
        archive: Callable[[str, str], Any],
        clock: Clock,
        embedding_model: str,
        *,
        enabled: bool = True,
    ) -> None:
        self.store = store
        self._write, self._edit, self._archive = write, edit, archive
        self.clock = clock
        self.embedding_model = embedding_model
        self.enabled = enabled
        self._dirty: set[str] = set()
        self._last: dict[str, float] = {}
        self._records: OrderedDict[tuple[str, str, str], RunRecord] = OrderedDict()
        self._lock = threading.Lock()

    def touched(self, tenant: str) -> None:
        """A run of ``tenant`` was reviewed: mine it when the reviews settle."""
        if self.enabled:
            with self._lock:
                self._dirty.add(tenant)

    def pending(self) -> bool:
        """True when a tenant waits to be mined."""
        return bool(self._dirty)

    def settle(self, *, force: bool = True) -> int:
        """Mine every touched tenant (``force=False``: only those not mined in the last
        :data:`MIN_INTERVAL` seconds); returns how many rules were written, edited or
        archived. A failure is logged and the tenant stays touched."""
        with self._lock:
            now = time.monotonic()
            todo = [
                t
                for t in sorted(self._dirty)
                if force or now - self._last.get(t, -MIN_INTERVAL) >= MIN_INTERVAL
            ]
            self._dirty.difference_update(todo)
        changed = 0
        for tenant in todo:
            try:
                changed += self.mine_tenant(tenant)
            except Exception:
                log.exception("condition mining of tenant %r failed; tried again later", tenant)
                with self._lock:
                    self._dirty.add(tenant)
            self._last[tenant] = time.monotonic()
        return changed

    # -- one tenant ----------------------------------------------------------------------------
    def _runs(self, tenant: str) -> dict[str, list[tuple[RunRecord, Any]]]:
        by_ns: dict[str, list[tuple[RunRecord, Any]]] = defaultdict(list)
        summaries: list[Any] = []
        after = None
        while len(summaries) < MAX_RUNS:
            page = self.store.list_trajectories(
                tenant, newest_first=True, limit=min(500, MAX_RUNS - len(summaries)), after=after
            )
            if not page:
                break
            summaries.extend(page)
            after = (page[-1].stored_at, page[-1].id)
        for s in summaries:
            key = (tenant, s.id, f"{s.outcome.value}:{s.task_key}")
            rec = self._records.get(key)
            if rec is None:
                rec = record_of(self.store.get_trajectory(tenant, s.id))
                self._records[key] = rec
                while len(self._records) > _RECORDS_KEPT:
                    self._records.popitem(last=False)
            by_ns[s.namespace].append((rec, s))
        return by_ns

    def mine_tenant(self, tenant: str) -> int:
        """One pass over ``tenant`` (see the module docstring); returns the rules written,
        edited or archived."""
        changed = 0
        wanted: set[str] = set()
        for namespace, runs in sorted(self._runs(tenant).items()):
            summary = {r.run_id: s for r, s in runs}
            for rule in mine([r for r, _ in runs]):
                exp = self._experience(tenant, namespace, rule, runs, summary)
                wanted.add(exp.id)
                changed += self._keep(exp)
        for old in self._mined(tenant):
            if old.id not in wanted and old.status is ExperienceStatus.ACTIVE:
                self._archive(tenant, old.id)
                changed += 1
        return changed

    def _mined(self, tenant: str) -> list[Experience]:
        out: list[Experience] = []
        offset = 0
        while True:
            page = self.store.list_experiences(
                tenant, tags=[TAG], limit=500, offset=offset, statuses=("active",)
            )
            out.extend(e for e in page if e.reviewer == REVIEWER)
            if len(page) < 500:
                return out
            offset += 500

    def _keep(self, exp: Experience) -> int:
        found = self.store.get_experiences(exp.tenant_id, [exp.id]).get(exp.id)
        if found is None:
            current = self.store.active_by_lesson_key(
                exp.tenant_id, exp.namespace, exp.metadata["lesson_key"]
            )
            found = current
        if found is None:
            self._write([exp])
            return 1
        if found.status is not ExperienceStatus.ACTIVE:
            return 0  # archived, quarantined or rejected by a person: not written again
        # an edit replaces the caller's metadata: keep what others added, renew the rule's own
        kept = {k: v for k, v in found.metadata.items() if k not in GUARD_METADATA_KEYS}
        metadata = {k: v for k, v in kept.items() if k not in _OWN_KEYS} | exp.metadata
        # a text a person wrote over the miner's stays; its evidence is still kept up to date
        written = kept.get("mined_text_sha256")
        content = found.content if written not in (None, _text_sha(found.content)) else exp.content
        if found.content == content and metadata == kept:
            return 0
        self._edit(exp.tenant_id, found.id, content, metadata)
        return 1

    def _experience(
        self,
        tenant: str,
        namespace: str,
        rule: MinedRule,
        runs: list[tuple[RunRecord, Any]],
        summary: dict[str, Any],
    ) -> Experience:
        groups = set(rule.covered)
        sources = [r.run_id for r, _ in runs if r.group in groups][:20]
        trusts = [summary[s].trust for s in sources if s in summary] or [1.0]
        provenance = Provenance.USER
        trust = round(statistics.median(trusts), 4)
        metas: Counter[str | None] = Counter(
            getattr(summary.get(s), "source", None) for s in sources
        )
        top = metas.most_common(1)[0][0] if metas else None
        if top is not None and None not in metas:
            provenance = Provenance(top)
        from hindsight.writeback import PROVENANCE_TRUST

        content = render_rule(rule)
        now = self.clock.now()
        return Experience(
            id=stable_id("condition", tenant, namespace, rule.key),
            tenant_id=tenant,
            namespace=namespace,
            kind=ExperienceKind.RULE,
            content=content,
            tools=[rule.tool],
            tags=[TAG],
            confidence=round(0.5 + 0.45 * wilson_lower(rule.bad, rule.held), 4),
            importance=0.7,
            trust=round(trust * PROVENANCE_TRUST.get(provenance, 0.5), 4),
            provenance=provenance,
            source_trajectory_ids=sources,
            created_at=now,
            updated_at=now,
            embedding_model=self.embedding_model,
            reviewer=REVIEWER,
            metadata={
                "lesson_key": rule.key,
                "condition": condition_metadata(rule),
                **({"subject": rule.subject} if rule.subject else {}),
                "mined_text_sha256": _text_sha(content),
            },
        )
