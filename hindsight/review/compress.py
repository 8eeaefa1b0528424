"""Compress a trajectory into a text that fits a reviewer's token budget.

See docs/review.md#compression.

Long runs are compressed before review, in this order:

1. **drop empty steps** (no content, no tool, no status);
2. **merge repeated identical tool calls**: a call and its result with the same tool, the same
   arguments and the same result status as an earlier one become one line, ``[called N times,
   same arguments, every time <status>]``;
3. **cut huge outputs** (and long messages) to head and tail around ``…[N chars cut]…``;
4. if the text is still over budget, **leave out middle steps**, marked ``…[N steps omitted]…``:
   the first user message, the final answer and every failure are kept first, then as many of
   the other steps as fit, taken alternately from the start and the end of the run.

Everything is linear in the number of events and in the size of their contents (a 5,000-event
run with a 5 MB tool output takes well under a second with :func:`hindsight.tokens.estimate_tokens`
as the counter); each rendered step is counted once.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hindsight._errors import UsageError
from hindsight.models import Event, EventStatus, EventType, Trajectory

__all__ = ["CompressedTrajectory", "compress_trajectory"]

MIN_BUDGET = 100
"""Smallest accepted ``max_tokens``: below it not even the task and the final answer fit."""

MAX_STEP_CHARS = 2000
"""Default cap on one step's text, in characters (head and tail are kept around a marker)."""

_ARGS_CHARS = 600  # cap on the arguments shown for one call
_FAILED = (EventStatus.FAILURE, EventStatus.TIMEOUT)
_LABELS = {
    EventType.USER_MESSAGE: "user",
    EventType.MODEL_THOUGHT: "thought",
    EventType.MODEL_CALL: "assistant",
    EventType.FINAL_ANSWER: "final",
    EventType.ERROR: "error",
}


@dataclass(frozen=True, slots=True)
class CompressedTrajectory:
    """A trajectory rendered for review, and what the compression did.

    Attributes:
        text: the rendered trajectory (header, then one numbered line or block per step).
        original_tokens: tokens of the uncompressed rendering (every event in full).
        compressed_tokens: tokens of ``text`` (<= the budget).
        total_events: events in the trajectory.
        kept_events: events whose step appears in ``text`` (a merged call counts its call and
            result events once).
        merged_events: events folded into an earlier identical call (``called N times``).
        dropped_events: events left out: empty ones plus the omitted middle steps.
        cut_steps: steps whose text was cut to head and tail.
    All token counts use the ``count_tokens`` given to :func:`compress_trajectory`.
    """

    text: str
    original_tokens: int
    compressed_tokens: int
    total_events: int
    kept_events: int
    merged_events: int
    dropped_events: int
    cut_steps: int = 0

    @property
    def ratio(self) -> float:
        """``compressed_tokens / original_tokens`` (1.0 for an empty run): 0.25 is 4x smaller."""
        return self.compressed_tokens / self.original_tokens if self.original_tokens else 1.0


@dataclass(slots=True)
class _Step:
    """One rendered step: a single event, or a tool call with its result."""

    position: int  # index of its first event
    events: list[int]
    label: str
    tool: str | None = None
    args: str = ""
    status: EventStatus | None = None
    body: str = ""
    priority: int = 2  # 0: first user message / final answer, 1: failure, 2: the rest
    repeats: int = 1
    merged_events: int = 0
    cut: bool = False
    text: str = ""
    cost: int = 0


