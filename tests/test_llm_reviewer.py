"""The LLM reviewer against the OpenAI-compatible HTTP API (respx), sync and async.

``openai/test-model`` with ``api_base=http://127.0.0.1:8999/v1`` posts to
``/v1/chat/completions``; respx answers with the replies of ``test_review_parse``. litellm's
async path uses aiohttp, so the mock is installed with ``using="httpx"`` (litellm's aiohttp
transport is an httpx transport, which respx replaces). Two tests use a real slow server on
loopback instead of a mock, to prove the timeout is enforced, not only passed along.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from hindsight import ReviewError, UsageError
from hindsight.config import MemoryConfig
from hindsight.models import Event, EventStatus, EventType, ExperienceKind, Outcome, Trajectory
from hindsight.ports import Reviewer
from hindsight.review.llm._parse import ReportParseError
from hindsight.review.llm.prompts import PROMPT_VERSION, SYSTEM_PROMPT
from hindsight.review.llm.reviewer import DEFAULT_MAX_TOKENS, LLMReviewer, ReviewTimeoutError
from hindsight.writeback.text import dedup_key
from tests.test_review_parse import (
    CN_EXPECTED,
    CN_REPORT,
    EMPTY,
    EXPECTED,
    REPLIES,
    UNREPAIRABLE,
    WRONG_SHAPE,
    completion,
    lesson_tuples,
)

BASE = "http://127.0.0.1:8999/v1"
URL = f"{BASE}/chat/completions"
MODEL = "openai/test-model"


def tool(name: str, args: dict[str, Any], status: EventStatus, output: str) -> list[Event]:
    return [
        Event(event_type=EventType.TOOL_CALL, tool_name=name, tool_args=args),
        Event(event_type=EventType.TOOL_RESULT, tool_name=name, status=status, content=output),
    ]


def airline_run() -> Trajectory:
    update = {"reservation_id": "ZFA04Y", "flight": "HAT999"}
    search = {"origin": "SEA", "destination": "DFW", "date": "2024-05-24"}
    events = [
        Event(
            event_type=EventType.USER_MESSAGE,
            content="Please move reservation ZFA04Y to flight HAT999 on May 24.",
        ),
        *tool(
            "get_reservation_details",
            {"reservation_id": "ZFA04Y"},
            EventStatus.SUCCESS,
            '{"reservation_id": "ZFA04Y", "cabin": "economy"}',
        ),
        *tool(
            "update_reservation_flights",
            update,
            EventStatus.FAILURE,
            "Error: flight HAT999 not available on 2024-05-24",
        )
        * 3,
        *tool("search_direct_flight", search, EventStatus.SUCCESS, '[{"flight_number": "HAT113"}]'),
        Event(
            event_type=EventType.FINAL_ANSWER,
            content="Sorry, I could not move your reservation to HAT999.",
        ),
    ]
    return Trajectory(
        tenant_id="acme",
        task="Move reservation ZFA04Y to HAT999",
        outcome=Outcome.FAILURE,
        events=events,
    )


def pnpm_run() -> Trajectory:
    events = [
        Event(
            event_type=EventType.USER_MESSAGE,
            content="用户偏好用 pnpm 而不是 npm。请帮我安装项目依赖。",
        ),
        *tool(
            "shell",
            {"cmd": "npm install"},
            EventStatus.FAILURE,
            "用户要求使用 pnpm，已取消 npm install",
        ),
        *tool("shell", {"cmd": "pnpm install"}, EventStatus.SUCCESS, "Done in 4.2s"),
        Event(event_type=EventType.FINAL_ANSWER, content="已用 pnpm 安装好依赖。"),
    ]
    return Trajectory(tenant_id="acme", outcome=Outcome.SUCCESS, events=events)


def reviewer(**kw: Any) -> LLMReviewer:
    kw.setdefault("api_base", BASE)
    kw.setdefault("backoff", 0.0)
    return LLMReviewer(MODEL, **kw)


def ok(reply: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json=reply)


def body(call: Any) -> dict[str, Any]:
    return json.loads(call.request.content)


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(using="httpx", assert_all_called=False) as router:
        yield router


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- the request ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_good_reply_gives_exact_lessons_and_the_request_is_as_specified(
    api: respx.MockRouter, mode: str
) -> None:
    route = api.post(URL).mock(return_value=ok(REPLIES["good"]))
    rev = reviewer(timeout=12.5)
    traj = airline_run()
    lessons = rev.review_sync(traj) if mode == "sync" else run(rev.review(traj))

    assert lesson_tuples(lessons) == EXPECTED
    assert all(
        le.metadata
        == {
            "prompt_version": PROMPT_VERSION,
            "model": MODEL,
            "question": le.metadata["question"],
            "lesson_key": "text:" + dedup_key(le.content),
            "support": [{"trajectory_id": traj.id, "polarity": 1, "role": "reviewed_run"}],
            # sealed by the gate (docs/security.md#provenance): nothing copied from tool data
            "provenance": {"sources": le.metadata["provenance"]["sources"], "tainted": []},
        }
        for le in lessons
        if le.kind is not ExperienceKind.EPISODE
    )
    assert route.call_count == 1
    sent = body(route.calls.last)
    assert sent["model"] == "test-model"
    assert sent["temperature"] == 0.2
    assert sent["max_tokens"] == DEFAULT_MAX_TOKENS == 1024
    fmt = sent["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "ReviewReport" and fmt["json_schema"]["strict"] is True
    assert "failing_tools" in fmt["json_schema"]["schema"]["properties"]
    # The timeout reaches the HTTP request.
    assert route.calls.last.request.extensions["timeout"]["read"] == 12.5
    messages = sent["messages"]
    assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]  # few-shot
    final = messages[-1]["content"]
    assert "<trajectory>" in final and "update_reservation_flights" in final
    assert "[called 3 times, same arguments, every time failure]" in final


def test_few_shot_can_be_turned_off(api: respx.MockRouter) -> None:
    route = api.post(URL).mock(return_value=ok(REPLIES["good"]))
    reviewer(few_shot=False).review_sync(airline_run())
    assert [m["role"] for m in body(route.calls.last)["messages"]] == ["system", "user"]


def test_keyless_local_server_gets_a_placeholder_key_and_a_real_key_is_sent(
    api: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    route = api.post(URL).mock(return_value=ok(REPLIES["good"]))
    reviewer().review_sync(airline_run())
    assert route.calls.last.request.headers["authorization"] == "Bearer no-key"
    reviewer(api_key="sk-local-123").review_sync(airline_run())
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-local-123"


@pytest.mark.parametrize("kind", sorted(REPLIES))
def test_every_malformed_reply_over_http_yields_the_same_lessons(
    api: respx.MockRouter, kind: str
) -> None:
    route = api.post(URL).mock(return_value=ok(REPLIES[kind]))
    assert lesson_tuples(reviewer().review_sync(airline_run())) == EXPECTED
    assert route.call_count == 1  # repaired, no retry needed


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_chinese_run_yields_chinese_lessons(api: respx.MockRouter, mode: str) -> None:
    reply = completion(json.dumps(CN_REPORT, ensure_ascii=False))
    route = api.post(URL).mock(return_value=ok(reply))
    rev = reviewer()
    lessons = rev.review_sync(pnpm_run()) if mode == "sync" else run(rev.review(pnpm_run()))
    assert [(le.kind, le.content) for le in lessons[:-1]] == CN_EXPECTED
    assert lessons[-1].kind is ExperienceKind.EPISODE
    request = body(route.calls.last)["messages"][-1]["content"]
    assert "用户偏好用 pnpm 而不是 npm" in request
    assert "write every sentence of your answers and rules in Chinese" in request


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_empty_trajectory_makes_no_request(api: respx.MockRouter, mode: str) -> None:
    route = api.post(URL).mock(return_value=ok(REPLIES["good"]))
    empty = Trajectory(
        tenant_id="acme", events=[Event(event_type=EventType.MODEL_THOUGHT, content="   ")]
    )
    rev = reviewer()
    assert (rev.review_sync(empty) if mode == "sync" else run(rev.review(empty))) == []
    assert route.call_count == 0


# -- retry with the validation error -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_unusable_reply_is_retried_once_with_its_error(api: respx.MockRouter, mode: str) -> None:
    route = api.post(URL).mock(side_effect=[ok(WRONG_SHAPE), ok(REPLIES["good"])])
    rev = reviewer()
    lessons = rev.review_sync(airline_run()) if mode == "sync" else run(rev.review(airline_run()))
    assert lesson_tuples(lessons) == EXPECTED
    assert route.call_count == 2
    first, second = body(route.calls[0]), body(route.calls[1])
    assert second["messages"][: len(first["messages"])] == first["messages"]
    bad, correction = second["messages"][-2:]
    assert bad["role"] == "assistant"
    assert bad["content"] == WRONG_SHAPE["choices"][0]["message"]["content"]
    assert correction["role"] == "user"
    assert (
        "outcome.result: Input should be 'success', 'failure', 'partial' or 'unknown'"
        in (correction["content"])
    )


def test_empty_reply_is_retried_then_succeeds(api: respx.MockRouter) -> None:
    route = api.post(URL).mock(side_effect=[ok(EMPTY), ok(REPLIES["tool_call"])])
    assert lesson_tuples(reviewer().review_sync(airline_run())) == EXPECTED
    assert (
        "no content and no tool call arguments" in body(route.calls[1])["messages"][-1]["content"]
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_unrepairable_twice_raises_review_error_naming_the_problem(
    api: respx.MockRouter, mode: str
) -> None:
    route = api.post(URL).mock(side_effect=[ok(UNREPAIRABLE), ok(UNREPAIRABLE)])
    rev = reviewer()
    with pytest.raises(ReviewError) as info:
        rev.review_sync(airline_run()) if mode == "sync" else run(rev.review(airline_run()))
    assert isinstance(info.value, ReportParseError)
    assert "the reply holds no JSON object" in str(info.value)
    assert "also after a retry" in str(info.value)
    assert info.value.reply == "I'm sorry, but I can't review this conversation."
    assert route.call_count == 2


def test_all_null_answers_are_not_a_silent_success(api: respx.MockRouter) -> None:
    nothing = {
        "outcome": {"result": "unknown", "text": "None", "confidence": 0.1},
        "cause": None,
        "failing_tools": None,
        "repeated_attempts": None,
        "do_differently": {"text": "N/A", "confidence": 0.1},
        "task_class": None,
        "rules": [],
    }
    route = api.post(URL).mock(return_value=ok(completion(json.dumps(nothing))))
    with pytest.raises(ReportParseError, match="no general lesson"):
        reviewer().review_sync(airline_run())
    assert route.call_count == 2


# -- transport retries ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("status", [429, 500, 503])
def test_rate_limit_and_server_errors_are_retried(
    api: respx.MockRouter, mode: str, status: int
) -> None:
    error = httpx.Response(status, json={"error": {"message": "busy", "type": "server_error"}})
    route = api.post(URL).mock(side_effect=[error, ok(REPLIES["good"])])
    rev = reviewer()
    lessons = rev.review_sync(airline_run()) if mode == "sync" else run(rev.review(airline_run()))
    assert lesson_tuples(lessons) == EXPECTED
    assert route.call_count == 2


def test_retries_stop_after_num_retries(api: respx.MockRouter) -> None:
    route = api.post(URL).mock(return_value=httpx.Response(429, json={"error": {"message": "x"}}))
    with pytest.raises(ReviewError, match=r"HTTP 429.*|after 2 tries") as info:
        reviewer(num_retries=1).review_sync(airline_run())
    assert "after 2 tries" in str(info.value) and "HTTP 429" in str(info.value)
    assert route.call_count == 2


def test_client_errors_are_not_retried(api: respx.MockRouter) -> None:
    route = api.post(URL).mock(
        return_value=httpx.Response(401, json={"error": {"message": "invalid api key"}})
    )
    with pytest.raises(ReviewError, match="HTTP 401") as info:
        reviewer().review_sync(airline_run())
    assert not isinstance(info.value, ReviewTimeoutError)
    assert route.call_count == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_timeouts_are_retried_then_raise_review_timeout(api: respx.MockRouter, mode: str) -> None:
    route = api.post(URL).mock(side_effect=httpx.ReadTimeout("timed out"))
    rev = reviewer(timeout=7.5, num_retries=2)
    with pytest.raises(ReviewTimeoutError, match=r"timed out after 7\.5 s"):
        rev.review_sync(airline_run()) if mode == "sync" else run(rev.review(airline_run()))
    assert route.call_count == 3
    assert all(c.request.extensions["timeout"]["read"] == 7.5 for c in route.calls)


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    hits = 0
    release = threading.Event()

    def do_POST(self) -> None:
        type(self).hits += 1
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.release.wait(10)  # longer than the reviewer's timeout

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def slow_server() -> Iterator[str]:
    _SlowHandler.hits = 0
    _SlowHandler.release = threading.Event()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        _SlowHandler.release.set()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_real_slow_endpoint_times_out_and_is_retried(slow_server: str, mode: str) -> None:
    """No mock in the request path: the timeout is enforced by the real HTTP clients."""
    rev = LLMReviewer(MODEL, api_base=slow_server, timeout=0.5, num_retries=1, backoff=0.0)
    with pytest.raises(ReviewTimeoutError):
        rev.review_sync(airline_run()) if mode == "sync" else run(rev.review(airline_run()))
    assert _SlowHandler.hits == 2


# -- budget, config, protocol --------------------------------------------------------------------


def test_huge_trajectory_is_compressed_to_the_budget(api: respx.MockRouter) -> None:
    import litellm

    events = [Event(event_type=EventType.USER_MESSAGE, content="Reconcile the ledger for May.")]
    for i in range(2499):
        tool = "fetch_page" if i % 2 else "poll_job"
        args = {"page": i} if tool == "fetch_page" else {"job": 7}
        content = "x" * 5_000_000 if i == 1001 else f"page {i}: " + "row " * 30
        events += [
            Event(event_type=EventType.TOOL_CALL, tool_name=tool, tool_args=args),
            Event(
                event_type=EventType.TOOL_RESULT,
                tool_name=tool,
                status=EventStatus.SUCCESS,
                content=content,
            ),
        ]
    events.append(Event(event_type=EventType.FINAL_ANSWER, content="Ledger reconciled."))
    traj = Trajectory(tenant_id="acme", events=events)
    assert len(traj.events) == 5000

    route = api.post(URL).mock(return_value=ok(REPLIES["good"]))
    rev = reviewer(max_input_tokens=6000)
    lessons = rev.review_sync(traj)
    assert [(k, c) for k, c, _, _ in lesson_tuples(lessons)] == [(k, c) for k, c, _, _ in EXPECTED]
    user = body(route.calls.last)["messages"][-1]["content"]
    inner = user[user.index("<trajectory>\n") + 13 : user.index("\n</trajectory>")]
    assert litellm.token_counter(model=MODEL, text=inner) <= 6000
    assert "Reconcile the ledger for May." in inner and "Ledger reconciled." in inner
    assert "[called 1250 times, same arguments, every time success]" in inner
    assert len(user) < 60_000


def test_from_config_reads_model_url_key_and_timeout(api: respx.MockRouter) -> None:
    config = MemoryConfig(
        reflection_model=MODEL, llm_base_url=BASE, llm_api_key="sk-cfg", review_timeout=9.0
    )
    rev = LLMReviewer.from_config(config)
    assert (rev.model, rev.api_base, rev.api_key, rev.num_retries) == (MODEL, BASE, "sk-cfg", 2)
    assert rev.timeout == 3.0  # 9 s shared by the first try and 2 retries
    assert rev.name == "llm:openai/test-model"
    route = api.post(URL).mock(return_value=ok(REPLIES["good"]))
    rev.review_sync(airline_run())
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-cfg"
    assert route.calls.last.request.extensions["timeout"]["read"] == 3.0
    assert LLMReviewer.from_config(config, temperature=0.3, num_retries=0).timeout == 9.0


def test_from_config_reads_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_REFLECTION_MODEL", "ollama/qwen2.5:7b")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:11434")
    rev = LLMReviewer.from_config(MemoryConfig())
    assert (rev.model, rev.api_base) == ("ollama/qwen2.5:7b", "http://127.0.0.1:11434")


def test_from_config_without_model_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REFLECTION_MODEL", "HINDSIGHT_REFLECTION_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(UsageError, match="REFLECTION_MODEL"):
        LLMReviewer.from_config(MemoryConfig())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout": 0},
        {"num_retries": -1},
        {"max_input_tokens": 10},
        {"max_tokens": 0},
        {"backoff": -1},
    ],
)
def test_bad_arguments_are_usage_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        LLMReviewer(MODEL, **kwargs)
    with pytest.raises(UsageError):
        LLMReviewer(" ")


def test_is_a_reviewer() -> None:
    assert isinstance(LLMReviewer(MODEL), Reviewer)


def test_count_tokens_uses_the_model_tokenizer_offline_and_falls_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import litellm

    from hindsight.tokens import estimate_tokens

    text = "When order_query times out, retry once, then fall back to order_status. " * 3
    exact = litellm.token_counter(model=MODEL, text=text)
    assert LLMReviewer(MODEL).count_tokens(text) == exact != estimate_tokens(text)

    def broken(**kwargs: Any) -> int:
        raise ValueError("no tokenizer for this model")

    monkeypatch.setattr(litellm, "token_counter", broken)
    assert LLMReviewer(MODEL).count_tokens(text) == estimate_tokens(text)


@pytest.mark.parametrize(
    ("estimated_share", "ratio"),
    [(0.78, 1.31), (0.75, 1.4), (0.6, 1.75), (0.5, 2.1), (0.9, 1.15), (1.0, 1.02), (0.5, 3.0)],
)
def test_text_under_the_estimated_budget_but_over_the_real_one_is_cut(
    ratio: float, estimated_share: float
) -> None:
    """The offline estimate can be low (JSON-heavy tau-bench text: ~20% low). A text the
    estimate puts under budget but the model's tokenizer puts over it must still be cut, by
    however much the tokenizer says -- not come back unchanged (found on tau-bench: 6,116 real
    tokens for a 6,000 budget)."""
    from hindsight.tokens import estimate_tokens

    class Tokenizer(LLMReviewer):
        def count_tokens(self, text: str) -> int:
            return int(estimate_tokens(text) * ratio)

    budget = 2000
    events = [Event(event_type=EventType.USER_MESSAGE, content="Book the cheapest flight.")]
    i = 0
    while estimate_tokens(render_whole(events)) < budget * estimated_share:
        events += [
            Event(event_type=EventType.TOOL_CALL, tool_name=f"search_{i}", tool_args={"p": i}),
            Event(
                event_type=EventType.TOOL_RESULT,
                tool_name=f"search_{i}",
                status=EventStatus.SUCCESS,
                content=f"flight {i}: " + " ".join(f"{{'seat': {j}}}" for j in range(12)),
            ),
        ]
        i += 1
    traj = Trajectory(tenant_id="acme", events=events)
    rev = Tokenizer(MODEL, max_input_tokens=budget)
    compressed = rev.compress(traj)
    assert rev.count_tokens(compressed.text) <= budget, (ratio, estimated_share)


def render_whole(events: list[Event]) -> str:
    from hindsight.review.compress import compress_trajectory
    from hindsight.tokens import estimate_tokens

    whole = Trajectory(tenant_id="acme", events=events)
    return compress_trajectory(whole, max_tokens=10**9, count_tokens=estimate_tokens).text
