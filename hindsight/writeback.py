"""Write-back: turning reviewed lessons into stored experiences (MISSION S3).

:func:`lessons_to_experiences` builds experiences from a reviewer's lessons with their
metadata (source trajectory, task_type, tools, trust, reviewer, embedding model).
:class:`WriteBack` is the one write path every new experience goes through: it drops what is
already stored (reviews are idempotent per trajectory), embeds, runs the memory guard
(:meth:`WriteBack.guard_experience`, before anything else looks at the candidate), writes SQL
(with outbox rows) and brings the vector index up to date.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy.typing as npt

from hindsight._ids import stable_id
from hindsight.guard import TRUST_WEIGHTS, initial_trust
from hindsight.guard.evidence import EvidenceIndex
from hindsight.guard.screening import WriteScreen
from hindsight.lifecycle.dedup import RowCache
from hindsight.models import Experience, Provenance, Trajectory
from hindsight.ports import Embedder, Lesson
from hindsight.store import SqlStore

if TYPE_CHECKING:
    from hindsight.lifecycle.dedup import Deduper

__all__ = ["PROVENANCE_TRUST", "WriteBack", "lessons_to_experiences", "normalize_content"]

PROVENANCE_TRUST: Mapping[Provenance, float] = {p: TRUST_WEIGHTS[p.value] for p in Provenance}
"""Trust weight of a lesson by where its evidence came from (MISSION S8: system 1.0 > user 0.9
> tool 0.6 > unknown 0.5); the same numbers as :data:`hindsight.guard.TRUST_WEIGHTS`, which is
the one source of truth. Multiplied with the trajectory's own ``trust``, used as a factor at
recall."""

_WS = re.compile(r"\s+")


def normalize_content(text: str) -> str:
    """Unicode NFKC with runs of whitespace folded to one space, stripped."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def lessons_to_experiences(
    traj: Trajectory,
    lessons: Sequence[Lesson],
    *,
    reviewer: str,
    embedding_model: str,
    now: datetime,
) -> list[Experience]:
    """One experience per lesson of ``traj``, with a deterministic id.

    The id is derived from (trajectory, reviewer, kind, normalised content), so reviewing the
    same trajectory again yields the same ids and nothing is stored twice. Lessons whose
    content is blank after normalisation are skipped.

    Provenance (MISSION S8): each lesson's evidence sources come from what it quotes of the
    run (:func:`hindsight.guard.evidence.lesson_sources`: a lesson quoting only tool output is
    ``tool`` evidence, otherwise the trajectory's ``source``); they are kept in
    ``metadata["evidence"]``, ``provenance`` is the most trusted of them and
    ``trust = traj.trust * initial_trust(sources)``.
    """
    evidence = EvidenceIndex.of(traj)
    out: dict[str, Experience] = {}
    for lesson in lessons:
        content = normalize_content(lesson.content)
        if not content:
            continue
        sources = evidence.sources(content)
        trust = round(traj.trust * initial_trust(sources), 4)
        provenance = Provenance(max(sources, key=lambda s: TRUST_WEIGHTS[s]))
        exp_id = stable_id(traj.id, reviewer, lesson.kind.value, content.lower())
        out[exp_id] = Experience(
            id=exp_id,
            tenant_id=traj.tenant_id,
            namespace=traj.namespace,
            task_type=traj.task_type,
            kind=lesson.kind,
            content=content,
            tools=lesson.tools,
            tags=sorted({*lesson.tags, *traj.tags}),
            confidence=lesson.confidence,
            importance=lesson.importance,
            trust=trust,
            provenance=provenance,
            source_trajectory_ids=[traj.id],
            created_at=now,
            updated_at=now,
            embedding_model=embedding_model,
            reviewer=reviewer,
            metadata={**lesson.metadata, "evidence": sources},
        )
    return list(out.values())


class WriteBack:
    """The single write path for new experiences.

    Pipeline of :meth:`write`: skip ids already stored -> clean + embed -> **1. guard**
    (:meth:`guard_experience`) -> 2. dedup / supersede (issue 4) -> SQL + outbox -> vectors.
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
        """Step 2 (issue 4), set by the engine: :class:`hindsight.lifecycle.dedup.Deduper`."""

    def guard_experience(
        self,
        exp: Experience,
        existing: Sequence[tuple[str, float]] | None = None,
        *,
        vector: npt.ArrayLike | None = None,
        trajectory: Trajectory | EvidenceIndex | None = None,
    ) -> Experience:
        """Run the memory guard on one experience about to be created or edited.

        **Every** path that creates, edits or merges an experience calls this before storing
        it (issue 5): new lessons here in :meth:`write`, and edits, merges and supersedes
        (issue 4) on the version they are about to write.

        Args:
            exp: the experience as it would be stored.
            existing: ``(content, confidence)`` pairs for the conflict test; ``None`` looks up
                the nearest active experiences of the same tenant.
            vector: ``exp``'s embedding, if already computed (saves one embedding call).
            trajectory: the reviewed run (or its :class:`EvidenceIndex`), for the taint check
                of lessons that quote it.

        Returns:
            The experience to store: content without invisible characters (original in
            ``metadata["original_content"]``) and, when the guard fired, status
            ``quarantined`` with ``metadata["quarantine_reasons"]``.
        """
        if self.screen is None:
            return exp
        evidence = (
            EvidenceIndex.of(trajectory) if isinstance(trajectory, Trajectory) else trajectory
        )
        return self.screen.check(exp, existing=existing, vector=vector, evidence=evidence)

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
        if not new:
            return new
        if self.screen is not None:
            new = [self.screen.clean(e) for e in new]
        vectors = self.embedder.embed([e.content for e in new])
        evidence = EvidenceIndex.of(trajectory) if trajectory is not None else None
        cleaned = new

        def screen(rows: RowCache) -> list[Experience]:
            # 1. The memory guard, before dedup (issue 5); neighbour rows read once per batch.
            if self.screen is None:
                return list(cleaned)
            existing = self.screen.neighbours_many(cleaned, vectors, rows.get)
            return [
                self.screen.check(e, existing=existing[i], vector=vectors[i], evidence=evidence)
                for i, e in enumerate(cleaned)
            ]

        # 2. Dedup / merge / supersede of the guarded candidates (issue 4), then store; the
        # deduper syncs the vector index when it is done.
        if self.dedup is not None:
            return self.dedup.write(cleaned, vectors, screen=screen)
        new = screen(RowCache(self.store))
        self.store.add_experiences(new, vectors)
        self._sync()
        return new
