"""Capture without a framework: a recorder that turns calls into structured events
(docs/concepts.md#trajectories-and-events).

``with memory.record("book a flight", tenant_id="acme") as run:`` (or ``async with`` on
:class:`hindsight.AsyncMemory`) collects events in memory; leaving the block stores the
trajectory and queues its review in the background. An exception escaping the block marks the
run failed unless it was given a reward that says success (and is re-raised untouched).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from hindsight._contract import (
    Source,
    Tags,
    TaskType,
    check,
    outcome_conflict,
    tool_name_refusal,
    usage_error,
)
from hindsight._errors import InvalidTrajectoryError, UsageError
from hindsight._ids import new_id, validate_namespace, validate_tenant
from hindsight._status import classify_tool_result
from hindsight._text import clean_json, note, warning_scope
from hindsight.capture.ingest._common import expected_action, outcome_word
from hindsight.clock import SystemClock, utc_clock
from hindsight.models import (
    Event,
    EventStatus,
    EventType,
    ExpectedAction,
    Outcome,
    OutcomeEvidence,
    Provenance,
    Trajectory,
    content_to_text,
    validate_reward,
    validate_task_key,
)

__all__ = ["RunRecorder"]

_STATUS = {s.value: s for s in EventStatus}


def _task_key(value: Any) -> str | None:
    try:
        return validate_task_key(value)
    except ValueError as exc:
        raise UsageError(str(exc), field="task_key") from None


def _actions(value: Any) -> list[ExpectedAction]:
    if value is None:
        return []
    if isinstance(value, str | bytes | dict) or not isinstance(value, Sequence):
        raise UsageError(
            f"expected_actions must be a list, got {type(value).__name__}", field="expected_actions"
        )
    out = []
    for i, item in enumerate(value):
        where = f"expected_actions[{i}]"
        try:
            out.append(item if isinstance(item, ExpectedAction) else expected_action(item, where))
        except InvalidTrajectoryError as exc:
            raise UsageError(str(exc), field="expected_actions") from None
        except ValidationError as err:
            raise UsageError(f"{where}.{usage_error(err)}", field="expected_actions") from None
    return out


def _status(value: str | EventStatus | None) -> EventStatus | None:
    if value is None or isinstance(value, EventStatus):
        return value
    try:
        return _STATUS[value]
    except KeyError:
        raise UsageError(
            f"status must be one of success, failure, timeout; got {value!r:.60}", field="status"
        ) from None


def _reward(value: Any) -> float | None:
    try:
        return validate_reward(value)
    except ValueError as exc:
        raise UsageError(str(exc), field="reward") from None


def _tool_name(value: Any) -> None:
    refusal = tool_name_refusal(value)
    if refusal is not None:
        raise UsageError(refusal, field="tool_name")


def _json_object(value: Any, name: str) -> dict[str, Any]:
    """``value`` (``None``: empty) as a dict JSON can store, checked now (see ``clean_json``)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise UsageError(f"{name} must be a dict, got {type(value).__name__}", field=name)
    return dict(clean_json(value, name, strict=True))


def _metadata(keywords: dict[str, Any]) -> dict[str, Any]:
    """An event's metadata from a method's keywords; a ``metadata={...}`` among them is the
    metadata itself (merged), not a key of it."""
    inner = keywords.pop("metadata", None)
    return {**_json_object(inner, "metadata"), **keywords}


