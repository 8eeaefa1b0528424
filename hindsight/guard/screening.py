"""The guard on the write path: every experience is screened before it is stored (issue 5).

:class:`WriteScreen` is what :meth:`hindsight.writeback.WriteBack.guard_experience` runs for
every experience that is created or edited, before deduplication:

1. **clean** - invisible and control characters are removed from the stored content
   (:func:`~hindsight.guard.strip_invisible`); when that changed anything, the original text is
   kept in ``metadata["original_content"]`` for audit;
2. **check** - the guard's rules run on the normalized content, together with the
   high-confidence experiences most similar to it (vector search in the same tenant, in its
   namespace and the shared one: :data:`CONFLICT_NEIGHBOURS` nearest) for the conflict test,
   and, for reviewed lessons, with the passages of the trajectory the lesson quotes (taint,
   :class:`~hindsight.guard.evidence.EvidenceIndex`);
3. **quarantine** - on any hit the experience is stored with status ``quarantined`` and the
   reasons in ``metadata["quarantine_reasons"]``; it is never recalled until a human approves
   it (:mod:`hindsight.guard.quarantine`).

With the guard off (``HINDSIGHT_GUARD=off``) only step 1 runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from hindsight._errors import UsageError
from hindsight.guard import Guard, strip_invisible
from hindsight.guard.checker import Established
from hindsight.guard.evidence import EvidenceIndex
from hindsight.guard.trust import trust_mass
from hindsight.models import Experience, ExperienceKind, ExperienceStatus
from hindsight.ports import Clock, Embedder, VectorIndex

__all__ = [
    "ADVICE_KINDS",
    "CONFLICT_NEIGHBOURS",
    "GUARD_METADATA_KEYS",
    "GUARD_OWNED_FIELDS",
    "WriteScreen",
    "check_user_metadata",
    "guard_metadata",
    "owned_by_guard",
    "quarantine",
]

Fetch = Callable[[str, list[str]], Mapping[str, Experience]]
"""Reads experiences: ``fetch(tenant_id, ids) -> {id: Experience}`` (absent ids left out)."""

CONFLICT_NEIGHBOURS = 5
"""Nearest active experiences (same tenant; own and shared namespace) given to the conflict
test; the guard itself keeps only those with confidence >= its ``conflict_threshold`` (0.8)."""

ADVICE_KINDS = frozenset(
    {ExperienceKind.RULE, ExperienceKind.IMPROVEMENT, ExperienceKind.ANTI_PATTERN}
)
"""Kinds that tell an agent what to do. Only these take part in the conflict test (and in the
consensus check after recall): two runs that ended differently, or two tools that failed with
different errors, are observations, not contradicting advice. Measured on the 200 real
tau-bench runs: testing every kind quarantined 36 of 673 harmless lessons (outcomes of similar
tasks "conflict"), testing advice kinds none (docs/security.md). An experience of any other
kind - above all an ``episode``, a factual summary of one run - is never conflict-tested, even
when ``existing`` is handed to :meth:`WriteScreen.check`; the rules and the taint check still
run on it (issue 5 follow-up)."""

GUARD_METADATA_KEYS = frozenset(
    {
        "quarantine_reasons",
        "quarantined_at",
        "original_content",
        "evidence",
        "approved_at",
        "approved_note",
        "rejected_at",
        "rejected_note",
        "demoted_at",
        "demoted_from_trust",
        "misled_at_approval",
        "guard",
        "rescanned_at",
        # evidence-based confidence (hindsight.writeback.confidence): evidence entries and
        # the prior / offset / outcome masses the confidence is derived from
        "support",
        "confidence_basis",
    }
)
"""``Experience.metadata`` keys written by the guard (and by the write-back's evidence-based
confidence: ``support``, ``confidence_basis``); callers may not set them, on creation or in an
edit (issue 17 item 4): they change only through the guard's own audited actions
(:func:`~hindsight.guard.quarantine.approve`, ``reject``, :meth:`WriteScreen.rescan`) and the
write-back's."""

GUARD_OWNED_FIELDS = ("trust", "provenance", "status")
"""``Experience`` fields the guard owns: an edit that names one is refused (issue 17 item 4).
``trust`` and ``provenance`` come from the evidence (:func:`~hindsight.guard.initial_trust`),
``status`` moves only through quarantine, approve, reject (and the lifecycle's archive /
restore)."""

GUARD_ACTIONS = "approve, reject or rescan"


def owned_by_guard(name: str, *, key: bool = False) -> str:
    """The one-line refusal for an edit of the guard-owned field (or metadata ``key``)
    ``name``: ``"trust is owned by the memory guard: it changes only through approve, reject or
    rescan"``."""
    what = f"metadata key {name!r} is reserved for" if key else f"{name} is owned by"
    return f"{what} the memory guard: it changes only through {GUARD_ACTIONS}"


