"""The sync facade: :class:`Memory` runs :class:`~hindsight.AsyncMemory` on its background loop.

Every method has the same arguments, return values and exceptions as its async twin; see
:class:`hindsight.AsyncMemory` for the full documentation.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from hindsight.capture import RunRecorder
from hindsight.config import MemoryConfig
from hindsight.engine import AsyncMemory, EpisodeReceipt
from hindsight.lifecycle.api import LifecycleFacade
from hindsight.models import Experience, Provenance, Trajectory
from hindsight.recall import RecallResult

__all__ = ["Memory"]

T = TypeVar("T")


class Memory(LifecycleFacade):
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
            finish=self.store_episode,
        )

    def store_episode(
        self, trajectory: Trajectory | Mapping[str, Any], *, review: bool = True
    ) -> EpisodeReceipt:
        """Store a finished trajectory and queue its review. See AsyncMemory.store_episode.

        Runs on the calling thread (one SQL transaction), not on the background loop, so the
        end of an agent run never waits behind a review in progress."""
        self.aio._check_open()
        return self.aio._store_trajectory(self.aio._coerce_trajectory(trajectory), review)

    def recall(self, query: str, **kwargs: Any) -> RecallResult:
        """Recall experiences for ``query``. See :meth:`AsyncMemory.recall` for arguments."""
        return self._run(self.aio.recall(query, **kwargs))

    def review_now(self, trajectory_id: Any, *, tenant_id: str) -> list[Experience]:
        """Review a stored trajectory now and return its lessons."""
        return self._run(self.aio.review_now(trajectory_id, tenant_id=tenant_id))

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until queued reviews are done (``timeout`` seconds); False on timeout."""
        return self._run(self.aio.flush(timeout))

    def review_jobs(self, **kwargs: Any) -> list[Any]:
        """Review jobs (state, attempts, last error). See :meth:`AsyncMemory.review_jobs`."""
        return self._run(self.aio.review_jobs(**kwargs))

    def retry_review_jobs(self, job_ids: Sequence[Any] = (), **kwargs: Any) -> list[Any]:
        """Failed review jobs back to pending. See :meth:`AsyncMemory.retry_review_jobs`."""
        return self._run(self.aio.retry_review_jobs(job_ids, **kwargs))

    def add_experience(self, content: str, **kwargs: Any) -> Experience:
        """Store a lesson directly. See :meth:`AsyncMemory.add_experience`."""
        return self._run(self.aio.add_experience(content, **kwargs))

    def record_outcome(
        self, trajectory_id: Any, success: bool, *, tenant_id: str
    ) -> list[Experience]:
        """Credit or blame what the run recalled. See :meth:`AsyncMemory.record_outcome`."""
        return self._run(self.aio.record_outcome(trajectory_id, success, tenant_id=tenant_id))

    def get_experience(self, experience_id: Any, *, tenant_id: str) -> Experience:
        """One experience; NotFoundError when absent."""
        return self._run(self.aio.get_experience(experience_id, tenant_id=tenant_id))

    def list_experiences(self, **kwargs: Any) -> list[Experience]:
        """Experiences of a tenant. See :meth:`AsyncMemory.list_experiences`."""
        return self._run(self.aio.list_experiences(**kwargs))

    def get_trajectory(self, trajectory_id: Any, *, tenant_id: str) -> Trajectory:
        """A stored trajectory; NotFoundError when absent."""
        return self._run(self.aio.get_trajectory(trajectory_id, tenant_id=tenant_id))

    def delete_experience(self, experience_id: Any, *, tenant_id: str) -> None:
        """Soft-delete an experience; NotFoundError when absent."""
        self._run(self.aio.delete_experience(experience_id, tenant_id=tenant_id))

    def forget(self, **kwargs: Any) -> int:
        """Hard-delete. See :meth:`AsyncMemory.forget`."""
        return self._run(self.aio.forget(**kwargs))

    def list_quarantined(self, **kwargs: Any) -> list[Experience]:
        """Quarantined experiences of a tenant. See :meth:`AsyncMemory.list_quarantined`."""
        return self._run(self.aio.list_quarantined(**kwargs))

    def approve(
        self, experience_id: Any, *, tenant_id: str, note: str | None = None
    ) -> Experience:
        """Approve a quarantined experience. See :meth:`AsyncMemory.approve`."""
        return self._run(self.aio.approve(experience_id, tenant_id=tenant_id, note=note))

    def reject(self, experience_id: Any, *, tenant_id: str, note: str | None = None) -> Experience:
        """Reject a quarantined experience. See :meth:`AsyncMemory.reject`."""
        return self._run(self.aio.reject(experience_id, tenant_id=tenant_id, note=note))

    def stats(self, *, tenant_id: str | None = None) -> dict[str, Any]:
        """Counts. See :meth:`AsyncMemory.stats`."""
        return self._run(self.aio.stats(tenant_id=tenant_id))

    def close(self, timeout: float = 5.0) -> None:
        """Stop the worker, release files and locks (``timeout`` seconds)."""
        self.aio.close(timeout)

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
