"""Text helpers of the heuristic reviewer: trimming, language, task summaries, tokens."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "error_text",
    "is_mostly_cjk",
    "one_line",
    "shorten",
    "task_summary",
    "tokens",
]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
_SPACE = re.compile(r"\s+")
_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|howdy|bonjour|hola|greetings|good\s+(?:morning|afternoon|evening)|"
    r"你好|您好|嗨)(?![A-Za-z])(?:\s+there)?[^\w\u4e00-\u9fff]*\s*",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
"""Where a sentence ends: Latin punctuation before a space (``mei.chen@northwind.com``,
``v1.2`` and ``3.5`` are not split), CJK full stops anywhere (no spaces between sentences)."""
_ERROR_PREFIX = re.compile(r"^\s*(?:error|err|failed|failure)\s*[:\-]\s*", re.IGNORECASE)
_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")
_STOP = {
    "the",
    "and",
    "for",
    "with",
    "not",
    "but",
    "are",
    "was",
    "has",
    "have",
    "this",
    "that",
    "from",
    "does",
    "did",
    "can",
    "cannot",
    "you",
    "your",
    "its",
}


def one_line(text: str) -> str:
    """``text`` with every run of whitespace collapsed to one space, stripped."""
    return _SPACE.sub(" ", text).strip()


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to at most ``limit`` characters (ending in ``…`` when cut).

    Latin text is cut at a word boundary when one is near the limit.
    """
    text = one_line(text)
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 1)]
    space = cut.rfind(" ")
    if space >= limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def is_mostly_cjk(text: str) -> bool:
    """True when at least 30% of the letters of ``text`` are CJK characters."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    return cjk > 0 and cjk >= 0.3 * (cjk + latin)


def task_summary(task: str, limit: int = 80) -> str:
    """A short summary of a task text: greeting dropped, first sentence, at most ``limit`` chars.

    The first sentence is kept whole when it fits; when it is only a few words (``"I need
    help."``) the next sentence is added. Returns ``""`` for a blank task.
    """
    text = one_line(task)
    stripped = _GREETING.sub("", text, count=1)
    text = stripped or text
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    summary = ""
    for sentence in sentences:
        summary = f"{summary} {sentence}".strip()
        if len(summary) >= 30:
            break
    return shorten(summary or text, limit).rstrip(".!。！ ")


def error_text(output: str, limit: int = 120) -> str:
    """The recognisable part of a failed tool's reply, on one line, at most ``limit`` chars.

    A leading ``Error:`` is dropped; for a Python traceback the final exception line is kept;
    for a reply that is a JSON object, its error message (the text of its ``error``,
    ``message``, ``detail`` or ``reason`` field, or of ``error.message``), or with none its
    plain fields (``status: failed, failing_step: lint``), not the JSON.
    """
    output = _json_message(output) or output
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    text = lines[-1] if lines[0].lower().startswith("traceback") else " ".join(lines)
    text = _ERROR_PREFIX.sub("", text, count=1) or text
    return shorten(text, limit)


def tokens(text: str) -> set[str]:
    """Lower-case word tokens (split at ``_`` too) of 3+ chars, plural ``s`` dropped, minus stop
    words; CJK characters are single tokens. Used to find which arguments an error is about."""
    out: set[str] = set()
    for tok in _TOKEN.findall(text.lower()):
        if _CJK.match(tok):
            out.add(tok)
            continue
        if len(tok) < 3 or tok in _STOP:
            continue
        out.add(tok[:-1] if len(tok) > 3 and tok.endswith("s") else tok)
    return out


_MESSAGE_KEYS = ("error", "message", "detail", "reason", "error_message", "msg")


def _json_message(output: str) -> str:
    """The error message of a reply that is a JSON object (``{"status": "error", "message":
    "..."}``, ``{"error": {"message": "..."}}``), else ``""``."""
    # Imported here: the CLI imports this module to render its tables, and the status rules
    # (hindsight._status) load the models, hence pydantic, which ``hindsight --help`` does
    # without.
    from hindsight._status import json_object

    value: Any = json_object(output)
    inner: dict[str, Any] | None = None  # the innermost object: {"error": {"code": 5}}
    for _ in range(2):  # {"error": {"message": ...}}
        if not isinstance(value, dict):
            break
        inner = value
        found = next((value[k] for k in _MESSAGE_KEYS if value.get(k) not in (None, "")), None)
        if isinstance(found, str):
            return found
        value = found
    return _fields(inner) if inner is not None and value is None else ""


def _fields(reply: dict[str, Any]) -> str:
    """A JSON failure with no message field, said by its plain fields (``{"status": "failed",
    "failing_step": "lint"}`` -> ``status: failed, failing_step: lint``); ids and nested
    values left out (the masking would take the ids; the JSON is no sentence)."""
    parts = [
        f"{key}: {json.dumps(val) if isinstance(val, bool) else val}"
        for key, val in reply.items()
        if isinstance(key, str)
        and isinstance(val, str | int | float | bool)
        and val != ""
        and not _ID_KEY.search(key)
    ]
    return ", ".join(parts[:6])


_ID_KEY = re.compile(r"^(?:id|ID)$|_(?:id|ids|ID)$|[a-z](?:Id|ID|Ids)$")
