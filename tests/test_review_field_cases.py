"""What a review writes from replies and arguments as they come from the field: JSON error
replies, HTTP status lines, echoed codes, calls the run ended before, people named under any
key (docs/review.md#masking, docs/review.md#lesson-keys)."""

from __future__ import annotations

from typing import Any

import pytest

from hindsight import ExperienceKind
from hindsight.review._calls import without_echoes
from hindsight.review.heuristic._templates import advice_for
from hindsight.review.masking import Masker, personal_key
from hindsight.testing import test_memory

TENANT = "field"


def _lessons(steps: list[tuple[str, dict[str, Any], Any]], outcome: str | None = "failure",
             task: str = "Help the customer") -> list[tuple[ExperienceKind, str]]:  # fmt: skip
    with test_memory() as mem:
        with mem.record(task, tenant_id=TENANT) as run:
            run.user_message(task)
            for tool, args, reply in steps:
                call = run.tool_call(tool, args)
                if reply is not None:
                    run.tool_result(content=reply, tool_call_id=call.tool_call_id)
            if outcome:
                run.set_outcome(outcome)
        assert mem.flush(timeout=60)
        return [(e.kind, e.content) for e in mem.list_experiences(tenant_id=TENANT, limit=100)]


@pytest.mark.parametrize(
    ("reply", "quoted"),
    [
        ({"status": "error", "message": "insurance rejected for Maria Gonzalez"},
         "'insurance rejected for <name>'"),
        ('{"error": {"code": 7, "message": "insurance rejected"}}', "'insurance rejected'"),
        ('{"error": "insurance rejected for Maria Gonzalez"}', "'insurance rejected for <name>'"),
    ],
)  # fmt: skip
def test_a_json_error_reply_is_quoted_by_its_message_with_the_name_masked(
    reply: Any, quoted: str
) -> None:
    found = _lessons([("refill", {"patient_email": "maria.gonzalez@example.org"}, reply)])
    failures = [c for k, c in found if k is ExperienceKind.TOOL_RELIABILITY]
    assert failures and quoted in failures[0], found
    assert not any("Maria" in c or "Gonzalez" in c or '"status"' in c for _, c in found), found


@pytest.mark.parametrize(
    "reply", ["HTTP 503 Service Unavailable", "503 Service Unavailable", "Error 502: Bad Gateway"]
)
def test_an_http_status_is_kept_and_advised_as_an_outage(reply: str) -> None:
    found = _lessons([("restart_service", {"service": "billing-api"}, reply)])
    (failure,) = [c for k, c in found if k is ExperienceKind.TOOL_RELIABILITY]
    code = reply.split()[1][:3] if reply.startswith(("HTTP", "Error")) else reply[:3]
    assert code in failure and "<number>" not in failure, failure
    assert "retry once, then fall back" in failure and "search" not in failure, failure


def test_http_status_numbers_apart_from_other_numbers() -> None:
    m = Masker()
    assert m.mask("HTTP/1.1 404 Not Found") == "HTTP/1.1 404 Not Found"
    assert m.mask("status code 500") == "status code 500"
    assert m.mask("room 404 Not ready") == "room <number> Not ready"
    assert m.mask("order 8812 not found") == "order <number> not found"
    assert "search" in advice_for("flight not available on that date", "en")


@pytest.mark.parametrize(
    ("text", "args", "shown"),
    [
        ("warehouse W-17 does not exist", {"warehouse": "W-17"}, "warehouse <warehouse> does"),
        ("bin A3-0042 is full", {"bin": "A3-0042"}, "bin <bin> is full"),
        ("no funds on gift_card_1234", {"pay": "gift_card_1234"}, "gift_card_1234"),  # classed
        ("size 70 too big", {"size": "70"}, "size 70 too big"),  # a number: its own class
    ],
)
def test_an_echoed_code_the_masking_would_cut_in_part_is_shown_as_its_key(
    text: str, args: dict[str, str], shown: str
) -> None:
    assert shown in without_echoes(text, args)


