"""Static checks of the console's templates and helpers (no browser needed)."""

from __future__ import annotations

import re

import pytest

from hindsight.service.console._diff import word_diff
from hindsight.service.console._pages import TEMPLATES, env, http_url
from hindsight.service.console._plots import breakdown_bars

PAGES = sorted(TEMPLATES.glob("*.html"))


def test_autoescape_is_on_and_nothing_is_marked_safe() -> None:
    assert env.autoescape is True
    assert PAGES
    for path in PAGES:
        text = path.read_text()
        assert not re.search(r"\|\s*safe\b", text), path.name
        assert "autoescape false" not in text, path.name
        assert "Markup" not in text, path.name


def test_no_inline_script_style_or_event_handler() -> None:
    for path in PAGES:
        text = path.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), path.name
        assert not re.search(r"<style\b|\sstyle=", text), path.name
        assert not re.search(r"\son[a-z]+=", text), path.name


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://example.org/a?b=1", "https://example.org/a?b=1"),
        ("HTTP://example.org", "HTTP://example.org"),
        ("javascript:alert(1)", None),
        (" javascript:alert(1)", None),
        ("JaVaScRiPt:alert(1)", None),
        ("data:text/html,<script>alert(1)</script>", None),
        ("//evil.example/x", None),
        ("https://", None),
        ("http://exa mple.org", None),
        (42, None),
    ],
)
def test_only_http_urls_become_links(value: object, expected: str | None) -> None:
    assert http_url(value) == expected


def test_a_word_diff_rebuilds_both_texts() -> None:
    old, new = "retry once after a timeout", "retry twice after a 30 s timeout, then stop"
    parts = word_diff(old, new)
    assert "".join(t for op, t in parts if op != "ins") == old
    assert "".join(t for op, t in parts if op != "del") == new
    assert ("ins", "30 s ") in parts or any(op == "ins" and "30" in t for op, t in parts)


def test_breakdown_bars_take_whatever_numbers_the_breakdown_has() -> None:
    bars = breakdown_bars(
        {"similarity": -0.25, "situation": {"match": 0.5}, "mode": "vector", "n": 3, "ok": True}
    )
    assert [(b["label"], b["w"], b["negative"]) for b in bars] == [
        ("similarity", 25.0, True),
        ("situation.match", 50.0, False),
        ("n", 100.0, False),
    ]
