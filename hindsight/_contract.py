"""The input contract of the public API: the checked argument types, the one table of limits
(``MAX_QUERY_CHARS``, ``MAX_CONTENT_CHARS``, ``MAX_LABELS``, ``MAX_BATCH_ITEMS``,
``MAX_NAME_CHARS``, the integer and number ranges) and spellings (``source``: every spelling
of :data:`hindsight.models.PROVENANCE_SPELLINGS`; ``kind``, ``status``, ``order``), and how a
failed check becomes one line for the caller, with the field it is about
(``UsageError.field``). Python, HTTP (the request schemas), MCP (the tool signatures) and the
CLI (its options and the settings, :func:`hindsight.config.load_config`) all check with these
types, so one value gets one answer everywhere (docs/concepts.md#the-input-contract).

Every type below is an ``Annotated`` type whose validator is *the* check of that argument: the
one check and the one message the API has always used (``validate_tenant`` for a tenant,
``normalize_id`` for an id, ...). The engine checks its arguments with :func:`check`; the same
types fit a pydantic model, a FastAPI parameter or an MCP tool signature
(``json_schema_input_type`` gives their schema), so Python, HTTP, MCP and the CLI can share one
contract. A failed check raises the check's own exception, unchanged (a
:class:`~hindsight.TenantRequiredError` stays one), never a pydantic ``ValidationError``.

>>> check(TopK, 5)
5
>>> check(ExperienceId, "{6F0C3A4E-3A55-4B8E-9A0E-7D2F1C0B9E11}")
'6f0c3a4e-3a55-4b8e-9a0e-7d2f1c0b9e11'
>>> check(Limit, "20")
20
>>> check(Limit, 0)
Traceback (most recent call last):
    ...
hindsight._errors.UsageError: limit must be an integer from 1 to 10000, got 0

Foundation: imports nothing of hindsight but ``_errors``, ``_ids``, ``_paging``, ``_text`` and
``models``.
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PlainValidator,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
)

from hindsight._errors import HindsightError, UsageError
from hindsight._ids import normalize_id, validate_namespace, validate_tenant
from hindsight._paging import BAD_CURSOR, MAX_CURSOR
from hindsight._text import clean_text, refuse_invalid
from hindsight.models import (
    PROVENANCE_SPELLINGS,
    ExperienceKind,
    ExperienceStatus,
    Outcome,
    Provenance,
    provenance_of,
    validate_task_key,
)

__all__ = [
    "EXPERIENCE_ORDERS",
    "MAX_BATCH_ITEMS",
    "MAX_CONTENT_CHARS",
    "MAX_LABELS",
    "MAX_NAME_CHARS",
    "MAX_QUERY_CHARS",
    "AsOf",
    "Confidence",
    "ConfidenceDelta",
    "Content",
    "Cursor",
    "ExperienceId",
    "ExperienceOrder",
    "Importance",
    "Kind",
    "Labels",
    "Limit",
    "Namespace",
    "Namespaces",
    "OffByDefault",
    "Offset",
    "OnByDefault",
    "OptionalTenantId",
    "OptionalTopK",
    "OutcomeFilter",
    "Query",
    "RunState",
    "SimilarityFloor",
    "Source",
    "Status",
    "Success",
    "Tags",
    "TaskKey",
    "TaskType",
    "TenantId",
    "TokenBudget",
    "ToolName",
    "Tools",
    "TopK",
    "TrajectoryId",
    "batch_size",
    "check",
    "error_location",
    "forget_filter",
    "input_file",
    "integer",
    "long_tool_name",
    "number",
    "outcome_conflict",
    "reward_outcome",
    "switch",
    "tool_name_refusal",
    "unknown_field",
    "validation_message",
]


# -- the checks (each raises UsageError or a subclass with the message callers see) ------------


def _optional_tenant(value: Any) -> str | None:
    return None if value is None else validate_tenant(value)


def _experience_id(value: Any) -> str:
    return normalize_id(value, "experience_id")


def _trajectory_id(value: Any) -> str:
    return normalize_id(value, "trajectory_id")


def _namespaces(value: Any) -> list[str]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, Sequence) or isinstance(names, bytes):
        raise UsageError(
            f"namespace must be a string or a list of strings, got {type(value).__name__}",
            field="namespace",
        )
    if not names:
        raise UsageError("namespace must name at least one namespace", field="namespace")
    return list(dict.fromkeys(validate_namespace(n) for n in names))


def _query(value: Any) -> str:
    if not isinstance(value, str):
        raise UsageError(f"query must be a string, got {type(value).__name__}", field="query")
    if len(value) > MAX_QUERY_CHARS:
        raise UsageError(
            f"query must be at most {MAX_QUERY_CHARS} characters (send the task or the latest "
            f"message, not a whole document), got {len(value)}",
            field="query",
        )
    return clean_text(value, "query")


def _content(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        got = f"{value!r:.40}" if isinstance(value, str) else type(value).__name__
        raise UsageError(f"content must be a non-empty string, got {got}", field="content")
    if len(value) > MAX_CONTENT_CHARS:
        raise UsageError(
            f"content must be at most {MAX_CONTENT_CHARS} characters (a lesson is a sentence "
            f"or a few), got {len(value)}",
            field="content",
        )
    return value


def _labels_of(name: str) -> Any:
    def check_labels(value: Any) -> list[str]:
        value = _python_scalar(value)  # a 0-d numpy array of one string is that string
        if value is None:
            return []
        if isinstance(value, str):
            labels = [value]
        elif isinstance(value, Iterable) and not isinstance(value, Mapping | bytes):
            labels = list(value)
        else:
            labels = [value]
        if not all(isinstance(t, str) for t in labels):
            raise UsageError(f"{name} must be a list of strings", field=name)
        if len(labels) > MAX_LABELS:
            raise UsageError(
                f"{name} must be at most {MAX_LABELS} strings, got {len(labels)}", field=name
            )
        if name == "tools":  # tool names, as check_action's tool
            for label in labels:
                if not label.strip() or len(label) > MAX_NAME_CHARS:
                    raise UsageError(
                        f"tools must be tool names of 1..{MAX_NAME_CHARS} characters, "
                        f"got {label!r:.60}",
                        field=name,
                    )
        return [clean_text(t, name) for t in labels]

    return check_labels


def batch_size(items: Any) -> Any:
    """``items`` when it is a list of at most :data:`MAX_BATCH_ITEMS` (anything that is not a
    list is left to the caller's own check).

    Raises:
        UsageError: ``items must be a list of at most 1000 lessons (send several batches)``.
    """
    sized = isinstance(items, Sequence) and not isinstance(items, str | bytes)
    if sized and len(items) > MAX_BATCH_ITEMS:
        raise UsageError(
            f"items must be a list of at most {MAX_BATCH_ITEMS} lessons (send several "
            f"batches), got {len(items)}",
            field="items",
        )
    return items


def tool_name_refusal(value: Any, name: str = "tool_name") -> str | None:
    """The one line a tool name is refused with (``tool_name must be a tool name of 1..200
    characters, got '...'``), or ``None`` for a non-blank string of at most
    :data:`MAX_NAME_CHARS` characters: the names ``check_action`` and recall's ``tools`` take,
    so the recorder, ``store_episode`` and ingest store no other (a run's tool could not be
    checked or recalled by its name)."""
    if isinstance(value, str) and value.strip() and len(value) <= MAX_NAME_CHARS:
        return None
    return f"{name} must be a tool name of 1..{MAX_NAME_CHARS} characters, got {value!r:.60}"


def long_tool_name(name: str | None) -> str | None:
    """:func:`tool_name_refusal` of ``name`` when it is longer than :data:`MAX_NAME_CHARS`,
    else ``None`` (also for no name): what every write of a run refuses (the recorder,
    ``store_episode``, every log format), so that no stored run holds a tool that
    ``check_action`` and recall could never name for its length. A blank name is stored."""
    return None if name is None or len(name) <= MAX_NAME_CHARS else tool_name_refusal(name)


def reward_outcome(reward: float) -> Outcome:
    """What a reward says of a run: ``>= 1`` success, ``<= 0`` failure, in between partial
    (docs/concepts.md#a-recorded-run-is-never-lost-to-one-bad-value)."""
    if reward >= 1.0:
        return Outcome.SUCCESS
    if reward <= 0.0:
        return Outcome.FAILURE
    return Outcome.PARTIAL


def outcome_conflict(outcome: Outcome, reward: float | None) -> str | None:
    """One line when ``reward`` says the opposite of ``outcome`` (``outcome "failure"
    disagrees with reward 1.0 ...``, by :func:`reward_outcome`), else ``None`` (they agree,
    either is partial or unknown, or there is no reward). The outcome given is what the run
    keeps (a reward may be on another scale): every write of a run says it as a note of
    :mod:`hindsight._text` and stores the run as sent."""
    if reward is None or outcome not in (Outcome.SUCCESS, Outcome.FAILURE):
        return None
    said = reward_outcome(reward)
    if said not in (Outcome.SUCCESS, Outcome.FAILURE) or said is outcome:
        return None
    return (
        f'outcome "{outcome.value}" disagrees with reward {reward} (a reward of 1 or more '
        "reads as a success, 0 or less as a failure); the outcome given is kept"
    )


def _tool_name(value: Any) -> str:
    refusal = tool_name_refusal(value, "tool")
    if refusal is not None:
        raise UsageError(refusal, field="tool")
    return str(value)


def _run_state(value: Any) -> list[dict[str, Any]] | None:
    """The tool results a run has seen so far (``check_action``'s ``state``)."""
    if value is None:
        return None
    problem = (
        f"state must be a list of at most {MAX_BATCH_ITEMS} tool results, each an object "
        '{"tool": <name>, "result": <JSON value or text>}'
    )
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise UsageError(f"{problem}, got {type(value).__name__}", field="state")
    if len(value) > MAX_BATCH_ITEMS:
        raise UsageError(f"{problem}, got {len(value)} items", field="state")
    out: list[dict[str, Any]] = []
    size = 0
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise UsageError(f"{problem}; state[{i}] is a {type(item).__name__}", field="state")
        if extra := sorted(str(k) for k in set(item) - {"tool", "result"}):
            raise UsageError(
                f"{problem}; state[{i}] has unknown key{'s' if len(extra) > 1 else ''} "
                f"{', '.join(repr(k) for k in extra)[:80]}",
                field="state",
            )
        tool = item.get("tool")
        if not isinstance(tool, str) or not tool.strip() or len(tool) > MAX_NAME_CHARS:
            raise UsageError(
                f"state[{i}].tool must be a tool name of 1..{MAX_NAME_CHARS} characters, "
                f"got {tool!r:.60}",
                field="state",
            )
        result = item.get("result")
        size += len(result) if isinstance(result, str) else len(repr(result))
        if size > MAX_CONTENT_CHARS * 10:
            raise UsageError(
                f"state must hold at most {MAX_CONTENT_CHARS * 10} characters of results "
                "(pass the latest results only)",
                field="state",
            )
        out.append({"tool": tool, "result": result})
    return out


MAX_QUERY_CHARS = 100_000
"""Longest recall query, in characters (a task or a message; embedders read a few thousand)."""
MAX_CONTENT_CHARS = 100_000
"""Longest lesson text, in characters."""
MAX_LABELS = 100
"""Most tags (or tools) of one lesson or one recall."""
MAX_BATCH_ITEMS = 1000
"""Most lessons in one ``add_experiences`` batch (Python, HTTP, MCP)."""
MAX_NAME_CHARS = 200
"""Longest tenant, namespace, task type or tool name."""
MIN_TOKEN_BUDGET = 150
"""The smallest rendered block that holds its header, its closing line and one short item
(the header and the closing line take about 65 estimated tokens)."""
MAX_TOKEN_BUDGET = 1_000_000
DEFAULT_LIMIT = 100
"""What a listing returns when ``limit`` is ``None``."""
_INTEGER_TEXT = re.compile(r"[+-]?\d+")


def _python_scalar(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (``np.int64(3)`` -> ``3``, ``np.True_`` ->
    ``True``), so that it is read, and named in a refusal, as the same value sent as JSON;
    anything else as it is."""
    if (
        hasattr(value, "dtype")
        and getattr(value, "shape", None) == ()
        and callable(getattr(value, "item", None))
    ):
        return value.item()
    return value


def integer(value: Any, name: str, low: int, high: int) -> int:
    """The one integer rule of every interface (docs/concepts.md, the input contract): an
    integer (``int``, or numpy's), a real number with no fraction (``5.0``) or a string of
    digits (``"5"``, as a CLI argument or a query parameter arrives), from ``low`` to
    ``high``; never a boolean.

    Raises:
        UsageError: ``<name> must be an integer from <low> to <high>, got <value>``.
    """
    value = got = _python_scalar(value)
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        value = int(value.strip())
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = int(value)  # numpy's integers too
    elif (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and float(value).is_integer()
    ):
        value = int(float(value))
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(
            f"{name} must be an integer from {low} to {high}, got {got!r:.40}", field=name
        )
    return value


_NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def number(value: Any, name: str, low: float, high: float) -> float:
    """The one rule for a bounded real number on every interface (docs/concepts.md, the input
    contract): a real number (``int``, ``float``, numpy's) or a string of a decimal number
    (``"0.5"``, ``"-0.2"``, ``"1e-1"``, as a CLI argument or a query parameter arrives),
    finite, from ``low`` to ``high``; never a boolean, NaN or infinity.

    Raises:
        UsageError: ``<name> must be a number from <low> to <high>, got <value>``.
    """
    value = got = _python_scalar(value)
    if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value.strip()):
        value = float(value.strip())
    elif isinstance(value, numbers.Real) and not isinstance(value, bool | int):
        value = float(value)  # numpy's floats and integers, fractions
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = int(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise UsageError(
            f"{name} must be a number from {low:g} to {high:g}, got {got!r:.40}", field=name
        )
    return float(value)


MAX_WAIT_SECONDS = 366 * 86_400.0
"""The longest wait a ``timeout`` may ask for (a year), in seconds."""


def wait_seconds(value: Any, name: str = "timeout") -> float | None:
    """A wait in seconds: ``None`` (no limit) or a :func:`number` from 0 to
    :data:`MAX_WAIT_SECONDS` (numpy's and numeric text included; never a boolean, NaN,
    infinity or a negative number).

    Raises:
        UsageError: ``<name> must be a number from 0 to 3.16224e+07, got <value>``.
    """
    return None if value is None else number(value, name, 0.0, MAX_WAIT_SECONDS)


def input_file(path: Any, what: str = "file") -> Path:
    """``path`` as a file that can be read: the one check of every command that reads one
    (``hindsight ingest``, ``restore``, ``guard scan``, ``bench learning`` ...), before it opens
    anything.

    Raises:
        UsageError: ``no file given: give one <what>`` (an empty or blank path, which
            ``Path`` would read as the current folder), ``no such file: <path>``, ``<path> is
            a folder, not a file: give one <what>``, ``<path> is not a regular file: give one
            <what>`` (a device or a pipe) or ``cannot read <path>: permission denied``.
    """
    if isinstance(path, str) and not path.strip():
        raise UsageError(f"no file given: give one {what}")
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{p} is a folder, not a file: give one {what}")
    if not p.exists():
        raise UsageError(f"no such file: {p}")
    if not p.is_file():  # a device or a pipe (/dev/null, /dev/stdin): read more than once
        raise UsageError(f"{p} is not a regular file: give one {what}")
    if not os.access(p, os.R_OK):
        raise UsageError(f"cannot read {p}: permission denied")
    return p


_SWITCH = TypeAdapter(bool)


def switch(value: Any, name: str, default: bool) -> bool:
    """The one rule for an on/off argument on every interface (docs/concepts.md, the input
    contract): ``True``/``False``, ``None`` for ``default``, the integers ``0`` and ``1``, or
    a string pydantic reads as a boolean, as JSON, a CLI argument or a query parameter sends
    it (``"true"``, ``"no"``, ``"off"``, ``" yes "``, any case), so ``"no"`` is off everywhere,
    never truthy. A float, bytes or anything else is refused.

    Raises:
        UsageError: ``<name> must be true or false, got <value>``.
    """
    value = _python_scalar(value)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    got = value
    if isinstance(value, str):
        value = value.strip()  # as the integer rule reads " 7 "
    try:
        if isinstance(value, float | bytes | bytearray):  # 1.0 or b"yes" is not a switch
            raise ValueError(value)
        return bool(_SWITCH.validate_python(value))
    except (ValidationError, ValueError):
        raise UsageError(f"{name} must be true or false, got {got!r:.40}", field=name) from None


def _confidence(value: Any) -> float:
    return number(value, "confidence", 0.0, 1.0)


def _importance(value: Any) -> float:
    return number(value, "importance", 0.0, 1.0)


def _delta(value: Any) -> float:
    return number(value, "delta", -1.0, 1.0)


def _similarity_floor(value: Any) -> float | None:
    return None if value is None else number(value, "similarity_floor", -1.0, 1.0)


def _top_k(value: Any) -> int:
    return integer(value, "top_k", 1, 1000)


def _optional_top_k(value: Any) -> int | None:
    return None if value is None else _top_k(value)


def _token_budget(value: Any) -> int | None:
    if value is None:
        return None
    return integer(value, "token_budget", MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET)


def _offset(value: Any) -> int:
    return integer(value, "offset", 0, 10**9)


def _cursor(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value.strip()) <= MAX_CURSOR:
        raise UsageError(BAD_CURSOR, field="cursor")
    return value.strip()


def _task_type(value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise UsageError(
            f"task_type must be a non-empty string or None, got {value!r:.60}", field="task_type"
        )
    return None if value is None else refuse_invalid(value, "task_type")


def _limit(value: Any) -> int:
    return DEFAULT_LIMIT if value is None else integer(value, "limit", 1, 10000)


def _status(value: Any) -> ExperienceStatus:
    try:
        return ExperienceStatus(value)
    except ValueError:
        names = ", ".join(s.value for s in ExperienceStatus)
        raise UsageError(f"status must be one of {names}", field="status") from None


def _success(value: Any) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"success must be True or False, got {value!r}", field="success")
    return value


def _task_key(value: Any) -> str | None:
    try:
        return validate_task_key(value)
    except ValueError as exc:
        raise UsageError(str(exc), field="task_key") from None


def _outcome(value: Any) -> Outcome | None:
    if value is None:
        return None
    try:
        return Outcome(value)
    except ValueError:
        names = ", ".join(o.value for o in Outcome)
        raise UsageError(
            f"outcome must be one of {names}, got {value!r:.40}", field="outcome"
        ) from None


EXPERIENCE_ORDERS = ("confidence", "created")
"""The orders of an experience listing: most confident first (default) or oldest created first."""


def _order(value: Any) -> str:
    if value is None:
        return EXPERIENCE_ORDERS[0]
    if not isinstance(value, str) or value not in EXPERIENCE_ORDERS:
        names = ", ".join(EXPERIENCE_ORDERS)
        raise UsageError(f"order must be one of {names}, got {value!r:.40}", field="order")
    return value


def _as_of(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(
                f"as_of must be an ISO 8601 date or date-time (e.g. 2026-12-31T00:00:00Z), "
                f"got {value!r:.60}",
                field="as_of",
            ) from None
    if not isinstance(value, datetime):
        raise UsageError(f"as_of must be a datetime, got {type(value).__name__}", field="as_of")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _source(value: Any) -> Provenance:
    if value is None:
        return Provenance.USER
    try:
        return provenance_of(value)
    except ValueError as err:
        raise UsageError(str(err), field="source") from None


def _kind(value: Any) -> ExperienceKind:
    if isinstance(value, str):
        try:
            return ExperienceKind(value.strip().lower())
        except ValueError:
            pass
    names = ", ".join(k.value for k in ExperienceKind)
    raise UsageError(f"kind must be one of {names}, got {value!r:.40}", field="kind")


SOURCE_SPELLINGS = (*(p.value for p in Provenance), *PROVENANCE_SPELLINGS)
"""Every accepted spelling of a source (:data:`hindsight.models.PROVENANCE_SPELLINGS`)."""


# -- the types ---------------------------------------------------------------------------------

TenantId = Annotated[str, PlainValidator(validate_tenant, json_schema_input_type=str)]
"""A tenant: a non-empty string of at most 200 characters, stripped (TenantRequiredError)."""
OptionalTenantId = Annotated[
    str | None, PlainValidator(_optional_tenant, json_schema_input_type=str | None)
]
"""A tenant, or ``None`` where the call may span every tenant (operators only)."""
Namespace = Annotated[str, PlainValidator(validate_namespace, json_schema_input_type=str)]
"""A namespace: a non-empty string of at most 200 characters, stripped."""
Namespaces = Annotated[list[str], PlainValidator(_namespaces, json_schema_input_type=list[str])]
"""One namespace or several in priority order (duplicates dropped); at least one."""
ExperienceId = Annotated[str, PlainValidator(_experience_id, json_schema_input_type=str)]
"""An experience id: any UUID form (braces, upper case), as the canonical lower-case string."""
TrajectoryId = Annotated[str, PlainValidator(_trajectory_id, json_schema_input_type=str)]
"""A trajectory id: any UUID form, as the canonical lower-case string."""
Query = Annotated[
    str,
    PlainValidator(
        _query, json_schema_input_type=Annotated[str, Field(max_length=MAX_QUERY_CHARS)]
    ),
]
"""A recall query: a string of at most :data:`MAX_QUERY_CHARS` characters (may be empty in
task_type mode)."""


def _range(low: int, high: int) -> Any:
    """An integer from ``low`` to ``high`` as JSON schema (OpenAPI, MCP input schemas)."""
    return Annotated[int, Field(ge=low, le=high)]


def _real(low: float, high: float) -> Any:
    """A number from ``low`` to ``high`` as JSON schema."""
    return Annotated[float, Field(ge=low, le=high)]


Confidence = Annotated[float, PlainValidator(_confidence, json_schema_input_type=_real(0, 1))]
"""How sure a lesson is: a number from 0 to 1 (:func:`number`)."""
Importance = Annotated[float, PlainValidator(_importance, json_schema_input_type=_real(0, 1))]
"""How much a lesson matters: a number from 0 to 1 (:func:`number`)."""
ConfidenceDelta = Annotated[float, PlainValidator(_delta, json_schema_input_type=_real(-1, 1))]
"""A change of confidence: a number from -1 to 1 (the result is clamped to [0, 1])."""
SimilarityFloor = Annotated[
    float | None,
    PlainValidator(_similarity_floor, json_schema_input_type=_real(-1, 1) | None),
]
"""The cosine floor of a recall: a number from -1 to 1, or ``None`` for the configured or the
embedder's floor."""


TopK = Annotated[int, PlainValidator(_top_k, json_schema_input_type=_range(1, 1000))]
"""How many experiences a recall returns: an integer from 1 to 1000 (:func:`integer`)."""
OptionalTopK = Annotated[
    int | None, PlainValidator(_optional_top_k, json_schema_input_type=_range(1, 1000) | None)
]
"""A :data:`TopK`, or ``None`` for the configured default (5)."""
TokenBudget = Annotated[
    int | None,
    PlainValidator(
        _token_budget, json_schema_input_type=_range(MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET) | None
    ),
]
"""The rendered block's budget in estimated tokens: an integer from
:data:`MIN_TOKEN_BUDGET` (150) to 1000000, or ``None`` for the configured default (2000)."""
Offset = Annotated[int, PlainValidator(_offset, json_schema_input_type=_range(0, 10**9))]
"""How many rows a list skips: 0 to 10**9."""
Cursor = Annotated[
    str | None,
    PlainValidator(
        _cursor, json_schema_input_type=Annotated[str, Field(max_length=MAX_CURSOR)] | None
    ),
]
"""Where a listing goes on: the ``next_cursor`` of its previous page, unchanged, or ``None``
for the first page (:mod:`hindsight._paging`; the listing checks it is one of its own)."""
TaskType = Annotated[str | None, PlainValidator(_task_type, json_schema_input_type=str | None)]
"""An exact task_type filter: a non-empty string, or ``None`` for none."""
_LABELS_SCHEMA = Annotated[list[str], Field(max_length=MAX_LABELS)]
Tags = Annotated[
    list[str], PlainValidator(_labels_of("tags"), json_schema_input_type=_LABELS_SCHEMA | None)
]
"""Tags: at most :data:`MAX_LABELS` strings (one string is a list of one; ``None``: none)."""
Tools = Annotated[
    list[str], PlainValidator(_labels_of("tools"), json_schema_input_type=_LABELS_SCHEMA | None)
]
"""Tools: at most :data:`MAX_LABELS` tool names of 1..:data:`MAX_NAME_CHARS` characters (one
string is a list of one; ``None``: none)."""
Labels = Tags
"""Tags or tools (an older name of :data:`Tags`)."""


def _or(default: bool) -> Any:
    def check_switch(value: Any, info: ValidationInfo) -> bool:
        return switch(value, info.field_name or "switch", default)

    return check_switch


OnByDefault = Annotated[bool, PlainValidator(_or(True), json_schema_input_type=bool | None)]
"""An optional switch that is on unless turned off: ``true``/``false``, ``null`` = ``true``
(every optional argument of HTTP and MCP takes ``null`` for its default), read by
:func:`switch`."""
OffByDefault = Annotated[bool, PlainValidator(_or(False), json_schema_input_type=bool | None)]
"""An optional switch that is off unless turned on: ``true``/``false``, ``null`` = ``false``."""
Content = Annotated[
    str,
    PlainValidator(
        _content,
        json_schema_input_type=Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS)],
    ),
]
"""A lesson's text: a non-blank string of at most :data:`MAX_CONTENT_CHARS` characters, kept
exactly as sent ("null" and "N/A" are text like any other)."""
RunState = Annotated[
    list[dict[str, Any]] | None,
    PlainValidator(_run_state, json_schema_input_type=list[dict[str, Any]] | None),
]
"""The tool results the current run has seen (``[{"tool": ..., "result": ...}]``, oldest
first; at most :data:`MAX_BATCH_ITEMS` items and ten times :data:`MAX_CONTENT_CHARS`
characters; ``None``: unknown). A rule's condition is tested against it
(docs/checks.md#conditions)."""
ToolName = Annotated[
    str,
    PlainValidator(
        _tool_name,
        json_schema_input_type=Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)],
    ),
]
"""The name of a tool a call is about: 1..:data:`MAX_NAME_CHARS` characters."""
Limit = Annotated[int, PlainValidator(_limit, json_schema_input_type=_range(1, 10000) | None)]
"""How many rows a list returns: 1 to 10000 (``None``: :data:`DEFAULT_LIMIT`, 100)."""
Source = Annotated[
    Provenance,
    PlainValidator(
        _source,
        json_schema_input_type=Literal[SOURCE_SPELLINGS] | None,
    ),
]
"""Where a lesson or run came from: ``system``, ``user``, ``tool``, ``unknown`` or another
spelling of one (``tool_output``, ``web``, ``""`` ...: docs/security.md#layer-2-provenance-trust),
any case; ``None`` is ``user``, the default."""
Kind = Annotated[
    ExperienceKind,
    PlainValidator(
        _kind,
        json_schema_input_type=Literal[tuple(k.value for k in ExperienceKind)],
    ),
]
"""What a lesson is about: one of :class:`hindsight.models.ExperienceKind` (any case)."""
Status = Annotated[ExperienceStatus, PlainValidator(_status, json_schema_input_type=str)]
"""An experience status by its name (``active``, ``archived``, ...)."""
Success = Annotated[bool, PlainValidator(_success, json_schema_input_type=bool)]
"""A run's outcome: exactly ``True`` or ``False``."""
TaskKey = Annotated[str | None, PlainValidator(_task_key, json_schema_input_type=str | None)]
"""A task group key: a non-blank string of at most 200 characters, or ``None`` for none."""
OutcomeFilter = Annotated[
    Outcome | None, PlainValidator(_outcome, json_schema_input_type=str | None)
]
"""A run outcome filter by its name (``success``, ``failure``, ``partial``, ``unknown``), or
``None`` for any."""
ExperienceOrder = Annotated[
    str,
    PlainValidator(_order, json_schema_input_type=Literal["confidence", "created"] | None),
]
"""The order of an experience listing: ``"confidence"`` (most confident first, then the
latest updated, then id; the default, also for ``None``) or ``"created"`` (oldest created
first, then id: a cursor in it never repeats or skips a row, even when confidences change
between pages)."""
AsOf = Annotated[datetime | None, PlainValidator(_as_of, json_schema_input_type=str | None)]
"""The time rules are judged at: a datetime (naive = UTC), an ISO 8601 string, or ``None``
(now; the caller substitutes its clock's time). Always UTC."""


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def check(kind: Any, value: Any) -> Any:
    """``value`` checked (and normalised) as ``kind``, one of the types of this module.

    Raises:
        UsageError: (or the subclass the check raises, e.g. TenantRequiredError) with the
            check's one-line message.
    """
    try:
        return _adapter(kind).validate_python(value)
    except ValidationError as err:
        raise usage_error(err) from None


def usage_error(err: ValidationError) -> HindsightError:
    """The one-line error to raise for a failed validation: the check's own exception when a
    check raised one (a :class:`~hindsight.TenantRequiredError` stays one), else a
    :class:`~hindsight.UsageError` of :func:`validation_message`, its ``field`` the first
    field of the problem's location."""
    first = err.errors()[0]
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, HindsightError):
        return cause
    where = error_location(first.get("loc", ()))
    return UsageError(validation_message(err), field=where and where.split(".", 1)[0])