@pytest.mark.parametrize("outcome", ["failure", None])
def test_a_call_the_run_ended_before_is_no_tool_error(outcome: str | None) -> None:
    found = _lessons([("lookup", {"q": "x"}, '{"ok": true}'), ("export", {"q": "x"}, None)],
                     outcome=outcome)  # fmt: skip
    assert not any("no result recorded" in c for _, c in found), found
    assert not any(k is ExperienceKind.TOOL_RELIABILITY for k, _ in found), found


def test_one_tool_call_is_one_call() -> None:
    found = _lessons([("lookup", {"q": "x"}, '{"ok": true}')], outcome=None)
    (episode,) = [c for k, c in found if k is ExperienceKind.EPISODE]
    assert "(1 tool call, 0 failed)" in episode, episode


@pytest.mark.parametrize(
    ("key", "personal"),
    [("patient_name", "name"), ("customer_email", "email"), ("contact_phone", "phone"),
     ("name", "name"), ("product_name", None), ("file_name", None), ("project_name", None)],
)  # fmt: skip
def test_a_personal_key_after_a_person_word_is_personal(key: str, personal: str | None) -> None:
    assert personal_key(key) == personal


@pytest.mark.parametrize(
    ("args", "text", "masked", "kept"),
    [
        ({"patient_name": "Tom Baker"}, "help Tom Baker today", "help <patient_name> today", ""),
        ({"patient_name": "Tom Baker"}, "Error: Tom Baker tom_b42 is locked", "<user_id>", ""),
        ({"to": "carol.white@corp.example"}, "Email Carol White today", "Email <name> today", ""),
        ({"full_name": "Jane Roe"}, "Your refill is ready, Jane", "ready, <name>", ""),
        ({"to": "support@corp.example"}, "Support said no", "Support said no", ""),
        ({"product_name": "Espresso Machine"}, "Espresso Machine broke", "", "Espresso Machine"),
        ({"handle": "sam_lee42"}, "checks for sam_lee42 today", "for <handle> today", ""),
        ({"member_handle": "@kofi.m"}, "member @kofi.m timed out", "<member_handle>", ""),
    ],
)
def test_a_person_named_under_any_key_is_masked_in_episodes_and_lessons(
    args: dict[str, str], text: str, masked: str, kept: str
) -> None:
    m = Masker()
    m.add("", args)
    for out in (m.mask(text), m.mask_personal(text)):
        if masked:
            assert masked in out, out
        if kept:
            assert kept in out, out


@pytest.mark.parametrize(
    "error",
    [
        "Error: open /etc/helm/grafana-values.yaml: no such file or directory",
        "FileNotFoundError: [Errno 2] No such file or directory: 'data/in.csv'",
        "ENOENT: cannot open './config/app.toml'",
        "config file settings.json not found",
        "the path C:\\reports\\q3 does not exist",
        "stat ./out: not a directory",
    ],
)
def test_a_missing_file_is_advised_as_a_path_not_an_id(error: str) -> None:
    advice = advice_for(error, "en")
    assert "path exists" in advice and "id" not in advice.split(), advice
    assert "路径" in advice_for(error, "zh")


@pytest.mark.parametrize(
    "error",
    [
        "identity verification required before disabling 2FA",
        "Error: the user must be verified before changing the email",
        "login required",
        "401: re-authentication needed to view statements",
        "customer not authenticated",
        "OTP verification pending for this account",
        "verification of the customer's identity is required first",
    ],
)
def test_a_check_of_who_asks_is_advised_as_a_verification(error: str) -> None:
    advice = advice_for(error, "en")
    assert advice.startswith("complete the verification"), advice
    assert "schema" not in advice


@pytest.mark.parametrize(
    ("error", "still"),
    [
        ("order 8812 not found", "look the id up first"),
        ("customer C-77 does not exist", "look the id up first"),
        ("field 'incident_description' is required", "validate the arguments"),
        ("prior authorization required", "authorization or approval"),
        ("permission denied for project atlas", "respect the restriction"),
        ('Config file missing field "timeout"', "validate the arguments"),
        ("GET /v2/orders/991: path not found", "look the id up first"),
        ("Checksum verification required for the upload", "validate the arguments"),
    ],
)
def test_other_errors_keep_their_advice(error: str, still: str) -> None:
    assert still in advice_for(error, "en")
