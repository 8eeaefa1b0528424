"""Pair a trajectory's tool calls with their results into one record per call."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hindsight._status import classify_tool_result
from hindsight.capture.ingest._common import canonical_json
from hindsight.models import Event, EventStatus, EventType
from hindsight.review._text import error_text
from hindsight.review.masking import Masker, key_class, value_pattern

__all__ = [
    "ERROR_CHARS",
    "ToolCall",
    "collect_calls",
    "error_quote",
    "error_subject",
    "is_read_only",
    "without_echoes",
]

ERROR_CHARS = 120
"""Characters of a tool error kept in a lesson and in its subject (:func:`error_subject`)."""

# A tool whose name starts with one of these verbs is taken to only read state; any other tool
# (book_, update_, cancel_, send_, transfer_, ...) may change it and can be a run's key step.
_READ_VERBS = {
    "get",
    "search",
    "list",
    "find",
    "read",
    "fetch",
    "query",
    "lookup",
    "look",
    "calculate",
    "calc",
    "compute",
    "think",
    "check",
    "describe",
    "show",
    "view",
    "retrieve",
    "count",
    "browse",
    "inspect",
    "validate",
    "verify",
    "preview",
    "estimate",
    "load",
    "download",
}
_NAME_PARTS = re.compile(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])")


def is_read_only(tool: str) -> bool:
    """True when the tool's name starts with a read verb (``get_``, ``search``, ``listX``...)."""
    parts = [p for p in _NAME_PARTS.split(tool) if p]
    return bool(parts) and parts[0].lower() in _READ_VERBS


@dataclass
class ToolCall:
    """One call of a tool and its result.

    Attributes:
        position: index of the call (or of its lone result) among the trajectory's events.
        tool: tool name.
        args: parsed arguments (``{}`` when the call event is missing).
        status: the result's status; ``None`` when no result was recorded.
        output: the result text (``""`` when none).
    """

    position: int
    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    status: EventStatus | None = None
    output: str = ""

    @property
    def failed(self) -> bool:
        """True for a failure or a timeout."""
        return self.status in (EventStatus.FAILURE, EventStatus.TIMEOUT)

    @property
    def succeeded(self) -> bool:
        """True when the result was a success."""
        return self.status is EventStatus.SUCCESS

    @property
    def signature(self) -> str:
        """Tool name plus canonical arguments: equal for identical calls."""
        return f"{self.tool}:{canonical_json(self.args)}"


def error_subject(
    call: ToolCall, mask: Callable[[str], str], empty: str = "no error message"
) -> str:
    """What every lesson about ``call``'s error is about: ``<tool>:<status>:<masked error>``
    (``update_reservation_flights:failure:not enough seats on flight <flight_number>``), lower
    case; ``empty`` stands for a result without an error text. A timeout is one subject per
    tool, ``<tool>:timeout``, whatever its message says (``timed out after 58s``, ``59s``).

    The heuristic reviewer's tool-error lessons and the miner's error rules share it as
    ``metadata["subject"]``, and recall shows one lesson per subject
    (docs/concepts.md#recall). ``mask`` replaces the run's own values by their class
    (:meth:`hindsight.review.masking.Masker.mask`), so runs of one error share one subject.
    """
    if call.status is EventStatus.TIMEOUT:
        return f"{call.tool}:{call.status}"
    text = error_quote(call, mask) or empty
    return f"{call.tool}:{call.status}:{text.lower()}"


def error_quote(call: ToolCall, mask: Callable[[str], str]) -> str:
    """The part of ``call``'s error a lesson quotes (:func:`error_text`, at most
    :data:`ERROR_CHARS`), its own argument values echoed back shown as their key
    (:func:`without_echoes`) and the run's values masked by ``mask``; ``""`` for none."""
    return mask(without_echoes(error_text(call.output, ERROR_CHARS), call.args))