def _args_text(event: Event) -> str:
    if event.tool_args is not None:
        try:
            return json.dumps(event.tool_args, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return str(event.tool_args)
    return event.content.strip()


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` chars: head, ``…[N chars cut]…``, tail."""
    if len(text) <= limit:
        return text, False
    head = max(1, limit * 2 // 3)
    tail = max(1, limit - head)
    removed = len(text) - head - tail
    return f"{text[:head]}…[{removed} chars cut]…{text[-tail:]}", True


def _is_empty(event: Event) -> bool:
    return not event.content.strip() and not event.tool_name and event.status is None


def _steps(events: Sequence[Event]) -> tuple[list[_Step], int]:
    """Pair calls with results, by ``tool_call_id`` or else with the oldest open call of the
    same tool that has no id; returns the steps in order and the number of empty events."""
    steps: list[_Step] = []
    open_by_id: dict[str, _Step] = {}
    open_by_tool: dict[str, deque[_Step]] = {}
    empty = 0
    for i, event in enumerate(events):
        if _is_empty(event):
            empty += 1
            continue
        kind = event.event_type
        if kind is EventType.TOOL_CALL:
            step = _Step(i, [i], "call", tool=event.tool_name or "?", args=_args_text(event))
            steps.append(step)
            if event.tool_call_id:
                open_by_id[event.tool_call_id] = step
            else:
                open_by_tool.setdefault(step.tool or "?", deque()).append(step)
            continue
        if kind is EventType.TOOL_RESULT:
            call = open_by_id.pop(event.tool_call_id, None) if event.tool_call_id else None
            if call is None:
                pending = open_by_tool.get(event.tool_name or "?")
                while pending and call is None:
                    candidate = pending.popleft()
                    call = candidate if len(candidate.events) == 1 else None
            if call is not None:
                call.events.append(i)
                call.status = event.status
                call.body = event.content
                continue
            steps.append(
                _Step(
                    i, [i], "result", tool=event.tool_name, status=event.status, body=event.content
                )
            )
            continue
        label = _LABELS.get(kind, kind.value)
        steps.append(
            _Step(i, [i], label, tool=event.tool_name, status=event.status, body=event.content)
        )
    return steps, empty


def _merge_repeats(steps: list[_Step]) -> list[_Step]:
    """Fold each call into the first earlier call with the same tool, args and status."""
    first: dict[tuple[str, str, str], _Step] = {}
    kept: list[_Step] = []
    for step in steps:
        if step.label == "call" and len(step.events) == 2:
            key = (step.tool or "", step.args, step.status.value if step.status else "")
            seen = first.get(key)
            if seen is not None:
                seen.repeats += 1
                seen.merged_events += len(step.events)
                continue
            first[key] = step
        kept.append(step)
    return kept


def _render(step: _Step, limit: int) -> None:
    number = f"#{step.position + 1}"
    status = step.status.value if step.status is not None else None
    body, cut_body = _cut(step.body.strip(), limit)
    if step.label == "call":
        args, cut_args = _cut(step.args, min(limit, _ARGS_CHARS))
        line = f"{number} call {step.tool} {args}"
        if len(step.events) == 2:
            line += f" -> {status or 'done'}: {body}" if body else f" -> {status or 'done'}"
        else:
            line += " -> no result recorded"
        if step.repeats > 1:
            line += f" [called {step.repeats} times, same arguments, every time {status or 'done'}]"
        step.cut = cut_body or cut_args
    else:
        head = step.label if step.tool is None else f"{step.label} {step.tool}"
        if status is not None and step.label != "result":
            head += f" ({status})"
        elif status is not None:
            head += f" {status}"
        line = f"{number} {head}: {body}"
        step.cut = cut_body
    step.text = line


def _full_line(event: Event) -> str:
    """An event rendered in full, for the ``original_tokens`` count."""
    tool = f" {event.tool_name}" if event.tool_name else ""
    status = f" {event.status.value}" if event.status is not None else ""
    args = f" {_args_text(event)}" if event.event_type is EventType.TOOL_CALL else ""
    content = event.content if event.event_type is not EventType.TOOL_CALL else ""
    return f"#0 {event.event_type.value}{tool}{status}{args}: {content}"


def _header(traj: Trajectory, limit: int, first_user: str | None = None) -> list[str]:
    lines = []
    task = traj.task.strip()
    if task and task != (first_user or "").strip():
        lines.append("Task: " + _cut(" ".join(traj.task.split()), limit)[0])
    if traj.task_type:
        lines.append(f"Task type: {traj.task_type}")
    outcome = f"Recorded outcome: {traj.outcome.value}"
    if traj.reward is not None:
        outcome += f" (reward {traj.reward:g})"
    lines.append(outcome)
    return lines


def _select(steps: list[_Step], budget: int, marker_cost: int) -> list[bool]:
    """Which steps to keep within ``budget`` tokens (see the module docstring for the order).

    Gap markers are paid for as they appear: keeping a step in the middle of a run of omitted
    steps splits it into two gaps; keeping the last step of a gap removes one.
    """
    n = len(steps)
    chosen = [False] * n
    gaps = 1 if n else 0
    used = marker_cost * gaps

    def try_take(i: int) -> bool:
        nonlocal gaps, used
        left = i > 0 and not chosen[i - 1]
        right = i < n - 1 and not chosen[i + 1]
        delta = 1 if left and right else (-1 if not left and not right else 0)
        cost = steps[i].cost + delta * marker_cost
        if used + cost > budget:
            return False
        chosen[i] = True
        gaps += delta
        used += cost
        return True

    for tier in (0, 1, 2):
        order = [i for i in range(n) if steps[i].priority == tier]
        lo, hi = 0, len(order) - 1
        lo_open = hi_open = True
        from_start = True
        while lo <= hi and (lo_open or hi_open):
            if (from_start and lo_open) or not hi_open:
                if try_take(order[lo]):
                    lo += 1
                elif tier == 0:
                    lo += 1  # a must-keep step that does not fit: try the others
                else:
                    lo_open = False
            else:
                if try_take(order[hi]) or tier == 0:
                    hi -= 1
                else:
                    hi_open = False
            from_start = not from_start
    return chosen


def _assemble(
    header: list[str], steps: list[_Step], chosen: list[bool], stats_line: Callable[[int], str]
) -> tuple[str, int]:
    lines = list(header)
    omitted_steps = 0
    omitted_total = 0
    body: list[str] = []
    for step, keep in zip(steps, chosen, strict=True):
        if keep:
            if omitted_steps:
                body.append(f"…[{omitted_steps} steps omitted]…")
                omitted_steps = 0
            body.append(step.text)
        else:
            omitted_steps += 1
            omitted_total += len(step.events) + step.merged_events
    if omitted_steps:
        body.append(f"…[{omitted_steps} steps omitted]…")
    lines.append(stats_line(omitted_total))
    lines.append("")
    lines.extend(body)
    return "\n".join(lines), omitted_total


def _hard_truncate(text: str, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """Cut ``text`` so it fits ``max_tokens`` (binary search on its length, a marker at the end)."""
    marker = "\n…[rest cut to fit the token budget]"
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(text[:mid] + marker) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + marker


def compress_trajectory(
    traj: Trajectory,
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
    max_step_chars: int | None = None,
) -> CompressedTrajectory:
    """Render ``traj`` for review within ``max_tokens`` tokens, compressing as needed.

    Args:
        traj: the finished run.
        max_tokens: token budget of the returned text (>= :data:`MIN_BUDGET`); the LLM
            reviewer's default is 6000 (``max_input_tokens``).
        count_tokens: counts the tokens of a string, e.g. :func:`hindsight.tokens.estimate_tokens`
            or a wrapper of ``litellm.token_counter``; called once per step and a few more
            times on the assembled text, so it should be fast on large inputs.
        max_step_chars: cap on one step's text in characters before head/tail cutting; default
            ``min(MAX_STEP_CHARS, max(160, max_tokens * 2 // 5))`` (2000 for a 6000-token
            budget). The first user message and the final answer get twice as much.

    Returns:
        a :class:`CompressedTrajectory`; its ``compressed_tokens`` is at most ``max_tokens``.

    Raises:
        UsageError: ``max_tokens`` is below :data:`MIN_BUDGET`.
    """
    if max_tokens < MIN_BUDGET:
        raise UsageError(f"max_tokens must be at least {MIN_BUDGET}, got {max_tokens}")
    limit = max_step_chars or min(MAX_STEP_CHARS, max(160, max_tokens * 2 // 5))
    events = traj.events
    original = sum(count_tokens(_full_line(e)) + 1 for e in events)
    original += count_tokens("\n".join(_header(traj, 10**9)))

    steps, empty = _steps(events)
    steps = _merge_repeats(steps)
    merged = sum(s.merged_events for s in steps)
    first_user = next((s for s in steps if s.label == "user"), None)
    final = next((s for s in reversed(steps) if s.label == "final"), None)
    for step in steps:
        if step is first_user or step is final:
            step.priority = 0
        elif step.status in _FAILED or step.label == "error":
            step.priority = 1
        _render(step, limit * 2 if step.priority == 0 else limit)
        step.cost = count_tokens(step.text) + 1

    header = _header(traj, limit * 2, first_user.body if first_user else None)
    total = len(events)

    def stats_line(omitted: int) -> str:
        shown = total - empty - merged - omitted
        line = f"Steps: {total} recorded, {shown} shown"
        details = [
            f"{n} {what}"
            for n, what in (
                (merged, "merged repeats"),
                (empty, "empty dropped"),
                (omitted, "omitted"),
            )
            if n
        ]
        return line + (f" ({', '.join(details)})" if details else "")

    marker_cost = count_tokens(f"…[{len(steps)} steps omitted]…") + 1
    fixed = count_tokens("\n".join([*header, stats_line(total)])) + 2
    budget = max_tokens - fixed
    chosen = [True] * len(steps)
    if sum(s.cost for s in steps) > budget:
        chosen = _select(steps, budget, marker_cost)
    text, omitted = _assemble(header, steps, chosen, stats_line)
    tokens = count_tokens(text)
    for _ in range(4):  # the per-step sum is an estimate of the whole: tighten if it was off
        if tokens <= max_tokens:
            break
        budget -= tokens - max_tokens + max(8, max_tokens // 50)
        chosen = _select(steps, max(0, budget), marker_cost)
        text, omitted = _assemble(header, steps, chosen, stats_line)
        tokens = count_tokens(text)
    if tokens > max_tokens:
        text = _hard_truncate(text, max_tokens, count_tokens)
        tokens = count_tokens(text)

    kept = sum(len(s.events) for s, keep in zip(steps, chosen, strict=True) if keep)
    return CompressedTrajectory(
        text=text,
        original_tokens=original,
        compressed_tokens=tokens,
        total_events=total,
        kept_events=kept,
        merged_events=merged,
        dropped_events=empty + omitted,
        cut_steps=sum(1 for s, keep in zip(steps, chosen, strict=True) if keep and s.cut),
    )
