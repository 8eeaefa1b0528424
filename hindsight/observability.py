"""Metrics and traces of one memory (docs/deploy.md#metrics, docs/deploy.md#traces).

Two independent, optional outputs, both off the hot path when unused:

* :class:`Metrics`: counters and latency histograms kept in plain Python (a lock and a few
  integers per observation, no dependency), exposed in the Prometheus text format through a
  per-memory ``prometheus_client.CollectorRegistry`` built on the first scrape
  (:meth:`Metrics.registry`). ``prometheus-client`` (the ``server`` extra) is imported only
  then, so ``import hindsight`` and a memory nobody scrapes never load it, and two memories in
  one process never share or clash over a metric. Gauges of the store (review jobs by state,
  the oldest pending job's age, the vector outbox's backlog) are read at scrape time by a
  custom collector from a callable the engine supplies.
* :func:`span` / :func:`operation`: OpenTelemetry spans through ``opentelemetry-api`` only (the
  ``otel`` extra), started in the *current* context, so they nest under the span of the
  application's run (a LangChain, LangGraph or LlamaIndex run traced by OpenTelemetry). When
  ``opentelemetry-api`` is not installed, :func:`span` returns one shared no-op object: no
  import, no allocation.

No label carries a tenant: one series per tenant per metric would grow without bound with
the tenants of a deployment (Prometheus keeps every series it ever saw in memory). Every
label value is from a fixed set (:data:`WRITE_RESULTS`, :data:`JOB_FAILURE_REASONS`, the
guard's categories). Span attributes are ids, counts and timings, never lesson or query text.

Imports nothing of hindsight but the error tree: every layer may use it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hindsight._errors import UsageError

__all__ = [
    "JOB_FAILURE_REASONS",
    "LATENCY_BUCKETS",
    "WRITE_RESULTS",
    "Metrics",
    "StoreGauges",
    "operation",
    "span",
]

LATENCY_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
"""Upper bounds (seconds) of the latency histograms' buckets (``+Inf`` is added): recall and
check_action take milliseconds, a review with a model call seconds."""

WRITE_RESULTS = ("created", "merged", "superseded", "quarantined")
"""Values of the ``result`` label of ``hindsight_writes_total``."""

JOB_FAILURE_REASONS = (
    "timeout",
    "rate_limited",
    "provider_error",
    "invalid_reply",
    "store_error",
    "other",
)
"""Values of the ``reason`` label of ``hindsight_review_job_failures_total``
(:func:`hindsight.review.worker.failure_reason`)."""

OPERATIONS = ("recall", "check_action", "review")
"""The timed operations, each a ``hindsight_<name>_duration_seconds`` histogram."""

_INSTALL_HINT = (
    "metrics need prometheus-client: pip install 'hindsight-memory[server]' "
    "(or pip install prometheus-client)"
)


@dataclass
class StoreGauges:
    """What the store says at scrape time.

    Attributes:
        review_jobs: number of review jobs per state (every state, zero when none).
        oldest_pending_seconds: age of the oldest pending review job, ``None`` when none is
            pending.
        outbox_pending: rows in the vector outbox, ``None`` when the store keeps none
            (pgvector, or a store without an index kept apart from SQL).
    """

    review_jobs: Mapping[str, int] = field(default_factory=dict)
    oldest_pending_seconds: float | None = None
    outbox_pending: int | None = None


class _Histogram:
    __slots__ = ("buckets", "count", "total")

    def __init__(self) -> None:
        self.buckets = [0] * len(LATENCY_BUCKETS)
        self.count = 0
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        for i, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                self.buckets[i] += 1
                break
        self.count += 1
        self.total += seconds

    def cumulative(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        running = 0
        for bound, n in zip(LATENCY_BUCKETS, self.buckets, strict=True):
            running += n
            out.append((repr(bound), running))
        out.append(("+Inf", self.count))
        return out


class Metrics:
    """The metrics of one memory (see the module docstring; the table is in
    docs/deploy.md#metrics).

    Args:
        gauges: called at each scrape for the store's gauges (:class:`StoreGauges`); ``None``:
            no store gauges. An exception it raises fails the scrape (an error answer on
            ``/metrics``): a store that cannot be read is never reported as zeros.

    Thread-safe: observations come from the caller's threads, the worker loop and the scrape.
    """

    def __init__(self, gauges: Callable[[], StoreGauges] | None = None) -> None:
        self._gauges = gauges
        self._lock = threading.Lock()
        self._latency = {name: _Histogram() for name in OPERATIONS}
        self._writes = dict.fromkeys(WRITE_RESULTS, 0)
        self._quarantined: dict[str, int] = {}
        self._failures = dict.fromkeys(JOB_FAILURE_REASONS, 0)
        self._registry: Any = None

    # -- observations (cheap: no dependency, a lock and a few integers) -----------------------
    def observe(self, operation: str, seconds: float) -> None:
        """Record one ``operation`` (one of :data:`OPERATIONS`) that took ``seconds``."""
        with self._lock:
            self._latency[operation].observe(seconds)

    def wrote(self, results: Mapping[str, int], quarantined: Mapping[str, int]) -> None:
        """Count the outcome of one write: ``results`` maps each of :data:`WRITE_RESULTS` to
        a count; ``quarantined`` maps a guard category (bounded by the caller) to the number
        of quarantined experiences it stopped."""
        with self._lock:
            for result, n in results.items():
                self._writes[result] += n
            for category, n in quarantined.items():
                self._quarantined[category] = self._quarantined.get(category, 0) + n

    def job_failed(self, reason: str) -> None:
        """Count one failed review attempt (``reason`` one of :data:`JOB_FAILURE_REASONS`)."""
        with self._lock:
            self._failures[reason if reason in self._failures else "other"] += 1

    # -- exposition ----------------------------------------------------------------------------
    @property
    def registry(self) -> Any:
        """This memory's ``prometheus_client.CollectorRegistry`` (built on first use).

        Raises:
            UsageError: ``prometheus-client`` is not installed.
        """
        with self._lock:
            if self._registry is None:
                try:
                    from prometheus_client import CollectorRegistry
                except ModuleNotFoundError as exc:
                    raise UsageError(_INSTALL_HINT) from exc
                registry = CollectorRegistry(auto_describe=False)
                registry.register(_Collector(self))
                self._registry = registry
            return self._registry

    def exposition(self) -> tuple[bytes, str]:
        """``(body, content type)`` of a scrape in the Prometheus text format 0.0.4.

        Raises:
            UsageError: ``prometheus-client`` is not installed.
        """
        registry = self.registry
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(registry), CONTENT_TYPE_LATEST

    def _snapshot(self) -> tuple[dict[str, Any], dict[str, int], dict[str, int], dict[str, int]]:
        with self._lock:
            latency = {name: (h.cumulative(), h.total) for name, h in self._latency.items()}
            return latency, dict(self._writes), dict(self._quarantined), dict(self._failures)


class _Collector:
    """Builds every family of a :class:`Metrics` at scrape time (``prometheus_client``'s
    custom collector protocol: ``collect()`` yields metric families)."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        latency, writes, quarantined, failures = self._metrics._snapshot()
        for name, (buckets, total) in latency.items():
            histogram = HistogramMetricFamily(
                f"hindsight_{name}_duration_seconds",
                f"Duration of {name.replace('_', ' ')} calls in this process, in seconds.",
            )
            histogram.add_metric([], buckets, total)
            yield histogram
        for name, text, label, counts in (
            ("writes", "Experiences through the write path, by result.", "result", writes),
            (
                "quarantined",
                "Experiences quarantined by the memory guard, by finding category.",
                "category",
                dict(sorted(quarantined.items())),
            ),
            (
                "review_job_failures",
                "Failed review attempts in this process, by reason.",
                "reason",
                failures,
            ),
        ):
            counter = CounterMetricFamily(f"hindsight_{name}", text, labels=[label])
            for value, n in counts.items():
                counter.add_metric([value], n)
            yield counter
        source = self._metrics._gauges
        if source is None:
            return
        gauges = source()
        jobs = GaugeMetricFamily(
            "hindsight_review_jobs", "Review jobs in the store, by state.", labels=["state"]
        )
        for state, n in gauges.review_jobs.items():
            jobs.add_metric([state], n)
        yield jobs
        yield GaugeMetricFamily(
            "hindsight_review_oldest_pending_age_seconds",
            "Age of the oldest pending review job in the store (0 when none is pending).",
            value=gauges.oldest_pending_seconds or 0.0,
        )
        if gauges.outbox_pending is not None:
            yield GaugeMetricFamily(
                "hindsight_vector_outbox_pending",
                "Vector outbox rows not applied to the index yet.",
                value=gauges.outbox_pending,
            )


# -- traces -----------------------------------------------------------------------------------
class _NoSpan:
    """The span of :func:`span` without ``opentelemetry-api``: a context manager that does
    nothing (one shared instance)."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set_attribute(self, key: str, value: Any) -> None:
        return None

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        return None


_NO_SPAN = _NoSpan()
_UNSET: Any = object()
_tracer: Any = _UNSET
_unset_provider: Any = None  # the API's placeholder provider: no SDK set (yet)
_provider_of: Any = None  # opentelemetry.trace.get_tracer_provider


def _get_tracer() -> Any:
    """The OpenTelemetry tracer of hindsight, or ``None`` without ``opentelemetry-api`` or
    while the application has set no tracer provider (its spans would record nothing: the
    API's proxy tracer makes non-recording spans until a provider is set, so none is made;
    looked up once, the provider on every call, so one set later is followed)."""
    global _tracer, _unset_provider, _provider_of
    if _tracer is _UNSET:
        try:
            from opentelemetry import trace
        except ModuleNotFoundError:
            _tracer = None
        else:
            _provider_of = trace.get_tracer_provider
            _unset_provider = trace.ProxyTracerProvider
            _tracer = trace.get_tracer("hindsight")
    if _tracer is None or isinstance(_provider_of(), _unset_provider):
        return None
    return _tracer


def span(name: str, **attributes: Any) -> Any:
    """A span ``name`` in the current context (a child of the application's active span),
    as a context manager yielding it (``set_attribute(key, value)``).

    ``attributes`` (``None`` values left out) are set as ``hindsight.<key>``: pass ids,
    counts and timings, never lesson or query text. Without ``opentelemetry-api`` this is a
    shared no-op, as it is while the application has set no tracer provider (a span then
    records nothing, see :func:`_get_tracer`). An exception leaving the block marks the span
    as failed (its type only,
    ``hindsight.error``) and is re-raised.
    """
    tracer = _get_tracer()
    if tracer is None:
        return _NO_SPAN
    return _otel_span(
        tracer, name, {f"hindsight.{k}": v for k, v in attributes.items() if v is not None}
    )


@contextmanager
def _otel_span(tracer: Any, name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    """The span of :func:`span` with ``opentelemetry-api``. An exception sets the status to
    ERROR with the exception's type only, never its message (which may quote a lesson or a
    query): ``hindsight.error`` holds the type name."""
    with tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except Exception as exc:
            from opentelemetry.trace import Status, StatusCode

            current.set_attribute("hindsight.error", type(exc).__name__)
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


@contextmanager
def operation(name: str, metrics: Metrics | None, **attributes: Any) -> Iterator[Any]:
    """:func:`span` ``hindsight.<name>`` and, with ``metrics``, the latency histogram of
    ``name`` (one of :data:`OPERATIONS`); sets ``hindsight.duration_ms`` on the span."""
    start = time.perf_counter()
    with span(f"hindsight.{name}", **attributes) as current:
        try:
            yield current
        finally:
            elapsed = time.perf_counter() - start
            if metrics is not None:
                metrics.observe(name, elapsed)
            current.set_attribute("hindsight.duration_ms", round(elapsed * 1000.0, 3))
