"""Cluster compression: per task_type, an active cap triggers cluster compression
(docs/lifecycle.md#compression-hindsightwritebackcompression).

When a tenant has more than ``MemoryConfig.active_cap`` (500) active experiences of one
task_type, similar ones are clustered and each cluster of two or more is replaced by one more
general experience, until the task_type is back under :data:`TARGET_SHARE` (80 %) of the cap:

* clusters never cross a namespace or a kind (a private lesson never moves into the shared
  namespace); members are joined greedily to the best-supported *leader* whose cosine is at
  least the threshold, which starts at the embedder's ``dedup_threshold`` and is lowered by
  :data:`THRESHOLD_STEP` (down to :data:`MIN_THRESHOLD`) until the target is reached;
* with an LLM (``reflection_model``), a new experience states the cluster's common rule
  (:meth:`hindsight.writeback.judge.Judge.abstract`); without one, or when the LLM fails, the
  most supported member (support, then helped runs, then confidence) stands for the cluster
  and becomes a new version of itself;
* either way the representative links every member's sources, adds up their support, unites
  their evidence and outcomes (confidence recomputed from the highest prior,
  :func:`hindsight.writeback.confidence.combined`) and records ``metadata["compressed_from"]``;
  the other members are archived (restorable).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hindsight._ids import new_id
from hindsight.models import Experience, ExperienceKind, ExperienceStatus
from hindsight.writeback import confidence

__all__ = [
    "MIN_THRESHOLD",
    "TARGET_SHARE",
    "THRESHOLD_STEP",
    "Cluster",
    "cluster",
    "compress_tenant",
]

TARGET_SHARE = 0.8
"""Compression stops once a task_type holds at most this share of the cap."""
THRESHOLD_STEP = 0.05
MIN_THRESHOLD = 0.5
"""Never cluster lessons whose cosine is below this, whatever the cap."""

_PAGE = 5_000


@dataclass
class Cluster:
    """A leader (the representative) and the members folded into it."""

    leader: Experience
    members: list[Experience]


def _priority(exp: Experience) -> tuple[int, int, float, float]:
    return (exp.support_count, exp.helped_count, exp.confidence, exp.updated_at.timestamp())


def cluster(exps: Sequence[Experience], vectors: dict[str, Any], threshold: float) -> list[Cluster]:
    """Greedy leader clustering within (namespace, kind); best-supported first."""
    ordered = sorted((e for e in exps if e.id in vectors), key=_priority, reverse=True)
    leaders: dict[tuple[str, str], list[tuple[Cluster, Any]]] = {}
    out: list[Cluster] = []
    for exp in ordered:
        vec = np.asarray(vectors[exp.id], dtype=np.float32)
        group = leaders.setdefault((exp.namespace, ExperienceKind(exp.kind).value), [])
        best: Cluster | None = None
        best_sim = threshold
        for cand, lvec in group:
            sim = float(np.dot(vec, lvec))
            if sim >= best_sim:
                best, best_sim = cand, sim
        if best is None:
            made = Cluster(exp, [])
            group.append((made, vec))
            out.append(made)
        else:
            best.members.append(exp)
    return out


def _active_by_task_type(store: Any, tenant: str) -> dict[str | None, list[Experience]]:
    groups: dict[str | None, list[Experience]] = {}
    offset = 0
    while True:
        page = store.list_experiences(tenant, limit=_PAGE, offset=offset)
        for exp in page:
            groups.setdefault(exp.task_type, []).append(exp)
        if len(page) < _PAGE:
            return groups
        offset += _PAGE


def compress_tenant(
    store: Any,
    embedder: Any,
    tenant: str,
    *,
    cap: int,
    start_threshold: float,
    abstract: Callable[[list[Experience]], str | None] | None = None,
    guard: Callable[[Experience, Any], Experience] | None = None,
    actor: str = "maintain",
    progress: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Compress every task_type of ``tenant`` that is over ``cap``; returns one report per
    cluster: ``{"task_type", "representative", "members", "by"}`` (``by``: ``llm`` or
    ``most_supported``)."""
    reports: list[dict[str, Any]] = []
    for task_type, exps in _active_by_task_type(store, tenant).items():
        if len(exps) <= cap:
            continue
        target = int(cap * TARGET_SHARE)
        vectors = store.get_vectors([e.id for e in exps])
        threshold = start_threshold
        clusters = cluster(exps, vectors, threshold)
        while len(clusters) > target and threshold - THRESHOLD_STEP >= MIN_THRESHOLD:
            threshold = round(threshold - THRESHOLD_STEP, 4)
            clusters = cluster(exps, vectors, threshold)
        for group in clusters:
            if not group.members:
                continue
            reports.append(_fold(store, embedder, tenant, task_type, group, abstract, guard, actor))
            if progress is not None:
                progress(1)
    return reports


def _fold(
    store: Any,
    embedder: Any,
    tenant: str,
    task_type: str | None,
    group: Cluster,
    abstract: Callable[[list[Experience]], str | None] | None,
    guard: Callable[[Experience, Any], Experience] | None,
    actor: str,
) -> dict[str, Any]:
    everyone = [group.leader, *group.members]
    sources = list(dict.fromkeys(s for e in everyone for s in e.source_trajectory_ids))
    fields: dict[str, Any] = {
        "source_trajectory_ids": sources,
        "support_count": sum(e.support_count for e in everyone),
        "tools": list(dict.fromkeys(t for e in everyone for t in e.tools)),
        "tags": sorted({t for e in everyone for t in e.tags}),
    }
    scored = confidence.combined(everyone)
    fields["confidence"] = scored["confidence"]
    keys = (confidence.SUPPORT_KEY, confidence.BASIS_KEY)
    evidence = {k: scored["metadata"][k] for k in keys if k in scored["metadata"]}
    reason = f"cluster of {len(everyone)} similar experiences"
    text = abstract(everyone) if abstract is not None else None
    rep: Experience | None = None
    by = "most_supported"
    if text:
        vec = embedder.embed([text])[0]
        made = group.leader.model_copy(
            update={
                **fields,
                "id": new_id(),
                "content": text,
                "version": 1,
                "parent_id": None,
                "kind": group.leader.kind,
                "recall_count": 0,
                "helped_count": 0,
                "misled_count": 0,
                "last_recalled_at": None,
                "reviewer": "compression",
                "metadata": {**evidence, "compressed_from": [e.id for e in everyone]},
            }
        )
        made = guard(made, vec) if guard is not None else made
        if made.status is ExperienceStatus.ACTIVE:
            store.add_experiences([made], np.asarray([vec]))
            rep, by = made, "llm"
            archived = everyone
    if rep is None:
        meta = {
            **{k: v for k, v in group.leader.metadata.items() if k not in keys},
            **evidence,
            "compressed_from": list(
                dict.fromkeys(
                    [
                        *group.leader.metadata.get("compressed_from", []),
                        *(e.id for e in group.members),
                    ]
                )
            ),
        }
        rep = store.save_version(
            group.leader.model_copy(update={**fields, "metadata": meta}),
            change="compress",
            actor=actor,
            reason=reason,
        )
        archived = group.members
    store.change_status(
        tenant,
        [e.id for e in archived],
        ExperienceStatus.ARCHIVED.value,
        actor=actor,
        reason=f"compressed into {rep.id}",
        only_from=[ExperienceStatus.ACTIVE.value],
    )
    return {
        "task_type": task_type,
        "representative": rep.id,
        "members": [e.id for e in archived if e.id != rep.id],
        "by": by,
    }
