"""Every vector index is a replica of the SQL store's vector log (issue 22).

SQL is the one source of truth, vectors included: each experience row keeps its embedding, and
each write that changes what an index must hold appends to the ordered vector log in the same
transaction (:mod:`hindsight.store.vector_log`). A vector index (an embedded Qdrant Edge shard,
an in-process ``:memory:`` index, a Qdrant server collection) applies that log from its own
position, as a Kafka consumer follows a topic from its offset or a PostgreSQL subscriber
follows logical replication:

* **at open** it catches up from its persisted position; a new, empty or foreign index (no
  checkpoint, another log, a position the log no longer covers) is rebuilt from the experience
  rows instead, with a log line saying why;
* **after each write of this process** it catches up at once, so a write is readable here
  as soon as the call returns (read-your-writes);
* **while running** a daemon thread catches up every ``follow_interval`` seconds (1 s by
  default): a write through another process is recalled here within that interval plus the
  time to apply it (documented in docs/deploy.md as the replication lag);
* no replica ever removes log entries another needs: entries older than the retention (7 days)
  are compacted, and a replica that fell behind them is rebuilt.

Where the position lives: an Edge shard keeps it in a checkpoint file inside the shard folder
(it travels with the vectors); an in-process index has none (it is rebuilt at every open,
which is cheap for the sizes it is meant for); a Qdrant collection shared by several processes
keeps one position for the collection in SQL, and one process at a time applies the log to it
under a lease (``vector_replicas.lease_owner``), so two processes never write one point from
rows read at different times.

Each replica is registered in ``vector_replicas`` (kind, location, position, points, last
seen, last error); ``hindsight doctor``, ``hindsight stats`` and ``/ready`` show them with
their lag. A replica that cannot catch up makes recall fail with
:class:`ReplicaUnavailableError`, one line saying why, instead of answering from stale vectors.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from hindsight._errors import StoreError
from hindsight.ports import Clock, VectorIndex, VectorPoint
from hindsight.store.records import ReplicaRecord, VectorChange, VectorLogState, VectorOp

__all__ = [
    "DEFAULT_FOLLOW_INTERVAL",
    "HEARTBEAT_SECONDS",
    "LOG_RETENTION_DAYS",
    "ReplicaUnavailableError",
    "VectorSync",
    "replica_rows",
    "replica_summary",
]

log = logging.getLogger("hindsight")

DEFAULT_FOLLOW_INTERVAL = 1.0
"""Seconds between two catch-ups of a running replica (``HINDSIGHT_VECTOR_FOLLOW_SECONDS``)."""
HEARTBEAT_SECONDS = 5.0
"""Seconds between two updates of a replica's row (position, points, last seen)."""
STALE_AFTER = 3 * HEARTBEAT_SECONDS + 15.0
"""A replica not seen for this long is reported as not running (``hindsight doctor``)."""
LOG_RETENTION_DAYS = 7.0
"""Log entries are kept this long; a replica offline for longer is rebuilt from SQL."""
COMPACT_EVERY = 3600.0
"""Seconds between two compactions of the log by one process."""
LEASE_SECONDS = 30.0
"""How long the apply lease of a shared collection lasts (renewed every batch)."""
LEASE_WAIT = 120.0
"""How long a process waits for another to apply the log to a shared collection."""
_BATCH = 1000
_MAX_BATCHES = 100  # one catch-up applies at most this many batches; the next goes on
_CHECKPOINT_SECONDS = 1.0


class ReplicaUnavailableError(StoreError):
    """This process's vector index cannot catch up with the vector log, so recall (which
    would answer from stale or missing vectors) is refused. The message is one line: which
    index, why, and what to run."""

    @property
    def client_message(self) -> str:
        """What a client of ``hindsight serve`` is told (no path or host of the server)."""
        return (
            "recall refused: this server's vector index cannot catch up with the SQL store "
            "(the server log and `hindsight doctor` say why); retry later or use another "
            "server"
        )


@dataclass(frozen=True, slots=True)
class ReplicaIdentity:
    """How a vector index is registered: ``id``, ``kind`` (``edge``, ``memory``, ``qdrant``),
    ``location`` and whether several processes share it."""

    id: str
    kind: str
    location: str
    shared: bool
    persistent: bool


