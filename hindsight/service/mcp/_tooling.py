"""How hindsight's MCP tools read arguments and report errors.

Two adjustments to the ``mcp`` SDK's tools (2.3.0, :class:`mcp.server.mcpserver.tools.Tool`):

* **Exact strings.** The SDK parses a string argument as JSON whenever the parameter is not
  annotated plain ``str`` (a client workaround for hosts that send lists as JSON text). For a
  ``str | None`` parameter that turns ``'{"a":1}'`` into an object (then a validation error) and
  ``"null"`` into ``None``. :class:`ExactStringsMetadata` keeps every string sent to a parameter
  that accepts strings exactly as sent; parameters that do not accept strings (``tags: list``,
  ``trajectory: object | list``) still accept a JSON text of the right shape.
* **One-line errors.** A hindsight error, an invalid argument or a failed authentication
  becomes a tool error result (``isError: true``) whose text is one line
  ``"<type>: <message>"`` and whose ``structuredContent`` is ``{"error": {"type", "message",
  "field"}}``: the shape and types of the HTTP API's errors (:mod:`hindsight.service._wire`).
  Anything else is a crash: the SDK answers ``Error executing tool <name>`` and logs it.
* **No unknown arguments.** The SDK's argument model ignores arguments a tool does not have
  (a typo like ``top_kk``, or ``tenant_id``); :meth:`HindsightTool.run` refuses them with a
  ``validation_error`` naming the argument (review finding). The tenant is never an argument:
  it comes from the server's configuration or the API key.
"""

from __future__ import annotations

import logging
import re
import types
from collections.abc import Sequence
from typing import Annotated, Any, Union, cast, get_args, get_origin

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from hindsight._errors import HindsightError, UsageError
from hindsight._text import clean_json, collecting, refuse_invalid
from hindsight.guard.screening import GUARD_OWNED_FIELDS, owned_by_guard
from hindsight.models import NAME_FIELDS
from hindsight.service._wire import client_message, error_body, status_and_type

__all__ = [
    "WARNINGS_META",
    "ExactStringsMetadata",
    "HindsightTool",
    "error_of",
    "valid_arguments",
]

log = logging.getLogger("hindsight.mcp")


