"""Loading a deployment's guard tuning (``HINDSIGHT_GUARD_RULES``; docs/security.md#tuning).

The file is JSON (``.json``) or TOML (``.toml``; literal strings ``'...'`` keep regexes
readable). Either a list of rules, or an object::

    {
      "rules": [{"id": "exfiltration.seed_phrase", "category": "exfiltration",
                 "description": "crypto wallet seed phrases",
                 "patterns_en": ["\\\\bseed phrases?\\\\b"]}],
      "disabled": ["privilege.root", "destructive"],
      "conflict_threshold": 0.9,
      "conflict_overlap": 0.6
    }

``rules`` are added to the built-in rules (``Guard(extra_rules=...)``), ``disabled`` names rule
ids, categories or ``"conflict"``; the thresholds are those of :class:`Guard`. In TOML the rules
are an array of tables, ``[[rules]]``.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hindsight._errors import UsageError
from hindsight.guard.checker import LAYERS, Guard

__all__ = ["RULES_FILE_KEYS", "guard_from_file", "guard_layers", "load_rules_file"]

RULES_FILE_KEYS = frozenset({"rules", "disabled", "conflict_threshold", "conflict_overlap"})
"""The keys a rules file object may have."""


def load_rules_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a rules file and return keyword arguments for :class:`Guard`.

    Returns:
        ``{"extra_rules": [...], "disabled": [...], "conflict_threshold": float, ...}``
        (only the keys the file sets).

    Raises:
        UsageError: the file is missing or unreadable, is neither JSON nor TOML, does not
            parse, or has unknown keys or wrong types (the message names the file).
    """
    where = os.fspath(path)
    file = Path(path)
    try:
        raw = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read guard rules file {where!r}: {exc.strerror or exc}") from None
    suffix = file.suffix.lower()
    try:
        if suffix == ".toml":
            data: Any = tomllib.loads(raw)
        elif suffix == ".json":
            data = json.loads(raw)
        else:
            raise UsageError(f"guard rules file {where!r} must end in .json or .toml")
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"guard rules file {where!r} does not parse: {exc}") from None
    if isinstance(data, list):
        data = {"rules": data}
    if not isinstance(data, dict):
        raise UsageError(f"guard rules file {where!r} must hold a list of rules or an object")
    unknown = sorted(set(data) - RULES_FILE_KEYS)
    if unknown:
        raise UsageError(
            f"guard rules file {where!r}: unknown key(s) {unknown}; allowed: "
            f"{sorted(RULES_FILE_KEYS)}"
        )
    kwargs: dict[str, Any] = {}
    rules = data.get("rules", [])
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        raise UsageError(f"guard rules file {where!r}: 'rules' must be a list of objects")
    if rules:
        kwargs["extra_rules"] = rules
    disabled = data.get("disabled", [])
    if not isinstance(disabled, list) or not all(isinstance(d, str) for d in disabled):
        raise UsageError(f"guard rules file {where!r}: 'disabled' must be a list of names")
    if disabled:
        kwargs["disabled"] = disabled
    for key in ("conflict_threshold", "conflict_overlap"):
        if key in data:
            kwargs[key] = data[key]
    return kwargs


def guard_layers(spec: str | Iterable[str]) -> tuple[str, ...]:
    """The layers named by ``spec`` (``"rules,semantic,llm"`` or a list), in running order.

    Raises:
        UsageError: an unknown or no layer (one line naming the known ones).
    """
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    chosen = {str(n).strip().lower() for n in names if str(n).strip()}
    unknown = sorted(chosen - set(LAYERS))
    if unknown or not chosen:
        raise UsageError(
            f"guard layers must be a comma-separated list of {', '.join(LAYERS)}; got {spec!r}"
        )
    return tuple(layer for layer in LAYERS if layer in chosen)


def guard_from_file(path: str | os.PathLike[str] | None, **options: Any) -> Guard:
    """A :class:`Guard` with the built-in rules tuned by the file at ``path`` (``None``: the
    defaults); ``options`` go to :class:`Guard` as well (``layers``, ``semantic``).

    Raises:
        UsageError: the file is invalid (see :func:`load_rules_file`) or one of its rules is
            (bad regex, unknown placeholder, duplicate id, unknown disabled name); the message
            names the file.
    """
    if path is None:
        return Guard(**options)
    kwargs = load_rules_file(path)
    try:
        return Guard(**kwargs, **options)
    except UsageError as exc:
        raise UsageError(f"guard rules file {os.fspath(path)!r}: {exc}") from None
