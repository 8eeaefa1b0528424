"""The input contract: how an argument that fails validation becomes one line for the caller.

Foundation: imports nothing of hindsight but :mod:`hindsight._errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

__all__ = ["error_location", "validation_message"]

_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "none", "tagged-union"})


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