def check_user_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of caller-given metadata, refusing the guard's own keys.

    Raises:
        UsageError: ``metadata`` is not a dict or sets a key of :data:`GUARD_METADATA_KEYS`
            (the message names the first such key, :func:`owned_by_guard`).
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise UsageError(f"metadata must be a dict, got {type(metadata).__name__}")
    taken = sorted(GUARD_METADATA_KEYS & set(metadata))
    if taken:
        raise UsageError(owned_by_guard(taken[0], key=True))
    return dict(metadata)


def guard_metadata(exp: Experience) -> dict[str, Any]:
    """The guard-owned part of ``exp.metadata`` (kept by every edit and rollback)."""
    return {k: v for k, v in exp.metadata.items() if k in GUARD_METADATA_KEYS}


_SCREENED = (ExperienceStatus.ACTIVE, ExperienceStatus.QUARANTINED)


def quarantine(exp: Experience, reasons: Sequence[str], now: datetime) -> Experience:
    """``exp`` with status ``quarantined`` and ``reasons`` appended to
    ``metadata["quarantine_reasons"]`` (``quarantined_at`` is set to ``now``, ISO 8601, unless
    ``exp`` was quarantined already)."""
    meta = dict(exp.metadata)
    meta["quarantine_reasons"] = [*meta.get("quarantine_reasons", []), *reasons]
    if exp.status is not ExperienceStatus.QUARANTINED or "quarantined_at" not in meta:
        meta["quarantined_at"] = now.isoformat()
    return exp.model_copy(
        update={"status": ExperienceStatus.QUARANTINED, "metadata": meta, "updated_at": now}
    )


