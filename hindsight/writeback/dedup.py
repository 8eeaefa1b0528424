"""Dedup on write: add, fold into an existing lesson, merge, supersede or flag a conflict, so
that one lesson learned many times is one experience with all its evidence. The rules and their
numbers are in docs/lifecycle.md#dedup-on-write-hindsightwritebackdedup.

0. **Same lesson key** (a reviewer's identity of a lesson across runs, docs/review.md) - a
   new active lesson whose ``metadata["lesson_key"]`` equals that of an active experience of
   the same tenant and namespace (the oldest, if several; one written earlier in the same
   batch counts) is folded into it before any similarity test: no new row, a new version
   (``merge``), its text unchanged (unless the lesson has one varying part and the new one
   brings another value of it: :mod:`hindsight.writeback.variants`; the folded text is kept
   in the audit log), sources and evidence united, confidence recomputed
   (:func:`hindsight.writeback.confidence.folded`).
   Quarantined, archived or superseded experiences are never the target.

Each other new active experience is compared with the closest active experiences of the same
**scope** (tenant, namespace, task_type, kind): up to :data:`CANDIDATES` neighbours from the
vector index plus those written earlier in the same batch. A neighbour about another subject
(:func:`different_subjects`: another lesson key, or no tool or code name in common; or an
aligned change that replaces one code name with another, :func:`changes_subject`) is passed
over past rule 1: lessons about two tools or two arguments are two lessons, not one lesson
with other values. The first rule that applies wins:

1. **NOOP** - same text up to case, whitespace and prose punctuation
   (:func:`~hindsight.writeback.text.dedup_key`: operators, signs and other meaning-bearing
   marks count, :mod:`hindsight.writeback.meaning`): no new row; the existing one gets the new
   sources and evidence (:func:`hindsight.writeback.confidence.folded`: the same run never
   counts twice) and ``support_count + 1`` when a run not seen before supports it.
2. **CONFLICT** (negation) - similar texts of opposite polarity ("always X" / "never X"):
   added, ``metadata["conflicts_with"]`` of each names the other; both stay recallable, the
   rendered block marks both, and the older one's confidence is lowered (the newer one's runs
   count half against it: :func:`hindsight.writeback.confidence.contradicted`).
3. **MERGE** - cosine >= the embedder's ``dedup_threshold``, the same words in the same
   order up to case, punctuation, articles and a few filler words
   (:func:`~hindsight.writeback.text.word_difference`), the same specifics (numbers,
   versions, identifiers, names) and the same meaning-bearing tokens
   (:func:`~hindsight.writeback.meaning.meaning_change` is ``None``: operators, signs,
   numbers, negations, units, comparatives, opposites): folded like NOOP, written as a new
   version of the existing experience with both sources linked; the folded text is kept in
   the audit log. A close pair that differs in a meaning-bearing token goes on to the next
   rules: two lessons, or a supersede or a conflict (both texts stored).
4. **SUPERSEDE** - the same statement with 1-2 values changed and evidence that the newer one
   corrects the older (the value sits in a setting slot like ``retry=3`` / ``is 100/min``, or
   the newer text names the old value or a correction word): added; the older one becomes
   ``superseded`` (never recalled, restorable), the newer one's runs count against it
   (:func:`hindsight.writeback.confidence.superseded`) and it links to the newer one. An
   *established* older lesson (``support_count >= ESTABLISHED_SUPPORT`` or
   ``helped_count >= ESTABLISHED_HELPED``) is not overturned by one run: CONFLICT instead.
5. **CONFLICT** (values) - the same statement with other values but no correction evidence
   ("pandas 1.5" vs "pandas 2.1"): both kept and marked as in rule 2, the older one lowered.
6. **ADD** otherwise.

Episodic kinds (``outcome``, ``key_step``, ``task_scope``, ``episode``) record single runs:
two runs never supersede or conflict with each other (rules 2, 4, 5 do not apply), and
``episode`` summaries are never folded at all.

When an LLM judge is configured (:mod:`hindsight.writeback.judge`), it decides between ADD /
UPDATE (= supersede) / MERGE / NOOP for every non-exact case that has a candidate; a failed or
invalid judgement falls back to these rules, and so does a MERGE or NOOP of two texts that
differ in a meaning-bearing token (a merged wording that changes one is not used). Nothing
here ever deletes a row.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight.config import MemoryConfig
from hindsight.guard.conflict import compare
from hindsight.models import Experience, ExperienceKind, ExperienceStatus
from hindsight.ports import Embedder, FloatMatrix, VectorHit, VectorIndex, embedded
from hindsight.store import SqlStore
from hindsight.writeback import confidence, variants
from hindsight.writeback.decision import Decision, Op
from hindsight.writeback.meaning import meaning_change
from hindsight.writeback.text import (
    TEXT_CACHE_SIZE,
    cannot_align,
    compare_texts,
    dedup_key,
    word_difference,
)

if TYPE_CHECKING:
    from hindsight.writeback.judge import Judge

__all__ = [
    "CANDIDATES",
    "DEFAULT_DEDUP_THRESHOLD",
    "ESTABLISHED_HELPED",
    "ESTABLISHED_SUPPORT",
    "WORKING_SET_ROWS",
    "Decision",
    "Deduper",
    "Op",
    "RowCache",
    "WorkingSet",
    "decide",
    "dedup_threshold_of",
    "make_deduper",
]

log = logging.getLogger("hindsight")

DEFAULT_DEDUP_THRESHOLD = 0.92
"""Cosine above which two lessons are near-duplicates when the embedder documents none
(about 0.92 for real embedders; hash 0.8 and all-MiniLM-L6-v2 0.9 are documented on their
classes)."""
ESTABLISHED_SUPPORT = 3
"""An older lesson learned from this many runs is not superseded by one newer run."""
ESTABLISHED_HELPED = 2
"""An older lesson that helped this many successful runs is not superseded by one newer run."""
CANDIDATES = 20
"""Neighbours fetched from the vector index per new lesson (same tenant and namespace)."""
JUDGE_MARGIN = 0.2
"""The judge is asked only when the closest candidate is within this much cosine of the
dedup threshold (or the rules found a link): far-apart lessons are plainly ADD."""
RULE_CANDIDATES = 5
"""How many of the closest candidates the supersede/conflict rules look at."""

EPISODIC = frozenset(
    {
        ExperienceKind.OUTCOME.value,
        ExperienceKind.KEY_STEP.value,
        ExperienceKind.TASK_SCOPE.value,
        "episode",
    }
)
NEVER_FOLDED = frozenset({"episode"})


def dedup_threshold_of(embedder: Any) -> float:
    """The embedder's documented ``dedup_threshold``, or :data:`DEFAULT_DEDUP_THRESHOLD`."""
    value = getattr(embedder, "dedup_threshold", None)
    if isinstance(value, int | float) and not isinstance(value, bool) and -1 <= value <= 1:
        return float(value)
    return DEFAULT_DEDUP_THRESHOLD


