"""The sync facade: :class:`Memory` runs :class:`~hindsight.AsyncMemory` on its background loop,
except the calls that are blocking underneath (recall, record_recall, check_action), which
run on the calling thread.

Every method has the same arguments, return values and exceptions as its async twin; see
:class:`hindsight.AsyncMemory` for the full documentation.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from hindsight._paging import Page, walk
from hindsight._sync import direct_twin, sync_twin
from hindsight.capture import RunRecorder
from hindsight.capture.trajectory import coerce_trajectory
from hindsight.capture.writer import TrajectoryWriter
from hindsight.config import MemoryConfig
from hindsight.engine.async_memory import AsyncMemory, EpisodeReceipt
from hindsight.models import Experience, Provenance, Trajectory
from hindsight.observability import Metrics
from hindsight.store import TrajectorySummary

__all__ = ["Memory"]

T = TypeVar("T")


class Memory:
    """Experience memory for agents, sync API (a thin facade over :class:`AsyncMemory`).

    ``Memory(data_dir="./mem")`` opens (or creates) an embedded store; see
    :class:`AsyncMemory` for the arguments and the errors raised at open.
    """

    def __init__(self, config: MemoryConfig | None = None, **kwargs: Any) -> None:
        self.aio = AsyncMemory(config, **kwargs)
        """The underlying :class:`AsyncMemory` (share it with async code)."""

    @classmethod
    def from_async(cls, aio: AsyncMemory) -> Memory:
        """A sync facade over an existing :class:`AsyncMemory` (both share one store and
        worker; closing either closes it)."""
        facade = cls.__new__(cls)
        facade.aio = aio
        return facade

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.aio._runtime.run(coro)

    @property
    def config(self) -> MemoryConfig:
        return self.aio.config

    @property
    def metrics(self) -> Metrics:
        """This memory's metrics (see :attr:`AsyncMemory.metrics`, docs/deploy.md#metrics)."""
        return self.aio.metrics

    def record(
        self,
        task: str = "",
        *,
        tenant_id: str,
        namespace: str = "default",
        task_type: str | None = None,
        tags: Sequence[str] = (),
        source: Provenance | str = Provenance.USER,
        metadata: dict[str, Any] | None = None,
        system_prompt: str | None = None,
        task_key: str | None = None,
    ) -> RunRecorder:
        """A recorder for one run: ``with memory.record(task, tenant_id=...) as run:``."""
        self.aio._check_open()
        return RunRecorder(
            task,
            tenant_id=tenant_id,
            namespace=namespace,
            task_type=task_type,
            tags=tags,
            source=source,
            metadata=metadata,
            system_prompt=system_prompt,
            task_key=task_key,
            finish=self.store_episode,
            clock=self.aio.clock,
        )

    def store_episode(
        self,
        trajectory: Trajectory | Mapping[str, Any],
        *,
        review: bool = True,
        merge: bool = False,
    ) -> EpisodeReceipt:
        """Store a finished trajectory and queue its review. See AsyncMemory.store_episode.

        Runs on the calling thread (one SQL transaction), not on the background loop, so the
        end of an agent run never waits behind a review in progress."""
        self.aio._check_open()
        traj = coerce_trajectory(trajectory, self.aio.clock.now())
        return self.aio._store_trajectory(traj, review, merge)

    @property
    def writer(self) -> TrajectoryWriter:
        """The background writer of the integrations (see :attr:`AsyncMemory.writer`)."""
        return self.aio.writer

    def attach(self, integration: Any) -> None:
        """See :meth:`AsyncMemory.attach`."""
        self.aio.attach(integration)

    @property
    def integrations(self) -> list[Any]:
        """See :attr:`AsyncMemory.integrations`."""
        return self.aio.integrations

    # Blocking underneath: called on the caller's thread, no hop.
    recall = direct_twin(AsyncMemory.recall, "_recall_now")
    record_recall = direct_twin(AsyncMemory.record_recall, "_record_recall")
    check_action = direct_twin(AsyncMemory.check_action, "_check_action_now")
    distill = sync_twin(AsyncMemory.distill)
    paused_trajectory = sync_twin(AsyncMemory.paused_trajectory)
    review_now = sync_twin(AsyncMemory.review_now)
    flush = sync_twin(AsyncMemory.flush)
    review_jobs = sync_twin(AsyncMemory.review_jobs)
    retry_review_jobs = sync_twin(AsyncMemory.retry_review_jobs)
    add_experience = sync_twin(AsyncMemory.add_experience)
    add_experiences = sync_twin(AsyncMemory.add_experiences)
    record_outcome = sync_twin(AsyncMemory.record_outcome)
    get_experience = sync_twin(AsyncMemory.get_experience)
    list_experiences = sync_twin(AsyncMemory.list_experiences)
    get_trajectory = sync_twin(AsyncMemory.get_trajectory)
    list_trajectories = sync_twin(AsyncMemory.list_trajectories)
    delete_experience = sync_twin(AsyncMemory.delete_experience)
    forget = sync_twin(AsyncMemory.forget)
    list_quarantined = sync_twin(AsyncMemory.list_quarantined)
    approve = sync_twin(AsyncMemory.approve)
    reject = sync_twin(AsyncMemory.reject)
    rescan = sync_twin(AsyncMemory.rescan)
    stats = sync_twin(AsyncMemory.stats)
    # the lesson lifecycle (hindsight.engine._lifecycle)
    adjust_confidence = sync_twin(AsyncMemory.adjust_confidence)
    edit_experience = sync_twin(AsyncMemory.edit_experience)
    history = sync_twin(AsyncMemory.history)
    rollback = sync_twin(AsyncMemory.rollback)
    restore = sync_twin(AsyncMemory.restore)
    archive = sync_twin(AsyncMemory.archive)
    archive_stale = sync_twin(AsyncMemory.archive_stale)
    maintain = sync_twin(AsyncMemory.maintain)
    audit_sample = sync_twin(AsyncMemory.audit_sample)
    mark_wrong = sync_twin(AsyncMemory.mark_wrong)
    start_audit = sync_twin(AsyncMemory.start_audit)
    audit_runs = sync_twin(AsyncMemory.audit_runs)
    audit_run = sync_twin(AsyncMemory.audit_run)
    audit_verdict = sync_twin(AsyncMemory.audit_verdict)
    audit_log = sync_twin(AsyncMemory.audit_log)
    doctor = sync_twin(AsyncMemory.doctor)

    def iter_experiences(
        self, *, tenant_id: str, page_size: int = 100, **filters: Any
    ) -> Iterator[Experience]:
        """See :meth:`AsyncMemory.iter_experiences`: every experience listed with
        ``filters``, page after page by cursor, each exactly once."""

        def fetch(cursor: str | None) -> Page[Experience]:
            return self.list_experiences(
                tenant_id=tenant_id, limit=page_size, cursor=cursor, **filters
            )

        return walk(fetch)

    def iter_trajectories(
        self, *, tenant_id: str, page_size: int = 100, **filters: Any
    ) -> Iterator[TrajectorySummary]:
        """See :meth:`AsyncMemory.iter_trajectories`."""

        def fetch(cursor: str | None) -> Page[TrajectorySummary]:
            return self.list_trajectories(
                tenant_id=tenant_id, limit=page_size, cursor=cursor, **filters
            )

        return walk(fetch)

    def close(self, timeout: float = 5.0, *, drain_timeout: float | None = None) -> None:
        """Drain the integrations' writes (at most ``drain_timeout`` seconds; the rest goes to
        the unsaved area), stop the worker, release files and locks (``timeout`` seconds).
        See :meth:`AsyncMemory.close`."""
        self.aio.close(timeout, drain_timeout=drain_timeout)

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
