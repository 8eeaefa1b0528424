"""``hindsight maintain``: the periodic maintenance jobs for one tenant - dedup, archive,
compression (docs/lifecycle.md#maintenance-audit-re-embed) - with an ``as_of`` time so the
time rules can be tested (and replayed).

1. **dedup**: pairs the write path missed (written by two processes at once, or before
   dedup existed) are folded: first active experiences with the same namespace and
   ``metadata["lesson_key"]``, then near-duplicates by the same rules as on write, restricted
   to NOOP / MERGE (supersede and conflict are decided only when a lesson is written): the
   newer one is folded into the older one
   (:func:`hindsight.writeback.confidence.folded`) and marked ``superseded``
   (``metadata["merged_into"]``).
2. **archive**: :func:`hindsight.writeback.forgetting.archive_stale` at ``as_of``.
3. **compress**: :func:`hindsight.writeback.compression.compress_tenant` over the cap.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from hindsight.config import MemoryConfig
from hindsight.models import Experience, ExperienceStatus
from hindsight.writeback import confidence
from hindsight.writeback.compression import compress_tenant
from hindsight.writeback.dedup import Deduper, Op, decide
from hindsight.writeback.forgetting import archive_stale
from hindsight.writeback.judge import abstract

__all__ = ["dedup_pass", "maintain"]


def _fold_away(
    store: Any, target: Experience, exp: Experience, *, merge: bool, reason: str, actor: str
) -> dict[str, str]:
    """Fold ``exp`` into ``target`` and mark ``exp`` superseded (``merged_into``)."""
    store.fold_into(target.id, exp, fold=confidence.folded, actor=actor, merge=merge, reason=reason)
    store.save_version(
        exp.model_copy(
            update={
                "status": ExperienceStatus.SUPERSEDED,
                "metadata": {**exp.metadata, "merged_into": target.id},
            }
        ),
        change="merge",
        actor=actor,
        reason=f"merged into {target.id}: {reason}",
    )
    return {"kept": target.id, "merged": exp.id}


def dedup_pass(deduper: Deduper, tenant: str, *, actor: str = "maintain") -> list[dict[str, str]]:
    """Fold the tenant's remaining same-key and near-duplicate pairs; returns ``{"kept",
    "merged"}`` pairs."""
    store = deduper.store
    exps = sorted(store.list_experiences(tenant, limit=10_000), key=lambda e: e.created_at)
    gone: set[str] = set()
    merged: list[dict[str, str]] = []
    first: dict[tuple[str, str], Experience] = {}
    for exp in exps:  # oldest first: the first of a key keeps it
        key = exp.metadata.get("lesson_key")
        if not isinstance(key, str) or not key:
            continue
        target = first.setdefault((exp.namespace, key), exp)
        if target.id != exp.id:
            reason = f"same lesson key {key!r}"
            merged.append(_fold_away(store, target, exp, merge=True, reason=reason, actor=actor))
            gone.add(exp.id)
    vectors = store.get_vectors([e.id for e in exps if e.id not in gone])
    for exp in reversed(exps):  # newest first: fold it into an older one
        if exp.id in gone or exp.id not in vectors:
            continue
        cands = [
            (c, s)
            for c, s in deduper.candidates(exp, vectors[exp.id])
            if c.id not in gone and c.created_at <= exp.created_at and c.id != exp.id
        ]
        decision = decide(exp, cands, deduper.threshold)
        if decision.op not in (Op.NOOP, Op.MERGE) or decision.target is None:
            continue
        merge = decision.op is Op.MERGE
        merged.append(
            _fold_away(
                store, decision.target, exp, merge=merge, reason=decision.reason, actor=actor
            )
        )
        gone.add(exp.id)
    return merged


def maintain(
    deduper: Deduper,
    config: MemoryConfig,
    tenant: str,
    as_of: datetime,
    *,
    sync: Callable[[], object],
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run dedup, archive and compression for ``tenant`` (the deduper's store, index and
    embedder; ``config``'s archive and cap settings), bringing the vector index up to date
    (``sync``) after each step. Compression asks the deduper's LLM judge for the more general
    rule of a cluster when there is one (:func:`hindsight.writeback.judge.abstract`).

    Returns:
        ``{"tenant_id", "as_of", "merged": [{"kept","merged"}], "archived": [ids],
        "compressed": [{"task_type","representative","members","by"}], "active_before",
        "active_after"}``.
    """
    say = progress or (lambda _step: None)
    store = deduper.store
    judge = deduper.judge
    summarize = (lambda members: abstract(judge, members)) if judge is not None else None
    before = store.count_experiences(tenant, ["active"])
    say("dedup")
    merged = dedup_pass(deduper, tenant)
    sync()
    say("archive")
    archived = archive_stale(
        store,
        tenant,
        as_of,
        after_days=config.archive_after_days,
        below=config.archive_below_confidence,
    )
    sync()
    say("compress")
    compressed = compress_tenant(
        store,
        deduper.embedder,
        tenant,
        cap=config.active_cap,
        start_threshold=deduper.threshold,
        abstract=summarize,
        guard=deduper.guard,
    )
    sync()
    return {
        "tenant_id": tenant,
        "as_of": as_of.isoformat(),
        "merged": merged,
        "archived": archived,
        "compressed": compressed,
        "active_before": before,
        "active_after": store.count_experiences(tenant, ["active"]),
    }