_key = lru_cache(maxsize=TEXT_CACHE_SIZE)(dedup_key)


def _never_folded(exp: Experience) -> bool:
    """Whether ``exp`` is of a kind never folded (:data:`NEVER_FOLDED`)."""
    kind = exp.kind.value if isinstance(exp.kind, ExperienceKind) else str(exp.kind)
    return kind in NEVER_FOLDED


class EarlierInBatch:
    """The earlier lessons of one batch in one scope, with their vectors stacked, so that a
    lesson is compared with its :data:`CANDIDATES` nearest earlier ones through one matrix
    product, not one dot product per earlier lesson (a batch of ``n`` lessons of one scope
    cost ``n**2 / 2`` Python steps). The earlier lesson with the same text up to case,
    whitespace and prose punctuation (rule 1 of the module docstring) is always among them,
    however far its vector is. Built by :meth:`Deduper.write_items`; a plain sequence of
    ``(experience, vector)`` pairs is still accepted by :meth:`Deduper.candidates`.
    """

    def __init__(self, items: Sequence[tuple[Experience, Any]] = ()) -> None:
        self.items: list[tuple[Experience, Any]] = []
        self._rows: np.ndarray | None = None  # float32, capacity >= len(items)
        self._keys: dict[str, int] = {}
        for exp, vec in items:
            self.append(exp, vec)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Any:
        return iter(self.items)

    def append(self, exp: Experience, vec: Any) -> None:
        row = np.asarray(vec, dtype=np.float32).reshape(-1)
        n = len(self.items)
        if self._rows is None or self._rows.shape[1] != row.shape[0]:
            self._rows = np.empty((max(16, n + 1), row.shape[0]), dtype=np.float32)
            for i, (_, v) in enumerate(self.items):
                self._rows[i] = np.asarray(v, dtype=np.float32).reshape(-1)
        elif n >= self._rows.shape[0]:
            grown = np.empty((2 * n, self._rows.shape[1]), dtype=np.float32)
            grown[:n] = self._rows[:n]
            self._rows = grown
        self._rows[n] = row
        self.items.append((exp, vec))
        self._keys.setdefault(_key(exp.content), n)

    def replace(self, exp: Experience) -> None:
        """The earlier lesson with ``exp``'s id becomes ``exp`` (a lesson folded into it), its
        vector kept."""
        for i, (old, vec) in enumerate(self.items):
            if old.id == exp.id:
                self.items[i] = (exp, vec)
                self._keys.setdefault(_key(exp.content), i)

    def nearest(self, query: Any, content: str, limit: int) -> list[tuple[Experience, float]]:
        """At most ``limit`` earlier lessons closest to ``query`` (cosine of unit vectors),
        plus the one with ``content``'s text key; unordered."""
        n = len(self.items)
        if n == 0 or self._rows is None:
            return []
        sims = self._rows[:n] @ np.asarray(query, dtype=np.float32).reshape(-1)
        picked = range(n) if n <= limit else np.argpartition(-sims, limit - 1)[:limit]
        chosen = {int(i) for i in picked}
        same = self._keys.get(_key(content))
        if same is not None:
            chosen.add(same)
        return [(self.items[i][0], float(sims[i])) for i in sorted(chosen)]


