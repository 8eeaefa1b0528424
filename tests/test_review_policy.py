"""The policy passages a review request shows (hindsight.review.policy).

A policy of an invented domain (a library's lending desk) is used besides the real tau-bench
airline policy, so nothing here can pass by knowing airline words.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _tau_bench import tau_file, tau_trajectories

from hindsight.models import (
    Event,
    EventType,
    ExpectedAction,
    OutcomeEvidence,
    Trajectory,
)
from hindsight.review.policy import (
    rank_passages,
    run_terms,
    select_policy,
    split_passages,
    stem,
    terms,
)
from hindsight.tokens import estimate_tokens
from tests.helpers import tool_step

__all__ = ["tau_file", "tau_trajectories"]  # fixtures imported for pytest

LIBRARY_POLICY = """\
# Lending desk policy

You help members borrow, renew and return books.

- Always confirm the member's card before any change to a loan.
- Never reveal another member's loans.

## Renewals

- A loan can be renewed at most twice. A third renewal must be refused.
- Renewal is impossible when another member holds a reservation on the title: check
  get_holds first.
  - Staff members are not exempt.

## Fines

Overdue fines are 0.25 per day, capped at the replacement price of the item.
Fines must be paid with a stored payment method; waive_fine needs a supervisor_code.

## Returns

