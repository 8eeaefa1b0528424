"""Never fold what means something else: two lessons that differ in a meaning-bearing token
(an operator, a sign, a number, a negation, a unit, a comparative, an opposite, ``A+`` /
``A-``) are two lessons on every write path, and texts equal up to case, whitespace and prose
punctuation are still one (docs/lifecycle.md#dedup-on-write-hindsightwritebackdedup,
:mod:`hindsight.writeback.meaning`).

The pure decision is tested with generated pairs of every kind at cosine 1.0, the worst an
embedder can do; the Python write paths (``Memory`` and ``AsyncMemory``: one lesson, a batch,
two batches, a review, two reviews, the LLM dedup judge) with an embedder that gives every
text the same vector, on SQLite and PostgreSQL. HTTP and MCP:
tests/server/test_dedup_meaning_service.py.
"""

from __future__ import annotations

import asyncio
import json
import random
import string
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hindsight import AsyncMemory, Experience, Lesson, Memory
from hindsight.writeback import meaning
from hindsight.writeback.dedup import Op, decide
from hindsight.writeback.meaning import exact_key, meaning_change
from hindsight.writeback.text import content_words, word_difference
from tests.helpers import make_memory, trajectory

# -- an embedder that cannot tell any two texts apart -------------------------------------------


class SameVector:
    """Every text gets the same unit vector: every pair has cosine 1.0, so dedup can only
    tell lessons apart by their text (the worst case of a real embedder, which puts
    "latency > 5 s" and "latency < 5 s" at about 0.99)."""

    name = "same-vector-8"
    dimension = 8
    similarity_floor = 0.0

    def embed(self, texts: Sequence[str]) -> Any:
        row = np.zeros(self.dimension, dtype=np.float32)
        row[0] = 1.0
        return np.tile(row, (len(texts), 1))


PAIRS: list[tuple[str, str]] = [
    ("Retry the export when latency > 5 s.", "Retry the export when latency < 5 s."),
    ("Set the page offset to -5 before paging.", "Set the page offset to 5 before paging."),
    ("Parse the body only when status == 200.", "Parse the body only when status != 200."),
    ("Grade A+ answers get the badge.", "Grade A- answers get the badge."),
    ("Retry the export after 5 s.", "Retry the export after 5 ms."),
    ("Keep the cache under 512 MB.", "Keep the cache under 512 GB."),
    ("Retry the export three times.", "Retry the export four times."),
    ("Retry the export when latency is above 2 s.", "Retry the export when latency is below 2 s."),
    ("Refresh the token before the call.", "Refresh the token after the call."),
    ("Enable caching for the export job.", "Disable caching for the export job."),
    ("Retry the export after a timeout.", "Do not retry the export after a timeout."),
    ("Use C++ for the parser.", "Use C# for the parser."),
    ("Cap the batch at 1,000 rows.", "Cap the batch at 1.000 rows."),
    ("超时后重试导出。", "超时后不要重试导出。"),
    ("接口超时3秒后重试。", "接口超时3分钟后重试。"),
    ("Relancer l'export après un délai.", "Ne pas relancer l'export après un délai."),
    ("Size the buffer as x² bytes.", "Size the buffer as x2 bytes."),
    ("Read the settings from app.conf first.", "Read the settings from app_conf first."),
    ("Set max_retries to 3 for the export.", "Set max retries to 3 for the export."),
]
"""One pair per kind (each also in tests/server/test_dedup_meaning_service.py)."""

SAME: list[tuple[str, str]] = [
    ("Confirm the order id before calling refund.", "confirm the order id before calling refund"),
    ("Retry order_query ONCE, then fall back!", "retry ORDER_QUERY once; then fall back"),
    (
        "**Check** the seat map (before) changing a flight.",
        "Check the seat map before changing a flight",
    ),
    ("确认订单号后再退款。", "确认订单号后再退款"),
]
"""Texts equal up to case, whitespace and prose punctuation: one lesson."""


def _exp(content: str, kind: str = "rule") -> Experience:
    return Experience(tenant_id="t", kind=kind, content=content)  # type: ignore[arg-type]


