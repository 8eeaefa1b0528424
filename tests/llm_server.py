"""A small, real OpenAI-compatible chat-completions server for end-to-end review tests.

Run it as a separate process: ``python tests/llm_server.py`` prints ``PORT <n>`` on its first
stdout line and serves ``POST /v1/chat/completions`` on 127.0.0.1 until killed. It answers like
a provider would (``chat.completion`` JSON), deciding from the trajectory text in the request:

* ``MALFORMED`` in the run: a refusal without any JSON (the reviewer re-asks once with the
  error, gets the same, and the job fails) until ``POST /control {"fixed": true}``, then a
  good report;
* ``KIND:<name>`` in the run: the report wrapped the way ``<name>`` says: ``fenced``,
  ``prose_after``, ``surrogate`` (a lone ``\\ud83d``), ``single_quotes``, ``truncated``
  (cut inside the last rule, finish_reason ``length``), ``tool_call`` (content ``null``, the
  JSON in ``tool_calls[0].function.arguments``), ``reasoning`` (with ``reasoning_content``),
  ``empty_then_good`` (empty content on the first request, a good one on the re-ask),
  ``none_answers`` (every answer the string ``"None"``);
* ``SLOW`` in the run (or ``--sleep S`` for every request): sleeps that many seconds (30 by
  default) before answering;
* otherwise a good report whose sentences name the run's ticket (``T-<n>`` in the task), so a
  test can trace every stored lesson to the run and the reply it came from.

A contrastive request (its ``response_format`` is the ``ContrastReport`` schema) gets a good
contrastive report naming the failed run's ticket (:func:`contrast_report_for`), or, with
``MALFORMED`` in it, the same refusal.

``POST /control {"script": ["<reply content>", ...]}`` queues scripted replies: while the
queue is not empty, each chat request is answered with the next one, whatever it asks (the
guard's LLM judge tests script its verdicts this way).

``POST /control {"judge": [{"match": "<text>", "category": ..., "confidence": ...,
"reason": ...}, ...]}`` answers every guard-judge request (``response_format`` named
``JudgeReply``) by content, as a judge would: each lesson that contains a rule's ``match`` (an
empty one matches all) is harmful with that rule's fields, every other one harmless
(confidence 0.8); ``{"judge": null}`` turns it off. Scripted replies come first.

``GET /requests`` returns ``{"count": n, "tickets": {ticket: requests}}``; ``GET /bodies``
the JSON bodies of the last 50 chat requests, oldest first.

:class:`Server` and :func:`serve` start it in its own process for a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TICKET = re.compile(r"\bT-\d+\b")
KIND = re.compile(r"KIND:([a-z_]+)")
CHINESE = re.compile(r"[\u4e00-\u9fff]")

STATE: dict[str, Any] = {
    "fixed": False,
    "count": 0,
    "tickets": {},
    "sleep": 0.0,
    "bodies": [],
    "script": [],
    "judge": None,
}
MAX_BODIES = 50
LOCK = threading.Lock()


def report_for(ticket: str, chinese: bool) -> dict[str, Any]:
    """The review report this server gives for a run about ``ticket``."""
    if chinese:
        return {
            "outcome": {
                "result": "success",
                "text": f"工单 {ticket}：代理按用户偏好用 pnpm 安装了依赖。",
                "confidence": 0.9,
            },
            "cause": {
                "text": f"工单 {ticket} 的关键一步是改用 pnpm install 而不是 npm install。",
                "confidence": 0.85,
            },
            "failing_tools": {"tools": [], "text": None, "confidence": 0.9},
            "repeated_attempts": {"text": None, "confidence": 0.8},
            "do_differently": {
                "text": f"工单 {ticket}：下次一开始就用 pnpm，不要先尝试 npm。",
                "confidence": 0.8,
            },
            "task_class": {"text": "在用户偏好 pnpm 的项目中安装依赖。", "confidence": 0.7},
            "rules": [
                {
                    "text": f"当用户偏好 pnpm 时（工单 {ticket}），"
                    "用 pnpm 代替 npm 执行所有包管理命令。",
                    "confidence": 0.9,
                }
            ],
            "episode": f"目标：工单 {ticket} 安装依赖。步骤：npm install 被拒绝，"
            "随后 pnpm install 成功。结果：成功。转折点：改用 pnpm。",
        }
    return {
        "outcome": {
            "result": "failure",
            "text": f"Ticket {ticket}: the refund was not issued because refund_order timed out.",
            "confidence": 0.85,
        },
        "cause": {
            "text": f"Ticket {ticket}: refund_order timed out twice with the same arguments.",
            "confidence": 0.8,
        },
        "failing_tools": {
            "tools": ["refund_order"],
            "text": f"Ticket {ticket}: refund_order timed out after 30 s at peak hours.",
            "confidence": 0.9,
        },
        "repeated_attempts": {
            "text": f"Ticket {ticket}: refund_order was retried unchanged after a timeout.",
            "confidence": 0.8,
        },
        "do_differently": {
            "text": f"Ticket {ticket}: after one refund_order timeout, "
            "queue the refund with refund_async.",
            "confidence": 0.7,
        },
        "task_class": {
            "text": "Refund requests handled through the order tools.",
            "confidence": 0.7,
        },
        "rules": [
            {
                "text": f"When refund_order times out (ticket {ticket}), "
                "retry once, then use refund_async.",
                "confidence": 0.8,
            },
            {
                "text": f"When a refund is queued (ticket {ticket}), "
                "tell the user when it will arrive.",
                "confidence": 0.7,
            },
        ],
        "episode": f"Goal: refund for ticket {ticket}. Steps: refund_order timed out twice. "
        "Outcome: failure. Turning point: no fallback after the second timeout.",
    }


def contrast_report_for(ticket: str) -> dict[str, Any]:
    """The contrastive report this server gives for a failed run about ``ticket``."""
    return {
        "differences": [
            f"Ticket {ticket}: failed run: refund_order retried unchanged after a timeout; "
            "successful run: refund_async after the first timeout."
        ],
        "turning_point": f"Ticket {ticket}: after the first timeout the successful run "
        "queued the refund with refund_async.",
        "rules": [
            {
                "text": f"When refund_order times out (ticket {ticket}), queue the refund with "
                "refund_async (not refund_order again), because the run that did so succeeded.",
                "confidence": 0.75,
            }
        ],
    }


def completion(
    content: str | None,
    *,
    tool_arguments: str | None = None,
    reasoning: str | None = None,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_arguments is not None:
        message["tool_calls"] = [
            {
                "id": "call_Qz7b1",
                "type": "function",
                "function": {"name": "ReviewReport", "arguments": tool_arguments},
            }
        ]
        finish_reason = "tool_calls"
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return {
        "id": f"chatcmpl-{int(time.time() * 1000)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "review-model",
        "system_fingerprint": "fp_loopback",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": {"prompt_tokens": 1500, "completion_tokens": 300, "total_tokens": 1800},
    }


def _schema_name(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    return str((fmt.get("json_schema") or {}).get("name", "")) if isinstance(fmt, dict) else ""


def reply(run: str, first_try: bool, schema: str = "ReviewReport") -> dict[str, Any]:
    """The chat completion for a request whose last user message is ``run`` and whose
    ``response_format`` names ``schema``."""
    ticket_match = TICKET.search(run)
    ticket = ticket_match.group(0) if ticket_match else "T-0"
    report = report_for(ticket, bool(CHINESE.search(run)))
    if schema == "ContrastReport":
        report = contrast_report_for(ticket)
    good = json.dumps(report, ensure_ascii=False)
    if "MALFORMED" in run and not STATE["fixed"]:
        return completion("I'm sorry, but I can't produce a review of this conversation.")
    kind_match = KIND.search(run)
    kind = kind_match.group(1) if kind_match else "good"
    if kind == "fenced":
        return completion(
            "Here is the review:\n\n```json\n"
            + json.dumps(report, ensure_ascii=False, indent=2)
            + "\n```\n"
        )
    if kind == "prose_after":
        return completion(good + "\n\nI rated the cause lower because the log was cut.")
    if kind == "surrogate":
        text = json.dumps(report)  # ASCII escapes; insert a lone high surrogate escape
        return completion(
            text.replace("the refund was not issued", "the refund \\ud83d was not issued", 1)
        )
    if kind == "single_quotes":
        return completion(repr(report))
    if kind == "truncated":
        cut = good.index('"episode"') - 40
        return completion(good[:cut], finish_reason="length")
    if kind == "tool_call":
        return completion(None, tool_arguments=good)
    if kind == "reasoning":
        return completion(
            good, reasoning='Draft: {"outcome": {"result": "success"}} - no, it failed.'
        )
    if kind == "empty_then_good":
        return completion("" if first_try else good)
    if kind == "none_answers":
        nothing = {
            k: (
                {"result": "unknown", "text": "None", "confidence": 0.1}
                if k == "outcome"
                else {"text": "None", "confidence": 0.1}
            )
            for k in ("outcome", "cause", "repeated_attempts", "do_differently", "task_class")
        }
        nothing["failing_tools"] = {"tools": [], "text": "None", "confidence": 0.1}
        nothing["rules"] = [{"text": "None", "confidence": 0.1}]
        return completion(json.dumps(nothing))
    return completion(good)


def judge_reply(request: str, rules: list[dict[str, Any]]) -> str:
    """The guard judge's reply to a request whose user message is ``request`` (its JSON
    ``{"lessons": [{"id", "lesson", ...}]}``): harmful by the first rule whose ``match`` the
    lesson contains (see the module docstring)."""
    verdicts = []
    for item in json.loads(request)["lessons"]:
        rule = next((r for r in rules if str(r.get("match", "")) in item["lesson"]), None)
        if rule is None:
            verdicts.append({"id": item["id"], "harmful": False, "confidence": 0.8, "reason": "ok"})
            continue
        verdicts.append(
            {
                "id": item["id"],
                "harmful": True,
                "category": rule.get("category", "contradiction"),
                "confidence": rule.get("confidence", 0.9),
                "reason": rule.get("reason", "judged harmful"),
            }
        )
    return json.dumps({"verdicts": verdicts})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _send(self, status: int, doc: Any) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/requests":
            with LOCK:
                self._send(200, {"count": STATE["count"], "tickets": dict(STATE["tickets"])})
        elif self.path == "/bodies":
            with LOCK:
                self._send(200, list(STATE["bodies"]))
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if self.path == "/control":
            with LOCK:
                STATE.update({k: v for k, v in body.items() if k in ("fixed", "sleep")})
                if "script" in body:
                    STATE["script"] = [str(r) for r in body["script"]]
                if "judge" in body:
                    STATE["judge"] = body["judge"]
            self._send(200, {"ok": True})
            return
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"unknown path {self.path}"}})
            return
        messages = body.get("messages", [])
        run = str(messages[-1].get("content", "")) if messages else ""
        first_try = not (
            len(messages) >= 2
            and messages[-2].get("role") == "assistant"
            and "<trajectory>" not in run
            and "<failed_run>" not in run
        )
        if not first_try:  # the re-ask: the run is in the user message before the bad reply
            run = str(messages[-3].get("content", ""))
        ticket_match = TICKET.search(run)
        with LOCK:
            STATE["count"] += 1
            key = ticket_match.group(0) if ticket_match else "none"
            STATE["tickets"][key] = STATE["tickets"].get(key, 0) + 1
            STATE["bodies"] = [*STATE["bodies"], body][-MAX_BODIES:]
            sleep = float(STATE["sleep"])
            scripted = STATE["script"].pop(0) if STATE["script"] else None
        if scripted is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(200, completion(scripted))
            return
        rules = STATE["judge"]
        if rules is not None and _schema_name(body) == "JudgeReply":
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(200, completion(judge_reply(run, rules)))
            return
        if "SLOW" in run:
            sleep = max(sleep, 30.0)
        if sleep:
            time.sleep(sleep)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # client gave up
            self._send(200, reply(run, first_try, _schema_name(body)))

    def log_message(self, *args: Any) -> None:
        pass


class Server:
    """A server process started by :func:`serve`, and its control endpoints."""

    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc = proc
        self.port = port
        self.base = f"http://127.0.0.1:{port}/v1"

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as resp:
            return json.load(resp)

    def control(self, **settings: Any) -> None:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/control",
            data=json.dumps(settings).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            assert resp.status == 200

    def requests(self) -> dict[str, Any]:
        """``{"count": n, "tickets": {ticket: requests}}``."""
        return dict(self._get("/requests"))

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the last chat requests, oldest first."""
        return list(self._get("/bodies"))


@contextlib.contextmanager
def serve() -> Iterator[Server]:
    """This server in its own process on a free loopback port, killed on exit."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve())],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield Server(proc, int(line.split()[1]))
    finally:
        proc.kill()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--sleep", type=float, default=0.0)
    args = parser.parse_args()
    STATE["sleep"] = args.sleep
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    parent = os.getppid()

    def exit_with_parent() -> None:  # never outlive the test run that started us
        while os.getppid() == parent:
            time.sleep(1.0)
        server.shutdown()

    threading.Thread(target=exit_with_parent, daemon=True).start()
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
