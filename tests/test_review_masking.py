"""Masking of run-specific values in lessons (lessons carry no personal data or ids;
docs/review.md#masking)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight.models import Event, EventType, Trajectory
from hindsight.review.masking import Masker, identifying, is_categorical, masker_for


def _masker(args: dict[str, object], result: object | None = None) -> Masker:
    masker = Masker()
    masker.add("", args)
    if result is not None:
        masker.add_json_text(json.dumps(result))
    return masker


ARGS = {
    "user_id": "mia_li_3668",
    "reservation_id": "HXDUBJ",
    "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
    "payment_methods": [{"payment_id": "certificate_7504069", "amount": 250}],
    "cabin": "economy",
    "flight_type": "one_way",
    "flights": [{"flight_number": "HAT136", "date": "2024-05-20"}],
}


def test_values_of_the_run_are_masked_by_their_key() -> None:
    masker = _masker(ARGS)
    text = masker.mask(
        "Mia Li (mia_li_3668) paid 250 with certificate_7504069 for HXDUBJ on HAT136."
    )
    assert text == (
        "<first_name> <last_name> (<user_id>) paid <amount> with <certificate_id> for "
        "<reservation_id> on <flight_number>."
    )


def test_categorical_values_and_single_digits_stay() -> None:
    masker = _masker(ARGS)
    assert masker.mask("economy one_way with 3 bags") == "economy one_way with 3 bags"


def test_patterns_mask_values_the_run_never_named() -> None:
    masker = Masker()
    text = masker.mask(
        "Write to jane.doe@example.org or +1 (415) 555-0199 before 2024-05-20 10:30 "
        "or May 20th, 2024; total price is 305, but paid 255; order_88123; see "
        "https://x.example/a?b=1; code AB12CD."
    )
    assert "jane" not in text and "415" not in text and "305" not in text
    assert "<email>" in text and "<phone>" in text and "<date>" in text
    assert "<order_id>" in text and "<url>" in text and "<id>" in text
    assert "total price is <amount>, but paid <amount>" in text


@pytest.mark.parametrize(
    ("key", "value", "cls"),
    [
        ("ndc", "0002-3227-30", "ndc"),  # a drug code: dashes, 10 digits
        ("npi", "1234567893", "npi"),  # a provider id: 10 digits, a phone's shape
        ("npi", 1234567893, "npi"),  # the same as a JSON number
        ("sku", "4006381 333931", "sku"),
        ("Tracking No", "9400 1000 0000 0000 0000 00", "tracking_no"),
    ],
)
def test_a_code_of_digits_is_masked_as_its_key_not_as_a_phone(
    key: str, value: object, cls: str
) -> None:
    masker = _masker({"claim": {key: value}})
    text = masker.mask(f"The call with {value} was refused; retry with {value}.")
    assert text == f"The call with <{cls}> was refused; retry with <{cls}>.", text


def test_short_numbers_and_phones_keep_their_patterns() -> None:
    masker = _masker({"quantity": 30, "count": "12345", "contact": {"phone": "415 555 0199"}})
    text = masker.mask("Sent 30 of 12345 units; call 415 555 0199 or 212 555 0100.")
    assert text == "Sent <number> of <number> units; call <phone> or <phone>.", text


@pytest.mark.parametrize("value", [250000, "250000", 12_000_000])
def test_a_quantity_is_a_number_not_a_code_of_its_key(value: object) -> None:
    """Runs of one error share its text whatever the quantity: 50000 and 250000 alike."""
    masker = _masker({"quantity": value})
    assert masker.mask(f"cannot ship {value} units") == "cannot ship <number> units"


def test_a_person_id_never_leaks_its_name() -> None:
    # The id's word part is a name: without the name harvested, the key still says "user".
    masker = _masker({"customer_id": "ethan_martin_2396"})
    assert masker.mask("ethan_martin_2396 asked") == "<customer_id> asked"
    # With the name known from a JSON result, an id in free text is masked too.
    masker = _masker({}, {"name": {"first_name": "Ethan", "last_name": "Martin"}})
    assert "ethan" not in masker.mask("ethan_martin_2396 asked").lower()


def test_results_and_metadata_are_harvested_from_a_trajectory() -> None:
    traj = Trajectory(
        tenant_id="t",
        metadata={"user_id": "zoe_w_11"},
        events=[
            Event(
                event_type=EventType.TOOL_CALL,
                tool_name="get_user",
                tool_args={"email": "zoe@x.io"},
            ),
            Event(
                event_type=EventType.TOOL_RESULT,
                tool_name="get_user",
                content=json.dumps({"name": "Zoé Wong", "address": {"city": "Lyon"}}),
            ),
        ],
    )
    masker = masker_for([traj])
    out = masker.mask("Zoé Wong (zoe_w_11, zoe@x.io) lives in Lyon")
    assert "Zoé" not in out and "zoe_w_11" not in out and "zoe@x.io" not in out
    assert masker.mask_personal("Zoé Wong booked HXDUBJ") == "<name> booked HXDUBJ"


@pytest.mark.parametrize(
    ("key", "value", "masked"),
    [
        ("member_id", "MBR-00420911", True),
        ("patient_id", "P-77120", True),
        ("customer_number", "C99812", True),
        ("user_id", "sara_doe_496", True),
        ("order_id", "W-17733", False),  # an object's id stays in an episode
        ("reservation_id", "HXDUBJ", False),
    ],
)
def test_an_episode_masks_a_persons_id_and_keeps_other_ids(
    key: str, value: str, masked: bool
) -> None:
    """``mask_personal`` (episodes): a person's id is personal data, like the name; an
    order's or a booking's id is not."""
    out = _masker({key: value}).mask_personal(f"Goal: check {value}; it was not found")
    assert (value not in out) is masked, out
    if masked:
        assert f"<{key}>" in out or "<user_id>" in out


def test_chinese_text_keeps_its_words() -> None:
    masker = _masker({"order_id": "A1B2C3", "name": "王小明"})
    assert (
        masker.mask("王小明的订单 A1B2C3 在5月20日超时") == "<name>的订单 <order_id> 在<date>超时"
    )


def test_key_rules() -> None:
    assert identifying("reservation_id") and identifying("flightNumber".replace("N", "_n"))
    assert identifying("api_key") and identifying("email") and identifying("orderId")
    assert not identifying("cabin") and not identifying("amount")
    assert is_categorical("basic_economy") and not is_categorical("HXDUBJ")


_ids = st.from_regex(r"[A-Z]{2}[0-9]{3,6}|[a-z]{3,8}_[0-9]{4,8}|[A-Z0-9]{6}", fullmatch=True)
_names = st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(ident=_ids, first=_names, last=_names, amount=st.integers(10, 99999))
def test_no_identifying_value_survives(ident: str, first: str, last: str, amount: int) -> None:
    masker = _masker({"order_id": ident, "first_name": first, "last_name": last, "amount": amount})
    text = masker.mask(
        f"{first} {last} asked about {ident}; the refund of {amount} dollars failed for {ident}."
    )
    for value in (ident, first, last, str(amount)):
        assert not re.search(rf"(?<![\w<]){re.escape(value)}(?![\w>])", text), (value, text)


@pytest.mark.parametrize(
    ("handle", "cls"),
    [
        ("paypal_seun.adeyemi", "<paypal_id>"),
        ("visa_adeyemi_22", "<visa_id>"),
        ("seun-adeyemi", "<user_id>"),
        ("acct.SEUN.42", "<acct_id>"),
        ("adeyemi+billing", "<billing_id>"),
        # the name glued to digits, initials: the person's, never the class
        ("seun_adeyemi88", "<user_id>"),
        ("adeyemi_s2", "<user_id>"),
        ("s.adeyemi-07", "<user_id>"),
        ("adeyemi_seun_1990", "<user_id>"),
        ("88seun", "<user_id>"),
        ("Adeyemi2024", "<user_id>"),
        ("visa_adeyemi88", "<visa_id>"),
    ],
)
@pytest.mark.parametrize("where", ["Error: method {} was declined", "{}.", "use {}, then retry"])
def test_a_handle_holding_a_name_is_masked_whole(handle: str, cls: str, where: str) -> None:
    m = Masker()
    m.add("", {"first_name": "Seun", "last_name": "Adeyemi", "email": "s.adeyemi@mail.com"})
    text = where.format(handle)
    for masked in (m.mask(text), m.mask_personal(text)):
        assert masked == where.format(cls)
        assert "seun" not in masked.lower() and "adeyemi" not in masked.lower()


def test_a_handle_of_a_full_name_glued_to_digits() -> None:
    m = Masker()
    m.add("full_name", "Priya Raman")
    m.add("portal_user", "priya_raman88")
    assert m.mask("refill(portal_user=priya_raman88)") == "refill(portal_user=<user_id>)"
    assert m.mask("Priya Raman paid with visa_raman_22") == "<full_name> paid with <visa_id>"


def test_handles_without_a_name_and_mail_domains_stay() -> None:
    m = Masker()
    m.add("", {"first_name": "Seun", "email": "seun@mail.com"})
    text = "use the gift_card or the mail.relay host; refunds go to credit_card at seunlabs"
    assert m.mask(text) == text
    assert m.names == {"seun"}  # the e-mail's domain names nobody


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("the fee is 30 today", "the fee is <amount> today"),
        ("a total of 120", "a total of <amount>"),
        ("the summary lists 120 rows", "the summary lists <number> rows"),
        ("feedback from 45 users", "feedback from <number> users"),
        ("the welfare office has 12 desks", "the welfare office has <number> desks"),
    ],
)
def test_money_words_are_whole_words(text: str, masked: str) -> None:
    assert Masker().mask(text) == masked


@pytest.mark.parametrize("name", ["getOrderV2", "s3_upload", "search_v2", "lookup_2fa_code"])
def test_the_runs_tool_names_are_never_masked(name: str) -> None:
    """A lesson names its tools: one holding a digit is not a code, an id or a number."""
    traj = Trajectory(
        task="upload the report",
        tenant_id="t",
        events=[
            Event(event_type=EventType.TOOL_CALL, tool_name=name, tool_args={"ref": "AB12CD"}),
            Event(event_type=EventType.TOOL_RESULT, tool_name=name, content='{"ok": true}'),
        ],
    )
    masker = masker_for([traj])
    text = masker.mask(f"When {name} fails with 'ref AB12CD locked', call {name} again later.")
    assert text == f"When {name} fails with 'ref <ref> locked', call {name} again later.", text
    # what is not the tool's name is still masked beside it
    assert masker.mask(f"{name} booked HAT290 for 2024-05-20") == f"{name} booked <id> for <date>"


def test_key_tests_are_cached_for_short_keys_only() -> None:
    # a run repeats its keys: their tests are cached, but a key longer than any a lesson
    # names is tested each time, so a tool's odd output cannot fill memory
    from hindsight.review import masking

    long_key = "customer_" + "x" * masking.CACHED_KEY_CHARS + "_email"
    for test in (masking.key_class, masking.personal_key, masking.identifying):
        before = test.cache_info().currsize  # type: ignore[attr-defined]
        assert test(long_key) == test.__wrapped__(long_key)  # type: ignore[attr-defined]
        assert test.cache_info().currsize == before  # type: ignore[attr-defined]
    assert masking.personal_key("customer_email") == "email"
    assert masking.personal_key(long_key) == "email" and masking.identifying(long_key)
