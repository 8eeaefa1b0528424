"""Read the raw JSON values of a log file: a JSON document or JSON Lines, streamed.

A file is JSON Lines when its name ends in ``.jsonl`` or ``.ndjson``, or when its first
non-blank line is a complete JSON value and another non-blank line follows; otherwise the whole
file is one JSON document. A document that is an
array yields its items; any other document yields itself. JSON Lines files are read line by line,
so their size is not limited by memory; JSON documents are loaded whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hindsight._errors import InvalidTrajectoryError
from hindsight._text import clean_json
from hindsight.models import NAME_FIELDS

__all__ = [
    "RawRecord",
    "RecordError",
    "count_raw_records",
    "is_json_lines",
    "iter_raw_records",
    "record_error",
    "valid_record",
]

_JSONL_SUFFIXES = {".jsonl", ".ndjson"}


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One top-level JSON value of a log file.

    Attributes:
        number: 1-based line number (JSON Lines) or 1-based item index (JSON array).
        where: ``"<path>:<line>"`` or ``"<path> record <n>"``, for error messages.
        value: the parsed JSON value.
    """

    number: int
    where: str
    value: Any


@dataclass(frozen=True, slots=True)
class RecordError:
    """A record of a log file that gives no trajectory (``hindsight ingest`` reports it and
    goes on with the next record).

    Attributes:
        number: 1-based line number (JSON Lines) or item index (JSON array).
        where: ``"<path>:<line>"`` or ``"<path> record <n>"``.
        message: one line, starting with ``where``: what is wrong with the record.
    """

    number: int
    where: str
    message: str


def record_error(number: int, where: str, exc: Exception) -> RecordError:
    """The :class:`RecordError` of a record whose conversion raised ``exc`` (one line)."""
    from pydantic import ValidationError

    from hindsight._contract import validation_message

    text = validation_message(exc) if isinstance(exc, ValidationError) else str(exc)
    text = " ".join(text.split())
    return RecordError(number, where, text if text.startswith(where) else f"{where}: {text}")


def valid_record(raw: RawRecord) -> RawRecord:
    """``raw`` with the invalid-value policy applied to its value (:mod:`hindsight._text`):
    lone surrogates (also from bytes that are not UTF-8) and NUL in text replaced with U+FFFD,
    counted (numbers are left to the converter and the models: a NaN ``reward`` is refused,
    NaN in free JSON such as tool arguments becomes ``null``).

    Raises:
        UsageError: a name field (``namespace``, ``task_type``...) holds such a character.
    """
    value = clean_json(raw.value, f"line {raw.number}", names=NAME_FIELDS, floats=False)
    return raw if value is raw.value else RawRecord(raw.number, raw.where, value)


def _open(path: Path) -> Any:
    # Bytes that are not UTF-8 become lone surrogates (surrogateescape), which the models
    # replace with U+FFFD and count like any other invalid text (hindsight._text).
    try:
        return path.open("r", encoding="utf-8-sig", errors="surrogateescape")
    except OSError as exc:
        raise InvalidTrajectoryError(f"{path}: cannot read the file: {exc}") from exc


def is_json_lines(path: Path) -> bool:
    """True when ``path`` holds JSON Lines (see the module docstring), False for one document.

    Raises:
        InvalidTrajectoryError: the file cannot be read.
    """
    if path.suffix.lower() in _JSONL_SUFFIXES:
        return True
    first_seen = False
    with _open(path) as fh:
        for line in fh:
            if not line.strip():
                continue
            if first_seen:
                return True
            try:
                json.loads(line)
            except json.JSONDecodeError:
                return False
            first_seen = True
    return False


def _iter_lines(path: Path, tolerant: bool) -> Iterator[RawRecord | RecordError]:
    with _open(path) as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                message = f"{where}: invalid JSON at column {exc.colno}: {exc.msg}"
                if not tolerant:
                    raise InvalidTrajectoryError(message) from exc
                yield RecordError(number, where, message)
                continue
            yield RawRecord(number, where, value)


def _load_document(path: Path) -> Any:
    with _open(path) as fh:
        text = fh.read()
    if not text.strip():
        return []
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidTrajectoryError(
            f"{path}:{exc.lineno}: invalid JSON at column {exc.colno}: {exc.msg}"
        ) from exc


def _is_message_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, dict) and "role" in item for item in value)
    )


def iter_raw_records(path: Path, tolerant: bool = False) -> Iterator[RawRecord | RecordError]:
    """Yield the top-level records of ``path`` in file order.

    A JSON document that is itself one bare message list (items with ``role``) is one record.
    Blank lines of JSON Lines files are skipped; an empty file yields nothing. With
    ``tolerant``, a JSON Lines line that is not valid JSON is yielded as a
    :class:`RecordError` instead of raising (the other lines are still read).

    Raises:
        InvalidTrajectoryError: the file cannot be read or a value is not valid JSON (a JSON
            Lines line only without ``tolerant``); the message names the file and line.
    """
    if is_json_lines(path):
        yield from _iter_lines(path, tolerant)
        return
    document = _load_document(path)
    if isinstance(document, list) and not _is_message_list(document):
        for index, item in enumerate(document, start=1):
            yield RawRecord(index, f"{path} record {index}", item)
    else:
        yield RawRecord(1, f"{path} record 1", document)


def count_raw_records(path: Path) -> int:
    """Number of records :func:`iter_raw_records` yields; JSON Lines are counted, not parsed.

    Raises:
        InvalidTrajectoryError: as :func:`iter_raw_records`.
    """
    if is_json_lines(path):
        with _open(path) as fh:
            return sum(1 for line in fh if line.strip())
    return sum(1 for _ in iter_raw_records(path))