""":func:`dedup_key`, remembered: a stored lesson is a candidate of many new ones."""


def _opposite(older: str, newer: str) -> bool:
    """Rule 2: the same subject (key-term overlap >= 0.6) with opposite polarity."""
    polar = compare(older, newer)
    return polar.polarity_a != polar.polarity_b and polar.overlap >= 0.6


def _established(exp: Experience) -> bool:
    return exp.support_count >= ESTABLISHED_SUPPORT or exp.helped_count >= ESTABLISHED_HELPED


#: A code name in free text: ``snake_case`` (``get_order``, ``payment_id``) or ``camelCase``
#: (``getOrder``), not inside a longer ASCII word (next to Chinese text too); the names tools
#: and arguments have.
_CODE_NAME = re.compile(
    r"(?<![A-Za-z0-9_-])(?:[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z]+[0-9]*(?:[A-Z][a-z0-9]+)+)"
    r"(?![A-Za-z0-9_-])"
)
_DIGITS = re.compile(r"[0-9]+")


def _code_name(text: str) -> str:
    """A code name up to its digits (``order_v1`` and ``order_v2`` are one name, another
    version of it), lower case."""
    return _DIGITS.sub("", text).lower()


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def named_code(text: str) -> frozenset[str]:
    """The code names (:data:`_CODE_NAME`, up to digits) a lesson's text names."""
    return frozenset(_code_name(m) for m in _CODE_NAME.findall(text))


def _subjects(exp: Experience) -> frozenset[str]:
    """What a lesson is about: its ``tools``, else the code names its text names."""
    if exp.tools:
        return frozenset(_code_name(t) for t in exp.tools)
    return named_code(exp.content)


def different_subjects(a: Experience, b: Experience) -> bool:
    """Whether ``a`` and ``b`` are lessons about different things, so that no rule past the
    exact-text one relates them: both carry a ``metadata["lesson_key"]`` and the keys differ
    (a reviewer's key names the tool, argument or error a lesson is about), or both are about
    tools or arguments (their ``tools``, or for a lesson without ``tools`` the code names its
    text names, :func:`named_code`) and share none. "Before calling book_trip, check
    passengers" and "Before calling pay_order, check cabin" differ only in their subjects:
    other lessons, not one lesson with other values, and neither may lower, supersede or merge
    the other."""
    key_a, key_b = a.metadata.get("lesson_key"), b.metadata.get("lesson_key")
    if isinstance(key_a, str) and isinstance(key_b, str) and key_a and key_b:
        return key_a != key_b
    subjects_a, subjects_b = _subjects(a), _subjects(b)
    return bool(subjects_a) and bool(subjects_b) and not subjects_a & subjects_b


def changes_subject(changes: Sequence[tuple[str, str]]) -> bool:
    """Whether an aligned change replaces one code name with another (``create_address ->
    sync_order``, ``retry_count -> timeout_ms``): the same sentence about another tool or
    argument is another lesson, not the lesson with other values. A name that differs only in
    its digits (``order_v1 -> order_v2``) is a value."""
    for old, new in changes:
        before, after = named_code(old), named_code(new)
        if before and after and not before & after:
            return True
    return False


def decide(
    new: Experience, candidates: Sequence[tuple[Experience, float]], threshold: float
) -> Decision:
    """The rules' decision for ``new`` given ``candidates`` (same scope, best first, each
    with its cosine similarity). Pure function: see the module docstring for the rules."""
    kind = new.kind.value if isinstance(new.kind, ExperienceKind) else str(new.kind)
    if kind in NEVER_FOLDED or not candidates:
        return Decision(Op.ADD, reason="no similar experience in scope")
    key = _key(new.content)
    for cand, sim in candidates:
        if _key(cand.content) == key:
            return Decision(
                Op.NOOP, cand, sim, "same text up to case, whitespace and prose punctuation"
            )
    episodic = kind in EPISODIC
    unlike: str | None = None  # the first close pair kept apart by a meaning-bearing token
    for cand, sim in candidates[:RULE_CANDIDATES]:
        if different_subjects(cand, new):
            continue
        if cannot_align(cand.content, new.content):
            # Not the same specifics, not aligned, not an update: only the polarity test of
            # a close pair can apply (the same outcome as with the full comparison below).
            if not episodic and sim >= threshold and _opposite(cand.content, new.content):
                return Decision(Op.CONFLICT, cand, sim, "same subject, opposite polarity")
            continue
        diff = compare_texts(cand.content, new.content)
        if changes_subject(diff.value_changes):
            continue  # the same sentence about another tool or argument: another lesson
        close = sim >= threshold or diff.aligned or diff.same_specifics
        if not episodic and close and _opposite(cand.content, new.content):
            return Decision(Op.CONFLICT, cand, sim, "same subject, opposite polarity")
        if diff.same_specifics and sim >= threshold:
            change = meaning_change(cand.content, new.content)
            if change is None:
                change = word_difference(cand.content, new.content)
            if change is None:
                return Decision(
                    Op.MERGE, cand, sim, f"near-duplicate (cosine {sim:.3f} >= {threshold:.2f})"
                )
            unlike = unlike or f"not a near-duplicate of {cand.id}: {change}"
        if episodic:
            continue
        changed = ", ".join(f"{a} -> {b}" for a, b in diff.value_changes)
        if diff.is_update:
            if _established(cand):
                return Decision(
                    Op.CONFLICT,
                    cand,
                    sim,
                    f"values changed ({changed}) but the older lesson is established",
                )
            return Decision(Op.SUPERSEDE, cand, sim, f"newer values ({changed})")
        if diff.aligned:
            return Decision(Op.CONFLICT, cand, sim, f"same statement, other values ({changed})")
    return Decision(Op.ADD, reason=unlike or "different lesson")


