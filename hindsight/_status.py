"""Classify a tool's reply text as success, failure or timeout (an event's ``status``,
docs/concepts.md#trajectories-and-events).

A reply reports its own failure first: an error marker counts only at its start (``Error:``,
``ValueError:``, ``HTTP 500``, ``Timeout``), or as the ``error`` / ``status`` field of a JSON
object reply (the ``status`` of a record, a reply naming one by its id, is the record's state).
A marker inside the text (``Error rate is 0.1%``), negated (``no timeout``,
``Error-free``) or taken back (``timed out yesterday but is now delivered``) is not one.

A short reply also reports it in its first clause, in plain words: that something timed out
(``The request timed out.``), or that the call was refused or could not be done (``Permission
denied``, ``The payment was declined.``, ``Rate limit exceeded``, ``Could not connect``,
``Service Unavailable``, ``Card expired``, ``Account locked``, ``The restart did not complete``,
``No such file or directory``, ``Order 9907 not found``, ``权限不足``). The same limits hold:
the words count in the first clause of a reply of at most 200 characters (``_SHORT``; a longer
reply is data), not negated before them (``No access denied errors``), not taken back after
them (``declined at first but went through``), not describing data (``3 declined
transactions``, ``Orders that were declined``), and a JSON reply is read by its fields only. A
search that found nothing (``No orders found``, ``Found 0 orders``) is an answer, a success; a
thing the call names that does not exist (``not found``, ``no such``, ``does not exist``) is a
failure, as ``404 Not Found`` is.
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
# Replies at most this long whose first clause says something timed out, or that the call was
# refused or could not be done, are timeouts / failures without a marker at their start ("The
# request timed out.", "Permission denied"); longer ones are data.
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
# What a first clause says to report a failure: the call was refused, could not be done, ran
# into a limit, or what it names does not exist. General predicates, not whole sentences.
_FAILURE = re.compile(
    r"""
    # refused or failed, said of something (the clause ends, or a preposition follows): "Access
    # denied", "Connection refused by host", "Payment failed", "Rate limit exceeded for key k";
    # not before a noun ("3 declined transactions") nor an object ("Declined the invite")
      (?:\b(?:denied|refused|declined|rejected|reject|forbidden|failed
          | un(?:authori[sz]ed|authenticated|available|reachable) | expired|locked|ineligible
          | not\s+(?:authori[sz]ed|authenticated|allowed|permitted|(?:logged|signed)\s+in
                   |eligible|available|reachable)
          | (?:quota|limit|rate|retries|attempts|allowance)\b
            (?:(?!\bnot?\b|n't\b)[^.;!?])*?\bexceeded)\b
         (?=(?:\s+(?:\w+ly|again|twice))?
            (?:\s*$|\s*[(\[–—-]|\s+(?:to|by|for|from|due|because|with|on|at|in|as|after
               |while|when|since|until|and)\b)))
    # could not be done: "Cannot open /etc/x", "Unable to find the file", "You don't have
    # permission", "Too many requests"
    | \b(?:cannot|can\s+not|can['’]t|could\s+not|couldn['’]t|unable\s+to|not\s+able\s+to)\b
    # "The restart did not complete", "Segmentation fault (core dumped)" ("Invalid API key"
    # is not read: "Invalid entries: 0" is the same words as data)
    | \b(?:did|does|was|were)(?:\s+not|n['’]t)\s+(?:complete|completed|finish
        |finished|succeed|succeeded|go\s+through|run)\b
    | \bsegmentation\s+fault\b | \bcore\s+dumped\b
    | \b(?:(?:do|does|did)(?:\s+not|n['’]t)\s+have|(?:have|has)\s+no|lacks?)\s+(?:\w+\s+)?
        (?:permissions?|access|rights|privileges?)\b
    | \bexceed(?:ed|s)?\s+(?:\w+\s+){0,3}?(?:quota|limit|allowance)s?\b
    | \btoo\s+many\s+(?:\w+\s+)?(?:requests|attempts|calls|connections|retries|redirects|files)\b
    | \b(?:insufficient|not\s+enough)\s+(?:\w+\s+)?
        (?:funds|balance|permissions?|privileges?|credits?|quota|access|rights|scopes?|storage
         |space|memory)\b
    # what the call names does not exist ("No such file", "Order 9907 not found"); a search
    # that found nothing ("No orders found") says none of these
    | \bno\s+such\b | \bnot\s+(?:be\s+)?found\b | n['’]t\s+(?:be\s+)?found\b
    | \b(?:does|do|did)(?:\s+not|n['’]t)\s+exist\b
    # Chinese and Japanese: refused, no permission, failed (not "失败的订单"), cannot, not found,
    # over a quota or limit, short of funds
    | 拒绝|拒絕|拒否|禁止访问|禁止訪問|アクセス禁止|无权|無權|没有权限|沒有權限|权限不足|權限不足
    | 権限がありません|権限不足|未授权|未授權|未经授权|未經授權|許可されていません|未登录|未登錄
    | (?:失败|失敗)(?!的) | 无法|無法|不能|未能|できません|できない
    | 不存在|找不到|未找到|見つかりません|存在しません
    | (?:超出|超过|超過|超え)[^，。；、]{0,8}?(?:配额|配額|限额|限額|额度|額度|上限|限制|制限)
    | (?:请求|請求)(?:过于|過於)频繁|超限
    | (?:余额|餘額|额度|額度|残高)不足
    """,
    re.IGNORECASE | re.VERBOSE,
)
# A clause ends at ";", "!", "?", a line break or CJK punctuation, and at ".", "," or ":" before
# a space or the end: not inside "api.example.com", "3,000" or "12:30".
_CLAUSE_END = re.compile(r"[;!?\n。，；：！？、]|[.,:](?=\s|$)")
_NEGATION = re.compile(
    r"\b(?:no|not|never|without|non|none|zero)\b|n't\b|(?<![\w.])0(?![\w.])"
    r"|没有|沒有|未|无|無|不",
    re.I,
)
_CONTRAST = re.compile(r"\b(?:but|however|although|though)\b|但|不过|不過|然而", re.I)
# A predicate right after "that" / "which" / "who" describes data ("Items that cannot be
# returned: 3", "Orders which were declined"), it does not report the call.
_RELATIVE = re.compile(r"\b(?:that|which|who)\s+(?:(?:was|were|is|are|has|have|had|been)\s+)*$")
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
    JSON object (unless the object is a record, named by an id key: its ``status`` is the
    record's state, ``{"pipeline_id": ..., "status": "failed"}`` is a pipeline that failed,
    read successfully), or its ``error`` / ``errors`` field when it holds something (``{"error":
    "address not found"}``; ``null`` and ``[]`` are no error). Otherwise: ``failure`` when the
    reply starts with ``Error`` (any case, not ``Error-free``), ``failed``, an exception name
    (``ValueError: ...``), an HTTP error status (``HTTP 500``, ``404 Not Found``), a Chinese or
    Japanese error word (``错误：``, ``【失败】``, ``エラー``) or holds a Python traceback, or
    when it is short and its first clause says the call was refused or could not be done
    (``Permission denied``, ``Card declined``, ``Quota exceeded``, ``Could not connect``,
    ``Unable to ...``, ``No such file``, ``Order 9907 not found``, ``拒绝访问``); ``timeout``
    instead when such a reply mentions a timeout, when it starts with one (``Timeout``,
    ``timed out``, ``deadline exceeded``, ``超时``, ``タイムアウト``), or when it is short and its
    first clause says something timed out (``The request timed out.``); else ``success``. A
    first clause counts only when it is not negated (``no timeout``, ``No access denied
    errors``), not taken back after (``... but is now delivered``), not a description of data
    (``3 declined transactions``) and not JSON; ``No orders found`` is an empty answer, a success.
    """
    declared = _declared(message) if message else None
    if declared is not None:
        return declared
    if message and message.get("is_error") is True:
        return EventStatus.TIMEOUT if _TIMEOUT.search(text[:_HEAD]) else EventStatus.FAILURE
    head = text[:_HEAD]
    reply = json_object(text)
    if reply is not None:
        declared = None if _describes_a_record(reply) else _declared(reply)
        if declared is not None:
            return declared
        error = reply.get("error", reply.get("errors"))
        if error not in (None, False, "", [], {}):
            return EventStatus.TIMEOUT if _TIMEOUT.search(str(error)) else EventStatus.FAILURE
    looks_failed = bool(
        _ERROR_START.match(head) or _TRACEBACK.search(text) or _first_clause_says(text, _FAILURE)
    )
    if _TIMEOUT.search(head) and (looks_failed or _first_clause_says(text, _TIMEOUT)):
        return EventStatus.TIMEOUT
    if looks_failed:
        return EventStatus.FAILURE
    return EventStatus.SUCCESS


# A key naming a record (``id``, ``pipeline_id``, ``orderId``); not the ids an envelope
# carries about the request itself (``request_id``, ``trace_id``, ``error_id``...).
_RECORD_ID = re.compile(r"^(?:id|ID)$|_(?:id|ID)$|[a-z](?:Id|ID)$")
_ENVELOPE_ID = re.compile(r"^(?:request|trace|span|correlation|error|event|call)_?id$", re.I)
_MESSAGE_KEYS = ("error", "errors", "message", "msg", "detail", "details", "reason")


def _describes_a_record(reply: dict[str, Any]) -> bool:
    """Whether a JSON reply is a record (it names one by its id and carries no message:
    ``{"pipeline_id": ..., "status": "failed", "failing_step": "lint"}``), whose ``status`` is
    the record's state (a pipeline that failed, a payment that was declined), not an envelope
    reporting on the call (``{"status": "error", "message": ...}``, also with the id of what it
    was about: ``{"order_id": ..., "status": "error", "message": "cannot be cancelled"}``).
    An id key is ``id``, ``*_id`` or ``*Id`` (not ``paid``, ``valid``, ``uuid``)."""
    if any(reply.get(key) not in (None, "", [], {}) for key in _MESSAGE_KEYS):
        return False
    return any(
        isinstance(key, str) and _RECORD_ID.search(key) and not _ENVELOPE_ID.match(key)
        for key in reply
    )


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


def _is_json(text: str) -> bool:
    """Whether ``text`` is a JSON object or array (data, read by its fields only)."""
    if not text.startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _first_clause_says(text: str, predicate: re.Pattern[str]) -> bool:
    """Whether ``text`` is a short reply whose first clause says ``predicate``, not negated
    before it, not describing data (``Items that cannot be returned``) and not taken back after
    it (``The request timed out.``, ``Permission denied``; not ``no timeout``, not ``The tool
    timed out yesterday but the shipment is now delivered``)."""
    text = text.strip()
    if len(text) > _SHORT or _is_json(text):
        return False
    clause = _CLAUSE_END.split(text, maxsplit=1)[0]
    for found in predicate.finditer(clause):
        before = clause[: found.start()]
        if _NEGATION.search(before) or _RELATIVE.search(before):
            continue
        if not _CONTRAST.search(text[found.end() :]):
            return True
    return False