def _folded(old: str, new: str) -> bool:
    """Whether the rules fold ``new`` into ``old`` at cosine 1.0 (either order)."""
    ops = {decide(_exp(b), [(_exp(a), 1.0)], 0.5).op for a, b in ((old, new), (new, old))}
    return bool(ops & {Op.NOOP, Op.MERGE})


# -- the decision, for generated pairs of every kind ---------------------------------------------

_RESERVED = (
    meaning.NOT_FORMS
    | meaning.NEGATIONS
    | meaning.UNITS
    | meaning.ORDER_WORDS
    | meaning.NUMBER_WORDS
    | {w for pair in meaning.OPPOSITES for w in pair}
)
WORD = st.text(string.ascii_lowercase, min_size=3, max_size=9).filter(
    lambda w: w not in _RESERVED and not any(w.startswith(p) for p in meaning.OPPOSING_PREFIXES)
)
HAN = st.text("导出重试订单查询接口用户确认数据缓存任务报告", min_size=2, max_size=4)
NUMBER = st.one_of(
    st.integers(0, 10**6).map(str),
    st.decimals(0, 1000, places=2, allow_nan=False).map(str),
)


@st.composite
def frame(draw: st.DrawFn) -> tuple[str, str]:
    """A sentence around a slot, as (before, after): English words nobody listed."""
    verb, obj, subj = draw(WORD), draw(WORD), draw(WORD)
    return f"{verb.capitalize()} the {obj} when {subj}", "."


def _two(values: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, str]]:
    return st.tuples(values, values).filter(lambda p: p[0] != p[1])


OPERATORS = ["<", ">", "<=", ">=", "==", "!=", "≠", "≤", "≥", "=", "≈", "~", "=>", "->"]
UNITS = ["ms", "s", "min", "h", "seconds", "minutes", "hours", "days", "KB", "MB", "GB",
         "%", "percent", "requests", "retries", "tokens"]  # fmt: skip
SIGNS = ["", "-", "+", "−", "±"]
NEGATED = [("{v} the {o}", "do not {v} the {o}"), ("{v} the {o}", "never {v} the {o}"),
           ("{v} the {o}", "don't {v} the {o}"), ("{v} the {o}", "{v} no {o}"),
           ("{v} the {o}", "cannot {v} the {o}"), ("{v} le {o}", "ne {v} pas le {o}"),
           ("{v} den {o}", "{v} den {o} nicht"), ("{v} el {o}", "no {v} el {o}"),
           ("{v} {o}", "не {v} {o}"), ("{v} the {o}", "{v} the {o} unless asked")]  # fmt: skip
OPPOSED = [("above", "below"), ("before", "after"), ("more", "less"), ("at least", "at most"),
           ("min", "max"), ("first", "last"), ("on", "off"), ("true", "false"),
           ("enable", "disable"), ("include", "exclude"), ("upload", "download"),
           ("valid", "invalid"), ("sync", "async"), ("import", "export"), ("allow", "deny"),
           ("always", "sometimes"), ("only", "also")]  # fmt: skip