def _shares_key(exp: Experience, pending: Sequence[tuple[Experience, Any]]) -> bool:
    """Whether a lesson not yet stored has ``exp``'s tenant, namespace and lesson key."""
    key = exp.metadata.get("lesson_key")
    return bool(key) and any(
        other.metadata.get("lesson_key") == key
        and other.tenant_id == exp.tenant_id
        and other.namespace == exp.namespace
        for other, _ in pending
    )


WORKING_SET_ROWS = 16_384
"""Rows a :class:`WorkingSet` keeps per tenant (least recently used dropped first): every
neighbour of a 10k-lesson tenant, a few KB each."""
WORKING_SET_TENANTS = 8
"""Tenants a :class:`WorkingSet` keeps rows of (least recently written dropped first)."""


class WorkingSet:
    """The decoded rows dedup and the guard read, kept from one write batch to the next, per
    tenant, in step with the store (the batch write: docs/lifecycle.md, "Adding lessons in a
    batch").

    A batch of a tenant whose experiences nobody changed since this process's previous batch
    reads no neighbour row from SQL twice. Kept exact by the tenant's change stamp
    (:meth:`SqlStore.experience_stamp`, bumped by database triggers on every insert, update
    and delete by any process or code path, except an update of the recall bookkeeping alone,
    which dedup and the guard do not read): :meth:`begin`, inside the batch's write
    transaction, reads and locks the stamp and drops the tenant's rows when it moved since
    :meth:`end` of the previous batch; rows the batch itself changes are dropped as it changes
    them (:meth:`RowCache.forget`); :meth:`end` records the stamp after the batch's writes
    (nobody else could write in between); :meth:`abort` (a rolled back batch) drops them all.
    Stored rows are kept without the recall counters buffered in this process; those are
    added on every use (:meth:`SqlStore.with_pending_recalls`).

    Not thread-safe: used under the :class:`Deduper`'s write lock.

    Args:
        store: the SQL store.
        rows: rows kept per tenant (:data:`WORKING_SET_ROWS`).
        tenants: tenants kept (:data:`WORKING_SET_TENANTS`).
    """

    def __init__(
        self, store: SqlStore, *, rows: int = WORKING_SET_ROWS, tenants: int = WORKING_SET_TENANTS
    ) -> None:
        self._store = store
        self.rows = rows
        self.tenants = tenants
        self._kept: OrderedDict[str, OrderedDict[str, Experience | None]] = OrderedDict()
        self._stamps: dict[str, int] = {}
        self._open: dict[str, bool] = {}
        self.hits = 0
        """Rows served from memory (for tests and profiles)."""
        self.misses = 0
        """Rows read from SQL."""

    def begin(self, tenants: Sequence[str]) -> None:
        """Start a batch writing ``tenants`` (inside its write transaction, before any read):
        the rows of a tenant whose stamp moved since the previous :meth:`end` are dropped."""
        self._open = {}
        for tenant in sorted(set(tenants)):  # sorted: the store's one lock order
            stamp = self._store.experience_stamp(tenant, lock=True)
            if stamp is None or self._stamps.pop(tenant, None) != stamp:
                self._kept.pop(tenant, None)
            self._open[tenant] = stamp is not None

    def end(self) -> None:
        """The batch wrote everything (inside its transaction, after its last write): its
        tenants' rows are current at the stamp read now (until :meth:`abort`)."""
        for tenant, locked in self._open.items():
            stamp = self._store.experience_stamp(tenant) if locked else None
            if stamp is not None and tenant in self._kept:
                self._stamps[tenant] = stamp

    def abort(self) -> None:
        """The batch failed (rolled back, also after :meth:`end`): drop its tenants' rows."""
        for tenant in self._open:
            self._kept.pop(tenant, None)
            self._stamps.pop(tenant, None)
        self._open.clear()

    def get(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Experience | None]:
        """The kept rows among ``ids`` (``None``: known to be absent), as stored; nothing for
        a tenant the current batch did not :meth:`begin`."""
        kept = self._kept.get(tenant_id) if tenant_id in self._open else None
        if not kept:
            return {}
        out = {i: kept[i] for i in ids if i in kept}
        for i in out:
            kept.move_to_end(i)
        self.hits += len(out)
        return out

    def put(self, tenant_id: str, rows: dict[str, Experience | None]) -> None:
        """Keep rows read from SQL (inside the batch) of a tenant :meth:`begin` opened."""
        if tenant_id not in self._open or not rows:
            return
        self.misses += len(rows)
        kept = self._kept.get(tenant_id)
        if kept is None:
            kept = self._kept[tenant_id] = OrderedDict()
        self._kept.move_to_end(tenant_id)
        kept.update(rows)
        while len(kept) > self.rows:
            kept.popitem(last=False)
        while len(self._kept) > self.tenants:
            gone, _ = self._kept.popitem(last=False)
            self._stamps.pop(gone, None)

    def forget(self, tenant_id: str, ids: Sequence[str]) -> None:
        """Drop rows the batch changed."""
        kept = self._kept.get(tenant_id)
        if kept:
            for i in ids:
                kept.pop(i, None)


