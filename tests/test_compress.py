"""Trajectory compression before review (docs/review.md#compression): merge, cut, drop, fit the
budget."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map

import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from hindsight import UsageError
from hindsight.models import Event, EventStatus, EventType, Outcome, Trajectory
from hindsight.review.compress import compress_trajectory
from hindsight.tokens import estimate_tokens

FIRST = "Reconcile the May ledger and report mismatches."
FINAL = "Reconciled: 3 mismatches found in May."


def _litellm_counter(model: str = "openai/gpt-4o") -> Callable[[str], int]:
    import litellm

    return lambda text: int(litellm.token_counter(model=model, text=text))


def user(text: str = FIRST) -> Event:
    return Event(event_type=EventType.USER_MESSAGE, content=text)


def final(text: str = FINAL) -> Event:
    return Event(event_type=EventType.FINAL_ANSWER, content=text)


def call(
    tool: str, args: dict[str, object], status: EventStatus, output: str, call_id: str | None = None
) -> list[Event]:
    return [
        Event(event_type=EventType.TOOL_CALL, tool_name=tool, tool_args=args, tool_call_id=call_id),
        Event(
            event_type=EventType.TOOL_RESULT,
            tool_name=tool,
            status=status,
            content=output,
            tool_call_id=call_id,
        ),
    ]


def big_run() -> Trajectory:
    """5,000 events: a 5 MB failing tool output, many repeats, failures spread through."""
    events = [user()]
    for i in range(2499):
        if i == 1200:
            events += call(
                "export_ledger",
                {"month": "2024-05"},
                EventStatus.FAILURE,
                "E" * 2_500_000 + "Z" * 2_500_000,
            )
        elif i % 2 == 0:
            events += call("poll_job", {"job": 7}, EventStatus.SUCCESS, "job 7 still running")
        elif i % 101 == 0:
            events += call("fetch_page", {"page": i}, EventStatus.TIMEOUT, f"page {i} timed out")
        else:
            events += call(
                "fetch_page", {"page": i}, EventStatus.SUCCESS, f"page {i}: " + "row " * 40
            )
    events.append(final())
    return Trajectory(tenant_id="acme", events=events, outcome=Outcome.SUCCESS)


# -- the big case --------------------------------------------------------------------------------


@pytest.mark.parametrize("counter", ["estimate", "litellm"])
def test_5000_events_and_5_mb_output_fit_the_budget(counter: str) -> None:
    traj = big_run()
    assert len(traj.events) == 5000
    count = estimate_tokens if counter == "estimate" else _litellm_counter()
    out = compress_trajectory(traj, max_tokens=6000, count_tokens=count)

    assert out.compressed_tokens == count(out.text) <= 6000
    assert out.original_tokens > 1_000_000
    assert out.ratio == out.compressed_tokens / out.original_tokens < 0.01
    lines = out.text.splitlines()
    # Kept first: the first user message, every failure, the final answer.
    assert f"#1 user: {FIRST}" in lines
    assert lines[-1] == f"#5000 final: {FINAL}"
    for i in range(1, 2499, 2):
        if i % 101 == 0:
            assert f'call fetch_page {{"page": {i}}} -> timeout: page {i} timed out' in out.text
    # The 5 MB output is a failure: kept, cut to head and tail around a marker.
    big = next(line for line in lines if "export_ledger" in line)
    assert "…[4998000 chars cut]…" in big
    assert big.endswith("Z" * 667) and "E" * 1333 in big
    # 1249 identical poll_job calls are one line.
    assert (
        '#2 call poll_job {"job": 7} -> success: job 7 still running [called 1249 times, '
        "same arguments, every time success]" in lines
    )
    assert out.merged_events == 1248 * 2
    assert "steps omitted]…" in out.text
    assert out.kept_events + out.merged_events + out.dropped_events == out.total_events == 5000
    assert out.cut_steps >= 1


# -- each technique ------------------------------------------------------------------------------


def test_identical_calls_are_merged_but_not_different_args_or_status() -> None:
    events = [user()]
    events += call("order_query", {"id": "A1"}, EventStatus.TIMEOUT, "timed out after 30 s") * 3
    events += call("order_query", {"id": "A2"}, EventStatus.TIMEOUT, "timed out after 30 s")
    events += call("order_query", {"id": "A1"}, EventStatus.SUCCESS, "in transit")
    events.append(final())
    out = compress_trajectory(
        Trajectory(tenant_id="t", events=events), max_tokens=6000, count_tokens=estimate_tokens
    )
    calls = [line for line in out.text.splitlines() if " call " in line]
    assert calls == [
        '#2 call order_query {"id": "A1"} -> timeout: timed out after 30 s '
        "[called 3 times, same arguments, every time timeout]",
        '#8 call order_query {"id": "A2"} -> timeout: timed out after 30 s',
        '#10 call order_query {"id": "A1"} -> success: in transit',
    ]
    assert out.merged_events == 4
    assert out.kept_events == 8 and out.dropped_events == 0


def test_argument_order_does_not_prevent_merging() -> None:
    events = [user()]
    events += call("search", {"a": 1, "b": 2}, EventStatus.SUCCESS, "[]")
    events += call("search", {"b": 2, "a": 1}, EventStatus.SUCCESS, "[]")
    out = compress_trajectory(
        Trajectory(tenant_id="t", events=events), max_tokens=1000, count_tokens=estimate_tokens
    )
    assert "[called 2 times, same arguments, every time success]" in out.text


def test_empty_steps_are_dropped() -> None:
    events = [
        user(),
        Event(event_type=EventType.MODEL_THOUGHT, content="   "),
        Event(event_type=EventType.MODEL_CALL, content=""),
        *call("lookup", {"q": "x"}, EventStatus.SUCCESS, "found"),
        final(),
    ]
    out = compress_trajectory(
        Trajectory(tenant_id="t", events=events), max_tokens=1000, count_tokens=estimate_tokens
    )
    assert out.text.splitlines() == [
        "Recorded outcome: unknown",
        "Steps: 6 recorded, 4 shown (2 empty dropped)",
        "",
        f"#1 user: {FIRST}",
        '#4 call lookup {"q": "x"} -> success: found',
        f"#6 final: {FINAL}",
    ]
    assert out.dropped_events == 2 and out.kept_events == 4


def test_header_and_small_run_kept_whole() -> None:
    traj = Trajectory(
        tenant_id="t",
        task="Book a flight",
        task_type="airline",
        outcome=Outcome.FAILURE,
        reward=0.0,
        events=[
            user("Book me a flight to SEA"),
            Event(event_type=EventType.MODEL_THOUGHT, content="Search first."),
            *call("search_direct_flight", {"to": "SEA"}, EventStatus.SUCCESS, "[]"),
            final("No flights found."),
        ],
    )
    out = compress_trajectory(traj, max_tokens=1000, count_tokens=estimate_tokens)
    assert out.text == "\n".join(
        [
            "Task: Book a flight",
            "Task type: airline",
            "Recorded outcome: failure (reward 0)",
            "Steps: 5 recorded, 5 shown",
            "",
            "#1 user: Book me a flight to SEA",
            "#2 thought: Search first.",
            '#3 call search_direct_flight {"to": "SEA"} -> success: []',
            "#5 final: No flights found.",
        ]
    )
    assert out.kept_events == 5 and out.dropped_events == out.merged_events == 0


def test_task_line_is_skipped_when_it_repeats_the_first_message() -> None:
    traj = Trajectory(tenant_id="t", task=FIRST, events=[user(), final()])
    out = compress_trajectory(traj, max_tokens=1000, count_tokens=estimate_tokens)
    assert not out.text.startswith("Task:")
    assert out.text.count(FIRST) == 1


def test_calls_pair_with_results_by_id_when_interleaved() -> None:
    a = Event(
        event_type=EventType.TOOL_CALL, tool_name="get", tool_args={"id": 1}, tool_call_id="c1"
    )
    b = Event(
        event_type=EventType.TOOL_CALL, tool_name="get", tool_args={"id": 2}, tool_call_id="c2"
    )
    rb = Event(
        event_type=EventType.TOOL_RESULT,
        tool_name="get",
        tool_call_id="c2",
        status=EventStatus.FAILURE,
        content="not found",
    )
    ra = Event(
        event_type=EventType.TOOL_RESULT,
        tool_name="get",
        tool_call_id="c1",
        status=EventStatus.SUCCESS,
        content="ok",
    )
    lone = Event(
        event_type=EventType.TOOL_RESULT,
        tool_name="other",
        status=EventStatus.TIMEOUT,
        content="late",
    )
    hanging = Event(event_type=EventType.TOOL_CALL, tool_name="never", tool_args={})
    traj = Trajectory(tenant_id="t", events=[user(), a, b, rb, ra, lone, hanging])
    out = compress_trajectory(traj, max_tokens=1000, count_tokens=estimate_tokens)
    assert out.text.splitlines()[3:] == [
        f"#1 user: {FIRST}",
        '#2 call get {"id": 1} -> success: ok',
        '#3 call get {"id": 2} -> failure: not found',
        "#6 result other timeout: late",
        "#7 call never {} -> no result recorded",
    ]


def test_huge_output_is_cut_to_head_and_tail() -> None:
    output = "A" * 10_000 + "B" * 10_000
    traj = Trajectory(
        tenant_id="t", events=[user(), *call("dump", {}, EventStatus.SUCCESS, output)]
    )
    out = compress_trajectory(traj, max_tokens=6000, count_tokens=estimate_tokens)
    line = out.text.splitlines()[-1]
    assert line == "#2 call dump {} -> success: " + "A" * 1333 + "…[18000 chars cut]…" + "B" * 667
    assert out.cut_steps == 1


def test_middle_steps_are_omitted_but_failures_kept() -> None:
    events = [user()]
    for i in range(200):
        status = EventStatus.FAILURE if i in (90, 110) else EventStatus.SUCCESS
        events += call("fetch", {"page": i}, status, f"page {i} " + "data " * 30)
    events.append(final())
    out = compress_trajectory(
        Trajectory(tenant_id="t", events=events), max_tokens=1500, count_tokens=estimate_tokens
    )
    assert out.compressed_tokens <= 1500
    text = out.text
    assert f"#1 user: {FIRST}" in text and text.endswith(f"#402 final: {FINAL}")
    assert '{"page": 90} -> failure' in text and '{"page": 110} -> failure' in text
    assert '{"page": 0} -> success' in text and '{"page": 199} -> success' in text
    assert '{"page": 100} -> success' not in text
    markers = [line for line in text.splitlines() if line.endswith("steps omitted]…")]
    assert len(markers) >= 2
    omitted = sum(int(m.split("[")[1].split()[0]) for m in markers)
    assert out.dropped_events == 2 * omitted
    assert f"({out.dropped_events} omitted)" in text


@pytest.mark.parametrize("budget", [100, 250, 800, 3000])
def test_any_budget_is_respected(budget: int) -> None:
    out = compress_trajectory(big_run(), max_tokens=budget, count_tokens=estimate_tokens)
    assert out.compressed_tokens <= budget
    assert out.compressed_tokens == estimate_tokens(out.text)


def test_chinese_run_fits_with_a_real_tokenizer() -> None:
    events = [user("用户偏好用 pnpm 而不是 npm。请安装依赖。")]
    for i in range(300):
        events += call("shell", {"cmd": f"pnpm add pkg{i}"}, EventStatus.SUCCESS, "安装成功，" * 60)
    events.append(final("已用 pnpm 安装好全部依赖。"))
    count = _litellm_counter("openai/gpt-4o-mini")
    out = compress_trajectory(
        Trajectory(tenant_id="t", events=events), max_tokens=2000, count_tokens=count
    )
    assert count(out.text) <= 2000
    assert "用户偏好用 pnpm 而不是 npm" in out.text and "已用 pnpm 安装好全部依赖。" in out.text


def test_budget_below_minimum_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="at least 100"):
        compress_trajectory(big_run(), max_tokens=50, count_tokens=estimate_tokens)


def test_empty_trajectory() -> None:
    out = compress_trajectory(
        Trajectory(tenant_id="t"), max_tokens=500, count_tokens=estimate_tokens
    )
    assert out.total_events == out.kept_events == 0
    assert out.ratio == pytest.approx(out.compressed_tokens / out.original_tokens)


# -- tau-bench -----------------------------------------------------------------------------------


def test_tau_bench_airline_every_trajectory_fits_6000_tokens(tau_bench_path: Path) -> None:
    from hindsight.capture.ingest import iter_trajectories

    count = _litellm_counter("openai/gpt-4o")
    trajectories = list(iter_trajectories(tau_bench_path, tenant_id="bench"))
    assert len(trajectories) == 200
    results = [compress_trajectory(t, max_tokens=6000, count_tokens=count) for t in trajectories]
    for traj, out in zip(trajectories, results, strict=True):
        assert out.compressed_tokens <= 6000, traj.id
        assert out.total_events == len(traj.events)
    mean_ratio = statistics.mean(r.ratio for r in results)
    print(
        f"\ntau-bench airline: mean compression ratio {mean_ratio:.3f} "
        f"(compressed/original tokens, gpt-4o tokenizer, budget 6000)"
    )
    assert 0.5 < mean_ratio < 1.0
    assert any(r.dropped_events for r in results)  # the longest runs needed middle steps cut
    assert sum(r.merged_events for r in results) > 0