def without_echoes(text: str, args: Mapping[str, Any]) -> str:
    """``text`` with each text argument of the call it quotes back shown as ``<key>``: for
    ``project="atlas"``, ``quota exceeded for project atlas`` -> ``quota exceeded for project
    <project>``. The error is about that argument whatever its value, so runs of one error
    share one lesson instead of one per value; which values matter is what condition mining
    finds across runs (docs/review.md#condition-mining). A value the masking classes whole by
    its form keeps that class (``gift_card_123456`` -> ``<gift_card_id>``, numbers, codes,
    dates); one it keeps (a word, a phrase) or would mask only in part (``W-17`` ->
    ``W-<number>``) is shown as its key; one character is left as it is. A value written like
    an everyday word (one lower-case word: ``order``, ``json``, ``user``) is shown so only
    where the error names its key beside it (``channel 'fax'``, ``project=atlas``, ``the atlas
    project``): ``kind="order"`` leaves ``order not found`` as it is, since the word is the
    error's own as much as the argument's."""
    for key, value in args.items():
        if not isinstance(value, str) or not isinstance(key, str):
            continue
        value = value.strip()
        if (
            len(value) < 2
            or value.lower() not in text.lower()
            or _WHOLE.fullmatch(_BY_FORM.mask(value))
        ):
            continue
        pattern = value_pattern(value)
        if value.isalpha() and value.islower() and not _names_key(text, pattern, key):
            continue
        text = pattern.sub(f"<{key_class(key)}>", text)
    return text


_WORD = re.compile(r"\w+")
_WHOLE = re.compile(r"<\w+>")


def _names_key(text: str, pattern: re.Pattern[str], key: str) -> bool:
    """Whether the word just before or just after a match of ``pattern`` in ``text`` is one
    of the words of the argument's ``key`` (``project`` of ``project_name``), case-folded."""
    words = {w for w in re.split(r"[^a-z]+", key.lower()) if len(w) >= 2}
    for m in pattern.finditer(text):
        before = _WORD.findall(text[max(0, m.start() - 40) : m.start()])[-1:]
        after = _WORD.findall(text[m.end() : m.end() + 40])[:1]
        if any(w.lower() in words for w in before + after):
            return True
    return False


_BY_FORM = Masker()
"""A masker that knows no run: what it changes, the masking classes by its form alone."""


def collect_calls(events: Sequence[Event]) -> list[ToolCall]:
    """The tool calls of ``events`` in call order, each paired with its result.

    A ``tool_result`` (or an ``error`` event naming a tool) is matched to its call by
    ``tool_call_id``, else by ``parent_id``, else to the oldest unanswered call of the same
    tool; an unmatched result becomes a call of its own with unknown arguments. A call event
    that carries a status itself keeps it until a result overrides it; a result without a
    status is classified from its text (``Error...`` -> failure, timeouts -> timeout). The
    placeholder result the recorder adds for a call still open when the run ended
    (``metadata["incomplete"]``) leaves the call without a result (``status`` ``None``): the
    tool did not fail, the run stopped.
    """
    calls: list[ToolCall] = []
    by_call_id: dict[str, ToolCall] = {}
    by_event_id: dict[str, ToolCall] = {}
    open_calls: list[ToolCall] = []
    for position, event in enumerate(events):
        if event.event_type is EventType.TOOL_CALL and event.tool_name:
            call = ToolCall(position, event.tool_name, dict(event.tool_args or {}), event.status)
            calls.append(call)
            open_calls.append(call)
            by_event_id[event.event_id] = call
            if event.tool_call_id:
                by_call_id[event.tool_call_id] = call
            continue
        is_result = event.event_type is EventType.TOOL_RESULT
        if not (is_result or (event.event_type is EventType.ERROR and event.tool_name)):
            continue
        match = (by_call_id.get(event.tool_call_id) if event.tool_call_id else None) or (
            by_event_id.get(event.parent_id) if event.parent_id else None
        )
        if match is None or match not in open_calls:
            match = next((c for c in open_calls if c.tool == event.tool_name), match)
        status = event.status or (
            classify_tool_result(event.content) if is_result else EventStatus.FAILURE
        )
        if match is None:
            if not event.tool_name:
                continue
            match = ToolCall(position, event.tool_name)
            calls.append(match)
        elif match in open_calls:
            open_calls.remove(match)
        if is_result and (event.metadata or {}).get("incomplete"):
            continue  # the run ended before the tool replied: no result, not a tool error
        match.status = status
        match.output = event.content
    return calls