class RowCache:
    """Experiences read from SQL at most once per write batch (the write path's reads).

    The guard's conflict neighbours and the dedup candidates of every lesson of a batch are
    read through one cache: one query per tenant for the ids not seen yet, instead of one per
    lesson and per check. :meth:`forget` drops rows a decision of the batch changed, so the
    next lesson reads them fresh, exactly as when each lesson read its own rows. With a
    :class:`WorkingSet`, rows kept from earlier batches are not read again either.

    Args:
        store: the SQL store (``get_experiences``).
        working: the memory's :class:`WorkingSet` (its :meth:`~WorkingSet.begin` called for
            the batch's tenants), or ``None``.
    """

    def __init__(self, store: SqlStore, working: WorkingSet | None = None) -> None:
        self._store = store
        self._working = working
        self._rows: dict[tuple[str, str], Experience | None] = {}
        self._wanted: dict[str, list[str]] = {}

    def want(self, tenant_id: str, ids: Sequence[str]) -> None:
        """Read these too with the tenant's next query (one query instead of two)."""
        self._wanted.setdefault(tenant_id, []).extend(ids)

    def get(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Experience]:
        """The tenant's experiences among ``ids`` (absent ones left out), by id.

        Raises:
            TenantRequiredError, UsageError: as :meth:`SqlStore.get_experiences`.
        """
        wanted = [*ids, *self._wanted.pop(tenant_id, ())]
        missing = [i for i in dict.fromkeys(wanted) if (tenant_id, i) not in self._rows]
        if missing and self._working is not None:
            stored = self._working.get(tenant_id, missing)
            if stored:
                missing = [i for i in missing if i not in stored]
            read = (
                self._store.get_experiences(tenant_id, missing, pending_recalls=False)
                if missing
                else {}
            )
            fresh = {i: read.get(i) for i in missing}
            self._working.put(tenant_id, fresh)
            stored.update(fresh)
            present = {i: e for i, e in stored.items() if e is not None}
            found = self._store.with_pending_recalls(tenant_id, present)
            for i in stored:
                self._rows[(tenant_id, i)] = found.get(i)
        elif missing:
            found = self._store.get_experiences(tenant_id, missing)
            for i in missing:
                self._rows[(tenant_id, i)] = found.get(i)
        out: dict[str, Experience] = {}
        for i in ids:
            row = self._rows[(tenant_id, i)]
            if row is not None:
                out[i] = row
        return out

    def forget(self, tenant_id: str, ids: Sequence[str]) -> None:
        """Drop cached rows (they changed); the next :meth:`get` reads them again."""
        for i in ids:
            self._rows.pop((tenant_id, i), None)
        if self._working is not None:
            self._working.forget(tenant_id, ids)