def identify(index: VectorIndex) -> ReplicaIdentity:
    """The replica identity of ``index`` from its optional ``replica_kind``,
    ``replica_location``, ``replica_shared`` and ``read_checkpoint`` attributes; an index
    without them is an unshared in-process index, rebuilt at every open."""
    host = socket.gethostname()
    kind = str(getattr(index, "replica_kind", None) or "memory")
    shared = bool(getattr(index, "replica_shared", False))
    persistent = callable(getattr(index, "read_checkpoint", None))
    location = getattr(index, "replica_location", None)
    if shared:
        where = str(location or repr(index))
        return ReplicaIdentity(f"{kind}:{where}"[:400], kind, where, True, True)
    if persistent and location:
        where = str(location)
        return ReplicaIdentity(f"{kind}:{host}:{where}"[:400], kind, where, False, True)
    where = f"{type(index).__name__} in pid {os.getpid()}"
    rid = f"{kind}:{host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    return ReplicaIdentity(rid, kind, where, False, False)


class VectorSync:
    """Keeps ``index`` a replica of ``store``'s vector log (see the module docstring).

    Thread-safe: one catch-up at a time. :meth:`open` must run first (the engine does it when
    it opens), then :meth:`sync` after writes, :meth:`ensure_ready` before recall,
    :meth:`start_following` for the background thread, :meth:`close` last.

    Args:
        store: the SQL store (its vector log and replica registry).
        index: the vector index this process opened.
        clock: the store's clock (registry times, log compaction).
        follow_interval: seconds between two catch-ups of the background thread.
        retention_days: log entries older than this are compacted.
    """

    def __init__(
        self,
        store: Any,
        index: VectorIndex,
        clock: Clock | None = None,
        *,
        follow_interval: float = DEFAULT_FOLLOW_INTERVAL,
        retention_days: float = LOG_RETENTION_DAYS,
    ) -> None:
        self.store = store
        self.index = index
        self._clock = clock
        self.follow_interval = max(0.05, float(follow_interval))
        self.retention = timedelta(days=float(retention_days))
        self.identity = identify(index)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.log_id: str | None = None
        self.position = 0
        self.last_error: str | None = None
        self.rebuilt: dict[str, Any] | None = None
        self._lock = threading.RLock()
        self._ok_at = 0.0  # monotonic time of the last successful catch-up
        self._checkpointed: tuple[str | None, int] = (None, -1)
        self._checkpoint_at = 0.0
        self._heartbeat_at = 0.0
        self._compact_at = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._opened = False

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> int:
        """Register the replica and bring it up to date: catch up from its checkpoint, or
        rebuild it from SQL when it has none that fits the log. Returns entries applied (or
        points written by a rebuild).

        Raises:
            StoreError: the store or the index failed (the memory does not open).
        """
        ident = self.identity
        state = self.store.vector_log_state()
        reason: str | None = None
        if ident.shared:
            record = self.store.register_replica(
                ident.id,
                kind=ident.kind,
                location=ident.location,
                host=socket.gethostname(),
                pid=os.getpid(),
                log_id="",
                position=None,
            )
            self.log_id, self.position = record.log_id, record.position
            if getattr(self.index, "created", False):
                reason = "the collection was just created"
        else:
            doc = self._read_checkpoint()
            if doc is not None:
                self.log_id, self.position = doc
            self.store.register_replica(
                ident.id,
                kind=ident.kind,
                location=ident.location,
                host=socket.gethostname(),
                pid=os.getpid(),
                log_id=self.log_id or "",
                position=self.position,
            )
            if doc is None:
                reason = (
                    "a new index"
                    if not ident.persistent
                    else "no replica checkpoint (a new "
                    "or copied index, or one written by an older hindsight)"
                )
            elif self.log_id == state.log_id and self.position > state.head:
                reason = (
                    f"the index is ahead of the log (position {self.position}, log at "
                    f"{state.head}: a restored SQL store?)"
                )
        if reason is None and self.index.count(None) == 0 and self.store.count_vector_rows():
            reason = "the index is empty"
        self._opened = True
        done = self._sync(rebuild_reason=reason)
        if reason is None:
            done += self._check_count()
        self._heartbeat(force=True)
        return done

    def _check_count(self) -> int:
        """After catching up from a checkpoint: an index that holds another number of points
        than SQL says (points lost or written outside the log: a stale copy) is rebuilt. The
        counts are compared only while the log stands still (another process writing makes
        them differ for a moment, not for good)."""
        state = self.store.vector_log_state()
        if state.log_id != self.log_id or state.head != self.position:
            return 0
        points, expected = self.index.count(None), self.store.count_vector_rows()
        if points == expected or self.store.vector_log_state() != state:
            return 0
        return self._sync(
            rebuild_reason=f"the index holds {points} point(s) where SQL has {expected}"
        )

    def start_following(self) -> None:
        """Start the daemon thread that catches up every ``follow_interval`` seconds, keeps
        the registry row fresh and compacts the log now and then."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._follow, name="hindsight-vector-follow", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        """Stop following, save the checkpoint, update (or, for an index that dies with the
        process, remove) the registry row. Errors are logged, never raised."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)
        if not self._opened:
            return
        self._opened = False
        with self._lock:
            try:
                self._write_checkpoint(force=True)
                if self.identity.persistent:
                    self._heartbeat(force=True)
                else:
                    self.store.forget_replica(self.identity.id)
            except Exception as exc:
                log.warning("hindsight: closing the vector replica %s: %s", self.identity.id, exc)

    # -- catching up -----------------------------------------------------------------------
    def sync(self) -> int:
        """Apply every log entry this replica has not applied yet (read-your-writes: called
        after each write of this process). Returns how many entries were applied.

        Raises:
            StoreError: the store or the index failed (recorded as the replica's last error).
        """
        return self._sync()

    def _sync(self, rebuild_reason: str | None = None) -> int:
        with self._lock:
            try:
                if self.identity.shared:
                    done = self._sync_shared(rebuild_reason)
                else:
                    done = self._catch_up(rebuild_reason)
            except Exception as exc:
                error = " ".join(f"{type(exc).__name__}: {exc}".split())[:1000]
                changed, self.last_error = error != self.last_error, error
                if changed and self._opened:
                    self._publish_error()
                raise
            if self.last_error is not None:
                self.last_error = None
                self._publish_error()
            self._ok_at = time.monotonic()
            self._write_checkpoint()
            return done

    def _catch_up(self, rebuild_reason: str | None) -> int:
        applied = 0
        for _ in range(_MAX_BATCHES):
            if rebuild_reason is not None:
                return self._rebuild(rebuild_reason)
            changes, log_id, floor = self.store.read_vector_log(self.position, _BATCH)
            if log_id is None:
                log_id = self.store.vector_log_state().log_id
            if not self.log_id:
                rebuild_reason = "no position in the vector log yet"
                continue
            if log_id != self.log_id:
                rebuild_reason = "the vector log started over (a restore or a re-embed)"
                continue
            if self.position < floor:
                rebuild_reason = (
                    f"the index is behind the log's retention (position {self.position}, "
                    f"log kept from {floor})"
                )
                continue
            if not changes:
                return applied
            self._apply(changes)
            self.position = changes[-1].seq
            applied += len(changes)
            if len(changes) < _BATCH:
                return applied
            if self.identity.shared:
                self.store.take_replica_lease(self.identity.id, self.owner, LEASE_SECONDS)
        return applied

    def _sync_shared(self, rebuild_reason: str | None) -> int:
        """Catch a shared collection up under its lease, or wait while another process does."""
        ident = self.identity
        target = self.store.vector_log_state()
        deadline = time.monotonic() + LEASE_WAIT
        while True:
            if self.store.take_replica_lease(ident.id, self.owner, LEASE_SECONDS):
                record = self.store.get_replica(ident.id)
                if record is not None:
                    self.log_id, self.position = record.log_id, record.position
                if record is not None and record.position > target.head:
                    rebuild_reason = rebuild_reason or (
                        f"the collection is ahead of the log (position {record.position}, log "
                        f"at {target.head}: a restored SQL store?)"
                    )
                try:
                    done = self._catch_up(rebuild_reason)
                except BaseException:
                    self.store.release_replica_lease(ident.id, self.owner)
                    raise
                self.store.release_replica_lease(
                    ident.id, self.owner, log_id=self.log_id, position=self.position
                )
                return done
            record = self.store.get_replica(ident.id)
            if (
                rebuild_reason is None
                and record is not None
                and record.log_id == target.log_id
                and record.position >= target.head
            ):
                self.log_id, self.position = record.log_id, record.position
                return 0  # another process applied it for us
            if time.monotonic() > deadline:
                raise StoreError(
                    f"the vector collection {ident.location} is being updated by another "
                    f"process for over {LEASE_WAIT:g} s (its lease is renewed)"
                )
            time.sleep(0.05)

    def _apply(self, changes: list[VectorChange]) -> None:
        wanted = [
            c.experience_id
            for c in changes
            if c.op in (VectorOp.UPSERT, VectorOp.SET_STATUS) and c.experience_id
        ]
        current = self.store.vector_points(wanted) if wanted else {}
        upserts: dict[str, VectorPoint] = {}

        def flush() -> None:
            if upserts:
                self.index.upsert(list(upserts.values()))
                upserts.clear()

        for change in changes:
            eid = change.experience_id
            if change.op in (VectorOp.UPSERT, VectorOp.SET_STATUS) and eid:
                point = current.get(eid)
                if point is None:
                    flush()
                    self.index.delete([eid])
                else:
                    upserts.pop(eid, None)
                    upserts[eid] = VectorPoint(point[0], point[2], point[1])
            elif change.op is VectorOp.DELETE and eid:
                flush()
                self.index.delete([eid])
            elif change.op is VectorOp.DELETE_TENANT:
                flush()
                self.index.delete_tenant(change.tenant_id)
        flush()

    def _rebuild(self, reason: str) -> int:
        """Make the index hold exactly the points SQL says, then follow the log from the head
        read before the rows were (changes after it are applied next, idempotently)."""
        started = time.monotonic()
        log.info(
            "hindsight: rebuilding the vector index %s from SQL: %s", self.identity.location, reason
        )
        state: VectorLogState = self.store.vector_log_state()
        seen: set[str] = set()
        after = ""
        while True:
            rows = self.store.vector_rows(after, _BATCH)
            if not rows:
                break
            self.index.upsert([VectorPoint(eid, vector, payload) for eid, payload, vector in rows])
            seen.update(eid for eid, _, _ in rows)
            after = rows[-1][0]
            if self.identity.shared:
                self.store.take_replica_lease(self.identity.id, self.owner, LEASE_SECONDS)
        orphans = sorted(self.index.all_ids() - seen)
        if orphans:
            self.index.delete(orphans)
        self.log_id, self.position = state.log_id, state.head
        self.rebuilt = {
            "reason": reason,
            "points": len(seen),
            "removed": len(orphans),
            "seconds": round(time.monotonic() - started, 3),
        }
        log.log(
            logging.WARNING if seen or orphans else logging.DEBUG,
            "hindsight: rebuilt the vector index %s from SQL (%s): %d point(s) written, %d "
            "removed (%.1f s)",
            self.identity.location,
            reason,
            len(seen),
            len(orphans),
            time.monotonic() - started,
        )
        self._write_checkpoint(force=True)
        return len(seen)

    def rebuild(self, reason: str) -> int:
        """Rebuild the index from SQL now (``hindsight restore``, ``reembed``, ``doctor
        --repair``), whatever its position; returns the points written. Works without
        :meth:`open` (nothing is registered then but a shared collection's position).

        Raises:
            StoreError: the store or the index failed.
        """
        with self._lock:
            done = self._rebuild(reason)
            if self.identity.shared:
                self.store.register_replica(
                    self.identity.id,
                    kind=self.identity.kind,
                    location=self.identity.location,
                    host=socket.gethostname(),
                    pid=os.getpid(),
                    log_id=self.log_id or "",
                    position=self.position,
                )
            self.last_error = None
            self._ok_at = time.monotonic()
            return done

    # -- recall ---------------------------------------------------------------------------
    def applied(self) -> tuple[str | None, int]:
        """``(log id, position)``: every log entry up to ``position`` of that log is in the
        index (read without waiting for a catch-up in progress; the position moves only
        after the entries it covers were applied). Recall scores from the payloads only when
        the log's head is still this position after it read its hits' rows
        (:mod:`hindsight.recall.pipeline`)."""
        return self.log_id, self.position

    def ensure_ready(self) -> None:
        """Before recall: pass when the replica caught up recently; otherwise catch up now,
        and refuse recall when that fails.

        Raises:
            ReplicaUnavailableError: the index cannot catch up (the reason in one line).
        """
        fresh = max(30.0, 10 * self.follow_interval)
        if self.last_error is None and time.monotonic() - self._ok_at < fresh:
            return
        try:
            self._sync()
        except Exception as exc:
            reason = " ".join(str(exc).split())[:500] or type(exc).__name__
            raise ReplicaUnavailableError(
                f"recall refused: the vector index {self.identity.location} cannot catch up "
                f"with the SQL store ({reason}); see `hindsight doctor`"
            ) from exc

    # -- what it looks like ---------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """This replica: ``id``, ``kind``, ``location``, ``shared``, ``log_id``,
        ``position``, ``head`` (of the log now), ``lag`` (entries not applied yet),
        ``last_error`` and ``rebuilt`` (what the last rebuild did, or ``None``).

        Raises:
            StoreError: the store failed.
        """
        state = self.store.vector_log_state()
        same = self.log_id == state.log_id
        return {
            "id": self.identity.id,
            "kind": self.identity.kind,
            "location": self.identity.location,
            "shared": self.identity.shared,
            "log_id": self.log_id,
            "position": self.position,
            "head": state.head,
            "lag": max(0, state.head - self.position) if same else state.head,
            "last_error": self.last_error,
            "rebuilt": self.rebuilt,
        }

    # -- background -----------------------------------------------------------------------
    def _follow(self) -> None:
        while not self._stop.wait(self.follow_interval):
            try:
                self._sync()
            except Exception as exc:
                log.warning(
                    "hindsight: the vector index %s cannot catch up: %s",
                    self.identity.location,
                    self.last_error or exc,
                )
            try:
                with self._lock:
                    self._heartbeat()
                self._compact()
            except Exception as exc:
                log.debug("hindsight: vector replica upkeep failed: %s", exc)

    def _now(self) -> Any:
        return self._clock.now() if self._clock is not None else self.store._now()

    def _publish_error(self) -> None:
        """Show a new (or cleared) error in the registry at once, not at the next heartbeat."""
        try:
            self._heartbeat(force=True)
        except Exception as exc:
            log.debug("hindsight: could not record the replica error: %s", exc)

    def _heartbeat(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._heartbeat_at < HEARTBEAT_SECONDS:
            return
        self._heartbeat_at = now
        try:
            points: int | None = self.index.count(None)
        except Exception:
            points = None
        self.store.heartbeat_replica(
            self.identity.id,
            log_id=None if self.identity.shared else self.log_id,
            position=None if self.identity.shared else self.position,
            points=points,
            error=self.last_error,
        )

    def _compact(self) -> None:
        if time.monotonic() - self._compact_at < COMPACT_EVERY:
            return
        self._compact_at = time.monotonic()
        before = self._now() - self.retention
        removed = self.store.compact_vector_log(before)
        pruned = self.store.prune_replicas(before)
        if removed or pruned:
            log.info(
                "hindsight: vector log compacted: %d entries and %d replica(s) older than %s "
                "removed",
                removed,
                pruned,
                self.retention,
            )

    def _read_checkpoint(self) -> tuple[str, int] | None:
        reader = getattr(self.index, "read_checkpoint", None)
        doc = reader() if callable(reader) else None
        if not isinstance(doc, dict):
            return None
        log_id, position = doc.get("log_id"), doc.get("position")
        if not isinstance(log_id, str) or isinstance(position, bool):
            return None
        if not isinstance(position, int) or position < 0:
            return None
        return log_id, position

    def _write_checkpoint(self, *, force: bool = False) -> None:
        writer = getattr(self.index, "write_checkpoint", None)
        if self.identity.shared or not callable(writer) or self.log_id is None:
            return
        mark = (self.log_id, self.position)
        now = time.monotonic()
        if mark == self._checkpointed or (
            not force and now - self._checkpoint_at < _CHECKPOINT_SECONDS
        ):
            return
        writer({"log_id": self.log_id, "position": self.position})
        self._checkpointed = mark
        self._checkpoint_at = now


def replica_rows(store: Any, now: Any) -> list[dict[str, Any]]:
    """Every registered replica as JSON (:class:`ReplicaRecord` fields) with:

    * ``running``: seen within :data:`STALE_AFTER` seconds of ``now`` (else its process
      stopped, or died: an on-disk index catches up when it is opened again);
    * ``lag``: log entries it has not applied (``None``: it follows an older log, from before a
      restore or a re-embed, and is rebuilt when it next catches up);
    * ``divergent``: running, caught up, and holding another number of points than SQL has
      live experiences with embeddings (something wrote or lost points outside the log).
    """
    state = store.vector_log_state()
    expected = store.count_vector_rows()
    rows: list[dict[str, Any]] = []
    record: ReplicaRecord
    for record in store.list_replicas():
        doc = record.to_json()
        doc["running"] = (now - record.last_seen).total_seconds() <= STALE_AFTER
        doc["lag"] = max(0, state.head - record.position) if record.log_id == state.log_id else None
        doc["divergent"] = bool(
            doc["running"]
            and doc["lag"] == 0
            and record.points is not None
            and record.points != expected
        )
        rows.append(doc)
    return rows


def replica_summary(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Counts of :func:`replica_rows`: ``running``, ``not_seen`` (registered, not running),
    ``lagging`` (running, not caught up), ``failing`` (running with a last error) and
    ``divergent``. No locations or hosts: fit for ``/ready``."""
    running = [r for r in rows if r["running"]]
    return {
        "running": len(running),
        "not_seen": len(rows) - len(running),
        "lagging": sum(1 for r in running if r["lag"] != 0),
        "failing": sum(1 for r in running if r["last_error"]),
        "divergent": sum(1 for r in running if r["divergent"]),
    }
