"""Request building and response parsing for the HTTP client (:mod:`hindsight.client`; no I/O).

Each function turns the arguments of one engine method (minus ``tenant_id``, which the API key
decides) into a :class:`Call`: HTTP method, path, JSON body, query parameters and the function
that turns the response JSON into the engine's return type. The sync and async clients only
send calls (docs/http.md lists the routes).
"""

from __future__ import annotations

import numbers
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypedDict, TypeVar
from urllib.parse import quote

from pydantic import TypeAdapter

from hindsight._contract import Limit, Offset, check
from hindsight._errors import UsageError
from hindsight._paging import Page
from hindsight.checks import CheckResult
from hindsight.engine import EpisodeReceipt
from hindsight.models import AddResult, Experience, Trajectory
from hindsight.recall import RecallResult
from hindsight.store import TrajectorySummary

__all__ = [
    "AddOptions",
    "Call",
    "CheckOptions",
    "EditOptions",
    "ListOptions",
    "RecallOptions",
    "StoreOptions",
    "TrajectoryListOptions",
    "page_options",
]

T = TypeVar("T")
Method = Literal["GET", "POST", "PATCH", "DELETE"]


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One HTTP request and how to read its answer."""

    method: Method
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)

    def query(self) -> dict[str, Any] | None:
        """The query parameters to send, the paging ones checked here by the contract's rule
        (a query string carries text: the service would read ``limit=0`` as ``'0'``, and the
        local memory's words are ``got 0``)."""
        out = {}
        for key, value in self.params.items():
            kind = _QUERY_CHECKS.get(key)
            out[key] = value if kind is None or value is None else check(kind, value)
        return out or None


_QUERY_CHECKS: dict[str, Any] = {"limit": Limit, "offset": Offset}


class StoreOptions(TypedDict, total=False):
    """Options of ``store_episode`` / ``store_records`` (see ``POST /v1/episodes``)."""

    review: bool
    merge: bool
    format: Literal["auto", "trajectory", "openai", "tau-bench", "events"]
    namespace: str
    task_type: str | None


class RecallOptions(TypedDict, total=False):
    """Options of ``recall``: as :meth:`hindsight.AsyncMemory.recall` without ``tenant_id``."""

    namespace: str | Sequence[str]
    include_shared: bool
    task_type: str | None
    tags: Sequence[str]
    tools: Sequence[str]
    top_k: int | None
    mode: Literal["vector", "task_type"] | None
    similarity_floor: float | None
    trajectory_id: str | uuid.UUID | None
    token_budget: int | None
    include_episodes: bool
    explain: bool
    record: bool
    risk_checks: bool


class CheckOptions(TypedDict, total=False):
    """Options of ``check_action``: as :meth:`hindsight.AsyncMemory.check_action` without
    ``tenant_id``."""

    namespace: str | Sequence[str]
    include_shared: bool
    task_type: str | None
    top_k: int
    trajectory_id: str | uuid.UUID | None
    record: bool
    state: Sequence[Mapping[str, Any]] | None


class AddOptions(TypedDict, total=False):
    """Options of ``add_experience`` (as :meth:`hindsight.AsyncMemory.add_experience`)."""

    namespace: str
    kind: str
    task_type: str | None
    tools: Sequence[str]
    tags: Sequence[str]
    confidence: float
    importance: float
    source: str
    metadata: dict[str, Any] | None


class EditOptions(TypedDict, total=False):
    """Options of ``edit_experience`` (as :meth:`hindsight.AsyncMemory.edit_experience`)."""

    content: str
    kind: str
    task_type: str
    tools: list[str]
    tags: list[str]
    importance: float
    metadata: dict[str, Any]
    reason: str


class ListOptions(TypedDict, total=False):
    """Filters and paging of ``list_experiences`` / ``list_quarantined``."""

    namespace: str | None
    task_type: str | None
    status: str
    task_key: str | None
    kind: str | None
    """Only lessons of this kind (``rule``, ``improvement``, ..., ``episode``)."""
    limit: int
    offset: int
    cursor: str | None
    order: str
    """``"confidence"`` (default) or ``"created"`` (``list_experiences`` only)."""


class TrajectoryListOptions(TypedDict, total=False):
    """Filters and paging of ``list_trajectories`` (see ``GET /v1/trajectories``)."""

    task_key: str | None
    outcome: str | None
    task_type: str | None
    limit: int
    offset: int
    cursor: str | None


Opts = TypeVar("Opts", ListOptions, TrajectoryListOptions)


def page_options(filters: Opts, page_size: int, cursor: str | None) -> Opts:
    """The options of one page of an ``iter_*`` walk: ``filters`` with ``limit`` and
    ``cursor`` (a walk sets both itself, and pages by cursor only).

    Raises:
        UsageError: ``filters`` has ``limit``, ``offset`` or ``cursor``.
    """
    given = sorted({"limit", "offset", "cursor"} & set(filters))
    if given:
        raise UsageError(f"{', '.join(given)}: not a filter; use page_size (iter_* pages itself)")
    options = filters.copy()
    options["limit"] = page_size
    options["cursor"] = cursor
    return options


def _id(value: Any, what: str) -> str:
    """An id for a URL path: any form the engine accepts, percent-encoded (braces too)."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{what} must be a UUID (string or uuid.UUID), got {value!r:.80}")
    return quote(value.strip(), safe="")


def _text(value: Any, what: str, *, optional: bool = False) -> Any:
    """``value`` when it is a ``str`` (or ``None`` if ``optional``), else a one-line
    :class:`UsageError` naming the argument (bytes: decode them first; review finding)."""
    if isinstance(value, str) or (optional and value is None):
        return value
    raise UsageError(_not_json(value, what, "a string"))


def _not_json(value: Any, what: str, expected: str) -> str:
    if isinstance(value, bytes | bytearray):
        return f"{what} must be {expected}, got bytes: decode them first (e.g. value.decode())"
    return f"{what} must be {expected}, got {type(value).__name__} {value!r:.60}"


def _plain(value: Any, what: str = "argument") -> Any:
    """JSON-ready values: UUIDs as strings, sequences as lists, enums as their values, numpy's
    scalars and arrays as Python's (what the local memory accepts, the server accepts).

    Raises:
        UsageError: a value JSON cannot carry (bytes, a set, a complex number, any other
            object), naming where it is (``what``, e.g. ``tags[0]``, and as ``field``
            ``tags.0``) instead of ``json``'s ``TypeError``.
    """
    if isinstance(value, uuid.UUID):
        return str(value)
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)  # numpy's integers (np.bool_ is not one: tolist below)
    if isinstance(value, numbers.Real):
        return float(value)  # numpy's floats, np.longdouble included
    if callable(getattr(value, "tolist", None)) and hasattr(value, "dtype"):
        plain = value.tolist()  # numpy's other scalars and its arrays, as Python's
        if type(plain) is not type(value):
            return _plain(plain, what)
    if isinstance(value, Mapping):
        return {
            k: _plain(v, f"{what}.{k}" if what != "options" else str(k)) for k, v in value.items()
        }
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [_plain(v, f"{what}[{i}]") for i, v in enumerate(value)]
    enum_value = getattr(value, "value", None)
    if isinstance(enum_value, str):
        return enum_value
    raise UsageError(
        _not_json(value, what, "JSON (a string, number, list or object)"),
        field=re.sub(r"\[(\d+)\]", r".\1", what),  # tags[0] -> tags.0, as the service names it
    )


def _experience(doc: Any) -> Experience:
    return Experience.model_validate(doc)


def _experiences(doc: Any) -> list[Experience]:
    items = doc["items"] if isinstance(doc, dict) else doc
    return [Experience.model_validate(d) for d in items]


def _receipts(doc: Any) -> list[EpisodeReceipt]:
    return [EpisodeReceipt(r) for r in doc["episodes"]]


def _first_receipt(doc: Any) -> EpisodeReceipt:
    receipts = _receipts(doc)
    if not receipts:
        raise UsageError("the record held no trajectory")
    return receipts[0]


def _recall(doc: Any) -> RecallResult:
    fields = RecallResult.model_fields
    return RecallResult.model_validate({k: v for k, v in doc.items() if k in fields})


def _history(doc: Any) -> Page[dict[str, Any]]:
    out: Page[dict[str, Any]] = Page()
    for row in doc:
        row = dict(row)
        if isinstance(row.get("experience"), dict):
            row["experience"] = Experience.model_validate(row["experience"])
        out.append(row)
    return out


def _json(doc: Any) -> Any:
    return doc


def _none(_: Any) -> None:
    return None


def _body(trajectory: Any, options: StoreOptions) -> dict[str, Any]:
    fmt = options.get("format", "auto")
    if isinstance(trajectory, Trajectory):
        record: Any = trajectory.model_dump(mode="json")
        fmt = "trajectory" if fmt == "auto" else fmt
    else:
        record = _plain(trajectory, "trajectory")
    body: dict[str, Any] = {"trajectory": record, "format": fmt}
    for key in ("review", "merge", "namespace", "task_type"):
        if key in options:
            body[key] = options[key]
    return body


# -- the calls ----------------------------------------------------------------------------------
def health() -> Call[dict[str, Any]]:
    return Call("GET", "/health", _json)


def ready() -> Call[dict[str, Any]]:
    return Call("GET", "/ready", _json)


def store_episode(trajectory: Any, options: StoreOptions) -> Call[EpisodeReceipt]:
    return Call("POST", "/v1/episodes", _first_receipt, json=_body(trajectory, options))


def store_records(record: Any, options: StoreOptions) -> Call[list[EpisodeReceipt]]:
    return Call("POST", "/v1/episodes", _receipts, json=_body(record, options))


def get_trajectory(trajectory_id: Any) -> Call[Trajectory]:
    path = f"/v1/episodes/{_id(trajectory_id, 'trajectory_id')}"
    return Call("GET", path, Trajectory.model_validate)


_SUMMARIES: TypeAdapter[list[TrajectorySummary]] = TypeAdapter(list[TrajectorySummary])


def list_trajectories(options: TrajectoryListOptions) -> Call[Page[TrajectorySummary]]:
    params = {k: v for k, v in _plain(dict(options), "options").items() if v is not None}
    return Call(
        "GET",
        "/v1/trajectories",
        lambda doc: Page(_SUMMARIES.validate_python(doc["items"]), doc.get("next_cursor")),
        params=params,
    )


def review_now(trajectory_id: Any) -> Call[list[Experience]]:
    path = f"/v1/episodes/{_id(trajectory_id, 'trajectory_id')}/review"
    return Call("POST", path, _experiences)


def recall(query: str, options: RecallOptions) -> Call[RecallResult]:
    body = {"query": _text(query, "query"), **_plain(dict(options), "options")}
    return Call("POST", "/v1/recall", _recall, json=body)


def check_action(tool: str, args: Any, options: CheckOptions) -> Call[CheckResult]:
    body = {
        "tool": _text(tool, "tool"),
        "args": _plain(dict(args or {}), "args"),
        **_plain(dict(options), "options"),
    }
    return Call("POST", "/v1/checks", _checks, json=body)


def _checks(doc: Any) -> CheckResult:
    return CheckResult.model_validate(
        {"tool": doc["tool"], "checks": doc["checks"], "tested": doc.get("tested")}
    )


def record_recall(trajectory_id: Any, experience_ids: Sequence[Any]) -> Call[int]:
    if isinstance(experience_ids, str | uuid.UUID):
        raise UsageError("experience_ids must be a list of ids, not one id")
    body = {
        "trajectory_id": _plain(trajectory_id, "trajectory_id"),
        "experience_ids": _plain([str(e) for e in experience_ids], "experience_ids"),
    }
    return Call("POST", "/v1/recalls", lambda doc: int(doc["counted"]), json=body)


def paused_trajectory(thread_id: Any, namespace: str) -> Call[str | None]:
    path = f"/v1/threads/{quote(_text(thread_id, 'thread_id'), safe='')}/paused"
    return Call("GET", path, lambda doc: doc.get("trajectory_id"), params={"namespace": namespace})


def record_outcome(trajectory_id: Any, success: bool) -> Call[list[Experience]]:
    body = {"trajectory_id": _plain(trajectory_id, "trajectory_id"), "success": success}
    return Call("POST", "/v1/outcomes", _experiences, json=body)


def add_experience(content: str, options: AddOptions) -> Call[Experience]:
    body = {"content": _text(content, "content"), **_plain(dict(options), "options")}
    return Call("POST", "/v1/experiences", _experience, json=body)


def add_experiences(items: Any) -> Call[list[AddResult]]:
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        raise UsageError(f"items must be a list of objects, got {type(items).__name__}")
    body = {"items": [_plain(item, f"items[{i}]") for i, item in enumerate(items)]}
    return Call("POST", "/v1/experiences:batch", _add_results, json=body)


def _add_results(doc: Any) -> list[AddResult]:
    return [AddResult.model_validate(d) for d in doc["items"]]


def get_experience(experience_id: Any) -> Call[Experience]:
    return Call("GET", f"/v1/experiences/{_id(experience_id, 'experience_id')}", _experience)


def list_experiences(options: ListOptions, *, quarantined: bool = False) -> Call[Page[Experience]]:
    params = {k: v for k, v in options.items() if v is not None}
    path = "/v1/quarantine" if quarantined else "/v1/experiences"
    return Call("GET", path, lambda doc: Page(_experiences(doc), doc["next_cursor"]), params=params)


def adjust_confidence(experience_id: Any, delta: float, reason: str | None) -> Call[Experience]:
    path = f"/v1/experiences/{_id(experience_id, 'experience_id')}"
    body = {"confidence_delta": delta, "reason": _text(reason, "reason", optional=True)}
    return Call("PATCH", path, _experience, json=body)


def edit_experience(experience_id: Any, options: EditOptions) -> Call[Experience]:
    path = f"/v1/experiences/{_id(experience_id, 'experience_id')}"
    return Call("PATCH", path, _experience, json=_plain(dict(options), "options"))


def delete_experience(experience_id: Any) -> Call[None]:
    return Call("DELETE", f"/v1/experiences/{_id(experience_id, 'experience_id')}", _none)


def forget(experience_id: Any, trajectory_id: Any, everything: bool) -> Call[int]:
    body = {
        "experience_id": _plain(experience_id, "experience_id"),
        "trajectory_id": _plain(trajectory_id, "trajectory_id"),
        "everything": everything,
    }
    return Call("POST", "/v1/forget", lambda doc: int(doc["removed"]), json=body)


def history(
    experience_id: Any, limit: int = 100, cursor: str | None = None
) -> Call[Page[dict[str, Any]]]:
    """``GET /v1/experiences/{id}/history``: a JSON list; the next page's cursor is the
    ``Next-Cursor`` header (as :func:`review_jobs`)."""
    path = f"/v1/experiences/{_id(experience_id, 'experience_id')}/history"
    params: dict[str, Any] = {"limit": limit}
    if cursor is not None:
        params["cursor"] = cursor
    return Call("GET", path, _history, params=params)


def rollback(experience_id: Any, version: int, reason: str | None) -> Call[Experience]:
    path = f"/v1/experiences/{_id(experience_id, 'experience_id')}/rollback"
    body = {"version": version, "reason": _text(reason, "reason", optional=True)}
    return Call("POST", path, _experience, json=body)


def restore(experience_id: Any) -> Call[Experience]:
    path = f"/v1/experiences/{_id(experience_id, 'experience_id')}/restore"
    return Call("POST", path, _experience)


def decide(action: str, experience_id: Any, note: str | None) -> Call[Experience]:
    path = f"/v1/quarantine/{_id(experience_id, 'experience_id')}/{action}"
    return Call("POST", path, _experience, json={"note": _text(note, "note", optional=True)})


def rescan(experience_id: Any, namespace: str | None) -> Call[list[Experience]]:
    body: dict[str, Any] = {}
    if experience_id is not None:
        body["experience_id"] = (
            str(experience_id)
            if isinstance(experience_id, uuid.UUID)
            else _text(experience_id, "experience_id")
        )
    if namespace is not None:
        body["namespace"] = _text(namespace, "namespace")
    return Call("POST", "/v1/quarantine/rescan", _experiences, json=body)


def review_jobs(
    state: str | None, limit: int, cursor: str | None = None
) -> Call[Page[dict[str, Any]]]:
    """``GET /v1/jobs``: a JSON list; the next page's cursor is the ``Next-Cursor`` header
    (the client sets the page's ``next_cursor`` from it)."""
    params: dict[str, Any] = {"limit": limit}
    if state is not None:
        params["state"] = state
    if cursor is not None:
        params["cursor"] = cursor
    return Call("GET", "/v1/jobs", Page, params=params)


def retry_review_jobs(job_ids: Sequence[Any], all_failed: bool) -> Call[list[dict[str, Any]]]:
    if isinstance(job_ids, str | uuid.UUID):
        job_ids = [job_ids]
    body = {"job_ids": _plain(list(job_ids), "job_ids"), "all_failed": all_failed}
    return Call("POST", "/v1/jobs/retry", _json, json=body)


def stats() -> Call[dict[str, Any]]:
    return Call("GET", "/v1/stats", _json)