- Damaged returns are logged with report_damage before check_in.
"""


def renewal_run() -> Trajectory:
    events = [
        Event(event_type=EventType.USER_MESSAGE, content="Please renew my loan of Dune."),
        *tool_step("lookup_member", {"card_number": "C-88812"}),
        *tool_step(
            "renew_loan",
            {"loanId": "L-4471", "renewal_count": 3},
            "failure",
            "Error: renewal limit reached for this loan",
        ),
        Event(event_type=EventType.FINAL_ANSWER, content="Sorry, I cannot renew it."),
    ]
    return Trajectory(tenant_id="t", events=events, system_prompt=LIBRARY_POLICY)


def test_split_passages_follows_headings_bullets_and_paragraphs() -> None:
    passages = split_passages(LIBRARY_POLICY)
    texts = [p.text for p in passages]
    assert texts[0] == "You help members borrow, renew and return books."
    assert passages[0].heading == "Lending desk policy"
    renew = next(p for p in passages if p.text.startswith("- Renewal is impossible"))
    assert renew.heading == "Lending desk policy > Renewals"
    # the continuation line and the sub-bullet stay with their bullet
    assert "get_holds first." in renew.text and "Staff members are not exempt." in renew.text
    fines = next(p for p in passages if p.text.startswith("Overdue fines"))
    assert fines.heading.endswith("Fines") and "supervisor_code" in fines.text  # one paragraph
    assert [p.index for p in passages] == list(range(len(passages)))
    assert split_passages("   \n") == []


def test_plain_text_policy_is_paragraphs_and_long_ones_are_cut_at_sentences() -> None:
    sentence = "Every request is logged with its time and the operator's initials. "
    policy = "Short rule one.\n\n" + sentence * 40
    passages = split_passages(policy, max_chars=300)
    assert passages[0].text == "Short rule one." and passages[0].heading == ""
    assert len(passages) > 5
    assert all(len(p.text) <= 300 for p in passages)
    assert all(p.text.endswith("initials.") for p in passages[1:])


@pytest.mark.parametrize(
    ("word", "stemmed"),
    [
        ("booking", "book"),
        ("booked", "book"),
        ("books", "book"),
        ("reservation", "reserv"),
        ("reserve", "reserv"),
        ("cancelled", "cancel"),
        ("modifies", "modify"),
        ("baggages", "baggag"),
        ("baggage", "baggag"),
        ("class", "class"),
        ("status", "status"),
        ("renewal", "renew"),
        ("total", "total"),
    ],
)
def test_light_stems_meet(word: str, stemmed: str) -> None:
    assert stem(word) == stemmed


def test_terms_split_identifiers_and_index_cjk_as_bigrams() -> None:
    assert terms("book_reservation paymentMethods") == ["book", "reserv", "pay", "method"]
    assert terms("退款金额") == ["退款", "款金", "金额"]
    assert "the" not in terms("the renewal of the loan")


def test_run_terms_are_tools_keys_and_errors_not_values() -> None:
    query = run_terms([renewal_run()])
    assert {"renew", "loan", "limit", "reach", "lookup", "member", "card"} <= set(query)
    assert "88812" not in query and "4471" not in query  # a run's values are not topics
    assert "dune" not in query  # the user's words are not what the run touched
    # each name once per run, however often it is called: a loop is not relevance
    twice = renewal_run()
    twice.events[3:3] = twice.events[3:5]
    assert run_terms([twice]) == query


def test_ranking_puts_the_passages_the_run_touches_first() -> None:
    ranked = rank_passages(split_passages(LIBRARY_POLICY), run_terms([renewal_run()]))
    assert ranked[0][0].heading.endswith("Renewals")
    assert ranked[0][0].text.startswith("- A loan can be renewed at most twice")
    assert all(score > 0 for _, score in ranked)
    assert not any(p.heading.endswith("Returns") for p, _ in ranked)  # shares no term


def test_short_policy_is_shown_whole() -> None:
    excerpt = select_policy(
        LIBRARY_POLICY, run_terms([renewal_run()]), max_tokens=2000, count_tokens=estimate_tokens
    )
    assert excerpt.whole and excerpt.text == LIBRARY_POLICY.strip()
    assert excerpt.tokens == excerpt.policy_tokens == estimate_tokens(LIBRARY_POLICY.strip())


def test_long_policy_gives_the_budget_to_passages_by_rank() -> None:
    query = run_terms([renewal_run()])
    excerpt = select_policy(LIBRARY_POLICY, query, max_tokens=70, count_tokens=estimate_tokens)
    assert not excerpt.whole and 0 < excerpt.shown < excerpt.total
    assert excerpt.tokens == estimate_tokens(excerpt.text) <= 70
    assert "A loan can be renewed at most twice" in excerpt.text
    assert "## Lending desk policy > Renewals" in excerpt.text  # under its heading
    assert "report_damage" not in excerpt.text
    assert excerpt.text.startswith("…")  # left-out passages are marked


def test_nothing_is_shown_without_a_policy_or_a_budget() -> None:
    assert select_policy(None, ["loan"], max_tokens=500, count_tokens=estimate_tokens).text == ""
    empty = select_policy(LIBRARY_POLICY, ["loan"], max_tokens=0, count_tokens=estimate_tokens)
    assert (empty.text, empty.shown) == ("", 0)


def test_expected_actions_and_a_tool_filter_shape_the_query() -> None:
    run = renewal_run().model_copy(
        update={
            "evidence": OutcomeEvidence(
                expected_actions=[ExpectedAction(tool="waive_fine", args={"supervisor_code": "x"})]
            )
        }
    )
    query = run_terms([run], tools=["waive_fine"])
    assert "waiv" in query and "supervisor" in query
    assert "lookup" not in query  # filtered out
    assert "limit" in query  # errors always count
    extra = run_terms([], actions=[ExpectedAction(tool="report_damage", args={})])
    assert extra == ["report", "damag"]


def test_tau_bench_policy_passages_for_a_booking_run(
    tau_file: Path, tau_trajectories: list[Trajectory]
) -> None:
    """On the real airline policy: a run that booked is shown the booking passages."""
    policy = json.loads(tau_file.read_text(encoding="utf-8"))[0]["traj"][0]["content"]
    run = next(
        t for t in tau_trajectories if any(e.tool_name == "book_reservation" for e in t.events)
    )
    query = run_terms([run])
    excerpt = select_policy(policy, query, max_tokens=600, count_tokens=estimate_tokens)
    assert not excerpt.whole and excerpt.tokens <= 600 < excerpt.policy_tokens
    assert "Book flight" in excerpt.text
    assert "at most one travel certificate" in excerpt.text  # the payment passage
