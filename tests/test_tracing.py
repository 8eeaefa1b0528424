"""OpenTelemetry spans (docs/deploy.md#traces): hindsight's spans around recall, check_action,
the review and the write-back start in the current context, so they nest under the span of a
LangGraph run (a real ``StateGraph`` whose nodes call hindsight), carry ids, counts and
timings and never lesson or query text; without ``opentelemetry-api`` they are a shared
no-op."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hindsight import Memory, observability
from hindsight.review.heuristic import HeuristicReviewer
from tests.helpers import make_memory, trajectory

LESSON = "Before refund_order, check that the order was delivered more than 3 days ago."
QUERY = "customer wants a refund for order 1234"

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module")
def provider() -> TracerProvider:
    """The process' tracer provider, as an application sets it (once per process)."""
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):  # pragma: no cover - set by another module
        current.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        return current
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(tracer_provider)
    return tracer_provider


@pytest.fixture
def spans(provider: TracerProvider) -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    memory = make_memory(
        tmp_path / "data",
        f"sqlite:///{tmp_path / 'h.db'}",
        reviewer=HeuristicReviewer(),
        background_review=False,
    )
    try:
        memory.add_experience(LESSON, tenant_id="acme", tools=["refund_order"])
        yield memory
    finally:
        memory.close()


class State(TypedDict, total=False):
    query: str
    block: str
    checks: int
    reviewed: int


def _by_name(finished: Any) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for s in finished:
        out.setdefault(s.name, []).append(s)
    return out


def _no_text(finished: Any) -> None:
    for s in finished:
        if not s.name.startswith("hindsight."):
            continue
        for key, val in (s.attributes or {}).items():
            assert key.startswith("hindsight."), key
            text = str(val)
            assert LESSON not in text and "refund for order" not in text, (s.name, key)
            assert len(text) < 80, (s.name, key, text)  # ids, names, counts: never content


def test_sync_graph_spans_nest_under_the_run(mem: Memory, spans: InMemorySpanExporter) -> None:
    def recall(state: State) -> State:
        result = mem.recall(state["query"], tenant_id="acme", tools=["refund_order"])
        return {"block": result.render()}

    def check(state: State) -> State:
        found = mem.check_action("refund_order", {"order_id": "1234"}, tenant_id="acme")
        # a sync call through the memory's loop (another thread) keeps the caller's context
        mem.add_experience("Retry order_query once after a 502.", tenant_id="acme")
        return {"checks": len(found.checks)}

    builder = StateGraph(State)
    builder.add_node("recall", recall)
    builder.add_node("check", check)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "check")
    builder.add_edge("check", END)
    graph = builder.compile()
    tracer = trace.get_tracer("application")
    with tracer.start_as_current_span("langgraph.run") as run:
        out = graph.invoke({"query": QUERY})
    assert LESSON in out["block"] and out["checks"] >= 1
    got = _by_name(spans.get_finished_spans())
    [recall_span] = got["hindsight.recall"]
    [check_span] = got["hindsight.check_action"]
    [write_span] = got["hindsight.writeback"]
    run_id = run.get_span_context()
    assert write_span.attributes["hindsight.created"] == 1
    for s in (recall_span, check_span, write_span):
        assert s.parent is not None and s.parent.span_id == run_id.span_id
        assert s.context.trace_id == run_id.trace_id
        assert s.attributes["hindsight.tenant"] == "acme"
    assert recall_span.attributes["hindsight.duration_ms"] >= 0
    assert recall_span.attributes["hindsight.hits"] >= 1
    assert check_span.attributes["hindsight.checks"] >= 1
    assert check_span.attributes["hindsight.tool"] == "refund_order"
    _no_text(spans.get_finished_spans())


def test_async_graph_review_and_writeback_nest_under_the_run(
    mem: Memory, spans: InMemorySpanExporter
) -> None:
    import asyncio

    aio = mem.aio

    async def recall(state: State) -> State:
        result = await aio.recall(state["query"], tenant_id="acme")
        return {"block": result.render()}

    async def review(state: State) -> State:
        receipt = await aio.store_episode(trajectory("acme", "order lookup timed out"))
        found = await aio.review_now(receipt.trajectory_id, tenant_id="acme")
        return {"reviewed": len(found)}

    builder = StateGraph(State)
    builder.add_node("recall", recall)
    builder.add_node("review", review)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "review")
    builder.add_edge("review", END)
    graph = builder.compile()
    tracer = trace.get_tracer("application")

    async def main() -> State:
        with tracer.start_as_current_span("langgraph.run"):
            return await graph.ainvoke({"query": QUERY})

    out = asyncio.run(main())
    assert out["reviewed"] >= 1
    finished = spans.get_finished_spans()
    got = _by_name(finished)
    [run] = got["langgraph.run"]
    [recall_span] = got["hindsight.recall"]
    [review_span] = got["hindsight.review"]
    assert recall_span.parent.span_id == run.context.span_id
    assert review_span.parent.span_id == run.context.span_id
    assert review_span.attributes["hindsight.events"] >= 1
    assert review_span.attributes["hindsight.experiences_written"] == out["reviewed"]
    writes = [
        s for s in got["hindsight.writeback"] if s.parent.span_id == review_span.context.span_id
    ]
    assert writes, [(s.name, s.parent) for s in finished]
    assert sum(s.attributes["hindsight.created"] for s in writes) >= 1
    _no_text(finished)


def test_without_opentelemetry_spans_are_a_shared_no_op(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import fails like uninstalled
    monkeypatch.setattr(observability, "_tracer", observability._UNSET)
    first = observability.span("hindsight.recall", tenant="acme")
    assert first is observability.span("hindsight.check_action") is observability._NO_SPAN
    with first as current:
        current.set_attribute("hindsight.hits", 1)
    assert mem.recall(QUERY, tenant_id="acme").hits  # works, untraced
    assert observability._tracer is None


def test_a_failed_call_marks_its_span_without_the_message(spans: InMemorySpanExporter) -> None:
    with (
        pytest.raises(ValueError, match="cannot store"),
        observability.span("hindsight.writeback", tenant="acme"),
    ):
        raise ValueError(f"cannot store {LESSON}")
    [failed] = spans.get_finished_spans()
    assert failed.status.status_code is trace.StatusCode.ERROR
    assert failed.status.description == "ValueError"
    assert failed.attributes["hindsight.error"] == "ValueError"
    assert not failed.events  # no exception event: its message would carry the text
    _no_text([failed])


def test_no_span_is_made_until_the_application_sets_a_tracer_provider() -> None:
    """Before a provider is set, the API's spans would record nothing: hindsight makes none
    (the shared no-op, nothing on the agent's path); a provider set later is followed. In a
    new process: a provider can be set once per process."""
    import subprocess

    code = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from hindsight import observability
assert observability.span("hindsight.recall", tenant="acme") is observability._NO_SPAN
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
with observability.operation("recall", None, tenant="acme") as span:
    assert span is not observability._NO_SPAN
[done] = exporter.get_finished_spans()
assert done.name == "hindsight.recall" and done.attributes["hindsight.tenant"] == "acme"
print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
