"""Opening a memory: the components a :class:`~hindsight.MemoryConfig` names, wired together.

Order (each step may fail; what was opened before is closed again): the embedder, the
settings of the write side that can be wrong (:func:`write_settings`: checked before any file
is made), the data-dir lock (embedded stores: one process per data dir), the SQL store, the
embedder check against the store (a store built with another model is refused), the vector
index (pgvector in a PostgreSQL store, or an index kept apart from SQL), the vector sync,
bringing an index kept apart up to date with the store (its pending outbox rows applied, or
rebuilt from SQL when new, switched, of another size, or moved aside because it could not be
loaded; :mod:`hindsight.store.outbox`), and recall (:class:`~hindsight.recall.pipeline.Recall`).

The write side (the reviewer, the guard, the write path and its deduper, and the reviews,
:class:`~hindsight.review.runner.ReviewRunner` on the memory's background loop) is wired at
the first call that needs it (:meth:`Components.writes`): a process that only recalls never
loads the review, the guard or the write path (docs/architecture.md#cold-start). Where a
setting of the write side can be wrong (a guard rules file, other guard layers, a reviewer
other than the heuristic, a judge model), the reviewer and the guard it names are built at
open, before the store, so that a wrong setting is refused in one line and leaves no file.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight._errors import (
    EmbedderMismatchError,
    MemoryClosedError,
    StoreError,
    StoreLockedError,
    UsageError,
)
from hindsight._runtime import BackgroundLoop
from hindsight.config import MemoryConfig, load_config, with_overrides
from hindsight.ports import Clock, Embedder, Reviewer, VectorIndex, WritableVectorIndex
from hindsight.recall.pipeline import Recall
from hindsight.store.outbox import VectorSync

if TYPE_CHECKING:
    from hindsight.guard import Guard
    from hindsight.review.runner import ReviewRunner
    from hindsight.writeback import WriteBack
    from hindsight.writeback.dedup import Deduper

__all__ = [
    "Components",
    "WriteSettings",
    "Writes",
    "check_embedder",
    "open_components",
    "resolve_config",
    "write_settings",
]

log = logging.getLogger("hindsight")


def resolve_config(
    config: MemoryConfig | None, reviewer: Reviewer | str | None, overrides: dict[str, Any]
) -> tuple[MemoryConfig, Reviewer | None]:
    """The config to open (``config`` or the environment, with ``overrides``) and the reviewer
    object given, if any (a reviewer's *name* is the ``reviewer`` setting of that name).

    Raises:
        UsageError: ``invalid configuration: field: reason``.
    """
    if isinstance(reviewer, str):
        overrides["reviewer"], reviewer = reviewer, None
    config = load_config(**overrides) if config is None else with_overrides(config, **overrides)
    return config, reviewer


@dataclass(eq=False)
class Writes:
    """The write side of an open memory: wired at the first call that needs it."""

    reviewer: Reviewer
    guard: Guard | None
    writeback: WriteBack
    deduper: Deduper
    reviews: ReviewRunner


@dataclass(eq=False)
class Components:
    """What an open memory is made of (each one replaceable, see :mod:`hindsight.testing`).

    The read side is opened at once; the write side (:class:`Writes`) by :meth:`writes`.
    """

    config: MemoryConfig
    clock: Clock
    embedder: Embedder
    store: Any
    index: VectorIndex
    vectors: VectorSync
    recall: Recall
    runtime: BackgroundLoop
    given_reviewer: Reviewer | None = None
    settings: WriteSettings | None = None
    """The write side's settings when they were checked at open (:func:`write_settings`)."""
    lock: Any = None
    metrics: Any = None
    """Given to the write path and the reviews when they are wired (set by the engine)."""
    _writes: Writes | None = field(default=None, repr=False)
    _wiring: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _shut: bool = field(default=False, repr=False)

    @property
    def wired(self) -> Writes | None:
        """The write side if it was wired, else ``None`` (nothing to close or wait for)."""
        return self._writes

    def writes(self) -> Writes:
        """The write side, wired on the first call (thread-safe; once).

        Raises:
            MemoryClosedError: the memory was closed (:meth:`shut`) before it was wired.
            UsageError: a setting of the write side is invalid (only when not checked at open).
        """
        writes = self._writes
        if writes is None:
            with self._wiring:
                writes = self._writes
                if writes is None:
                    if self._shut:
                        raise MemoryClosedError("this memory is closed; open a new one")
                    writes = self._writes = _wire_writes(self)
        return writes

    def shut(self) -> Writes | None:
        """No wiring from now on; returns the write side to close, if it was wired (a wiring
        under way in another thread finishes first)."""
        with self._wiring:
            self._shut = True
            return self._writes

    def close(self) -> None:
        """Close the index and the store, release the data-dir lock (errors logged)."""
        _release(self.index, self.store, self.lock)


def _release(index: Any, store: Any, lock: Any) -> None:
    for closer in (getattr(index, "close", None), getattr(store, "close", None)):
        if closer is not None:
            try:
                closer()
            except Exception:
                log.debug("hindsight: error while closing after a failed open", exc_info=True)
    if lock is not None:
        lock.release()


def check_embedder(store: Any, embedder: Embedder, sql_url: str) -> None:
    """Record the embedder on a new store; refuse another one on an existing store.

    Raises:
        EmbedderMismatchError: the store was built with another model or dimension.
    """
    name, dim = embedder.name, embedder.dimension
    stored_name = store.get_meta("embedding_model")
    stored_dim = store.get_meta("embedding_dimension")
    if stored_name is None:
        store.set_meta("embedding_model", name)
        store.set_meta("embedding_dimension", str(dim))
        return
    if stored_name != name or stored_dim != str(dim):
        raise EmbedderMismatchError(
            f"this store was built with embedding model {stored_name} ({stored_dim}-d) but "
            f"was opened with {name} ({dim}-d): open it with EMBEDDING_MODEL matching "
            f"{stored_name}, or rebuild its vectors with `hindsight reembed --embedder "
            f"<spec>` (data: {sql_url})"
        )


def _check_port(embedder: Any) -> None:
    """Refuse an embedder that lacks what the :class:`~hindsight.ports.Embedder` port needs
    (at open, in one line, rather than as an ``AttributeError`` at the first recall).

    Raises:
        UsageError: names the embedder and the missing or invalid attribute.
    """
    what = type(embedder).__name__
    floor = getattr(embedder, "similarity_floor", None)
    if not callable(getattr(embedder, "embed", None)):
        problem = "an embed(texts) method"
    elif not isinstance(getattr(embedder, "name", None), str) or not embedder.name:
        problem = "a name (the model id recorded in the store)"
    elif isinstance(floor, bool) or not isinstance(floor, int | float) or not -1 <= floor <= 1:
        problem = "a similarity_floor (a number from -1 to 1: recall's default cosine floor)"
    else:
        return
    raise UsageError(f"embedder {what} must have {problem}; see hindsight.ports.Embedder")


def _reopened(open_it: Callable[[], VectorIndex], config: MemoryConfig, clock: Clock) -> Any:
    """``open_it()``; when the embedded index (``<data dir>/vectors``) cannot be loaded (files
    lost or damaged: Qdrant Edge refuses it), it is a copy of what the SQL store holds, so it is
    moved aside (``vectors.damaged-<time>``, kept for inspection, never deleted) and created
    anew, and the open then rebuilds it from SQL, with a warning.

    Raises:
        EmbedderMismatchError, StoreLockedError: as :func:`open_vector_index` (never moved).
        StoreError: the index could not be opened, or not created anew; the message says
            what to do.
    """
    path = Path(config.data_dir) / "vectors"
    try:
        return open_it()
    except (EmbedderMismatchError, StoreLockedError):
        raise
    except StoreError as err:
        if not config.uses_embedded_vectors() or not path.is_dir():
            raise
        stamp = f"vectors.damaged-{clock.now():%Y%m%dT%H%M%S}"
        aside = path.with_name(stamp)
        n = 1
        while aside.exists():
            aside, n = path.with_name(f"{stamp}-{n}"), n + 1
        try:
            path.rename(aside)
        except OSError as moved:
            raise StoreError(
                f"{err}; the vector index is rebuilt from the SQL store: move {path} away (or "
                f"delete it) and open again ({moved})"
            ) from err
        log.warning(
            "hindsight: the vector index %s could not be loaded (%s); it was moved to %s and "
            "is rebuilt from the SQL store",
            path,
            err,
            aside,
        )
        return open_it()


def open_components(
    config: MemoryConfig,
    clock: Clock,
    runtime: BackgroundLoop,
    *,
    store: Any | None,
    index: VectorIndex | None,
    embedder: Embedder | None,
    reviewer: Reviewer | None,
) -> Components:
    """Open what ``config`` names, except the components given (see the module docstring).

    Raises:
        EmbedderMismatchError, StoreLockedError, UsageError: as :class:`hindsight.AsyncMemory`.
    """
    from hindsight.embedders import make_embedder

    embedder = embedder or make_embedder(
        config.embedding_model, api_base=config.llm_base_url, api_key=config.llm_api_key
    )
    _check_port(embedder)
    # settings of the write side that can be wrong are checked before any file is made
    settings = write_settings(config, reviewer) if _checked_at_open(config, reviewer) else None
    lock: Any = None
    opened: VectorIndex | None = None  # closed on failure once past its step (given or not)
    try:
        if (index is None and config.uses_embedded_vectors()) or (
            store is None and config.database_url is None
        ):
            from hindsight._lock import DataDirLock, private_dir

            private_dir(Path(config.data_dir))  # 0700: it holds every tenant's data
            lock = DataDirLock(Path(config.data_dir))
            lock.acquire()
        if store is None:
            from hindsight.store import SqlStore

            store = SqlStore(config.sql_url(), clock=clock)
        check_embedder(store, embedder, config.sql_url())
        if index is None:
            index = _open_index(config, store, embedder.dimension, clock)
        opened = index
        return _wire(config, clock, runtime, embedder, store, index, reviewer, settings, lock)
    except BaseException:
        _release(opened, store, lock)
        raise


def _open_index(config: MemoryConfig, store: Any, dimension: int, clock: Clock) -> VectorIndex:
    """The index ``VECTOR_DB_URL`` names on ``store``: unset on PostgreSQL, pgvector in the
    store; a Qdrant server; on SQLite the embedded Edge shard or an in-process index.

    Raises:
        UsageError: an in-process index on PostgreSQL (each process would have its own).
    """
    url = (config.vector_db_url or "").strip()
    if store.backend == "postgresql":
        if not url:
            from hindsight.store.pgvector import PgVectorIndex

            return PgVectorIndex(store, dimension)
        if not url.startswith(("http://", "https://")):
            raise UsageError(
                f"VECTOR_DB_URL={url!r:.60} is an index inside one process, and a PostgreSQL "
                "store is shared by processes: leave VECTOR_DB_URL unset (pgvector in "
                "PostgreSQL) or point it at a Qdrant server (docs/deploy.md)"
            )
    from hindsight.vectors import open_vector_index

    def open_it() -> VectorIndex:
        return open_vector_index(
            url or None,
            data_dir=Path(config.data_dir),
            dimension=dimension,
            api_key=config.vector_db_api_key,
        )

    return _reopened(open_it, config, clock)  # type: ignore[no-any-return]


def _wire(
    config: MemoryConfig,
    clock: Clock,
    runtime: BackgroundLoop,
    embedder: Embedder,
    store: Any,
    index: VectorIndex,
    reviewer: Reviewer | None,
    settings: WriteSettings | None,
    lock: Any,
) -> Components:
    if isinstance(index, WritableVectorIndex):
        vectors = VectorSync(store, index)  # kept apart from SQL: follows the outbox
    elif store.backend == "postgresql":
        vectors = VectorSync(store, None)  # pgvector: the points are the rows
    else:
        raise UsageError(
            f"the vector index {type(index).__name__} cannot be written, so it must be the SQL "
            "store itself (pgvector), and this store is not on PostgreSQL"
        )
    vectors.open()  # pending outbox rows applied, or the index rebuilt from SQL
    recall = Recall(store, index, embedder, clock, config, consensus=config.guard)
    parts = Components(config, clock, embedder, store, index, vectors, recall, runtime)
    parts.given_reviewer, parts.settings, parts.lock = reviewer, settings, lock
    return parts


_DEFAULT_LAYERS = MemoryConfig.model_fields["guard_layers"].default


def _checked_at_open(config: MemoryConfig, reviewer: Reviewer | None) -> bool:
    """Whether a setting of the write side can be wrong: then it is checked at open, before
    the store (a guard rules file or other layers, checked with the guard off too; an LLM
    judge's model; a reviewer named other than the heuristic)."""
    named = (config.reviewer or "").strip().lower()
    return bool(
        config.guard_rules is not None
        or config.guard_layers != _DEFAULT_LAYERS
        or config.reflection_model
        or (reviewer is None and named != "heuristic")
    )


@dataclass(frozen=True)
class WriteSettings:
    """What the write side's settings name, built (and so checked) apart from the store."""

    reviewer: Reviewer
    guard: Guard | None
    judge: Any = None


def write_settings(config: MemoryConfig, reviewer: Reviewer | None) -> WriteSettings:
    """The reviewer (``reviewer``, or the one ``config.reviewer`` names), the guard of the
    configured rules file and layers, and its LLM judge when a model is configured.

    Raises:
        UsageError: an unknown reviewer or guard layer, ``llm``/``both`` without a model, an
            invalid rules file (one line each).
    """
    from hindsight.guard.rules_file import guard_from_file, guard_layers

    if reviewer is None:
        from hindsight.review import make_reviewer

        reviewer = make_reviewer(config)  # heuristic | llm | both (docs/review.md)
    layers = guard_layers(config.guard_layers)
    guard = guard_from_file(config.guard_rules, layers=layers) if config.guard else None
    judge = None
    if guard is not None and "llm" in layers and config.reflection_model:
        from hindsight.guard.llm_judge import GuardJudge

        judge = GuardJudge(
            config.reflection_model, api_base=config.llm_base_url, api_key=config.llm_api_key
        )
    return WriteSettings(reviewer, guard, judge)


def _wire_writes(parts: Components) -> Writes:
    """The reviewer, the guard, the write path, its deduper, the mining and the reviews.

    Raises:
        UsageError: an unknown reviewer or guard layer, an invalid rules file.
    """
    from hindsight.guard.screening import WriteScreen
    from hindsight.review.groups import TaskGroups
    from hindsight.review.runner import ReviewRunner
    from hindsight.writeback import WriteBack
    from hindsight.writeback.confidence import supporting_mass
    from hindsight.writeback.dedup import dedup_threshold_of, make_deduper

    config, store, index, embedder = parts.config, parts.store, parts.index, parts.embedder
    settings = parts.settings or write_settings(config, parts.given_reviewer)
    reviewer, guard, judge = settings.reviewer, settings.guard, settings.judge
    screen = WriteScreen(
        store=store,
        index=index,
        embedder=embedder,
        guard=guard,
        clock=parts.clock,
        shared_namespace=config.shared_namespace,
        support=supporting_mass,  # evidence, not counts, settles a conflict (docs/security.md)
        judge=judge,
    )
    vectors = parts.vectors
    writeback = WriteBack(store, embedder, vectors.sync, screen=screen)

    def guard_merged(exp: Any, vector: Any) -> Any:
        return writeback.guard_experience(exp, vector=vector)

    # write step 2, dedup / supersede (docs/lifecycle.md)
    deduper = make_deduper(config, store, index, embedder, vectors.sync, guard_merged)
    writeback.dedup = deduper
    groups = TaskGroups(store, index, embedder, dedup_threshold_of(embedder))
    mining = _mining(config, reviewer, store, embedder, parts.clock, writeback, deduper, vectors)
    reviews = ReviewRunner(
        store,
        reviewer,
        writeback,
        embedder.name,
        parts.clock,
        config,
        parts.runtime,
        groups=groups,
        mining=mining,
    )
    if parts.metrics is not None:
        writeback.metrics = reviews.metrics = parts.metrics
    return Writes(reviewer, guard, writeback, deduper, reviews)


def _mining(
    config: MemoryConfig,
    reviewer: Any,
    store: Any,
    embedder: Any,
    clock: Any,
    writeback: Any,
    deduper: Any,
    vectors: Any,
) -> Any:
    """The condition-mining stage of the reviews (docs/review.md#condition-mining): new rules
    through the write path, changed ones as new versions, unsupported ones archived."""
    from hindsight.review.mining.stage import REVIEWER, ConditionMining, mined_conditions
    from hindsight.writeback import forgetting, versions

    def edit(tenant: str, eid: str, content: str, metadata: dict[str, Any]) -> None:
        changes = {"content": content, "metadata": metadata}
        versions.edit(
            store, embedder, deduper.guard, tenant, eid, changes,
            actor=REVIEWER, reason="the runs' evidence changed",
        )  # fmt: skip
        vectors.sync()

    def archive(tenant: str, eid: str) -> None:
        forgetting.archive(
            store, tenant, eid, actor=REVIEWER, reason="the runs no longer support it"
        )
        vectors.sync()

    from hindsight.review.run import review_parts

    for part in review_parts(reviewer):
        if hasattr(part, "conditions_source"):  # the LLM reviewer: show it the mined rules
            part.conditions_source = functools.partial(mined_conditions, store)
    return ConditionMining(
        store,
        writeback.write,
        edit,
        archive,
        clock,
        embedder.name,
        enabled=config.condition_mining,
    )