class Deduper:
    """Step 2 of :meth:`hindsight.writeback.WriteBack.write`: dedup, merge, supersede, store.

    Thread-safe: one decision-and-write at a time per process (concurrent processes may
    both add a duplicate; ``hindsight maintain`` folds such pairs later).

    Args:
        store: the SQL store.
        index: the vector index (source of candidates; kept in sync by ``sync``).
        embedder: its ``dedup_threshold`` is used (default 0.92), and it embeds merged texts.
        sync: brings the vector index up to date (called at the end of each write).
        judge: optional LLM judge (:class:`hindsight.writeback.judge.Judge`).
        guard: optional check run on a merged text before it is written (docs/security.md).
    """

    def __init__(
        self,
        store: SqlStore,
        index: VectorIndex,
        embedder: Embedder,
        sync: Callable[[], object],
        *,
        judge: Judge | None = None,
        guard: Callable[[Experience, Any], Experience] | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.threshold = dedup_threshold_of(embedder)
        self._sync = sync
        self.judge = judge
        self.guard = guard
        self.working_set: WorkingSet | None = WorkingSet(store)
        """The rows kept between batches (:class:`WorkingSet`); ``None`` reads every batch's
        rows from SQL."""
        self._lock = threading.Lock()

    # -- candidates ------------------------------------------------------------------------
    @staticmethod
    def _scope(exp: Experience) -> tuple[str, str, str | None, str]:
        return (exp.tenant_id, exp.namespace, exp.task_type, ExperienceKind(exp.kind).value)

    def search(self, exp: Experience, vector: Any) -> list[VectorHit]:
        """The index query behind :meth:`candidates`: the :data:`CANDIDATES` nearest active
        points of ``exp``'s tenant, namespace and task_type."""
        return self.index.search(
            vector,
            tenant_id=exp.tenant_id,
            namespaces=[exp.namespace],
            limit=CANDIDATES,
            task_type=exp.task_type,
        )

    def search_all(
        self, experiences: Sequence[Experience], vectors: FloatMatrix
    ) -> list[list[VectorHit]]:
        """:meth:`search` of each active experience (``[]`` for the others, and for the kinds
        never folded, :data:`NEVER_FOLDED`: nothing is decided from their neighbours), as one
        batched query per scope when the index has ``search_many`` (Qdrant Edge: one pass over
        the segments for a whole batch of lessons), else one query each."""
        out: list[list[VectorHit]] = [[] for _ in experiences]
        scopes: dict[tuple[str, str, str | None], list[int]] = {}
        for i, exp in enumerate(experiences):
            if exp.status is ExperienceStatus.ACTIVE and not _never_folded(exp):
                scopes.setdefault((exp.tenant_id, exp.namespace, exp.task_type), []).append(i)
        many = getattr(self.index, "search_many", None)
        rows = np.asarray(vectors, dtype=np.float32)
        for (tenant, namespace, task_type), where in scopes.items():
            if many is None or len(where) == 1:
                for i in where:
                    out[i] = self.search(experiences[i], rows[i])
                continue
            found = many(
                rows[where],
                tenant_id=tenant,
                namespaces=[namespace],
                limit=CANDIDATES,
                task_type=task_type,
                payload=False,
            )
            for i, hits in zip(where, found, strict=True):
                out[i] = list(hits)
        return out

    def candidates(
        self,
        exp: Experience,
        vector: Any,
        batch: Sequence[tuple[Experience, Any]] | EarlierInBatch = (),
        *,
        hits: Sequence[VectorHit] | None = None,
        rows: RowCache | None = None,
    ) -> list[tuple[Experience, float]]:
        """Active experiences of ``exp``'s scope closest to ``vector``, best first.

        ``hits``: the result of :meth:`search` when already run; ``rows``: the batch's
        :class:`RowCache` (default: read from the store)."""
        scope = self._scope(exp)
        found = self.search(exp, vector) if hits is None else hits
        ids = [h.id for h in found]
        rows_by_id = (
            rows.get(exp.tenant_id, ids)
            if rows is not None
            else self.store.get_experiences(exp.tenant_id, ids)
        )
        out: dict[str, tuple[Experience, float]] = {}
        for hit in found:
            cand = rows_by_id.get(hit.id)
            if cand is None or cand.status is not ExperienceStatus.ACTIVE or cand.id == exp.id:
                continue
            if self._scope(cand) == scope:
                out[cand.id] = (cand, float(hit.similarity))
        if isinstance(batch, EarlierInBatch):  # one scope already: the nearest ones
            for other, sim in batch.nearest(vector, exp.content, CANDIDATES):
                if other.status is ExperienceStatus.ACTIVE:
                    out[other.id] = (other, sim)
        else:
            query = np.asarray(vector, dtype=np.float32)
            for other, other_vec in batch:
                if self._scope(other) == scope and other.status is ExperienceStatus.ACTIVE:
                    out[other.id] = (other, float(np.dot(query, np.asarray(other_vec))))
        return sorted(out.values(), key=lambda pair: -pair[1])

    def decide(
        self,
        exp: Experience,
        vector: Any,
        batch: Sequence[tuple[Experience, Any]] | EarlierInBatch = (),
        *,
        hits: Sequence[VectorHit] | None = None,
        rows: RowCache | None = None,
    ) -> Decision:
        """The decision for ``exp``: the judge's when configured and usable, else the rules'.
        ``hits`` / ``rows``: see :meth:`candidates`."""
        if _never_folded(exp):
            return decide(exp, [], self.threshold)  # added: no neighbour is looked up
        cands = self.candidates(exp, vector, batch, hits=hits, rows=rows)
        ruled = decide(exp, cands, self.threshold)
        if self.judge is None or not cands or ruled.op is Op.NOOP:
            return ruled
        if cands[0][1] < self.threshold - JUDGE_MARGIN and ruled.op is Op.ADD:
            return ruled  # nothing close enough to ask about
        judged = self.judge.decide(exp, cands[:RULE_CANDIDATES])
        if judged is None:
            return ruled
        if judged.op in (Op.NOOP, Op.MERGE) and judged.target is not None:
            change = meaning_change(judged.target.content, exp.content)
            if change is not None:  # the judge may not fold what means something else
                log.info("hindsight: judge's %s overruled (%s)", judged.op.value, change)
                return ruled
        return judged

    def same_key(self, exp: Experience) -> Decision | None:
        """Rule 0: a MERGE into the active experience of ``exp``'s tenant and namespace with
        the same ``metadata["lesson_key"]``, or ``None`` (no key, not active, an episode, or
        no such experience)."""
        key = exp.metadata.get("lesson_key")
        if not isinstance(key, str) or not key or exp.status is not ExperienceStatus.ACTIVE:
            return None
        if _never_folded(exp):
            return None
        target = self.store.active_by_lesson_key(exp.tenant_id, exp.namespace, key)
        if target is None or target.id == exp.id:
            return None
        return Decision(Op.MERGE, target, None, f"same lesson key {key!r}", by="lesson_key")

    # -- writing ---------------------------------------------------------------------------
    def write(
        self,
        experiences: Sequence[Experience],
        vectors: FloatMatrix,
        *,
        screen: Callable[[RowCache], Sequence[Experience]] | None = None,
    ) -> list[Experience]:
        """Decide and store each experience; returns what each one became (the new row, or
        the existing experience it was folded into), in input order, without repeats.

        As :meth:`write_items` (same arguments), keeping each stored row once.
        """
        results: dict[str, Experience] = {}
        for _, stored in self.write_items(experiences, vectors, screen=screen):
            results[stored.id] = stored
        return list(results.values())

    def write_items(
        self,
        experiences: Sequence[Experience],
        vectors: FloatMatrix,
        *,
        screen: Callable[[RowCache], Sequence[Experience]] | None = None,
    ) -> list[tuple[str, Experience]]:
        """Decide and store each experience; returns ``(result, stored)`` per input, in input
        order: ``"created"`` (a new row: added, superseding or in conflict with an older one;
        ``stored`` is that row), ``"merged"`` (folded into an existing experience or an earlier
        one of the same batch; ``stored`` is that experience as it now is) or
        ``"quarantined"`` (stopped by the guard, stored as quarantined).

        Args:
            experiences: the candidates, one row of ``vectors`` each.
            vectors: their embeddings, shape ``(len(experiences), dimension)``.
            screen: the memory guard's step for the batch (docs/security.md), run first under this
                write's lock with the index freshly synced; given the batch's
                :class:`RowCache`, returns the experiences to write in the same order
                (possibly quarantined). The write path (:meth:`WriteBack.write`) passes it
                so that the guard and dedup read each neighbour row once.

        The index is queried for every lesson before the screen and the first decision
        (nothing is synced in between, so the hits are those a query at decision time would
        get; the guard leaves tenant, scope and content as they are); rows a decision changes
        are read again for the next lessons. Every SQL write of the batch is one transaction
        (:meth:`SqlStore.batch`: all or nothing); the vector index is synced after its commit.
        """
        out: list[tuple[str, Experience]] = []
        with self._lock:
            self._sync()
            working = self.working_set
            rows = RowCache(self.store, working)
            hits = self.search_all(experiences, vectors)
            try:
                with self.store.batch():
                    # the tenants' stamp rows first (one lock order, see SqlStore._lock_tenants)
                    tenants = sorted({exp.tenant_id for exp in experiences})
                    if working is not None:  # rows kept from earlier batches, if still exact
                        working.begin(tenants)
                    else:
                        for tenant in tenants:
                            self.store.experience_stamp(tenant, lock=True)
                    for exp, found in zip(experiences, hits, strict=True):
                        rows.want(exp.tenant_id, [h.id for h in found])
                    if screen is not None:  # its neighbours and the candidates in one query
                        experiences = list(screen(rows))
                        if len(experiences) != len(vectors):
                            raise ValueError("the screen must return one experience per vector")
                    for exp in experiences:
                        rows.get(exp.tenant_id, [])
                    out = self._decide_all(experiences, vectors, hits, rows)
                    if working is not None:
                        working.end()
            except BaseException:
                if working is not None:
                    working.abort()
                raise
            self._sync()
        return out

    def _decide_all(
        self,
        experiences: Sequence[Experience],
        vectors: FloatMatrix,
        hits: Sequence[Sequence[VectorHit]],
        rows: RowCache,
    ) -> list[tuple[str, Experience]]:
        out: list[tuple[str, Experience]] = []
        # Earlier lessons of this batch, by scope (only same-scope ones are candidates).
        batch: dict[tuple[str, str, str | None, str], EarlierInBatch] = {}
        pending: list[tuple[Experience, Any]] = []
        for exp, vec, found in zip(experiences, vectors, hits, strict=True):
            rows.forget(exp.tenant_id, [exp.id])  # about to be written (a kept "absent" goes)
            if exp.status is not ExperienceStatus.ACTIVE:
                pending.append((exp, vec))  # quarantined by the guard: stored as is
                out.append(("quarantined", exp))
                continue
            same = batch.setdefault(self._scope(exp), EarlierInBatch())
            if _shares_key(exp, pending):
                self._flush(pending)  # so that rule 0 finds the earlier one in the store
            decision = self.same_key(exp) or self.decide(exp, vec, same, hits=found, rows=rows)
            if decision.op is Op.ADD:
                pending.append((exp, vec))
                same.append(exp, vec)
                out.append(("created", exp))
                continue
            self._flush(pending)
            stored = self._apply(decision, exp, vec)
            assert decision.target is not None
            rows.forget(exp.tenant_id, [decision.target.id, stored.id])
            for scope, earlier in batch.items():
                if decision.op is Op.SUPERSEDE:
                    gone = decision.target.id
                    if any(e.id == gone for e, _ in earlier):
                        batch[scope] = EarlierInBatch([(e, v) for e, v in earlier if e.id != gone])
                elif decision.op is not Op.CONFLICT:
                    earlier.replace(stored)
            if decision.op in (Op.SUPERSEDE, Op.CONFLICT):
                batch.setdefault(self._scope(stored), EarlierInBatch()).append(stored, vec)
            folded = decision.op in (Op.NOOP, Op.MERGE)
            if folded:  # earlier results of the batch that were this experience, as it now is
                out = [(r, stored if e.id == stored.id else e) for r, e in out]
            out.append(("merged" if folded else "created", stored))
        self._flush(pending)
        return out

    def _flush(self, pending: list[tuple[Experience, Any]]) -> None:
        if pending:
            self.store.add_experiences(
                [e for e, _ in pending], np.stack([np.asarray(v) for _, v in pending])
            )
            pending.clear()

    def _apply(self, decision: Decision, exp: Experience, vec: Any) -> Experience:
        target = decision.target
        assert target is not None
        actor = f"dedup:{decision.by}"
        reason = decision.reason
        if decision.op in (Op.NOOP, Op.MERGE):
            content, vector = self._merged_content(decision, target, exp)
            return self.store.fold_into(
                target.id,
                exp,
                fold=_fold,
                actor=actor,
                merge=decision.op is Op.MERGE,
                content=content,
                vector=vector,
                reason=reason,
            )
        if decision.op is Op.SUPERSEDE:
            return self.store.add_with_links(
                exp,
                vec,
                supersede=target.id,
                demote=confidence.superseded,
                actor=actor,
                reason=reason,
            )
        return self.store.add_with_links(
            exp,
            vec,
            conflict=target.id,
            demote=confidence.contradicted,
            actor=actor,
            reason=reason,
        )

    def _merged_content(
        self, decision: Decision, target: Experience, incoming: Experience
    ) -> tuple[str | None, Any]:
        text = (decision.content or "").strip()
        if decision.op is Op.MERGE and not text and decision.by == "lesson_key":
            entry = variants.united(target, incoming)  # rule 0: another value of its one part
            text = variants.render(entry) if entry is not None else ""
        if decision.op is not Op.MERGE or not text or text == target.content:
            return None, None
        if decision.by == "judge" and meaning_change(target.content, text) is not None:
            log.warning(
                "hindsight: the judge's merged text for %s changes a meaning-bearing token; "
                "merged without rewording",
                target.id,
            )
            return None, None
        vector = embedded(self.embedder, [text], "merged text")[0]
        if self.guard is not None:
            checked = self.guard(target.model_copy(update={"content": text}), vector)
            if checked.status is not ExperienceStatus.ACTIVE:
                log.warning(
                    "hindsight: the judge's merged text for %s was stopped by the guard; "
                    "merged without rewording",
                    target.id,
                )
                return None, None
        return text, vector


def _fold(current: Experience, incoming: Experience, now: Any) -> Experience:
    """The fold of rule 0 and NOOP/MERGE: evidence and confidence
    (:func:`~hindsight.writeback.confidence.folded`), then the values of a lesson's varying
    part (:func:`~hindsight.writeback.variants.fold_variants`) and a contrast rule's lists
    (:func:`~hindsight.writeback.variants.fold_contrast`), on the row read under lock."""
    folded = variants.fold_variants(confidence.folded(current, incoming, now), incoming)
    return variants.fold_contrast(folded, incoming)


def make_deduper(
    config: MemoryConfig,
    store: SqlStore,
    index: VectorIndex,
    embedder: Embedder,
    sync: Callable[[], object],
    guard: Callable[[Experience, Any], Experience] | None,
) -> Deduper:
    """The :class:`Deduper` of an open memory: its store, index, embedder and vector sync; an
    LLM :class:`~hindsight.writeback.judge.Judge` when ``config.reflection_model`` is set and
    ``config.dedup_judge`` is on; ``guard``, the memory guard's check for merged texts."""
    judge = None
    if config.reflection_model and getattr(config, "dedup_judge", True):
        from hindsight.writeback.judge import Judge

        judge = Judge(
            config.reflection_model,
            api_base=config.llm_base_url,
            api_key=config.llm_api_key,
            timeout=min(30.0, float(config.review_timeout)),
        )
    return Deduper(store, index, embedder, sync, judge=judge, guard=guard)
