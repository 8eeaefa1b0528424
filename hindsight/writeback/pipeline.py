"""The write path (docs/lifecycle.md): :class:`WriteBack` is the one way a new experience is stored.

It drops what is already stored (reviews are idempotent per trajectory), embeds, runs the
memory guard (:meth:`WriteBack.guard_experience`, before anything else looks at the
candidate), hands the guarded candidates to dedup / merge / supersede
(:class:`hindsight.writeback.dedup.Deduper`), writes SQL (with vector-log entries) and brings the
vector index up to date.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy.typing as npt

from hindsight.guard import CATEGORIES, TRUST_WEIGHTS, initial_trust
from hindsight.guard.checker import Established
from hindsight.guard.evidence import EvidenceIndex
from hindsight.guard.harm import HARM_CATEGORIES
from hindsight.guard.screening import WriteScreen
from hindsight.models import Experience, ExperienceStatus, Trajectory
from hindsight.observability import Metrics, span
from hindsight.ports import Embedder, embedded
from hindsight.store import SqlStore
from hindsight.writeback import confidence
from hindsight.writeback.dedup import RowCache

if TYPE_CHECKING:
    from hindsight.writeback.dedup import Deduper

__all__ = ["WriteBack", "write_labels"]

_KNOWN_CATEGORIES = frozenset(CATEGORIES) | frozenset(HARM_CATEGORIES) | {"conflict", "taint"}
"""Guard finding categories counted by name; any other (a custom rule's free-text category)
is counted as ``other``, so the ``category`` label stays bounded."""


def write_labels(
    given: Sequence[Experience], results: Sequence[tuple[str, Experience]]
) -> tuple[dict[str, int], dict[str, int]]:
    """``({result: n}, {category: n})`` of one write, for the metrics (docs/deploy.md#metrics).

    ``result`` is ``created``, ``merged``, ``superseded`` (a new row that replaced an older
    one: ``metadata["supersedes"]`` set by the write) or ``quarantined``; each quarantined
    experience counts once under each distinct category of its guard findings
    (``metadata["guard"]["findings"]``), bounded to the built-in categories and ``other``.
    """
    counts = dict.fromkeys(("created", "merged", "superseded", "quarantined"), 0)
    categories: dict[str, int] = {}
    for before, (result, stored) in zip(given, results, strict=True):
        if (
            result == "created"
            and "supersedes" in stored.metadata
            and "supersedes" not in before.metadata
        ):
            result = "superseded"
        counts[result] = counts.get(result, 0) + 1
        if result != "quarantined":
            continue
        guard = stored.metadata.get("guard")
        findings = guard.get("findings", []) if isinstance(guard, dict) else []
        names = {
            f.get("category") if f.get("category") in _KNOWN_CATEGORIES else "other"
            for f in findings
            if isinstance(f, dict)
        } or {"other"}
        for name in names:
            categories[str(name)] = categories.get(str(name), 0) + 1
    return counts, categories


class WriteBack:
    """The single write path for new experiences.

    Pipeline of :meth:`write`: skip ids already stored -> confidence from the evidence
    (:meth:`with_evidence`) -> clean + embed -> **1. guard**
    (:meth:`guard_experience`) -> 2. dedup / supersede -> SQL + vector log -> vectors.
    The guard comes first so a poisoned candidate is never merged into a clean experience.

    Args:
        store: the SQL store (source of truth).
        embedder: embeds experience contents.
        sync_vectors: brings the vector index up to date after a write.
        screen: the memory guard's write step (:class:`hindsight.guard.screening.WriteScreen`);
            ``None`` writes without it (tests of the bare pipeline only).
    """

    def __init__(
        self,
        store: SqlStore,
        embedder: Embedder,
        sync_vectors: Callable[[], object],
        *,
        screen: WriteScreen | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self._sync = sync_vectors
        self.screen = screen
        self.dedup: Deduper | None = None
        """Step 2, set by the engine: :class:`hindsight.writeback.dedup.Deduper`."""
        self.metrics: Metrics | None = None
        """The memory's metrics (set by the engine): writes by result, quarantines by
        category (:func:`write_labels`)."""

    def guard_experience(
        self,
        exp: Experience,
        existing: Sequence[Established | tuple[Any, ...]] | None = None,
        *,
        vector: npt.ArrayLike | None = None,
        trajectory: Trajectory | EvidenceIndex | None = None,
    ) -> Experience:
        """Run the memory guard on one experience about to be created or edited.

        **Every** path that creates, edits or merges an experience calls this before storing
        it: new lessons here in :meth:`write`, and edits, merges and supersedes
        on the version they are about to write.

        Args:
            exp: the experience as it would be stored.
            existing: experiences for the conflict test (:class:`~hindsight.guard.checker.
                Established` or ``(content, confidence[, trust[, support]])``); ``None`` looks up
                the nearest active experiences of the same tenant.
            vector: ``exp``'s embedding, if already computed (saves one embedding call).
            trajectory: the reviewed run (or its :class:`EvidenceIndex`), for the taint check
                of lessons that quote it.

        Returns:
            The experience to store (its content exactly as given) and, when the guard
            fired, status ``quarantined`` with ``metadata["quarantine_reasons"]``.
        """
        if self.screen is None:
            return exp
        evidence = (
            EvidenceIndex.of(trajectory) if isinstance(trajectory, Trajectory) else trajectory
        )
        return self.screen.check(exp, existing=existing, vector=vector, evidence=evidence)

    def with_evidence(self, experiences: Sequence[Experience]) -> list[Experience]:
        """The experiences with every evidence entry weighed and their confidence derived
        (:func:`hindsight.writeback.confidence.initial`).

        An entry without ``trust`` (a run other than the reviewed one) gets the run's stored
        ``trust`` times the provenance weight of the lesson's evidence
        (``initial_trust(metadata["evidence"])``); a run this tenant does not hold counts as
        an ``unknown`` source (0.5). One query per tenant.
        """
        wanted: dict[str, set[str]] = {}
        for exp in experiences:
            for entry in exp.metadata.get(confidence.SUPPORT_KEY) or ():
                if "trust" not in entry:
                    wanted.setdefault(exp.tenant_id, set()).add(entry["trajectory_id"])
        trusts = {t: self.store.trajectory_trusts(t, sorted(ids)) for t, ids in wanted.items()}
        out: list[Experience] = []
        for exp in experiences:
            support = exp.metadata.get(confidence.SUPPORT_KEY)
            if support and exp.tenant_id in trusts:
                runs = trusts[exp.tenant_id]
                factor = initial_trust(exp.metadata.get("evidence") or [exp.provenance.value])
                unknown = TRUST_WEIGHTS["unknown"]
                support = [
                    e
                    if "trust" in e
                    else {
                        **e,
                        "trust": round(runs[e["trajectory_id"]] * factor, 4)
                        if e["trajectory_id"] in runs
                        else unknown,
                    }
                    for e in support
                ]
                exp = exp.model_copy(
                    update={"metadata": {**exp.metadata, confidence.SUPPORT_KEY: support}}
                )
            out.append(confidence.initial(exp))
        return out

    def write(
        self, experiences: Sequence[Experience], *, trajectory: Trajectory | None = None
    ) -> list[Experience]:
        """Store ``experiences`` (all of one tenant or several); returns those newly written,
        as stored (possibly quarantined by the guard).

        Experiences whose id is already stored are skipped (idempotent reviews).

        Args:
            experiences: the candidates.
            trajectory: the run they were reviewed from, if any (taint check).
        """
        by_tenant: dict[str, list[Experience]] = {}
        for exp in experiences:
            by_tenant.setdefault(exp.tenant_id, []).append(exp)
        new: list[Experience] = []
        for tenant, exps in by_tenant.items():
            existing = self.store.get_experiences(tenant, [e.id for e in exps])
            new.extend(e for e in exps if e.id not in existing)
        return self.write_new(new, trajectory=trajectory)

    def write_new(
        self, experiences: Sequence[Experience], *, trajectory: Trajectory | None = None
    ) -> list[Experience]:
        """:meth:`write` of experiences the caller has just found not stored (their ids are
        not read again): returns those written, as stored, each once.

        Raises:
            UsageError: an id already stored (nothing written).
            StoreError: the database failed (nothing written).
        """
        results: dict[str, Experience] = {}
        for _, stored in self.write_items(experiences, trajectory=trajectory):
            results[stored.id] = stored
        return list(results.values())

    def write_items(
        self, experiences: Sequence[Experience], *, trajectory: Trajectory | None = None
    ) -> list[tuple[str, Experience]]:
        """Store a batch of new experiences (ids not stored yet) and say what became of each:
        ``(result, stored)`` per input, in input order, ``result`` one of ``"created"``,
        ``"merged"`` (folded into an existing experience or an earlier one of the batch;
        ``stored`` is that experience) or ``"quarantined"``
        (:meth:`hindsight.writeback.dedup.Deduper.write_items`).

        The whole batch is decided in memory - guard screening (neighbour rows read once),
        dedup against the index and against the batch itself - and written in one SQL
        transaction; the vector index is synced after the commit.

        Raises:
            UsageError: an id already stored (the transaction is rolled back: nothing written).
            StoreError: the database failed (nothing written).
        """
        if not experiences:
            return []
        tenants = sorted({e.tenant_id for e in experiences})
        with span(
            "hindsight.writeback",
            tenant=tenants[0] if len(tenants) == 1 else None,
            tenants=len(tenants),
            candidates=len(experiences),
        ) as current:
            results = self._write_items(experiences, trajectory)
            counts, categories = write_labels(experiences, results)
            current.set_attributes({f"hindsight.{k}": n for k, n in counts.items()})
        if self.metrics is not None:
            self.metrics.wrote(counts, categories)
        return results

    def _write_items(
        self, experiences: Sequence[Experience], trajectory: Trajectory | None
    ) -> list[tuple[str, Experience]]:
        new = self.with_evidence(experiences)
        if self.screen is not None:
            new = [self.screen.clean(e) for e in new]
        vectors = embedded(self.embedder, [e.content for e in new], "content")
        evidence = EvidenceIndex.of(trajectory) if trajectory is not None else None
        cleaned = new

        def screen(rows: RowCache) -> list[Experience]:
            # 1. The memory guard, before dedup; neighbour rows read once per batch.
            if self.screen is None:
                return list(cleaned)
            existing = self.screen.neighbours_many(cleaned, vectors, rows.get)
            return self.screen.check_many(cleaned, existing, vectors, evidence)

        # 2. Dedup / merge / supersede of the guarded candidates, then store; the
        # deduper syncs the vector index when it is done.
        if self.dedup is not None:
            return self.dedup.write_items(cleaned, vectors, screen=screen)
        with self.store.batch():
            screened = screen(RowCache(self.store))
            self.store.add_experiences(screened, vectors)
        self._sync()
        return [
            ("created" if e.status is not ExperienceStatus.QUARANTINED else "quarantined", e)
            for e in screened
        ]
