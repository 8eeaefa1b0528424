"""The exception tree of hindsight.

Every exception the library raises on purpose derives from :class:`HindsightError`::

    HindsightError
    +-- UsageError (also ValueError)          the caller passed something wrong; fix the call
    |   +-- TenantRequiredError               a tenant filter was empty or missing
    |   +-- InvalidTrajectoryError            a trajectory/log could not be parsed or validated
    |   +-- MemoryClosedError                 the memory was closed; open a new one
    +-- NotFoundError (also LookupError)      an id names nothing (in this tenant)
    +-- StoreError                            the storage layer failed at run time
    |   +-- EmbedderMismatchError             store opened with another embedding model
    |   +-- StoreLockedError                  another live process owns the embedded store
    +-- EmbeddingError                        an embedder failed to produce vectors
    +-- ReviewError                           a review could not produce lessons
    +-- AuthenticationError                   HTTP client: the API key is missing or unknown (401)
    +-- ServiceError                          HTTP client: the service is unreachable or failed

User errors (``UsageError`` and its children) are separate from run-time errors, as in
pydantic-ai. None of the names shadow a builtin.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "HindsightError",
    "InvalidTrajectoryError",
    "MemoryClosedError",
    "NotFoundError",
    "ReviewError",
    "ServiceError",
    "StoreError",
    "StoreLockedError",
    "TenantRequiredError",
    "UsageError",
]


class HindsightError(Exception):
    """Root of every exception hindsight raises on purpose."""


class UsageError(HindsightError, ValueError):
    """The caller passed an invalid argument. The message says which one and why.

    ``field``: the argument (or dotted path inside it, ``items.3.source``) the message is
    about, when one is; HTTP and MCP report it as the error's ``field``.
    """

    def __init__(self, message: str = "", *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class TenantRequiredError(UsageError):
    """A tenant id was ``None``, empty, blank or not a string.

    Every read, write and delete is scoped to exactly one tenant; an empty filter is never
    treated as "all tenants" (docs/concepts.md#tenants-and-namespaces). Its ``field`` is
    ``tenant_id`` unless told otherwise.
    """

    def __init__(self, message: str = "", *, field: str | None = "tenant_id") -> None:
        super().__init__(message, field=field)


class InvalidTrajectoryError(UsageError):
    """A trajectory, event or log record failed validation or could not be parsed."""


class MemoryClosedError(UsageError):
    """A call on a :class:`hindsight.Memory` / :class:`hindsight.AsyncMemory` after ``close()``.

    The framework integrations catch it: a run that ends after its memory was closed goes to
    the memory's unsaved area (stored at its next open), it never fails the host application.
    """


class NotFoundError(HindsightError, LookupError):
    """An id (experience, trajectory, job) does not exist in the caller's tenant."""


class StoreError(HindsightError):
    """The SQL store or the vector index failed at run time."""


class EmbedderMismatchError(StoreError):
    """The data dir was built with another embedding model or dimension.

    Raised at open, naming both models and the command that rebuilds the vectors.
    """


class StoreLockedError(StoreError):
    """Another live process holds the embedded data dir.

    The message names that process (pid, host, command) and says how to share one store
    between processes: run ``hindsight serve`` and connect through HTTP or MCP.
    """


class EmbeddingError(HindsightError):
    """An embedder could not produce vectors (model missing, provider error, bad reply)."""


class ReviewError(HindsightError):
    """A reviewer could not turn a trajectory into lessons."""


class AuthenticationError(HindsightError):
    """The hindsight service refused the API key: missing, unknown or revoked (HTTP 401).

    Raised by :class:`hindsight.client.HindsightClient`; the key decides the tenant, so there
    is nothing to retry without another key (docs/http.md).
    """


class ServiceError(HindsightError):
    """The hindsight service could not be reached (connection error, timeout) or answered
    with an error that maps to no other class (e.g. an unexpected HTTP 5xx).

    Raised by :class:`hindsight.client.HindsightClient`; ``status`` is the HTTP status code
    (``None`` when no response arrived).
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
