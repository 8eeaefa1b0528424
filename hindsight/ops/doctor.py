"""``hindsight doctor``: find and repair what makes "recalled nothing" (docs/troubleshooting.md).

Checks, each a :class:`Finding` with a count, a message and whether ``--repair`` fixed it:

* ``vector_index``: where the vectors are searched. pgvector: its version, PostgreSQL's and
  the HNSW index (nothing can lag: the vectors are the rows). An index kept apart from SQL:
  the vector-outbox rows not applied yet (a writer that died between its commit and its
  apply, or a process that cannot reach the index: pending for over
  :data:`STALE_PENDING_SECONDS`), its last error, what was rebuilt when it was opened. Both:
  every process of the store must use the same index (``meta.vector_index``). Repair: apply
  the outbox.
* ``embedding_model``: the store's recorded model vs the open embedder, rows embedded with
  another model (an interrupted ``hindsight reembed``), rows without a stored embedding.
  Repair: embed the missing ones; a model change needs ``hindsight reembed`` (not a repair).
* ``missing_vectors``, ``orphan_points``, ``payload_mismatch`` (an index kept apart from SQL;
  pgvector has nothing to compare): experiences (not deleted) whose point is not in the
  index (repair: rewrite them from the stored embeddings); points with no experience, or of
  a deleted one (repair: delete them); a point whose payload (tenant, namespace, task_type,
  status) differs from its row, so filters find it where they should not, or miss it
  (repair: rewrite it).
* ``stuck_jobs``: review jobs ``running`` with an expired lease (their worker died). Repair:
  back to ``pending``.

Reports counts and ids only (an operator tool: no lesson text, no tenant's data shown).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from hindsight.models import ExperienceStatus
from hindsight.ports import Clock, Embedder, VectorIndex, VectorPoint, WritableVectorIndex
from hindsight.store import vector_payload
from hindsight.store.outbox import INDEX_KEY

__all__ = ["Finding", "diagnose"]

STALE_PENDING_SECONDS = 60.0
"""Outbox rows older than this are reported: every write applies its own at once."""
PAYLOAD_CHECK_LIMIT = 20_000
"""Points whose payload is probed (one filtered search each); beyond it the check samples."""
_SHOW = 20


@dataclass
class Finding:
    """One check: ``name``, ``ok``, ``count`` of problems, ``message``, up to 20 ``ids``,
    and ``repaired`` (how many were fixed with ``--repair``)."""

    name: str
    ok: bool
    count: int = 0
    message: str = ""
    ids: list[str] = field(default_factory=list)
    repaired: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _points(rows: list[Any], vectors: dict[str, Any]) -> list[VectorPoint]:
    return [VectorPoint(r.id, vectors[r.id], vector_payload(r)) for r in rows if r.id in vectors]


def _index_finding(store: Any, index: Any, clock: Clock, vectors: Any, repair: bool) -> Finding:
    """The ``vector_index`` check (see the module docstring)."""
    fixed = 0
    if repair and vectors.index is not None:
        try:
            fixed = vectors.sync()
        except Exception as exc:  # reported below through last_error
            del exc
    mine = vectors.status()
    problems: list[str] = []
    notes: list[str] = []
    recorded = store.get_meta(INDEX_KEY)
    if recorded != mine["kind"]:
        problems.append(
            f"the store's vectors are kept in {recorded or 'no index yet'}, this process uses "
            f"{mine['kind']}: every process must run with the same VECTOR_DB_URL"
        )
    if vectors.index is None:
        head = index.describe() if hasattr(index, "describe") else mine["kind"]
    else:
        head = f"{mine['kind']}, kept apart from SQL: {mine['pending']} outbox row(s) pending"
        oldest = mine["oldest_pending"]
        if oldest is not None:
            age = (clock.now() - datetime.fromisoformat(oldest)).total_seconds()
            if age > STALE_PENDING_SECONDS:
                problems.append(
                    f"outbox rows pending for {age:.0f} s (a writer died after its commit, or "
                    "a process cannot reach the index): run `hindsight doctor --repair`"
                )
        if mine["last_error"]:
            problems.append(f"the index cannot be brought up to date: {mine['last_error']}")
        done = mine["rebuilt"]
        if done and (done["points"] or done["removed"]):
            notes.append(
                f"rebuilt from SQL when opened ({done['reason']}): {done['points']} point(s) "
                f"written, {done['removed']} removed"
            )
    message = "; ".join([head, *problems, *notes])
    return Finding("vector_index", not problems, len(problems), message, [], fixed)


def diagnose(
    store: Any,
    index: VectorIndex,
    embedder: Embedder,
    clock: Clock,
    vectors: Any,
    *,
    repair: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[Finding]:
    """Run every check on an open memory's components (``vectors``: its
    :class:`~hindsight.store.outbox.VectorSync`); repair when asked."""
    say = progress or (lambda _msg: None)
    findings: list[Finding] = []
    sync = vectors.sync

    say("vector index")
    findings.append(_index_finding(store, index, clock, vectors, repair))

    say("embedding model")
    rows = store.all_experiences()
    live = [r for r in rows if r.status is not ExperienceStatus.DELETED]
    model = store.get_meta("embedding_model")
    dim = store.get_meta("embedding_dimension")
    vectors = store.get_vectors([r.id for r in live])
    other = [r.id for r in live if r.embedding_model not in (None, model)]
    no_vec = [r for r in live if r.id not in vectors]
    problems = []
    if model != embedder.name or dim != str(embedder.dimension):
        problems.append(
            f"store model {model} ({dim}-d) but opened with {embedder.name} "
            f"({embedder.dimension}-d): run `hindsight reembed --embedder <spec>`"
        )
    if other:
        problems.append(
            f"{len(other)} row(s) embedded with another model: rerun `hindsight reembed`"
        )
    if no_vec:
        problems.append(f"{len(no_vec)} row(s) without a stored embedding")
    repaired = 0
    if repair and no_vec and model == embedder.name:
        array = embedder.embed([r.content for r in no_vec])
        for r, vec in zip(no_vec, array, strict=True):
            store.update_experience(r, vector=vec)
        vectors.update(store.get_vectors([r.id for r in no_vec]))
        sync()
        repaired = len(no_vec)
    findings.append(
        Finding(
            "embedding_model",
            not problems,
            len(other) + len(no_vec) + (0 if model == embedder.name else 1),
            "; ".join(problems) or f"{embedder.name} ({embedder.dimension}-d)",
            [r.id for r in no_vec][:_SHOW] + other[:_SHOW],
            repaired,
        )
    )

    if not isinstance(index, WritableVectorIndex):  # pgvector: the points are the rows
        return [*findings, _stuck_jobs(store, clock, repair)]
    say("vectors")
    points = index.all_ids()
    expected = {r.id: r for r in live if r.id in vectors}
    missing = sorted(set(expected) - points)
    orphans = sorted(points - set(expected))
    fixed_missing = fixed_orphans = 0
    if repair and missing:
        index.upsert(_points([expected[i] for i in missing], vectors))
        fixed_missing = len(missing)
    if repair and orphans:
        index.delete(orphans)
        fixed_orphans = len(orphans)
    findings.append(
        Finding(
            "missing_vectors",
            not missing,
            len(missing),
            f"{len(missing)} experience(s) have no vector: never found by vector recall"
            if missing
            else "every experience has its vector",
            missing[:_SHOW],
            fixed_missing,
        )
    )
    findings.append(
        Finding(
            "orphan_points",
            not orphans,
            len(orphans),
            f"{len(orphans)} point(s) without a live experience" if orphans else "no orphans",
            orphans[:_SHOW],
            fixed_orphans,
        )
    )

    say("payloads")
    mismatched: list[str] = []
    checked = [r for r in expected.values() if r.id in points or r.id in missing]
    for r in checked[:PAYLOAD_CHECK_LIMIT]:
        if r.id in missing and not repair:
            continue
        hits = index.search(
            np.asarray(vectors[r.id]),
            tenant_id=r.tenant_id,
            namespaces=[r.namespace],
            limit=10,
            task_type=r.task_type,
            statuses=[r.status.value],
        )
        if r.id not in {h.id for h in hits}:
            mismatched.append(r.id)
    fixed_payload = 0
    if repair and mismatched:
        index.upsert(_points([expected[i] for i in mismatched], vectors))
        fixed_payload = len(mismatched)
    sampled = len(checked) > PAYLOAD_CHECK_LIMIT
    findings.append(
        Finding(
            "payload_mismatch",
            not mismatched,
            len(mismatched),
            (
                f"{len(mismatched)} point(s) whose tenant/namespace/task_type/status payload "
                "differs from SQL"
                if mismatched
                else "payloads match SQL"
            )
            + (f" (first {PAYLOAD_CHECK_LIMIT} checked)" if sampled else ""),
            mismatched[:_SHOW],
            fixed_payload,
        )
    )

    return [*findings, _stuck_jobs(store, clock, repair)]


def _stuck_jobs(store: Any, clock: Clock, repair: bool) -> Finding:
    now = clock.now()
    stuck = store.expired_leases(now)
    released = store.release_expired_leases(now) if (repair and stuck) else 0
    return Finding(
        "stuck_jobs",
        not stuck,
        len(stuck),
        f"{len(stuck)} review job(s) running with an expired lease" if stuck else "none",
        stuck[:_SHOW],
        released,
    )
