"""The invalid-value policy through the Python API, on SQLite and PostgreSQL
(hindsight/_text.py, docs/concepts.md#stored-exactly-invalid-text-and-numbers).

Text fields: lone surrogates and NUL become U+FFFD (counted in one InvalidTextWarning), NaN and
infinities inside free JSON become null; names are refused with one line naming the field;
numbers with a meaning refuse NaN/infinity. Everything else is stored exactly as sent.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight import (
    Event,
    HindsightError,
    InvalidTextWarning,
    Memory,
    Trajectory,
    UsageError,
)
from hindsight._text import clean_json, clean_text, collecting, invalid_char, refuse_invalid
from hindsight.service.client import HindsightClient
from tests.helpers import make_memory

BAD = ["\ud800", "\udfff", "\x00", "a\ud83d", "\ud83dx\x00"]
"""Lone surrogates (high, low, a pair cut in two) and NUL, alone and mixed."""

EXACT = [
    "x² ½ ﬁ Ａ１２",  # compatibility forms NFKC would fold
    "👩‍👩‍👧 🏳️‍🌈",  # emoji ZWJ sequences
    "用户偏好，用 pnpm。",  # CJK full-width punctuation
    "  leading and trailing  \t",
    "Ｒetry　x",  # full-width letter and ideographic space
    "e\u0301 vs é",  # decomposed vs precomposed
]


def _mem(tmp_path: Path, url: str) -> Memory:
    return make_memory(tmp_path / "data", url)


def test_stored_exactly_and_invalid_text_replaced_on_both_backends(
    tmp_path: Path, database_url: str
) -> None:
    with _mem(tmp_path, database_url) as mem:
        for text in EXACT:
            exp = mem.add_experience(f"Retry order_query: {text}", tenant_id="t", tags=[text])
            got = mem.get_experience(exp.id, tenant_id="t")
            assert got.content == f"Retry order_query: {text}" and got.tags == [text]
        for i, bad in enumerate(BAD):
            with pytest.warns(InvalidTextWarning, match=r"replaced \d+ invalid value") as rec:
                exp = mem.add_experience(
                    f"Lesson {i}: retry {bad} once",
                    tenant_id="t",
                    tags=[f"t{bad}"],
                    metadata={f"k{bad}": [bad, 1.5, float("nan")], "ok": "é"},
                )
            assert len(rec) == 1  # one warning per call
            assert "content" in str(rec[0].message) and "tags" in str(rec[0].message)
            got = mem.get_experience(exp.id, tenant_id="t")
            want = clean_text(bad)
            assert got.content == f"Lesson {i}: retry {want} once"
            assert got.tags == [f"t{want}"]
            assert got.metadata[f"k{want}"] == [want, 1.5, None]
            assert got.metadata["ok"] == "é"
        assert mem.recall("Retry \ud800\x00 once", tenant_id="t").hits is not None


def test_a_run_with_invalid_text_is_never_lost(tmp_path: Path, database_url: str) -> None:
    with _mem(tmp_path, database_url) as mem:
        traj = Trajectory(
            tenant_id="t",
            task="refund \ud83d order",
            events=[
                Event(event_type="user_message", content="hi \x00 there \udc80"),
                Event(
                    event_type="tool_call",
                    tool_name="order\x00query",
                    tool_args={"id": "\ud800", "score": float("inf")},
                ),
            ],
            metadata={"nan": float("nan")},
        )
        receipt = mem.store_episode(traj)
        stored = mem.get_trajectory(receipt.trajectory_id, tenant_id="t")
        assert stored.task == "refund \ufffd order"
        assert stored.events[0].content == "hi \ufffd there \ufffd"
        assert stored.events[1].tool_name == "order\ufffdquery"
        assert stored.events[1].tool_args == {"id": "\ufffd", "score": None}
        # the recorder: a message with a lone surrogate does not lose the run when it closes
        with mem.record("recorded \ud800 task", tenant_id="t") as run:
            run.user_message("a \x00 message \udfff")
            run.set_outcome("success", reason="done \ud800")
        got = mem.get_trajectory(run.trajectory_id, tenant_id="t")
        assert got.task == "recorded \ufffd task"
        assert any(e.content == "a \ufffd message \ufffd" for e in got.events)


@pytest.mark.parametrize("field", ["tenant_id", "namespace", "task_type"])
@pytest.mark.parametrize("bad", BAD)
def test_names_are_refused_with_one_line_naming_the_field(
    tmp_path: Path, database_url: str, field: str, bad: str
) -> None:
    with _mem(tmp_path, database_url) as mem:
        kwargs = {"tenant_id": "t", field: f"name{bad}"}
        with pytest.raises(HindsightError) as err:
            mem.add_experience("Retry once", **kwargs)  # type: ignore[arg-type]
        message = str(err.value)
        assert field in message and "\n" not in message
        assert message.endswith("; send valid Unicode text, with no NUL and no lone surrogate")
        assert mem.list_experiences(tenant_id="t") == []


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_numbers_with_a_meaning_refuse_nan_and_infinity(
    tmp_path: Path, database_url: str, value: float
) -> None:
    with _mem(tmp_path, database_url) as mem:
        with pytest.raises(UsageError, match="confidence") as err:
            mem.add_experience("Retry once", tenant_id="t", confidence=value)
        assert "\n" not in str(err.value)
        exp = mem.add_experience("Retry once", tenant_id="t")
        with pytest.raises(UsageError) as err:
            mem.adjust_confidence(exp.id, value, tenant_id="t")
        assert "\n" not in str(err.value)
        assert mem.get_experience(exp.id, tenant_id="t").confidence == exp.confidence


_texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(_texts)
def test_clean_text_is_valid_utf8_keeps_valid_text_and_counts(text: str) -> None:
    with collecting() as report:
        out = clean_text(text, "f")
    out.encode("utf-8")  # never raises
    assert "\x00" not in out
    assert len(out) == len(text)
    bad = sum(1 for c in text if c == "\x00" or 0xD800 <= ord(c) <= 0xDFFF)
    assert report.counts.get("f", 0) == bad
    assert (out == text) == (bad == 0)
    assert invalid_char(out) is None
    assert refuse_invalid(out, "x") == out


@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | _texts,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_texts, inner, max_size=3),
        max_leaves=10,
    )
)
def test_clean_json_gives_strict_json(value: object) -> None:
    import json

    with collecting():
        out = clean_json(value)
    json.dumps(out, allow_nan=False).encode("utf-8")


_NAMES = frozenset({"namespace", "tenant_id"})
_LEAF_TEXTS = _texts | st.sampled_from([*BAD, "plain text", "a\x00b", "x\x00"])
_KEYS = _LEAF_TEXTS | st.sampled_from(["namespace", "tenant_id", "metadata", "tool_args", "id"])


def _outcome(value: object, **mode: bool) -> tuple[str, object, dict[str, int], bool]:
    """What ``clean_json`` does with ``value``: (``ok``, result, replacements counted,
    whether it returned ``value`` itself) or (``refused``, the message, ..)."""
    with collecting() as report:
        try:
            out = clean_json(value, "f", names=_NAMES, **mode)
        except UsageError as exc:
            return "refused", str(exc), dict(report.counts), False
    return "ok", out, dict(report.counts), out is value


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | _LEAF_TEXTS,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.tuples(inner, inner)
            | st.dictionaries(_KEYS | st.integers(), inner, max_size=4)
        ),
        max_leaves=16,
    ),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_clean_json_skips_plain_values_without_changing_what_it_does(
    value: object, floats: bool, strict: bool, strict_below: bool
) -> None:
    """Plain values (None, booleans, integers, ASCII text without NUL) are passed over
    without building the path of a message; the result, the replacements counted, the
    refusals and the identity of an unchanged value are those of checking every value."""
    import hindsight._text as text_module

    mode = {"floats": floats, "strict": strict, "strict_below": strict_below}
    fast = _outcome(value, **mode)
    original = text_module._plain
    text_module._plain = lambda v: False  # every value checked the long way
    try:
        slow = _outcome(value, **mode)
    finally:
        text_module._plain = original
    assert fast[0] == slow[0] and fast[2] == slow[2] and fast[3] == slow[3]
    if fast[0] == "refused" or not isinstance(fast[1], float) or not math.isnan(fast[1]):
        assert repr(fast[1]) == repr(slow[1])


def test_warning_is_attributed_to_the_caller(tmp_path: Path) -> None:
    with _mem(tmp_path, f"sqlite:///{tmp_path / 'h.db'}") as mem:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            mem.add_experience("a \x00 b", tenant_id="t")
        [w] = [w for w in rec if issubclass(w.category, InvalidTextWarning)]
        assert w.filename == __file__


def _numpy(kind: str, value: object) -> object:
    import numpy as np

    return getattr(np, kind)(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        (3.0, 3),
        ("3", 3),
        (_numpy("int64", 3), 3),
        (_numpy("float32", 3.0), 3),
        (Fraction(6, 2), 3),
        (True, "got True"),
        (False, "got False"),
        (_numpy("bool_", True), "got True"),  # numpy's as Python's, in the message too
        (_numpy("float32", 3.5), "got 3.5"),
        (Fraction(7, 2), "got Fraction(7, 2)"),
        (math.nan, "got nan"),
        (math.inf, "got inf"),
        ("3.5", "got '3.5'"),
    ],
)
def test_integers_from_python_numpy_and_text_never_from_a_boolean(
    value: object, expected: object
) -> None:
    from hindsight._contract import integer

    if isinstance(expected, int):
        assert integer(value, "top_k", 1, 1000) == expected
        return
    with pytest.raises(UsageError, match=r"^top_k must be an integer from 1 to 1000, ") as err:
        integer(value, "top_k", 1, 1000)
    assert str(err.value).endswith(str(expected)) and err.value.field == "top_k"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (_numpy("float32", 0.25), 0.25),
        (_numpy("int64", 1), 1.0),
        (Fraction(1, 4), 0.25),
        (True, "got True"),
        (_numpy("bool_", False), "got False"),
        (_numpy("float64", math.nan), "got nan"),
        (_numpy("float32", 2.0), "got 2.0"),
    ],
)
def test_numbers_from_python_numpy_and_fractions_never_from_a_boolean(
    value: object, expected: object
) -> None:
    from hindsight._contract import number

    if isinstance(expected, float):
        assert number(value, "similarity_floor", -1, 1) == expected
        return
    with pytest.raises(UsageError, match=r"^similarity_floor must be a number from -1 to 1, "):
        number(value, "similarity_floor", -1, 1)
    with pytest.raises(UsageError) as err:
        number(value, "similarity_floor", -1, 1)
    assert str(err.value).endswith(str(expected))


@pytest.mark.parametrize("timeout", ["soon", math.nan, math.inf, -1, "-1", True, [1], "1e99"])
def test_flush_refuses_a_timeout_that_is_not_seconds(
    tmp_path: Path, database_url: str, timeout: object
) -> None:
    """Before any wait, one line; a good timeout still drains."""
    with make_memory(tmp_path / "data", database_url) as mem:
        with pytest.raises(UsageError, match=r"^timeout must be a number from 0 to "):
            mem.flush(timeout)  # type: ignore[arg-type]
        for good in (0, None, 1.5, "2", np.int64(2), np.float32(0.5)):
            assert mem.flush(good) is True  # type: ignore[arg-type]
    client = HindsightClient("http://127.0.0.1:9", api_key="k")
    try:
        with pytest.raises(UsageError, match=r"^timeout must be a number from 0 to "):
            client.flush(timeout)  # type: ignore[arg-type]
    finally:
        client.close()