@st.composite
def differing_pair(draw: st.DrawFn) -> tuple[str, str]:
    """Two sentences that differ in one meaning-bearing token, of a kind drawn at random."""
    head, tail = draw(frame())
    n, kind = draw(NUMBER), draw(st.sampled_from(
        ["operator", "symbol", "sign", "number", "unit", "negation", "opposite", "grade",
         "han_negation", "han_number"]))  # fmt: skip
    if kind == "operator":
        a, b = draw(_two(st.sampled_from(OPERATORS)))
        return f"{head} {a} {n}{tail}", f"{head} {b} {n}{tail}"
    if kind == "symbol":  # any math, currency or other symbol, listed nowhere
        symbols = st.characters(categories=["Sm", "Sc", "So"])
        a, b = draw(_two(symbols))
        return f"{head} {a}{n}{tail}", f"{head} {b}{n}{tail}"
    if kind == "sign":
        a, b = draw(_two(st.sampled_from(SIGNS)))
        return f"{head} is {a}{n}{tail}", f"{head} is {b}{n}{tail}"
    if kind == "number":
        a, b = draw(_two(NUMBER).filter(lambda p: float(p[0]) != float(p[1])))
        return f"{head} reaches {a} s{tail}", f"{head} reaches {b} s{tail}"
    if kind == "unit":
        a, b = draw(_two(st.sampled_from(UNITS)).filter(lambda p: p[0].lower() != p[1].lower()))
        return f"{head} reaches {n} {a}{tail}", f"{head} reaches {n} {b}{tail}"
    if kind == "negation":
        plain, negated = draw(st.sampled_from(NEGATED))
        v, o = draw(WORD), draw(WORD)
        a, b = plain.format(v=v, o=o), negated.format(v=v, o=o)
        return f"{head}, {a}{tail}", f"{head}, {b}{tail}"
    if kind == "opposite":
        a, b = draw(st.sampled_from(OPPOSED))
        return f"{head} {a} the {n} limit{tail}", f"{head} {b} the {n} limit{tail}"
    if kind == "grade":
        letter = draw(st.sampled_from(string.ascii_uppercase))
        a, b = draw(_two(st.sampled_from(["", "+", "-", "++", "#"])))
        return f"{head} grade {letter}{a} passes{tail}", f"{head} grade {letter}{b} passes{tail}"
    x, y = draw(HAN), draw(HAN)
    if kind == "han_negation":
        neg = draw(st.sampled_from(["不", "没", "别", "勿", "不要", "未"]))
        return f"{x}后{y}。", f"{x}后{neg}{y}。"
    a, b = draw(_two(st.sampled_from([*"一二三四五六七八九十百两半", "3", "12"])))
    unit = draw(st.sampled_from(["次", "秒", "分钟", "个", ""]))
    return f"{x}{a}{unit}后{y}。", f"{x}{b}{unit}后{y}。"


@settings(max_examples=400, deadline=None)
@given(differing_pair())
@example(PAIRS[0])
@example(("Retry when latency >= 5 s.", "Retry when latency => 5 s."))
def test_a_pair_that_differs_in_a_meaning_bearing_token_is_never_folded(
    pair: tuple[str, str],
) -> None:
    old, new = pair
    assert exact_key(old) != exact_key(new), pair
    assert meaning_change(old, new) is not None, pair
    assert not _folded(old, new), pair


PROSE = [".", ",", ";", ":", "!", "?", "…"]


@st.composite
def same_up_to_prose(draw: st.DrawFn) -> tuple[str, str]:
    """A sentence, and the same sentence with other case, spacing and prose punctuation."""
    words = draw(st.lists(WORD, min_size=3, max_size=10))
    other: list[str] = []
    for word in words:
        shape = draw(st.sampled_from(["same", "upper", "title", "quoted", "bold", "bracket"]))
        shapes = {"same": word, "upper": word.upper(), "title": word.title()}
        shapes |= {"quoted": f'"{word}"', "bold": f"**{word}**", "bracket": f"({word})"}
        word = shapes[shape]
        other.append(word + draw(st.sampled_from(["", "", *PROSE])))
    spaces = draw(st.sampled_from([" ", "  ", " \n "]))
    return " ".join(words) + ".", spaces.join(other) + draw(st.sampled_from(["", "!", "?"]))


@settings(max_examples=200, deadline=None)
@given(same_up_to_prose())
def test_the_same_text_up_to_case_spacing_and_prose_punctuation_is_one_lesson(
    pair: tuple[str, str],
) -> None:
    old, new = pair
    assert exact_key(old) == exact_key(new), pair
    assert decide(_exp(new), [(_exp(old), 0.1)], 0.9).op is Op.NOOP


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_each_kind_is_two_lessons(old: str, new: str) -> None:
    assert not _folded(old, new)


@pytest.mark.parametrize(("old", "new"), SAME)
def test_same_up_to_punctuation_is_one(old: str, new: str) -> None:
    assert decide(_exp(new), [(_exp(old), 0.1)], 0.9).op is Op.NOOP