class RunRecorder:
    """Records one run as a :class:`~hindsight.models.Trajectory`.

    Create it with ``Memory.record(...)`` / ``AsyncMemory.record(...)``, not directly. Every
    method returns the :class:`~hindsight.models.Event` it appended; its extra keywords are the
    event's metadata (a ``metadata={...}`` keyword is that metadata itself). Every value is checked
    when it is given, so a bad one raises :class:`~hindsight.UsageError` (one line) at the call
    that sent it, inside the ``with`` block: the run recorded so far is still stored, as
    failed, with that error as its last event (docs/concepts.md#the-input-contract). The
    run's start, end and event times come from ``clock`` (the memory's clock:
    docs/concepts.md#the-clock).

    Attributes:
        trajectory_id: the id the stored trajectory will have (usable for ``record_outcome``
            and recall attribution while the run is going on).
        system_prompt: the run's system prompt / policy (``record(..., system_prompt=...)``;
            may be set while the run is going on); stored once per distinct text.
    """

    def __init__(
        self,
        task: str,
        *,
        tenant_id: str,
        namespace: str = "default",
        task_type: str | None = None,
        tags: Sequence[str] = (),
        source: Provenance | str = Provenance.USER,
        metadata: dict[str, Any] | None = None,
        system_prompt: str | None = None,
        task_key: str | None = None,
        finish: Callable[[Trajectory], Any] | None = None,
        afinish: Callable[[Trajectory], Awaitable[Any]] | None = None,
        clock: Any = None,
    ) -> None:
        if not isinstance(task, str):
            raise UsageError(f"task must be a string, got {type(task).__name__}", field="task")
        self.trajectory_id = new_id()
        self.system_prompt = system_prompt
        self._task_key = _task_key(task_key)
        self._evidence: OutcomeEvidence | None = None
        self._tenant_id = validate_tenant(tenant_id)
        self._namespace = validate_namespace(namespace)
        self._task = task
        self._task_type = check(TaskType, task_type)
        self._tags = check(Tags, tags)
        self._source = check(Source, source)
        self._metadata = _json_object(metadata, "metadata")
        self._events: list[Event] = []
        self._outcome: Outcome = Outcome.UNKNOWN
        self._reward: float | None = None
        self._clock = utc_clock(clock if clock is not None else SystemClock())
        self._started = self._clock.now()
        self._open_calls: dict[str, tuple[str, float]] = {}
        self._finish = finish
        self._afinish = afinish
        self._closed = False
        self.receipt: Any = None

    @property
    def system_prompt(self) -> str | None:
        """The run's system prompt / policy (``None``: not known)."""
        return self._system_prompt

    @system_prompt.setter
    def system_prompt(self, value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise UsageError(
                f"system_prompt must be a string, got {type(value).__name__}",
                field="system_prompt",
            )
        self._system_prompt = value

    # -- events -------------------------------------------------------------------------
    def _add(self, event_type: EventType, content: Any = "", **fields: Any) -> Event:
        if self._closed:
            raise UsageError("this run has ended; start a new one with memory.record(...)")
        fields.setdefault("timestamp", self._clock.now())
        try:
            event = Event(
                trajectory_id=self.trajectory_id, event_type=event_type, content=content, **fields
            )
        except ValidationError as err:
            raise usage_error(err) from None
        self._events.append(event)
        return event

    def user_message(self, content: Any, **metadata: Any) -> Event:
        """Append a user message."""
        return self._add(EventType.USER_MESSAGE, content, metadata=_metadata(metadata))

    def model_thought(self, content: Any, **metadata: Any) -> Event:
        """Append the model's reasoning / a plan step."""
        return self._add(EventType.MODEL_THOUGHT, content, metadata=_metadata(metadata))

    def model_call(
        self,
        content: Any = "",
        *,
        latency_ms: float | None = None,
        status: str | EventStatus | None = None,
        **metadata: Any,
    ) -> Event:
        """Append a model call (its output text); ``latency_ms`` in milliseconds."""
        return self._add(
            EventType.MODEL_CALL,
            content,
            latency_ms=latency_ms,
            status=_status(status),
            metadata=_metadata(metadata),
        )

    def tool_call(
        self,
        tool_name: str,
        args: dict[str, Any] | None = None,
        *,
        tool_call_id: str | None = None,
        **metadata: Any,
    ) -> Event:
        """Append a tool call; returns the event, whose ``tool_call_id`` pairs the result.

        Raises:
            UsageError: ``tool_name`` is not a tool name of 1..200 characters (the limit of
                ``check_action`` and of recall's ``tools``, so that the call can be checked
                and recalled by its tool), or ``args`` is not a dict.
        """
        _tool_name(tool_name)
        if args is not None and not isinstance(args, dict):
            raise UsageError(
                f"args must be a dict (the call's tool_args), got {type(args).__name__}",
                field="tool_args",
            )
        call_id = tool_call_id or new_id()
        started = time.perf_counter()
        event = self._add(
            EventType.TOOL_CALL,
            "",
            tool_name=tool_name,
            tool_call_id=call_id,
            tool_args=args or {},
            metadata=_metadata(metadata),
        )
        self._open_calls[call_id] = (tool_name, started)  # a refused call never ran
        return event

    def tool_result(
        self,
        tool_name: str | None = None,
        content: Any = "",
        *,
        status: str | EventStatus | None = None,
        tool_call_id: str | None = None,
        latency_ms: float | None = None,
        **metadata: Any,
    ) -> Event:
        """Append a tool result; ``status`` is success, failure or timeout.

        Without ``status``, the reply says it, as in an ingested log or a framework's tool
        message (docs/concepts.md#trajectories-and-events): ``failure`` when it starts like an
        error (``Error: ...``, an exception name, a traceback, ``HTTP 500``) or is a JSON object
        with an ``error``, ``timeout`` when such a reply says it timed out, else ``success``.
        ``content`` that is not a string is stored as its JSON text (``{"ok": true}``).

        Raises:
            UsageError: a value that is not valid (one line naming its field: ``content``
                JSON cannot hold, an unknown ``status``, a negative ``latency_ms``...).

        With ``tool_call_id`` of an earlier :meth:`tool_call`, the tool name and the latency
        (milliseconds since the call) are filled in when not given.
        """
        if tool_name is not None:
            _tool_name(tool_name)
        if tool_call_id is None and tool_name is not None:
            for cid in reversed(list(self._open_calls)):
                if self._open_calls[cid][0] == tool_name:
                    tool_call_id = cid
                    break
        if tool_call_id is not None and tool_call_id in self._open_calls:
            name, started = self._open_calls.pop(tool_call_id)
            tool_name = tool_name or name
            if latency_ms is None:
                latency_ms = (time.perf_counter() - started) * 1000.0
        if not tool_name:
            raise UsageError(
                "tool_result needs tool_name or the tool_call_id of a tool_call", field="tool_name"
            )
        if status is None:
            status = classify_tool_result(content_to_text(content))
        return self._add(
            EventType.TOOL_RESULT,
            content,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            status=_status(status),
            latency_ms=latency_ms,
            metadata=_metadata(metadata),
        )

    def final_answer(self, content: Any, **metadata: Any) -> Event:
        """Append the run's final answer."""
        return self._add(EventType.FINAL_ANSWER, content, metadata=_metadata(metadata))

    def error(self, error: BaseException | str, **metadata: Any) -> Event:
        """Append an error (an exception's type and message, or a text)."""
        metadata = _metadata(metadata)
        if isinstance(error, BaseException):
            text = f"{type(error).__name__}: {error}"
            metadata.setdefault("error_type", type(error).__name__)
        else:
            text = str(error)
        return self._add(EventType.ERROR, text, status=EventStatus.FAILURE, metadata=metadata)

    def set_outcome(
        self,
        outcome: str | Outcome,
        reward: float | None = None,
        *,
        reason: str | None = None,
        expected_actions: Sequence[ExpectedAction | dict[str, Any]] | None = None,
        final_state: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Declare how the run ended: success, failure, partial or unknown, and why.

        Args:
            outcome: success, failure, partial or unknown, in any case, or a synonym a log
                would use (``passed``, ``failed``, ``ok``, ``error``, a boolean...: as
                ``hindsight ingest`` reads them, docs/concepts.md#trajectories-and-events).
            reward: the environment's reward, if any.
            reason: why, in a few words (e.g. ``"the refund went to the wrong card"``).
            expected_actions: the calls a correct run makes: :class:`ExpectedAction` or dicts
                ``{"tool", "args"}`` (also ``{"name", "kwargs"}`` / ``{"name", "arguments"}``;
                arguments as JSON text are parsed, text that is not JSON is kept exactly as
                ``{"_raw": <text>}`` with an :class:`~hindsight.InvalidTextWarning`).
            final_state: the environment's final state (a JSON object).
            details: any further structured evidence (a JSON object).

        Together these are the run's :class:`~hindsight.models.OutcomeEvidence`, which the
        review reads; a later call replaces them.

        Raises:
            UsageError: an unknown outcome, a reward that is not a finite number, or malformed
                evidence (nothing is changed then).

        An outcome the reward says the opposite of (``"failure"`` with a reward of 1 or more,
        ``"success"`` with 0 or less) is kept as given, with an
        :class:`~hindsight.InvalidTextWarning` saying so (:func:`hindsight._contract.
        outcome_conflict`).
        """
        named = None if isinstance(outcome, str) and not outcome.strip() else outcome_word(outcome)
        if named is None:
            raise UsageError(
                f"outcome must be one of success, failure, partial, unknown; got {outcome!r:.60}",
                field="outcome",
            )
        if reason is not None and not isinstance(reason, str):
            raise UsageError(
                f"reason must be a string, got {type(reason).__name__}", field="reason"
            )
        for name, value in (("final_state", final_state), ("details", details)):
            if value is not None and not isinstance(value, dict):
                raise UsageError(f"{name} must be a dict, got {type(value).__name__}", field=name)
        checked_reward = _reward(reward)
        # one warning, only for what is kept: arguments that are not JSON (as text), an
        # outcome its reward disagrees with (the outcome given stays)
        with warning_scope():
            try:
                evidence = OutcomeEvidence(
                    reason=reason,
                    expected_actions=_actions(expected_actions),
                    final_state=final_state,
                    details=details or {},
                )
            except ValidationError as err:
                raise usage_error(err) from None
            conflict = outcome_conflict(named, checked_reward)
            if conflict is not None:
                note(conflict)
        self._outcome = named
        self._reward = checked_reward
        self._evidence = None if evidence.is_empty() else evidence

    # -- result -------------------------------------------------------------------------
    @property
    def events(self) -> list[Event]:
        """The events so far (a copy)."""
        return list(self._events)

    def to_trajectory(self) -> Trajectory:
        """The trajectory as recorded so far."""
        return Trajectory(
            id=self.trajectory_id,
            tenant_id=self._tenant_id,
            namespace=self._namespace,
            task=self._task
            or next(
                (e.content for e in self._events if e.event_type is EventType.USER_MESSAGE), ""
            ),
            task_type=self._task_type,
            tags=self._tags,
            outcome=self._outcome,
            reward=self._reward,
            source=self._source,
            started_at=self._started,
            ended_at=self._clock.now(),
            events=self._events,
            metadata=self._metadata,
            system_prompt=self.system_prompt,
            evidence=self._evidence,
            task_key=self._task_key,
        )

    def _close(self, exc: BaseException | None) -> Trajectory:
        if exc is not None:
            self.error(exc, traceback="".join(traceback.format_exception(exc))[-2000:])
            # a value hindsight refused is the calling code's mistake, not the agent's: the
            # run is kept, its outcome stays unknown (nothing credited or blamed for it); so
            # does a run given a reward that says success
            failure_fits = outcome_conflict(Outcome.FAILURE, self._reward) is None
            if (
                self._outcome is Outcome.UNKNOWN
                and not isinstance(exc, UsageError)
                and failure_fits
            ):
                self._outcome = Outcome.FAILURE
        # Tool calls that never got a result were cut off: keep them visible.
        for cid, (name, _) in list(self._open_calls.items()):
            self._add(
                EventType.TOOL_RESULT,
                "no result recorded",
                tool_name=name,
                tool_call_id=cid,
                status=EventStatus.FAILURE,
                metadata={"incomplete": True},
            )
        self._open_calls.clear()
        self._closed = True
        return self.to_trajectory()

    def __enter__(self) -> RunRecorder:
        if self._finish is None:
            raise UsageError("use 'async with' on a recorder from AsyncMemory.record()")
        return self

    def __exit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._finish is not None
        self.receipt = self._finish(self._close(exc))

    async def __aenter__(self) -> RunRecorder:
        if self._afinish is None:
            raise UsageError("use 'with' on a recorder from Memory.record()")
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._afinish is not None
        self.receipt = await self._afinish(self._close(exc))
