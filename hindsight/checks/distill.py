"""Distillation of shared rules across the agents of one tenant
(docs/checks.md#distillation-rules-learned-by-several-agents).

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

LLM method (when a ``reflection_model`` is configured), after the offline one, for lessons
that say the same thing in different words (different lesson keys):

1. :func:`candidates` proposes groups: lessons of the same kind and trigger tool (the first of
   ``tools``, a contrast rule's tool), outside every offline cluster and every rule already
   distilled, linked when the cosine of their embeddings is at least ``threshold`` (0.5,
   single linkage), from at least ``min_sources`` namespaces with at least two lesson keys;
   at most :data:`MAX_CANDIDATE` lessons each (the most confident);
2. the model confirms which lessons of a group give the same advice and writes the rule
   (:mod:`hindsight.review.llm.distill`, forced JSON); what it returns is checked in code
   (known lessons only, still ``min_sources`` distinct namespaces);
3. :func:`merged_rule` writes it like an offline rule, with the model's text, lesson key
   ``distilled:merge:<hash of the member ids>`` and ``distill_method`` ``llm:<model>``.

A reply that is not the JSON asked for, or a failing provider, stops the LLM method for the
run: the offline rules stand and the report says why (``llm.error``).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hindsight.checks.compile import COMPILED_KINDS
from hindsight.models import Experience, ExperienceKind

__all__ = [
    "DISTILLED_PREFIX",
    "MAX_CANDIDATE",
    "MERGED_PREFIX",
    "MIN_SOURCES",
    "Cluster",
    "candidates",
    "clusters",
    "merged_rule",
    "sources_of",
]

#: Prefix of the lesson key of a distilled rule.
DISTILLED_PREFIX = "distilled:"
#: Distinct namespaces (agents) a lesson must be learned in to be shared.
MIN_SOURCES = 2
#: Prefix of the lesson key of a rule the LLM merged from lessons with different keys.
MERGED_PREFIX = DISTILLED_PREFIX + "merge:"
#: Lessons shown to the model per candidate group (the most confident).
MAX_CANDIDATE = 12


def _rule(members: Sequence[Experience], *, key: str, content: str, method: str) -> dict[str, Any]:
    """The arguments of a shared lesson (``add_experience``) distilled from ``members``."""
    best = max(members, key=lambda m: (m.confidence, m.support_count, m.id))
    kind = Counter(m.kind for m in members).most_common(1)[0][0]
    metadata: dict[str, Any] = {
        "lesson_key": key,
        "distilled_from": [
            {"id": m.id, "namespace": m.namespace, "version": m.version, "confidence": m.confidence}
            for m in sorted(members, key=lambda m: (m.namespace, m.id))
        ],
        "distill_method": method,
    }
    contrasts = [m.metadata.get("contrast") for m in members]
    if isinstance(contrasts[0], dict) and all(c == contrasts[0] for c in contrasts):
        metadata["contrast"] = contrasts[0]
    elif isinstance(best.metadata.get("contrast"), dict) and method.startswith("offline"):
        metadata["contrast"] = best.metadata["contrast"]
    return {
        "content": content,
        "kind": kind if isinstance(kind, ExperienceKind) else ExperienceKind(kind),
        "tools": list(dict.fromkeys(t for m in members for t in m.tools)),
        "confidence": round(sum(m.confidence for m in members) / len(members), 6),
        "metadata": metadata,
    }


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
        return _rule(
            self.members,
            key=DISTILLED_PREFIX + self.key,
            content=best.content,
            method="offline:lesson_key",
        )


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


def _trigger(exp: Experience) -> str:
    contrast = exp.metadata.get("contrast")
    if isinstance(contrast, dict) and isinstance(contrast.get("tool"), str):
        return str(contrast["tool"])
    return exp.tools[0] if exp.tools else ""


def _components(close: Any) -> list[list[int]]:
    """Connected components of the boolean adjacency matrix ``close`` (union-find)."""
    parent = list(range(len(close)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(close)):
        for j in range(i + 1, len(close)):
            if close[i][j]:
                parent[root(j)] = root(i)
    parts: dict[int, list[int]] = {}
    for i in range(len(close)):
        parts.setdefault(root(i), []).append(i)
    return list(parts.values())


def sources_of(rules: Iterable[Experience]) -> set[str]:
    """The ids of the lessons distilled rules were made from (``distilled_from``)."""
    out: set[str] = set()
    for rule in rules:
        for item in rule.metadata.get("distilled_from") or []:
            if isinstance(item, Mapping) and isinstance(item.get("id"), str):
                out.add(item["id"])
    return out


def candidates(
    lessons: Iterable[Experience],
    vectors: Mapping[str, Any],
    *,
    shared: str,
    skip: Iterable[str] = (),
    threshold: float = 0.5,
    min_sources: int = MIN_SOURCES,
) -> list[list[Experience]]:
    """Groups of lessons that may say the same thing in different words (step 1 of the LLM
    method): same kind and trigger tool, cosine of their ``vectors`` (lesson id -> embedding)
    >= ``threshold`` (single linkage), from >= ``min_sources`` namespaces, >= 2 lesson keys;
    lessons of ``shared``, distilled rules and the ids in ``skip`` left out. Each group holds at
    most :data:`MAX_CANDIDATE` lessons (the most confident), groups largest first."""
    skipped = set(skip)
    by_trigger: dict[tuple[str, str], list[Experience]] = {}
    for exp in lessons:
        key = exp.metadata.get("lesson_key")
        if (
            exp.namespace == shared
            or exp.kind not in COMPILED_KINDS
            or exp.id in skipped
            or exp.id not in vectors
            or (isinstance(key, str) and key.startswith(DISTILLED_PREFIX))
        ):
            continue
        by_trigger.setdefault((exp.kind.value, _trigger(exp)), []).append(exp)
    out: list[list[Experience]] = []
    for items in by_trigger.values():
        if len({e.namespace for e in items}) < min_sources:
            continue
        matrix = np.asarray([vectors[e.id] for e in items], dtype=float)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit = matrix / np.where(norms == 0, 1.0, norms)
        close = unit @ unit.T >= threshold
        groups = [[items[i] for i in part] for part in _components(close)]
        for group in groups:
            keys = {e.metadata.get("lesson_key") or e.id for e in group}
            if len({e.namespace for e in group}) >= min_sources and len(keys) >= 2:
                group.sort(key=lambda e: (-e.confidence, e.id))
                out.append(group[:MAX_CANDIDATE])
    return sorted(out, key=lambda g: (-len({e.namespace for e in g}), g[0].id))


def merged_rule(members: Sequence[Experience], text: str, *, model: str) -> dict[str, Any]:
    """The arguments of the shared lesson the model merged from ``members`` (step 3)."""
    digest = hashlib.sha256("\x00".join(sorted(m.id for m in members)).encode()).hexdigest()
    return _rule(members, key=MERGED_PREFIX + digest[:16], content=text, method=f"llm:{model}")


def kinds() -> Sequence[str]:
    """The kinds distillation reads."""
    return [k.value for k in COMPILED_KINDS]