@pytest.mark.parametrize(
    "name", ["config.yaml", "app.conf", "max_retries", "order_query", "v2.api", "x_1", "2_b"]
)
@pytest.mark.parametrize("template", ["Read {} first.", "Never edit {} by hand.", "用 {} 配置"])
def test_a_file_name_or_identifier_is_not_its_words(template: str, name: str) -> None:
    """A ``.`` or ``_`` between two letters or digits names something (a file, a setting, a
    tool): another joiner, a space or none is another name, never folded into it."""
    old = template.format(name)
    mark = "_" if "_" in name else "."
    others = [name.replace(mark, j) for j in ("." if mark == "_" else "_", " ", "")]
    for other in others:
        new = template.format(other)
        assert exact_key(old) != exact_key(new), (old, new)
        assert meaning_change(old, new) is not None, (old, new)
        assert not _folded(old, new), (old, new)
    assert _folded(old, template.format(name.upper()).replace("READ", "read"))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Check the seat-map first.", "check the seat map first"),
        ("Check the seat map. Then book.", "check the seat map, then book"),
        ("Use the 'fast' path.", "Use the fast path"),
    ],
)
def test_prose_marks_between_words_still_fold(old: str, new: str) -> None:
    assert exact_key(old) == exact_key(new)


def test_paraphrases_with_the_same_meaning_tokens_still_merge() -> None:
    old = "order_query times out at peak hours: retry once, then fall back"
    new = "order_query times out at peak hours; retry once and then fall back"
    assert decide(_exp(new), [(_exp(old), 0.95)], 0.9).op is Op.MERGE
    # "never" and "don't" are one negation, in imperative advice the same
    old, new = (
        "Never retry refund_order with a certificate.",
        "Don't retry refund_order with a certificate.",
    )
    assert decide(_exp(new), [(_exp(old), 0.95)], 0.9).op is Op.MERGE


# -- every Python write path, on SQLite and PostgreSQL -----------------------------------------


@pytest.fixture
def mem(tmp_path: Path, database_url: str) -> Iterator[Memory]:
    with make_memory(tmp_path / "data", database_url, embedder=SameVector()) as memory:
        yield memory


def _contents(mem: Memory, tenant: str) -> list[str]:
    """Every stored lesson's text of ``tenant`` (active or quarantined), episodes left out."""
    rows = [
        e
        for status in ("active", "quarantined")
        for e in mem.list_experiences(tenant_id=tenant, status=status, limit=1000)
    ]
    return sorted(e.content for e in rows if e.kind.value != "episode")


def test_every_python_write_path_keeps_both_texts(mem: Memory) -> None:
    for i, (old, new) in enumerate(PAIRS):
        # one lesson at a time
        first, second = (mem.add_experience(t, tenant_id=f"one{i}") for t in (old, new))
        assert second.id != first.id and second.content == new
        # both in one batch, and one batch after another
        results = mem.add_experiences([{"content": old}, {"content": new}], tenant_id=f"b{i}")
        assert [r.result for r in results] != ["created", "merged"], (old, new)
        mem.add_experiences([{"content": old}], tenant_id=f"bb{i}")
        (later,) = mem.add_experiences([{"content": new}], tenant_id=f"bb{i}")
        assert later.result != "merged" and later.experience.content == new
        for tenant in (f"one{i}", f"b{i}", f"bb{i}"):
            assert _contents(mem, tenant) == sorted([old, new]), (tenant, old, new)
    for i, (old, new) in enumerate(SAME):  # the control: these stay one lesson
        first, second = (mem.add_experience(t, tenant_id=f"same{i}") for t in (old, new))
        assert second.id == first.id and second.support_count == 2
        results = mem.add_experiences([{"content": old}, {"content": new}], tenant_id=f"sb{i}")
        assert [r.result for r in results] == ["created", "merged"]


def test_async_memory_keeps_both_texts(tmp_path: Path, database_url: str) -> None:
    async def run() -> None:
        async with AsyncMemory(
            data_dir=tmp_path / "adata", database_url=database_url, embedder=SameVector()
        ) as amem:
            for i, (old, new) in enumerate(PAIRS):
                first = await amem.add_experience(old, tenant_id=f"a{i}")
                second = await amem.add_experience(new, tenant_id=f"a{i}")
                assert second.id != first.id
                results = await amem.add_experiences(
                    [{"content": old}, {"content": new}], tenant_id=f"ab{i}"
                )
                assert {r.experience.content for r in results} == {old, new}

    asyncio.run(run())


