"""Classify a tool's reply text as success, failure or timeout (an event's ``status``,
docs/concepts.md#trajectories-and-events).

A reply reports its own failure first: an error marker counts only at its start (``Error:``,
``ValueError:``, ``HTTP 500``, ``Timeout``), or as the ``error`` / ``status`` field of a JSON
object reply. A marker inside the text (``Error rate is 0.1%``), negated (``no timeout``,
``Error-free``) or taken back (``timed out yesterday but is now delivered``) is not one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hindsight.models import EventStatus

__all__ = ["classify_tool_result", "json_object"]

# Only the head of a reply decides: a successful reply that merely contains the word "error"
# deep inside its data must stay a success.
_HEAD = 300
# Replies at most this long whose first clause says something timed out are timeouts even
# without a marker at their start ("The request timed out."); longer ones are data.
_SHORT = 200

_ERROR_START = re.compile(
    r"""^\s*(?:
        (?:error|err|failed|failure|exception|fatal)\b(?![\s-]*free\b)
      | traceback\s\(most\srecent\scall\slast\)
      | [A-Za-z_][\w.]*(?:error|exception|timeout)\s*[:(]
      | (?:timed?[\s_-]?out|timeout|deadline\s+exceeded)\b
      # an HTTP status line: "HTTP 500 ...", "404 Not Found", "503: ..."
      | http(?:/[\d.]+)?\s+[45]\d\d\b | [45]\d\d(?=\s*:\s|\s+(?-i:[A-Z][a-z]))
      # Chinese and Japanese replies: "错误：", "【错误】", "失败", "異常", "エラー:"
      | [\[【(（]?\s*(?:错误|錯誤|出错|出錯|报错|報錯|失败|失敗|异常|異常|エラー|例外)
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_TRACEBACK = re.compile(r"traceback \(most recent call last\)", re.IGNORECASE)
_TIMEOUT = re.compile(
    r"timed?[\s_-]?out|timeout|deadline exceeded|read timed|took too long"
    r"|超时|超時|逾时|逾時|タイムアウト",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[.;,:!?\n。，；：！？、]")
_NEGATION = re.compile(r"\b(?:no|not|never|without|non)\b|n't\b|没有|沒有|未|无|無|不", re.I)
_CONTRAST = re.compile(r"\b(?:but|however|although|though)\b|但|不过|不過|然而", re.I)
_STATUS_WORDS = {
    "success": EventStatus.SUCCESS,
    "ok": EventStatus.SUCCESS,
    "error": EventStatus.FAILURE,
    "failure": EventStatus.FAILURE,
    "failed": EventStatus.FAILURE,
    "timeout": EventStatus.TIMEOUT,
}


def classify_tool_result(text: str, message: dict[str, Any] | None = None) -> EventStatus:
    """The status of a tool reply (rules in the module docstring).

    An explicit ``status`` (success / ok / error / failure / failed / timeout) or
    ``is_error: true`` on the message wins, and so does the same field of a reply that is a
    JSON object, or its ``error`` / ``errors`` field when it holds something (``{"error":
    "address not found"}``; ``null`` and ``[]`` are no error). Otherwise: ``failure`` when the
    reply starts with ``Error`` (any case, not ``Error-free``), ``failed``, an exception name
    (``ValueError: ...``), an HTTP error status (``HTTP 500``, ``404 Not Found``), a Chinese or
    Japanese error word (``错误：``, ``【失败】``, ``エラー``) or holds a Python traceback;
    ``timeout`` instead when such a reply mentions a timeout, when it starts with one
    (``Timeout``, ``timed out``, ``deadline exceeded``, ``超时``, ``タイムアウト``), or when it
    is short and its first clause says something timed out (``The request timed out.``), not
    negated (``no timeout``) and not taken back after (``... but is now delivered``); else
    ``success``.
    """
    declared = _declared(message) if message else None
    if declared is not None:
        return declared
    if message and message.get("is_error") is True:
        return EventStatus.TIMEOUT if _TIMEOUT.search(text[:_HEAD]) else EventStatus.FAILURE
    head = text[:_HEAD]
    reply = json_object(text)
    if reply is not None:
        declared = _declared(reply)
        if declared is not None:
            return declared
        error = reply.get("error", reply.get("errors"))
        if error not in (None, False, "", [], {}):
            return EventStatus.TIMEOUT if _TIMEOUT.search(str(error)) else EventStatus.FAILURE
    looks_failed = bool(_ERROR_START.match(head) or _TRACEBACK.search(text))
    if _TIMEOUT.search(head) and (looks_failed or _says_timed_out(text)):
        return EventStatus.TIMEOUT
    if looks_failed:
        return EventStatus.FAILURE
    return EventStatus.SUCCESS


def _declared(fields: dict[str, Any]) -> EventStatus | None:
    """The status a message or a JSON reply states (``"status": "error"``), if any."""
    status = fields.get("status")
    if isinstance(status, str):
        return _STATUS_WORDS.get(status.strip().lower())
    return None


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, when it is one (a reply's envelope), else ``None``."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _says_timed_out(text: str) -> bool:
    """A short reply whose first clause says something timed out, not negated and not taken
    back after (``The request timed out.``; not ``no timeout``, not ``The tool timed out
    yesterday but the shipment is now delivered``)."""
    text = text.strip()
    if len(text) > _SHORT:
        return False
    clause = _CLAUSE_END.split(text, maxsplit=1)[0]
    found = _TIMEOUT.search(clause)
    if found is None or _NEGATION.search(clause[: found.start()]):
        return False
    return not _CONTRAST.search(text[found.end() :])
