"""Distillation of shared rules across the agents of one tenant (MISSION S14, issue 16 item 5).

Offline method (the one used when no LLM is configured; the only one so far):

1. read the tenant's active lessons of kinds ``rule``, ``anti_pattern``, ``tool_reliability``
   and ``improvement`` in every namespace but the shared one;
2. cluster them by ``metadata["lesson_key"]``: the review gives the same key to the same
   lesson wherever it is learned (``tool_error:<tool>:<status>:<masked error>``,
   ``contrast:arg:<tool>:<argument>:<how>``, ``text:<dedup key>`` of the masked text...), so a
   cluster is one lesson seen by several agents; a lesson without a key is its own cluster;
3. a cluster learned in at least ``min_sources`` (2) **distinct namespaces** becomes one
   general rule in the shared namespace: the text of its most confident member (members share
   the key, so their texts say the same), the union of their tools, the mean of their
   confidences, the kind of the members (the most frequent), ``metadata["lesson_key"]``
   ``distilled:<key>``, ``metadata["distilled_from"]`` the provenance of every source lesson
   (id, namespace, version, confidence) and, for a contrast rule, its ``contrast`` trigger
   (so the distilled rule compiles into the same risk check);
4. it is written through the memory guard like any lesson (``add_experience``), so a
   poisoned cluster is quarantined, not shared.

Idempotent: a cluster whose distilled rule is already active in the shared namespace is left
alone (a second run adds nothing). Never crosses tenants: one tenant's lessons are read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hindsight.checks.compile import COMPILED_KINDS
from hindsight.models import Experience, ExperienceKind

__all__ = ["DISTILLED_PREFIX", "MIN_SOURCES", "Cluster", "clusters"]

#: Prefix of the lesson key of a distilled rule.
DISTILLED_PREFIX = "distilled:"
#: Distinct namespaces (agents) a lesson must be learned in to be shared.
MIN_SOURCES = 2


@dataclass
class Cluster:
    """Lessons of several namespaces with one lesson key."""

    key: str
    members: list[Experience] = field(default_factory=list)

    @property
    def namespaces(self) -> list[str]:
        return sorted({m.namespace for m in self.members})

    def rule(self) -> dict[str, Any]:
        """The arguments of the shared lesson (``add_experience``)."""
        best = max(self.members, key=lambda m: (m.confidence, m.support_count, m.id))
        kind = Counter(m.kind for m in self.members).most_common(1)[0][0]
        tools = list(dict.fromkeys(t for m in self.members for t in m.tools))
        metadata: dict[str, Any] = {
            "lesson_key": DISTILLED_PREFIX + self.key,
            "distilled_from": [
                {
                    "id": m.id,
                    "namespace": m.namespace,
                    "version": m.version,
                    "confidence": m.confidence,
                }
                for m in sorted(self.members, key=lambda m: (m.namespace, m.id))
            ],
            "distill_method": "offline:lesson_key",
        }
        contrast = best.metadata.get("contrast")
        if isinstance(contrast, dict):
            metadata["contrast"] = contrast
        return {
            "content": best.content,
            "kind": kind if isinstance(kind, ExperienceKind) else ExperienceKind(kind),
            "tools": tools,
            "confidence": round(sum(m.confidence for m in self.members) / len(self.members), 6),
            "metadata": metadata,
        }


def clusters(
    lessons: Iterable[Experience], *, shared: str, min_sources: int = MIN_SOURCES
) -> list[Cluster]:
    """The clusters of ``lessons`` (outside the ``shared`` namespace) learned in at least
    ``min_sources`` distinct namespaces, largest first."""
    found: dict[str, Cluster] = {}
    for exp in lessons:
        if exp.namespace == shared or exp.kind not in COMPILED_KINDS:
            continue
        key = exp.metadata.get("lesson_key")
        if not isinstance(key, str) or not key or key.startswith(DISTILLED_PREFIX):
            continue
        found.setdefault(key, Cluster(key)).members.append(exp)
    kept = [c for c in found.values() if len(c.namespaces) >= min_sources]
    return sorted(kept, key=lambda c: (-len(c.namespaces), c.key))


def kinds() -> Sequence[str]:
    """The kinds distillation reads."""
    return [k.value for k in COMPILED_KINDS]
