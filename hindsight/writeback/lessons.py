"""Lessons to experiences (MISSION S3, S8): the metadata every reviewed lesson is stored with.

:func:`lessons_to_experiences` builds experiences from a reviewer's lessons with their
metadata (source trajectory, task_type, tools, trust, reviewer, embedding model), with ids that
make a second review of the same run store nothing twice.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime

from hindsight._ids import stable_id
from hindsight.guard import TRUST_WEIGHTS, initial_trust
from hindsight.guard.evidence import EvidenceIndex
from hindsight.models import Experience, Provenance, Trajectory
from hindsight.ports import Lesson

__all__ = ["PROVENANCE_TRUST", "lessons_to_experiences", "normalize_content"]

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
