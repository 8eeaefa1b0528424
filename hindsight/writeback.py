"""Write-back: turning reviewed lessons into stored experiences (MISSION S3).

:func:`lessons_to_experiences` builds experiences from a reviewer's lessons with their
metadata (source trajectory, task_type, tools, trust, reviewer, embedding model).
:class:`WriteBack` is the one write path every new experience goes through: it drops what is
already stored (reviews are idempotent per trajectory), embeds, writes SQL (with outbox rows)
and brings the vector index up to date.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from hindsight._ids import stable_id
from hindsight.models import Experience, Provenance, Trajectory
from hindsight.ports import Embedder, Lesson
from hindsight.store import SqlStore

__all__ = ["PROVENANCE_TRUST", "WriteBack", "lessons_to_experiences", "normalize_content"]

PROVENANCE_TRUST: Mapping[Provenance, float] = {
    Provenance.SYSTEM: 1.0,
    Provenance.USER: 1.0,
    Provenance.TOOL: 0.7,
    Provenance.UNKNOWN: 0.5,
}
"""Trust weight of a lesson by where its evidence came from (MISSION S8: system > user >
unknown); multiplied with the trajectory's own ``trust`` and used as a factor at recall."""

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
    """
    trust = round(traj.trust * PROVENANCE_TRUST.get(traj.source, 0.5), 4)
    out: dict[str, Experience] = {}
    for lesson in lessons:
        content = normalize_content(lesson.content)
        if not content:
            continue
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
            provenance=traj.source,
            source_trajectory_ids=[traj.id],
            created_at=now,
            updated_at=now,
            embedding_model=embedding_model,
            reviewer=reviewer,
            metadata=lesson.metadata,
        )
    return list(out.values())


class WriteBack:
    """The single write path for new experiences.

    Args:
        store: the SQL store (source of truth).
        embedder: embeds experience contents.
        sync_vectors: brings the vector index up to date after a write.
    """

    def __init__(
        self, store: SqlStore, embedder: Embedder, sync_vectors: Callable[[], object]
    ) -> None:
        self.store = store
        self.embedder = embedder
        self._sync = sync_vectors

    def write(self, experiences: Sequence[Experience]) -> list[Experience]:
        """Store ``experiences`` (all of one tenant or several); returns those newly written.

        Experiences whose id is already stored are skipped (idempotent reviews).
        """
        by_tenant: dict[str, list[Experience]] = {}
        for exp in experiences:
            by_tenant.setdefault(exp.tenant_id, []).append(exp)
        new: list[Experience] = []
        for tenant, exps in by_tenant.items():
            existing = self.store.get_experiences(tenant, [e.id for e in exps])
            new.extend(e for e in exps if e.id not in existing)
        if new:
            vectors = self.embedder.embed([e.content for e in new])
            self.store.add_experiences(new, vectors)
            self._sync()
        return new