def test_reviews_keep_both_texts(tmp_path: Path, database_url: str) -> None:
    """The review write-back: two lessons of one run, and one lesson from each of two runs."""
    from hindsight.testing import ScriptedReviewer

    def lessons(traj: Any) -> list[Lesson]:
        index, part = (int(x) for x in traj.task.split()[-1].split("."))
        old, new = PAIRS[index]
        texts = {0: [old, new], 1: [old], 2: [new]}[part]
        return [Lesson(kind="rule", content=t, confidence=0.6) for t in texts]

    with make_memory(
        tmp_path / "r", database_url, embedder=SameVector(), reviewer=ScriptedReviewer(lessons)
    ) as mem:
        for i, (old, new) in enumerate(PAIRS):
            for part, tenant in ((0, f"one{i}"), (1, f"two{i}"), (2, f"two{i}")):
                mem.store_episode(trajectory(tenant, f"run {i}.{part}"))
                assert mem.flush(60)
            assert _contents(mem, f"one{i}") == sorted([old, new]), (old, new)
            assert _contents(mem, f"two{i}") == sorted([old, new]), (old, new)


def test_a_folded_paraphrase_keeps_its_text_in_the_audit_log(mem: Memory) -> None:
    old = "order_query times out at peak hours: retry once, then fall back"
    new = "order_query times out at peak hours; retry once and then fall back"
    first = mem.add_experience(old, tenant_id="t")
    second = mem.add_experience(new, tenant_id="t")
    assert second.id == first.id and second.content == old and second.version == 2
    support = [r for r in mem.audit_log(tenant_id="t") if r["action"] == "support"]
    assert json.loads(support[0]["reason"])["content"] == new


# -- the LLM dedup judge may not fold them either ----------------------------------------------


@pytest.fixture(scope="module")
def llm() -> Iterator[Any]:
    from tests.llm_server import serve

    with serve() as server:
        yield server


def test_the_judge_cannot_fold_what_means_something_else(
    tmp_path: Path, database_url: str, llm: Any
) -> None:
    with make_memory(
        tmp_path / "j",
        database_url,
        embedder=SameVector(),
        reflection_model="openai/dedup-judge",
        llm_base_url=llm.base,
        guard_layers="rules,semantic",
    ) as mem:
        assert mem.aio.deduper.judge is not None
        old, new = PAIRS[0]
        first = mem.add_experience(old, tenant_id="t")
        merge = {"operation": "MERGE", "target_id": first.id, "content": None, "reason": "same"}
        llm.control(script=[json.dumps(merge)])
        second = mem.add_experience(new, tenant_id="t")
        assert second.id != first.id and _contents(mem, "t") == sorted([old, new])
        # a paraphrase it may merge, but not into a wording that changes a meaning token
        para = "Retry the export when the latency > 5 s."
        reworded = {**merge, "content": "Retry the export when latency >= 5 s."}
        llm.control(script=[json.dumps(reworded)])
        merged = mem.add_experience(para, tenant_id="t")
        assert merged.id == first.id and merged.content == old
        assert mem.aio.deduper.judge.calls >= 2


def test_the_llm_reviewers_lessons_keep_both_texts(
    tmp_path: Path, database_url: str, llm: Any
) -> None:
    """The LLM reviewer's lesson key is ``text:`` + the text up to prose punctuation, and the
    write-back folds lessons with one key: two runs whose lessons differ in a meaning-bearing
    token give two keys and two lessons."""
    from tests.llm_server import report_for

    def report(rule: str) -> str:
        body = report_for("T-1", False)
        body["rules"] = [{"text": rule, "confidence": 0.8}]
        return json.dumps(body)

    pairs = [PAIRS[0], PAIRS[1], PAIRS[10]]
    with make_memory(
        tmp_path / "l",
        database_url,
        embedder=SameVector(),
        reviewer="llm",
        reflection_model="openai/reviewer",
        llm_base_url=llm.base,
        dedup_judge=False,
        guard_layers="rules,semantic",
    ) as mem:
        for i, (old, new) in enumerate(pairs):
            for n, text in enumerate((old, new)):
                llm.control(script=[report(text)])
                mem.store_episode(trajectory(f"t{i}", f"T-1 run {n}"))
                assert mem.flush(60)
            assert {old, new} <= set(_contents(mem, f"t{i}")), (old, new)


