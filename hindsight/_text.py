"""The invalid-value policy: what happens to text and numbers no backend can hold
(docs/concepts.md#stored-exactly-invalid-text-and-numbers).

Three kinds of value cannot be stored the same way on every backend:

* a **lone surrogate** (``"\\ud800"``: half of a UTF-16 pair, e.g. from a JSON ``"\\ud83d"``
  escape cut in two, or an undecodable byte of a command-line argument): not valid Unicode, so
  it cannot be encoded as UTF-8 for SQLite, PostgreSQL, an embedding provider or a JSON reply;
* **NUL** (``"\\x00"``, U+0000): valid Unicode, but PostgreSQL's ``text`` and ``jsonb`` cannot
  hold it (SQLite can), so the same input would answer differently by backend;
* **NaN and infinities** in JSON numbers: not JSON (RFC 8259), refused by ``jsonb`` and by
  every strict JSON reader.

The policy, the same in Python, the CLI, HTTP, MCP, ``hindsight ingest``, the recorder and the
integrations, on SQLite and PostgreSQL, depends on the kind of field:

* **text** (lesson content, task, messages, tool names and arguments, tags, tools, metadata
  keys and values, system prompt, evidence, a query, a reason or note): each lone surrogate
  and each NUL is **replaced with U+FFFD** (``"\\ufffd"``, the replacement character) and a
  NaN or infinity inside free JSON (metadata, tool arguments, evidence) becomes ``null``;
  everything else is kept exactly as sent. The replacements are counted per field and
  reported once per call: a :class:`InvalidTextWarning` in Python, a ``Warning`` header over
  HTTP, a ``warnings`` entry in an MCP tool result's ``_meta``, a ``warning:`` line from the
  CLI, ``invalid_values_replaced`` in ``hindsight ingest``'s summary. A run is never lost
  for one bad character.
* **names** (tenant, namespace, task type, task key, ids): **refused** with one line naming
  the field (``namespace contains a NUL character (U+0000) at position 3; send valid Unicode
  text without NUL``): a name is matched exactly, and a silently changed one would file data
  under a name the caller never used.
* **numbers** with a meaning (confidence, importance, reward, latency, top_k, a budget, a
  limit, a delta): NaN and infinities are **refused** with one line naming the field.

Foundation: imports nothing of hindsight but ``_errors``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import sys
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from hindsight._errors import UsageError

__all__ = [
    "MAX_JSON_DEPTH",
    "REPLACEMENT",
    "InvalidTextWarning",
    "Replacements",
    "clean_json",
    "clean_text",
    "collecting",
    "invalid_char",
    "json_text",
    "note",
    "refuse_invalid",
    "reporting_to",
    "warning_scope",
]

log = logging.getLogger("hindsight")

REPLACEMENT = "\ufffd"
"""What a lone surrogate or a NUL is replaced with in text (U+FFFD REPLACEMENT CHARACTER)."""

_INVALID = re.compile("[\x00\ud800-\udfff]")


class InvalidTextWarning(UserWarning):
    """Invalid characters (lone surrogates, NUL) were replaced with U+FFFD, or NaN/infinity
    in free JSON with ``null``, in what was stored; the message counts them by field. It also
    carries the notes of input kept in another form than sent (:func:`note`: tool-call
    arguments that are not JSON, kept as text under ``_raw``)."""


@dataclass
class Replacements:
    """Replacements made while one call's input was checked: ``{field: count}``; and the
    notes of input kept in another form than sent (one line each, :func:`note`)."""

    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, where: str, n: int = 1) -> None:
        self.counts[where] = self.counts.get(where, 0) + n

    def __bool__(self) -> bool:
        return bool(self.counts or self.notes)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def lines(self) -> list[str]:
        """What to report, one line each: the replacements (:meth:`message`), then the notes."""
        return ([self._counted()] if self.counts else []) + self.notes

    def message(self, limit: int = 5) -> str:
        """One line: ``replaced 3 invalid value(s) (lone surrogates and NUL with U+FFFD,
        NaN/infinity with null): content (2), metadata.x (1)``, then the first ``limit``
        notes, ``; `` between them."""
        more = f"and {len(self.notes) - limit} more note(s)" if len(self.notes) > limit else ""
        shown = ([self._counted(limit)] if self.counts else []) + self.notes[:limit]
        return "; ".join([*shown, more] if more else shown)

    def _counted(self, limit: int = 5) -> str:
        items = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ", ".join(f"{_short(k)} ({n})" for k, n in items[:limit])
        more = f" and {len(items) - limit} more field(s)" if len(items) > limit else ""
        return (
            f"replaced {self.total} invalid value(s) (lone surrogates and NUL with U+FFFD, "
            f"NaN/infinity with null): {shown}{more}"
        )


def _short(where: str) -> str:
    text = where.encode("ascii", "backslashreplace").decode("ascii")
    return text if len(text) <= 80 else text[:77] + "..."


_REPORT: ContextVar[Replacements | None] = ContextVar("hindsight_replacements", default=None)


@contextmanager
def collecting() -> Iterator[Replacements]:
    """Collect the replacements made in this context (also in threads started with
    ``asyncio.to_thread``, which copy the context) instead of warning about each: the
    interfaces report them their own way (a header, a CLI line, an MCP ``_meta`` entry).
    Nested calls share the outermost collector."""
    current = _REPORT.get()
    if current is not None:
        yield current
        return
    report = Replacements()
    token = _REPORT.set(report)
    try:
        yield report
    finally:
        _REPORT.reset(token)


@contextmanager
def reporting_to(report: Replacements) -> Iterator[None]:
    """Collect into ``report`` in this context: carries a collector into a context that does
    not inherit it (a task on another thread's event loop, the sync facade)."""
    token = _REPORT.set(report)
    try:
        yield
    finally:
        _REPORT.reset(token)


@contextmanager
def warning_scope() -> Iterator[Replacements]:
    """Like :func:`collecting`, and when this scope is the outermost one, warn once at its
    end (:class:`InvalidTextWarning`) about what it collected."""
    outermost = _REPORT.get() is None
    with collecting() as report:
        yield report
    if outermost and report:
        _warn(report)


def _folder(path: str) -> str:
    return os.path.dirname(os.path.abspath(path)) + os.sep


_INTERNAL = (_folder(__file__), contextlib.__file__)


def _internal() -> tuple[str, ...]:
    """Where hindsight's and pydantic's frames live (pydantic only once it is imported: this
    module does not import it, so a process that never validates never loads it)."""
    loaded = sys.modules.get("pydantic")
    where = getattr(loaded, "__file__", None)
    return _INTERNAL if where is None else (*_INTERNAL, _folder(where))


def _warn(report: Replacements) -> None:
    """Warn once, attributed to the first caller outside hindsight and pydantic."""
    level, frame, internal = 2, sys._getframe(1), _internal()
    while frame is not None and frame.f_code.co_filename.startswith(internal):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    warnings.warn(InvalidTextWarning(f"hindsight: {report.message()}"), stacklevel=level)


def _note(where: str, n: int) -> None:
    report = _REPORT.get()
    if report is not None:
        report.add(where, n)
        return
    _warn(Replacements({where: n}))


@contextmanager
def withdrawn_on_error() -> Iterator[None]:
    """The notes this block makes are withdrawn when it raises: a record refused after a note
    about it (its arguments kept as text, then another field refused) was not kept at all.
    Only collected notes can be withdrawn (:func:`collecting`); outside a collector a note is
    warned at once."""
    report = _REPORT.get()
    mark = len(report.notes) if report is not None else 0
    try:
        yield
    except BaseException:
        if report is not None:
            del report.notes[mark:]
        raise


def note(line: str) -> None:
    """Report ``line``: input kept in another form than it was sent, never dropped (tool-call
    arguments that are not JSON, kept as text). Collected with the replacements of this context
    (each interface reports them its way: a ``warning:`` line, a ``Warning`` header, MCP
    ``_meta``), else warned at once (:class:`InvalidTextWarning`)."""
    report = _REPORT.get()
    if report is not None:
        report.notes.append(line)
        return
    _warn(Replacements(notes=[line]))


def invalid_char(text: str) -> tuple[int, str] | None:
    """``(position, description)`` of the first lone surrogate or NUL of ``text``, else
    ``None``."""
    found = _INVALID.search(text)
    if found is None:
        return None
    char = found.group(0)
    if char == "\x00":
        return found.start(), "a NUL character (U+0000)"
    return found.start(), f"a lone surrogate (U+{ord(char):04X})"


INVALID_TEXT_REMEDY = "send valid Unicode text, with no NUL and no lone surrogate"
"""What a refusal of a name holding an invalid character asks for (either kind)."""


def refuse_invalid(text: str, what: str) -> str:
    """``text`` unchanged when it holds no lone surrogate and no NUL (a name: tenant,
    namespace, task type, task key).

    Raises:
        UsageError: one line naming ``what``, the character and its position.
    """
    bad = invalid_char(text)
    if bad is None:
        return text
    pos, desc = bad
    raise UsageError(f"{what} contains {desc} at position {pos}; {INVALID_TEXT_REMEDY}")


def clean_text(text: str, where: str = "text") -> str:
    """``text`` with every lone surrogate and NUL replaced by U+FFFD (counted for ``where``);
    ``text`` itself when it holds none."""
    if text.isascii() and "\x00" not in text:
        return text
    cleaned, n = _INVALID.subn(REPLACEMENT, text)
    if n:
        _note(where, n)
    return cleaned


def _finite(value: float, where: str) -> float | None:
    if math.isfinite(value):
        return value
    _note(where, 1)
    return None


#: Keys whose value is the caller's own free JSON (a tool's arguments, metadata, evidence
#: details): a key named like one of ours (``id``) inside them is data, not a name.
FREE_JSON_KEYS = frozenset({"tool_args", "metadata", "details", "kwargs", "args", "arguments"})

#: Keys whose value is the caller's JSON, stored as it is: everything in it must be JSON.
STRICT_JSON_KEYS = FREE_JSON_KEYS | {"final_state"}


_JSON_TYPES = (str, int, float, type(None), Mapping, list, tuple)

MAX_JSON_DEPTH = 100
"""Deepest nesting of dicts and lists in one value (tool arguments, metadata, evidence, a
tool's reply): deeper is refused with one line naming the path
(docs/concepts.md#the-input-contract)."""


def _json_item(value: Any, where: str) -> Any:
    """``value`` when JSON can hold it (a numpy scalar as its Python number), else a refusal."""
    if isinstance(value, _JSON_TYPES) or _is_model(value):
        return value
    if hasattr(value, "dtype") and getattr(value, "shape", None) == () and hasattr(value, "item"):
        return value.item()  # np.int64(3) -> 3: the same number
    hint = {
        "set": "a list",
        "frozenset": "a list",
        "bytes": "a decoded string",
        "datetime": "an ISO string",
        "date": "an ISO string",
    }.get(type(value).__name__)
    kind = type(value).__name__
    raise UsageError(
        f"{where} holds {'an' if kind[0] in 'aeiou' else 'a'} {kind}, which JSON cannot store"
        f" (a string, number, boolean, null, list or object){'; send ' + hint if hint else ''}",
        field=_field(where),
    )


def json_text(value: Any, where: str = "value") -> str:
    """``value`` as one line of JSON text (``{"ok": true}``; non-ASCII kept as it is), after
    :func:`clean_json` with ``strict=True`` (a numpy scalar is its number, a NaN ``null``; a
    pydantic model is its JSON fields).

    Raises:
        UsageError: ``value`` or a value inside is not JSON (one line naming its path).
    """
    return json.dumps(
        clean_json(_json_item(value, where), where, strict=True),
        ensure_ascii=False,
        default=lambda model: model.model_dump(mode="json"),  # the only non-JSON left
    )


def _json_key(key: Any, where: str) -> str:
    """A dict key that is not a string as ``json.dumps`` writes it (``1`` -> ``"1"``,
    ``True`` -> ``"true"``, ``None`` -> ``"null"``), else a refusal."""
    if key is None or isinstance(key, int | float):
        return json.dumps(key)
    raise UsageError(
        f"{_short(where)} has a key {key!r:.60} ({type(key).__name__}); JSON keys are strings",
        field=_field(where),
    )


def _field(where: str) -> str:
    """The field a path is in (``tool_args.a[2].b`` -> ``tool_args``)."""
    return where.split(".", 1)[0].split("[", 1)[0]


def _is_model(value: Any) -> bool:
    """A pydantic model (a trajectory's events): checked by its own fields."""
    return hasattr(type(value), "model_fields")


def _plain(value: Any) -> bool:
    """``None``, a bool, an int or an ASCII string without NUL: a value :func:`clean_json`
    returns as it is in every mode (JSON holds it; nothing in it to replace)."""
    kind = type(value)
    if kind is str:
        return value.isascii() and "\x00" not in value
    return value is None or kind is int or kind is bool


def clean_json(
    value: Any,
    where: str = "value",
    names: frozenset[str] = frozenset(),
    floats: bool = True,
    strict: bool = False,
    strict_below: bool = False,
    _depth: int = 0,
) -> Any:
    """``value`` with :func:`clean_text` applied to every string (dict keys too) and every
    NaN or infinity replaced by ``None``, recursively through dicts, lists and tuples; other
    values (numbers, booleans, ``None``, models, datetimes) are returned as they are. Returns
    the very same object when nothing had to change. A string under a key in ``names``
    (a name: ``namespace``, ``tenant_id``...) is checked with :func:`refuse_invalid` instead,
    except beneath :data:`FREE_JSON_KEYS` (and in ``value`` itself when it is such a field).
    With ``floats=False`` numbers are left alone (a raw record whose numbers the converter
    checks: a NaN ``reward`` is refused there). With ``strict=True`` (a value built in Python,
    not parsed from JSON) every value inside a dict or list must be one JSON can hold: a
    numpy scalar becomes the Python number it holds; a set, bytes, a datetime or any other
    object is refused, here, rather than failing when the store writes it. With
    ``strict_below=True`` that holds for the value under every key of :data:`STRICT_JSON_KEYS`
    found inside (a trajectory given as a dict: its events' ``tool_args`` and ``metadata``),
    while the model fields around them (an event's ``timestamp``) are the models' to check;
    there a number, boolean or ``None`` key becomes its JSON text (``1`` -> ``"1"``, as
    ``json.dumps`` writes it) and any other key (a tuple) is refused.

    Raises:
        UsageError: a name holds a lone surrogate or NUL, a value is nested deeper than
            :data:`MAX_JSON_DEPTH`, or (``strict``) a value or key inside is not JSON (one line
            naming its path).
    """
    if isinstance(value, str):
        return clean_text(value, where)
    if isinstance(value, float):
        return _finite(value, where) if floats else value
    if isinstance(value, Mapping | list | tuple) and _depth >= MAX_JSON_DEPTH:
        raise UsageError(
            f"{_short(where)} is nested more than {MAX_JSON_DEPTH} levels deep; send flatter JSON",
            field=_field(where),
        )
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        changed = not isinstance(value, dict)
        for key, item in value.items():
            if type(key) is str and _plain(key) and _plain(item) and key not in names:
                out[key] = item  # nothing to clean or refuse (no path built for a message)
                continue
            new_key = _json_key(key, where) if strict and not isinstance(key, str) else key
            new_key = clean_text(new_key, f"{where} key") if isinstance(new_key, str) else new_key
            sub = f"{where}.{new_key}" if isinstance(new_key, str) else f"{where}[{key!r}]"
            if key in names and isinstance(item, str):
                out[new_key] = refuse_invalid(item, sub)
                changed = changed or new_key is not key
                continue
            inner = frozenset() if key in FREE_JSON_KEYS else names
            deep = strict or (strict_below and key in STRICT_JSON_KEYS)
            new_item = clean_json(
                _json_item(item, sub) if deep else item,
                sub,
                inner,
                floats,
                deep,
                strict_below,
                0 if deep and not strict else _depth + 1,  # a field of a model: its own depth
            )
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed else value
    if isinstance(value, list | tuple):
        items = [
            item
            if _plain(item)
            else clean_json(
                _json_item(item, f"{where}[{i}]") if strict else item,
                f"{where}[{i}]",
                names,
                floats,
                strict,
                strict_below,
                _depth + 1,
            )
            for i, item in enumerate(value)
        ]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value