def _accepts_str(annotation: Any) -> bool:
    if annotation is str or annotation is Any:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _accepts_str(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return any(_accepts_str(arg) for arg in get_args(annotation))
    return False


class ExactStringsMetadata(FuncMetadata):
    """:class:`FuncMetadata` that never JSON-parses a string sent to a string parameter."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        for name, info in self.arg_model.model_fields.items():
            key = info.alias or name
            if isinstance(data.get(key), str) and _accepts_str(info.annotation):
                parsed[key] = data[key]
        return parsed


def _field_of(message: str, params: set[str]) -> str | None:
    """The parameter a hindsight error message starts with, if it names one."""
    head = message.split(" ", 1)[0].split(":", 1)[0].split(".", 1)[0]
    return head if head in params else None


def _dotted(path: str) -> str:
    """A path as pydantic and the other MCP errors write it: ``lessons[0].task_type`` ->
    ``lessons.0.task_type``."""
    return re.sub(r"\[(\d+)\]", r".\1", path)


def _fields_at(model: Any, loc: Sequence[Any]) -> list[str]:
    """The fields of the model that holds the last part of ``loc`` inside ``model`` (a
    tool's arguments model: ``("lessons", 0, "colour")`` -> the fields of a lesson)."""
    current = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        info = getattr(current, "model_fields", {}).get(part)
        current = _model_in(info.annotation) if info is not None else None
        if current is None:
            return []
    return list(getattr(current, "model_fields", {}))


def _model_in(annotation: Any) -> Any:
    """The pydantic model in ``annotation`` (``list[LessonIn]``, ``LessonIn | None``,
    ``Annotated[...]``), or ``None``."""
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def error_of(
    exc: BaseException, params: set[str], model: Any = None
) -> tuple[str, str, str | None] | None:
    """``(type, one-line message, field)`` for an anticipated failure, ``None`` for a crash.

    ``type`` is the HTTP API's error type of the exception (:func:`hindsight.service._wire.
    status_and_type`: ``not_found``, ``invalid_request``, ``tenant_required``,
    ``invalid_trajectory``, ``unauthorized``, ``review_failed`` ...), or ``validation_error``
    for arguments that do not match the tool's input schema, as over HTTP.

    Args:
        exc: the exception a tool raised (or the validation error of its arguments).
        params: the tool's parameter names, to tell which one a message is about.
        model: the tool's arguments model, to name the fields of one an unknown field is in
            (the words of every interface, :func:`hindsight._contract.unknown_field`).
    """
    if isinstance(exc, ValidationError):
        from hindsight._contract import error_location, unknown_field, validation_message

        first = exc.errors()[0]
        loc = first.get("loc", ())
        field = str(loc[0]) if loc else None
        fields = _fields_at(model, loc) if first.get("type") == "extra_forbidden" else []
        if fields:
            where = error_location(loc) or "value"
            return "validation_error", f"{where}: {unknown_field(loc[-1], fields)}", field
        return "validation_error", validation_message(exc), field
    if not isinstance(exc, HindsightError):
        return None
    kind = status_and_type(exc)[1]
    if kind.startswith(("store_", "embedder_")):
        log.warning("MCP: %s: %s", type(exc).__name__, exc)  # the full message: the log
    message = error_body(kind, client_message(exc))["error"]["message"]
    if kind == "invalid_trajectory":
        return kind, message, "trajectory"
    if kind in ("tenant_required", "unauthorized"):
        return kind, message, None  # the tenant is configuration, never a tool argument
    named = str(getattr(exc, "field", None) or "").split(".")
    for part in (named[0], named[-1]):  # "namespace"; "items.0.namespace": the namespace
        if part in params:
            return kind, message, part
    return kind, message, _field_of(message, params)


WARNINGS_META = "io.hindsight/warnings"
"""The ``_meta`` key of a tool result that lists the invalid values replaced in its arguments
and the notes of input kept in another form (:mod:`hindsight._text`; one line each)."""


def valid_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with the invalid-value policy applied (:mod:`hindsight._text`): in text,
    lone surrogates and NUL become U+FFFD and NaN/infinity inside free JSON ``null`` (counted
    for the result's ``_meta``); a name argument (``namespace``, ``task_type``...) holding one
    is refused; numbers are left to the tool's schema (NaN refused there).

    Raises:
        UsageError: one line naming the argument.
    """
    out: dict[str, Any] = {}
    for name, value in arguments.items():
        if isinstance(value, str) and name in NAME_FIELDS:
            out[name] = refuse_invalid(value, name)
        elif isinstance(value, float):
            out[name] = value
        else:
            out[name] = clean_json(value, name, names=NAME_FIELDS)
    return out


class HindsightTool(Tool):
    """An SDK :class:`Tool` with exact strings and one-line, typed error results."""

    @classmethod
    def from_function(cls, fn: Any, **kwargs: Any) -> HindsightTool:  # type: ignore[override]
        """As :meth:`Tool.from_function`, with :class:`ExactStringsMetadata`."""
        tool = cast(HindsightTool, super().from_function(fn, **kwargs))
        meta = tool.fn_metadata
        tool.fn_metadata = ExactStringsMetadata(
            arg_model=meta.arg_model,
            output_schema=meta.output_schema,
            output_model=meta.output_model,
            wrap_output=meta.wrap_output,
        )
        return tool

    def unknown_argument(self, arguments: dict[str, Any]) -> tuple[str, str] | None:
        """``(argument, one-line message)`` for the first argument the tool does not have."""
        fields = self.fn_metadata.arg_model.model_fields
        known = {info.alias or name for name, info in fields.items()}
        for name in sorted(set(arguments) - known):
            if name in ("tenant", "tenant_id"):
                return name, (
                    f"unknown argument '{name}' of {self.name}: the tenant comes from the "
                    "server's configuration (hindsight mcp --tenant) or the API key, never "
                    "from a tool argument"
                )
            if name in GUARD_OWNED_FIELDS:  # the guard's state is not editable
                return name, f"{owned_by_guard(name)} (not an argument of {self.name})"
            expected = ", ".join(sorted(known))
            return name, f"unknown argument '{name}' of {self.name} (its arguments: {expected})"
        return None

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        unknown = self.unknown_argument(arguments)
        if unknown is not None:
            return self._error("validation_error", unknown[1], unknown[0])
        model = self.fn_metadata.arg_model
        params = set(model.model_fields)
        with collecting() as report:
            try:
                arguments = valid_arguments(arguments)
            except UsageError as exc:  # a name argument holding invalid text: its validation
                path = _dotted(str(exc).split(" ", 1)[0])
                message = path + str(exc)[len(str(exc).split(" ", 1)[0]) :]
                return self._error("validation_error", message, path.split(".", 1)[0])
            try:
                result = await super().run(arguments, context, convert_result)
            except ToolError as exc:
                cause = exc.__cause__
                found = error_of(cause, params, model) if cause is not None else None
                if found is None:
                    raise
                return self._error(*found)
        if report and isinstance(result, CallToolResult):
            meta = {**(result.meta or {}), WARNINGS_META: report.lines()}
            result = result.model_copy(update={"meta": meta})
        return result

    def _error(self, kind: str, message: str, field: str | None) -> CallToolResult:
        log.info("MCP tool %s: %s: %s", self.name, kind, message)
        return CallToolResult(
            content=[TextContent(type="text", text=f"{kind}: {message}")],
            structured_content={"error": {"type": kind, "message": message, "field": field}},
            is_error=True,
        )