# -- a fold needs the same words, not the cosine alone ---------------------------------------

TRIO = ("lesson", "a lesson", "Always check the")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("lesson okexsivrtialhwfn", "lesson sgvognseodgznfbq"),  # 0.84 with the hash embedder
        ("a lesson okexsivrtialhwfn", "a lesson sgvognseodgznfbq"),
        ("Always check the okexsivrtialhwfn", "Always check the sgvognseodgznfbq"),
        ("Never change the seating without asking", "Never change the insurance without asking"),
        ("Check baggage", "Check seating"),
        ("检查订单", "检查航班"),
        ("주문 상태를 먼저 확인하세요", "결제 상태를 먼저 확인하세요"),
        ("ユーザーにメールを送る", "ユーザーとメールを送る"),  # a particle is a word
        ("Проверь заказ", "Проверь рейс"),
        ("ตรวจสอบคำสั่งซื้อ", "ตรวจสอบการชำระเงิน"),
        ("कृपया भुगतान जाँचें", "कृपया बुकिंग जाँचें"),
        (
            "Move the customer files into the archive folder",
            "Move the customer files out of the archive folder",
        ),
        ("The agent can book the flight", "The agent should book the flight"),
        ("Show the news banner", "Show the new banner"),
        # steps in another order
        (
            "Back up the production database and then run the schema migration script",
            "Run the schema migration script and then back up the production database",
        ),
        # an addition: the fold would keep the old text and lose the new instruction
        (
            "Before booking, confirm the passenger count with the user",
            "Before booking, confirm the passenger count with the user and ask about wheelchairs",
        ),
    ],
)
def test_a_close_cosine_does_not_fold_texts_with_other_words(old: str, new: str) -> None:
    assert word_difference(old, new) is not None
    for a, b in ((old, new), (new, old)):
        decision = decide(_exp(b), [(_exp(a), 0.99)], 0.8)
        assert decision.op is Op.ADD, decision
        assert "not a near-duplicate" in decision.reason


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "Check the order status before cancelling an order",
            "check the order status before cancelling the order",
        ),
        ("调用 book_trip 之前先确认乘客人数", "调用 book_trip 之前先确认乘客的人数"),
        ("Don't retry", "Do not retry"),
        ("Please retry once, then fall back.", "Retry once and fall back"),
    ],
)
def test_a_close_pair_with_the_same_words_still_merges(old: str, new: str) -> None:
    assert word_difference(old, new) is None
    assert decide(_exp(new), [(_exp(old), 0.95)], 0.8).op is Op.MERGE


def test_word_difference_names_what_a_fold_would_lose() -> None:
    assert content_words("Don't retry, LATER!") == ("retry", "later")
    assert content_words("भुगतान जाँचें") == ("भुगतान", "जाँचें")  # the vowel signs stay in
    assert content_words("检查订单") == tuple("检查订单")
    assert word_difference("", "...") is None
    assert word_difference("Check payments", "Check payment") == "other words: payments / payment"
    assert (
        word_difference("pay then book", "book then pay")
        == "the same words in another order or number"
    )
    old, new = (
        "Never change the seating without asking",
        "Never change the insurance without asking",
    )
    reason = decide(_exp(new), [(_exp(old), 0.99)], 0.8).reason
    assert reason.endswith("other words: seating / insurance"), reason


@pytest.mark.parametrize("prefix", TRIO)
def test_distinct_short_lessons_are_each_stored(tmp_path: Path, prefix: str) -> None:
    """The same writes through the public API, with the default hashing embedder: lessons that
    differ in one word are never folded into each other, whatever their cosines."""
    rng = random.Random(7)
    texts = [f"{prefix} " + "".join(rng.choices(string.ascii_lowercase, k=16)) for _ in range(300)]
    with Memory(data_dir=tmp_path / "data") as memory:
        results = memory.add_experiences([{"content": t} for t in texts], tenant_id="t")
        assert [r.result for r in results] == ["created"] * len(texts)
        stored = {e.content for e in memory.iter_experiences(tenant_id="t")}
    assert stored == set(texts)