class WriteScreen:
    """Screens experiences on their way into the store (see the module docstring).

    Args:
        store: the SQL store (reads the neighbours' contents and confidences).
        index: the vector index (finds the neighbours).
        embedder: embeds a candidate when no vector is given.
        guard: the rules; ``None`` turns the checks off (cleaning still happens).
        clock: stamps ``quarantined_at``.
        shared_namespace: searched for conflicts besides the candidate's own namespace.
        support: the support mass of an experience for the conflict test (issue 17 item 3);
            default :func:`~hindsight.guard.trust.trust_mass` (its trust: repeats add
            nothing).
    """

    def __init__(
        self,
        *,
        store: Any,
        index: VectorIndex,
        embedder: Embedder,
        guard: Guard | None,
        clock: Clock,
        shared_namespace: str = "shared",
        support: Callable[[Experience], float] | None = None,
    ) -> None:
        self.support = support or trust_mass
        self.store = store
        self.index = index
        self.embedder = embedder
        self.guard = guard
        self.clock = clock
        self.shared_namespace = shared_namespace

    @property
    def enabled(self) -> bool:
        """True when the rules run (the guard is on)."""
        return self.guard is not None

    def clean(self, exp: Experience) -> Experience:
        """``exp`` with invisible characters removed from its content (see the module
        docstring). Content made only of invisible characters is kept visibly escaped
        (``"\\u200b..."``) and quarantined, so nothing disappears silently."""
        cleaned = strip_invisible(exp.content).strip()
        if cleaned == exp.content:
            return exp
        meta = {**exp.metadata, "original_content": exp.content}
        if not cleaned:
            escaped = json.dumps(exp.content)[1:-1] or "(empty)"
            out = exp.model_copy(update={"content": escaped, "metadata": meta})
            return quarantine(
                out, ["invisible: the lesson is made only of invisible characters"], self._now()
            )
        return exp.model_copy(update={"content": cleaned, "metadata": meta})

    def neighbours(
        self,
        exp: Experience,
        vector: npt.ArrayLike | None = None,
        *,
        fetch: Fetch | None = None,
    ) -> list[Established]:
        """The active experiences of ``exp``'s tenant nearest to it, as :class:`Established`
        (content, confidence, trust, support mass), in its namespace and the shared one,
        leaving out ``exp`` itself, its parent and the other lessons of the same run(s): the
        conflict test is about contradicting knowledge established elsewhere, and a run's
        outcome and its episode summary may well "disagree" in wording ("the run failed" /
        "it did not recover").

        ``fetch(tenant_id, ids) -> {id: Experience}`` reads the rows (default: the store)."""
        ids = self._neighbour_ids(exp, vector)
        return self._neighbours_from(exp, ids, fetch or self.store.get_experiences)

    def neighbours_many(
        self, exps: Sequence[Experience], vectors: npt.ArrayLike, fetch: Fetch
    ) -> list[list[Established] | None]:
        """:meth:`neighbours` of each of a batch's experiences that :meth:`check` would look
        up (active, of an advice kind; ``None`` for the others), reading all their rows with
        one ``fetch`` per tenant (issue 10: one query per batch instead of one per lesson)."""
        rows = np.asarray(vectors, dtype=np.float32)
        ids: list[list[str] | None] = [
            self._neighbour_ids(exp, rows[i]) if self._looks_up(exp) else None
            for i, exp in enumerate(exps)
        ]
        wanted: dict[str, list[str]] = {}
        for exp, found in zip(exps, ids, strict=True):
            wanted.setdefault(exp.tenant_id, []).extend(found or ())
        fetched = {tenant: fetch(tenant, some) for tenant, some in wanted.items() if some}
        return [
            None
            if found is None
            else self._neighbours_from(exp, found, lambda t, _ids: fetched.get(t, {}))
            for exp, found in zip(exps, ids, strict=True)
        ]

    def _looks_up(self, exp: Experience) -> bool:
        return (
            self.guard is not None
            and exp.status is ExperienceStatus.ACTIVE
            and exp.kind in ADVICE_KINDS
        )

    def _neighbour_ids(self, exp: Experience, vector: npt.ArrayLike | None) -> list[str]:
        if vector is None:
            vector = self.embedder.embed([exp.content])[0]
        namespaces = list(dict.fromkeys([exp.namespace, self.shared_namespace]))
        hits = self.index.search(
            np.asarray(vector, dtype=np.float32),
            tenant_id=exp.tenant_id,
            namespaces=namespaces,
            limit=CONFLICT_NEIGHBOURS + 2,
        )
        skip = {exp.id, exp.parent_id}
        return [h.id for h in hits if h.id not in skip]

    def _neighbours_from(self, exp: Experience, ids: list[str], fetch: Fetch) -> list[Established]:
        rows = fetch(exp.tenant_id, ids) if ids else {}
        runs = set(exp.source_trajectory_ids)
        found = [
            Established(rows[i].content, rows[i].confidence, rows[i].trust, self.support(rows[i]))
            for i in ids
            if i in rows
            and rows[i].tenant_id == exp.tenant_id
            and rows[i].status is ExperienceStatus.ACTIVE
            and rows[i].kind in ADVICE_KINDS
            and not runs.intersection(rows[i].source_trajectory_ids)
        ]
        return found[:CONFLICT_NEIGHBOURS]

    def check(
        self,
        exp: Experience,
        *,
        existing: Sequence[Established | tuple[Any, ...]] | None = None,
        vector: npt.ArrayLike | None = None,
        evidence: EvidenceIndex | None = None,
    ) -> Experience:
        """Clean and check one experience; returns what to store.

        Args:
            exp: the candidate (new, edited, merged, rolled back or rescanned).
            existing: :class:`~hindsight.guard.checker.Established` experiences (or
                ``(content, confidence[, trust[, support]])`` tuples) for the conflict test;
                ``None`` looks them up with :meth:`neighbours`. The candidate's own trust and
                support (``support(exp)``) are weighed against theirs
                (:func:`~hindsight.guard.checker.outweighs`). Ignored for experiences that are
                not of an advice kind (:data:`ADVICE_KINDS`): episodes and other observations
                are never conflict-tested, only checked by the rules and for taint.
            vector: the candidate's embedding (of the cleaned content), to avoid embedding
                it again for the neighbour search.
            evidence: the reviewed trajectory's quotable text, for the taint check.

        Returns:
            ``exp`` cleaned; quarantined with its reasons when the guard fired. An ``active``
            or ``quarantined`` experience is checked: reasons already in its
            ``metadata["quarantine_reasons"]`` are not added again (a lesson a human approved
            is not quarantined again for the reasons they saw), new ones are appended and
            quarantine it; a quarantined one stays quarantined with all its reasons (only
            :func:`~hindsight.guard.quarantine.approve` releases it). Archived, superseded and
            deleted experiences are only cleaned.
        """
        exp = self.clean(exp)
        if self.guard is None or exp.status not in _SCREENED:
            return exp
        if exp.kind not in ADVICE_KINDS:
            existing = []
        elif existing is None:
            existing = self.neighbours(exp, vector)
        verdict = self.guard.check(
            exp.content,
            source=exp.provenance.value,
            existing=existing,
            trust=exp.trust,
            support=self.support(exp),
        )
        reasons = list(verdict.reasons)
        if evidence is not None:
            reasons += evidence.tainted(exp.content, self.guard)
        known = set(exp.metadata.get("quarantine_reasons", ()))
        new = [r for r in dict.fromkeys(reasons) if r not in known]
        if not new:
            return exp
        return quarantine(exp, new, self._now())

    def _now(self) -> datetime:
        return self.clock.now()
