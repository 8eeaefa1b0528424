"""Classify a tool's reply text as success, failure or timeout (an event's ``status``,
docs/concepts.md#trajectories-and-events)."""

from __future__ import annotations

import re
from typing import Any

from hindsight.models import EventStatus

__all__ = ["classify_tool_result"]

# Only the head of a reply decides: a successful reply that merely contains the word "error"
# deep inside its data must stay a success.
_HEAD = 300
# Replies at most this long that mention a timeout are timeouts even without an "Error" prefix
# ("Request timed out", "deadline exceeded"); longer ones are data that happen to say so.
_SHORT = 200

_ERROR_START = re.compile(
    r"""^\s*(?:
        error\b | err\b | failed\b | failure\b | exception\b | fatal\b
      | traceback\s\(most\srecent\scall\slast\)
      | [A-Za-z_][\w.]*(?:error|exception|timeout)\s*[:(]
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
_STATUS_WORDS = {
    "success": EventStatus.SUCCESS,
    "ok": EventStatus.SUCCESS,
    "error": EventStatus.FAILURE,
    "failure": EventStatus.FAILURE,
    "failed": EventStatus.FAILURE,
    "timeout": EventStatus.TIMEOUT,
}


def classify_tool_result(text: str, message: dict[str, Any] | None = None) -> EventStatus:
    """The status of a tool reply.

    An explicit ``status`` (success / error / failure / timeout) or ``is_error: true`` on the
    message wins. Otherwise: ``timeout`` when the reply looks like an error or is short and
    mentions a timeout (``timed out``, ``timeout``, ``deadline exceeded``); ``failure`` when it
    starts with ``Error`` (any case), an exception name (``ValueError: ...``), a Chinese or
    Japanese error word (``错误：``, ``【失败】``, ``エラー``) or holds a Python traceback; else
    ``success``. Timeout words include ``超时`` / ``超時`` / ``タイムアウト``.
    """
    if message:
        declared = message.get("status")
        if isinstance(declared, str) and declared.strip().lower() in _STATUS_WORDS:
            return _STATUS_WORDS[declared.strip().lower()]
        if message.get("is_error") is True:
            return EventStatus.TIMEOUT if _TIMEOUT.search(text[:_HEAD]) else EventStatus.FAILURE
    head = text[:_HEAD]
    looks_failed = bool(_ERROR_START.match(head) or _TRACEBACK.search(text))
    if _TIMEOUT.search(head) and (looks_failed or len(text.strip()) <= _SHORT):
        return EventStatus.TIMEOUT
    if looks_failed:
        return EventStatus.FAILURE
    return EventStatus.SUCCESS
