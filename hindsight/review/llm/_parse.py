"""Find, repair and validate the review report in a provider's reply
(docs/review.md#replies-that-are-not-clean-json).

Providers do not always return clean JSON even when asked to. This module takes whatever came
back and either returns a validated :class:`~hindsight.review.llm.prompts.ReviewReport` or raises
:class:`ReportParseError` with a message fit to show the model in a retry. Handled:

* the JSON in ``message.content``, or, when the content is ``None`` or blank, in
  ``tool_calls[0].function.arguments`` (or the legacy ``function_call.arguments``);
* ``reasoning_content`` / ``<think>...</think>``: reasoning is ignored, only the answer counts;
* a fenced ```json block; JSON preceded or followed by prose;
* lone UTF-16 surrogates (``"\\ud83d"``), which are dropped, and bad escapes;
* Python-literal-like replies (single quotes, ``None``/``True``), trailing commas, and JSON cut
  off mid-way (finish_reason ``length``): repaired with the ``json-repair`` package. A sentence
  that was cut off is dropped rather than stored half-written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ValidationError

from hindsight._errors import ReviewError
from hindsight._llm import field, reply_text
from hindsight.review.llm.prompts import ReviewReport

__all__ = ["ReportParseError", "parse_reply", "parse_report", "reply_text"]

_Report = TypeVar("_Report", bound=BaseModel)

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5|javascript|js)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think(?:ing)?>.*", re.DOTALL | re.IGNORECASE)
_MAX_SHOWN = 300  # characters of a bad reply quoted in an error message
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_JSON_ESCAPES = frozenset('"\\/bfnrtu')
# Markdown escapes models write inside JSON strings (``update\_flight``): the backslash goes.
_MARKDOWN_ESCAPES = frozenset("_*#-.()[]{}!<>+~|`'")


class ReportParseError(ReviewError):
    """A reply held no usable review report.

    Attributes:
        problem: what is wrong, in words the model can act on (shown to it in the one retry).
        reply: the reply text as received (``""`` when there was none).
        retryable: ``False``: the reviewer already re-asked once with the error, so a review
            job that ends with this error fails at once (state ``failed``, error kept) instead
            of being retried with backoff; ``hindsight jobs retry`` runs it again.
    """

    retryable = False

    def __init__(self, problem: str, reply: str = "") -> None:
        self.problem = problem
        self.reply = reply
        shown = reply if len(reply) <= _MAX_SHOWN else reply[:_MAX_SHOWN] + "…"
        super().__init__(f"{problem} (reply: {shown!r})" if reply else problem)


# -- text -> object ----------------------------------------------------------------------------


def _strip_reasoning(text: str) -> str:
    """Remove ``<think>...</think>`` blocks; an unclosed one (reasoning that never ended)
    swallows the rest of the text, since no answer followed it."""
    text = _THINK.sub("", text)
    return _OPEN_THINK.sub("", text)


def _fix_escapes(text: str) -> str:
    """Make every backslash escape valid JSON: ``\\_`` -> ``_`` (a Markdown escape),
    ``\\q`` -> ``\\\\q`` (a literal backslash); valid escapes are kept."""

    def fix(match: re.Match[str]) -> str:
        ch = match.group(1)
        if ch in _JSON_ESCAPES:
            return match.group(0)
        if ch in _MARKDOWN_ESCAPES:
            return ch
        return "\\\\" + ch

    return _ESCAPE.sub(fix, text) if "\\" in text else text


def _scan(text: str) -> tuple[int, bool]:
    """Bracket depth left open at the end of ``text`` (a JSON fragment, strings skipped) and
    whether it ends inside an open string literal."""
    depth = 0
    in_string = False
    quote = ""
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = in_string
        elif in_string:
            if ch == quote:
                in_string = False
        elif ch in "\"'":
            in_string, quote = True, ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return depth, in_string


def _marker_keys(schema: type[BaseModel]) -> tuple[str, ...]:
    """The keys that tell a report of ``schema`` from other JSON in a reply: the schema's
    ``marker_keys`` class attribute, else ``("outcome",)`` (the single-run report)."""
    keys = getattr(schema, "marker_keys", None)
    return tuple(keys) if keys else ("outcome",)


def _looks_like(value: dict[str, Any], keys: Sequence[str]) -> bool:
    return any(k in value for k in keys)


def _strict_object(text: str, keys: Sequence[str] = ("outcome",)) -> dict[str, Any] | None:
    """The first JSON object in ``text`` that looks like a report, decoded strictly.

    Prose before and after the object is allowed. An object counts when it has one of
    ``keys`` (directly or inside a one-key wrapper); ``None`` when there is none.
    """
    decoder = json.JSONDecoder()
    start = text.find("{")
    tries = 0
    while start != -1 and tries < 50:
        tries += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict) and _looks_like(_unwrap(value, keys), keys):
            return value
        start = text.find("{", end)
    return None


def _repaired_object(text: str) -> tuple[Any, bool]:
    """Repair ``text`` with json-repair; returns (object or None, whether it was cut off)."""
    import json_repair

    start = text.find("{")
    if start == -1:
        return None, False
    candidate = text[start:]
    depth, in_string = _scan(candidate)
    truncated = depth > 0 or in_string
    cut_in_string = in_string
    value = json_repair.loads(candidate)
    if isinstance(value, list):  # JSON then prose: json-repair returns every value it found
        value = next((v for v in value if isinstance(v, dict)), None)
    if not isinstance(value, dict) or not value:
        return None, False
    if cut_in_string:
        _drop_last_sentence(value)
    return value, truncated


def _drop_last_sentence(value: dict[str, Any]) -> None:
    """Forget the string that was being written when the reply was cut off.

    json-repair closes it, but half a sentence must not become a lesson: the answer's text is
    set to ``None``, a cut rule or tool name is removed.
    """
    path: list[Any] = []
    last: list[Any] | None = None

    def walk(node: Any) -> None:
        nonlocal last
        if isinstance(node, dict):
            for key, child in node.items():
                path.append(key)
                walk(child)
                path.pop()
        elif isinstance(node, list):
            for index, child in enumerate(node):
                path.append(index)
                walk(child)
                path.pop()
        elif isinstance(node, str):
            last = list(path)

    walk(value)
    if not last:
        return
    parent: Any = value
    for step in last[:-1]:
        parent = parent[step]
    key = last[-1]
    if len(last) >= 3 and last[0] == "rules" and isinstance(last[1], int):
        del value["rules"][last[1]]
    elif isinstance(parent, list) or key == "result":
        del parent[key]
    else:
        parent[key] = None


def _without_lone_surrogates(value: Any) -> Any:
    """Drop unpaired UTF-16 surrogates from every string (they cannot be encoded as UTF-8)."""
    if isinstance(value, str):
        if not any("\ud800" <= ch <= "\udfff" for ch in value):
            return value
        fixed = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return fixed.replace("\ufffd", "")
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    return value


def _unwrap(value: dict[str, Any], keys: Sequence[str] = ("outcome",)) -> dict[str, Any]:
    """``{"review": {...report...}}`` -> the inner report (some models wrap their answer)."""
    if _looks_like(value, keys) or len(value) != 1:
        return value
    inner = next(iter(value.values()))
    return inner if isinstance(inner, dict) and _looks_like(inner, keys) else value


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "(top level)"
        parts.append(f"{where}: {item['msg']}")
    more = error.error_count() - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


@overload
def parse_report(text: str) -> ReviewReport: ...
@overload
def parse_report(text: str, schema: type[_Report]) -> _Report: ...
def parse_report(text: str, schema: type[BaseModel] = ReviewReport) -> BaseModel:
    """Find, repair and validate the report in a reply ``text``.

    ``schema``: the report class, :class:`ReviewReport` (default) or the contrastive
    :class:`~hindsight.review.llm.contrast.ContrastReport`; a JSON object counts as a report
    when it has one of the schema's ``marker_keys`` (``outcome`` for the single-run report).

    Returns:
        the validated report (strings free of lone surrogates).

    Raises:
        ReportParseError: no JSON object could be found or repaired, or it does not match the
            schema; ``problem`` names the cause (e.g. ``"outcome.result: Input should be
            'success', 'failure', 'partial' or 'unknown'"``).
    """
    if not text or not text.strip():
        raise ReportParseError("the reply was empty: expected one JSON object", text or "")
    keys = _marker_keys(schema)
    body = _strip_reasoning(text)
    candidates = [m.group(1) for m in _FENCE.finditer(body)] + [body]
    value: Any = None
    for candidate in candidates:
        value = _strict_object(candidate, keys)
        if value is not None:
            break
    if value is None:
        candidates = [_fix_escapes(c) for c in candidates]
        for candidate in candidates:
            value = _strict_object(candidate, keys)
            if value is not None:
                break
    if value is None:
        for candidate in candidates:
            value, _ = _repaired_object(candidate)
            if value is not None:
                break
    if value is None:
        raise ReportParseError("the reply holds no JSON object", text)
    value = _unwrap(_without_lone_surrogates(value), keys)
    try:
        return schema.model_validate(value)
    except ValidationError as error:
        raise ReportParseError(
            f"the JSON does not match the review schema: {_describe(error)}", text
        ) from error


@overload
def parse_reply(response: Any) -> ReviewReport: ...
@overload
def parse_reply(response: Any, schema: type[_Report]) -> _Report: ...
def parse_reply(response: Any, schema: type[BaseModel] = ReviewReport) -> BaseModel:
    """:func:`reply_text` then :func:`parse_report` (with ``schema``) on a chat-completion
    ``response``.

    Raises:
        ReportParseError: as :func:`parse_report`; an empty reply says so, naming the
            ``finish_reason`` when there is one.
    """
    text = reply_text(response)
    if not text.strip():
        choices = field(response, "choices") or []
        reason = field(choices[0], "finish_reason") if choices else None
        why = f" (finish_reason {reason!r})" if reason else ""
        raise ReportParseError(
            f"the reply had no content and no tool call arguments{why}: expected one JSON object"
        )
    return parse_report(text, schema)