def forget_filter(experience_id: Any, trajectory_id: Any, everything: Any) -> dict[str, Any]:
    """The one filter of a hard delete, checked: ``{"experience_ids": [id]}``,
    ``{"trajectory_id": id}`` or ``{"everything": True}`` (an empty filter is never "all").

    Raises:
        UsageError: no filter given, more than one, or a bad id.
    """
    chosen = (experience_id, trajectory_id, switch(everything, "everything", False) or None)
    if sum(x is not None for x in chosen) != 1:
        raise UsageError(
            "forget needs exactly one of experience_id, trajectory_id or everything=True"
        )
    if experience_id is not None:
        return {"experience_ids": [check(ExperienceId, experience_id)]}
    if trajectory_id is not None:
        return {"trajectory_id": check(TrajectoryId, trajectory_id)}
    return {"everything": True}


# -- pydantic errors as one line ----------------------------------------------------------------

_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "none", "tagged-union"})


def unknown_field(name: Any, fields: Sequence[str]) -> str:
    """The one refusal of a field nobody defined, on every interface: ``'<name>': unknown
    field (fields: <the fields there are>)`` (the name cut at 80 characters)."""
    return f"{str(name)[:80]!r}: unknown field (fields: {', '.join(fields)})"


def error_location(loc: Sequence[Any]) -> str | None:
    """A pydantic error location as the dotted field path a user sent, without the names
    pydantic gives union members (``dict[str,any]``, ``function-after[...]``, ``str``)."""
    parts = [str(p) for p in loc]
    return ".".join(p for p in parts if "[" not in p and p not in _TYPE_TAGS) or None


def validation_message(err: ValidationError) -> str:
    """One line from a pydantic error: ``field: message`` of the first problem (+ count)."""
    errors = err.errors()
    first = errors[0]
    loc = error_location(first.get("loc", ())) or "value"
    msg = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{loc}: {msg}{more}"
