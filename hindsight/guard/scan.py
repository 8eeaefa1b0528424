"""Offline evaluation: scan a JSONL file of candidates and summarize
(docs/security.md#offline-evaluation).

Input: one JSON object per line, ``{"id", "content", "source"}`` (``source`` optional,
``label`` optional: ``"poison"`` or ``"benign"``). Output: one result per line,
``{"id", "verdict", "reasons"}`` plus ``"label"`` when the input line had one, and a summary
from :func:`summarize`. ``hindsight guard scan FILE.jsonl --json`` prints exactly these.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hindsight._errors import UsageError
from hindsight.guard.checker import Guard, default_guard

__all__ = ["scan_jsonl", "scan_records", "summarize"]

POSITIVE = "poison"
NEGATIVE = "benign"


def scan_records(
    records: Iterable[Mapping[str, Any]], *, guard: Guard | None = None
) -> Iterator[dict[str, Any]]:
    """Check each record (``{"id", "content", "source"?, "label"?}``) and yield its result.

    Yields ``{"id": str, "verdict": "allow" | "quarantine", "reasons": [str, ...]}`` and,
    when the record has a ``label``, ``"label"`` too. A record without ``id`` gets its
    1-based position as id.

    Raises:
        UsageError: a record is not a mapping or its ``content`` is missing or not a string.
    """
    g = guard or default_guard()
    for n, record in enumerate(records, start=1):
        if not isinstance(record, Mapping):
            raise UsageError(f"record {n}: expected a JSON object, got {type(record).__name__}")
        content = record.get("content")
        if not isinstance(content, str):
            raise UsageError(f"record {n}: 'content' must be a string, got {content!r}")
        source = record.get("source")
        verdict = g.check(content, source=source if isinstance(source, str) else None)
        result: dict[str, Any] = {
            "id": str(record.get("id", n)),
            "verdict": verdict.verdict,
            "reasons": list(verdict.reasons),
        }
        if "label" in record:
            result["label"] = record["label"]
        yield result


def _read_jsonl(path: str | os.PathLike[str]) -> Iterator[Mapping[str, Any]]:
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed in finally
    except OSError as exc:
        raise UsageError(f"cannot read {os.fspath(path)!r}: {exc.strerror or exc}") from exc
    try:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{os.fspath(path)}:{lineno}: invalid JSON: {exc.msg}") from exc
            if not isinstance(record, dict):
                raise UsageError(f"{os.fspath(path)}:{lineno}: expected a JSON object")
            if "id" not in record:
                record["id"] = f"line{lineno}"
            yield record
    finally:
        handle.close()


def scan_jsonl(
    path: str | os.PathLike[str], *, guard: Guard | None = None
) -> Iterator[dict[str, Any]]:
    """Scan a JSONL file lazily, one result per non-blank line (see :func:`scan_records`).

    Lines without ``id`` get ``"line<N>"``. Raises :class:`~hindsight.UsageError` when the
    file cannot be read or a line is not a JSON object with a string ``content`` (the message
    names the file and line).
    """
    return scan_records(_read_jsonl(path), guard=guard)


def summarize(
    results: Iterable[Mapping[str, Any]], labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Counts over scan results and, when labels are known, detection and false-positive rates.

    ``labels`` maps id -> ``"poison"`` / ``"benign"``; without it the ``"label"`` key of each
    result is used. Returns::

        {"total": int, "allow": int, "quarantine": int,
         "by_rule": {rule_id: hits}, "by_category": {category: hits},
         # only when at least one result is labelled poison or benign:
         "poison": int, "benign": int, "detected": int, "false_positives": int,
         "detection_rate": float | None, "false_positive_rate": float | None,
         "missed_ids": [id, ...], "false_positive_ids": [id, ...]}

    A rate is ``None`` when its denominator is zero. Other label values are ignored.
    """
    total = allow = quarantine = 0
    by_rule: Counter[str] = Counter()
    poison = benign = detected = false_pos = 0
    missed: list[str] = []
    fp_ids: list[str] = []
    for result in results:
        total += 1
        rid = str(result.get("id"))
        hit = result.get("verdict") == "quarantine"
        if hit:
            quarantine += 1
        else:
            allow += 1
        for reason in result.get("reasons", ()):
            by_rule[str(reason).split(":", 1)[0]] += 1
        label = labels.get(rid) if labels is not None else result.get("label")
        if label == POSITIVE:
            poison += 1
            if hit:
                detected += 1
            else:
                missed.append(rid)
        elif label == NEGATIVE:
            benign += 1
            if hit:
                false_pos += 1
                fp_ids.append(rid)
    by_category: Counter[str] = Counter()
    for rule_id, n in by_rule.items():
        by_category[_category_of(rule_id)] += n
    summary: dict[str, Any] = {
        "total": total,
        "allow": allow,
        "quarantine": quarantine,
        "by_rule": dict(sorted(by_rule.items())),
        "by_category": dict(sorted(by_category.items())),
    }
    if poison or benign:
        summary.update(
            poison=poison,
            benign=benign,
            detected=detected,
            false_positives=false_pos,
            detection_rate=detected / poison if poison else None,
            false_positive_rate=false_pos / benign if benign else None,
            missed_ids=missed,
            false_positive_ids=fp_ids,
        )
    return summary


def _category_of(rule_id: str) -> str:
    """``"exfiltration"`` for ``"exfiltration.secret_to_destination"`` and for the other
    layers' ``"semantic.exfiltration"`` / ``"llm.exfiltration"``."""
    head, _, rest = rule_id.partition(".")
    if head in ("semantic", "llm") and rest:
        return rest.split(".", 1)[0]
    return head
