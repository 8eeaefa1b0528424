"""``hindsight bench learning`` (docs/benchmarks.md#learning) computes what it claims.

The pieces on inputs with known answers (quote masking, the identifier detector, ground-truth
differences and how a block names them, ranking metrics and their exact random values), the
whole harness on a tiny synthetic tau-bench file reviewed by a scripted reviewer (so every
figure has a known value whatever the shipped reviewers do), and the real command on a few
tasks of the airline file. No timing is asserted.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from math import comb, isclose
from pathlib import Path
from typing import Any

import pytest

from hindsight import Experience, ExperienceKind, Lesson, Trajectory, UsageError
from hindsight.bench.learning import (
    MASK,
    Call,
    Context,
    Difference,
    IdentifierDetector,
    QuoteMasker,
    corrected,
    differences,
    evaluate_baseline,
    evaluate_reviewer,
    expected_actions,
    hit_at_k,
    is_state_changing,
    load_runs,
    mentions,
    names_difference,
    normalized_recall_at_k,
    normalized_text,
    random_expectation,
    random_subset_probability,
    recall_at_k,
    reciprocal_rank,
    run_calls,
    score_queries,
    split_runs,
    unjudged,
)
from hindsight.bench.learning._harness import lesson_figures
from hindsight.embedders import make_embedder
from tests.cli_helpers import run_cli

# -- quote masking -------------------------------------------------------------------------------
MSG = "Hi! I'm looking to book a room in Lisbon for three nights from the 20th."


def test_quote_masking_whole_message_sentence_truncated_and_placeholder_quotes() -> None:
    masker = QuoteMasker([MSG, "Cancel my order", "Hi"])
    assert masker.mask(f"For tasks like '{MSG}', the run failed.") == (
        f"For tasks like '{MASK}.', the run failed."
    )
    # a sentence of >= 5 words of it, case and curly quotes aside
    assert masker.mask("Task: \u2018i\u2019m LOOKING to book a room in Lisbon\u2019 done") == (
        f"Task: \u2018{MASK}\u2019 done"
    )
    # a truncated quote, and one whose values a reviewer masked already
    assert masker.mask("like 'looking to book a room in…'") == f"like '{MASK}…'"
    assert masker.mask("like 'book a room in <city> for three nights from the <date>'") == (
        f"like '{MASK}'"
    )
    # a whole short message is a quote too; its words inside other text are not
    assert masker.mask("When the user says cancel my order, check it.") == (
        f"When the user says {MASK}, check it."
    )
    untouched = [
        "Before calling book_room, check the nights against the request.",
        "Hi there: a room for the team.",  # one-word message "Hi" is ignored
        "to book a room",  # four words: not a quote
    ]
    for text in untouched:
        assert masker.mask(text) == text
    # placeholders stand for words, but a quote needs three real ones
    assert masker.spans("a room <city> <nights> <date> <day>") == []
    assert masker.spans("book a room in <city> <nights>") == [(0, 30)]


# -- identifiers and personal data ---------------------------------------------------------------
def _record(
    task: int,
    trial: int,
    reward: float,
    calls: list[tuple[str, dict, str]],
    message: str,
    truth: list[tuple[str, dict]],
) -> dict[str, Any]:
    traj: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a library assistant. Follow the policy."},
        {"role": "user", "content": message},
    ]
    for i, (tool, args, result) in enumerate(calls):
        cid = f"call_{task}_{trial}_{i}"
        traj.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        traj.append({"role": "tool", "tool_call_id": cid, "name": tool, "content": result})
    traj.append({"role": "assistant", "content": "Done."})
    actions = [{"name": n, "kwargs": kw} for n, kw in truth]
    return {
        "task_id": task,
        "trial": trial,
        "reward": reward,
        "info": {
            "task": {"user_id": "mbr_4471", "actions": actions, "instruction": "x"},
            "reward_info": {"reward": reward, "actions": actions},
        },
        "traj": traj,
    }


MEMBER = json.dumps(
    {
        "member_id": "mbr_4471",
        "name": {"first_name": "Ada", "last_name": "Quillon"},
        "email": "ada.quillon@example.org",
        "address": {"street": "12 Elm Road", "city": "Springfield", "country": "Utopia"},
        "tier": "premium",
        "loans": [{"loan_id": "LN8812", "status": "active", "shelf": "QX7Z9"}],
    }
)


def test_identifier_detector_collects_run_values_and_flags_patterns() -> None:
    rec = _record(0, 0, 0.0, [("get_member", {"member_id": "mbr_4471"}, MEMBER)], "hello", [])
    det = IdentifierDetector.from_records([rec])
    kinds = lambda text: sorted({f.kind for f in det.findings(text)})  # noqa: E731
    assert kinds("Ask MBR_4471 first") == ["number", "value"]  # id, any case (+ its digits)
    assert kinds("Renew loan LN8812 now") == ["number", "value"]
    assert kinds("Ada Quillon asked") == ["value"]  # names: case-sensitive whole words
    assert kinds("ada asked; Adams asked") == []
    assert kinds("shelf QX7Z9 holds it") == ["value"]  # a code-like token of a tool result
    assert kinds("write to a.b@example.com") == ["email"]
    assert kinds("call +1 (555) 010-9999") == ["phone"]  # not counted again as numbers
    assert kinds("a fine of 250 was due") == ["number"]
    assert kinds("due 2024-05-20 15:00:00") == ["number"]  # a date is a number, not a phone
    assert kinds("a fine of <amount> for loan <loan_id>, 2 weeks") == []  # placeholders, < 3 digits
    # categorical values and address words without digits are not identifying
    assert kinds("premium members in Springfield, Utopia, active loans") == []
    assert det.holds("12 Elm Road") and not det.holds("Elm Road")


def test_normalized_text_is_the_masked_form() -> None:
    det = IdentifierDetector(ids=["LN8812"], names=["Ada"])
    a = normalized_text("Loan LN8812: paid 250, total 305.", det)
    b = normalized_text("loan <loan_id>:  paid <amount>, total 12", det)
    assert a == b == "loan <>: paid <>, total <>"
    assert normalized_text("Ada asked", det) != normalized_text("Bob asked", det)


# -- ground truth -------------------------------------------------------------------------------
def test_differences_missing_extra_and_arguments() -> None:
    truth = [
        Call("get_member", {"member_id": "m1"}),
        Call("renew_loan", {"loan_id": "L1", "weeks": 2}),
        Call("pay_fine", {"amount": 5, "items": [{"id": "a"}]}),
    ]
    run = [
        Call("get_member", {"member_id": "zz"}),  # a read: never compared
        Call("renew_loan", {"loan_id": "L1", "weeks": 4}, ok=False),  # refused: changed nothing
        Call("renew_loan", {"loan_id": "L1", "weeks": 4.0, "note": "extra field"}),
        Call("pay_fine", {"amount": 5.0, "items": [{"id": "a", "label": "ignored"}]}),
        Call("close_account", {"member_id": "m1"}),
    ]
    assert differences(truth, run) == [
        Difference("arg", "renew_loan", "weeks"),
        Difference("extra", "close_account"),
    ]
    assert differences(truth, run[:2]) == [
        Difference("missing", "renew_loan"),
        Difference("missing", "pay_fine"),
    ]
    ignore = unjudged([(truth, run)])
    assert differences(truth, run, ignore) == []
    assert not is_state_changing("searchDirectFlight") and is_state_changing("transfer_to_agent")


def test_records_give_their_ground_truth_and_calls_in_order() -> None:
    rec = _record(
        1,
        0,
        0.0,
        [
            ("renew_loan", {"loan_id": "L1"}, "Error: loan is overdue"),
            ("renew_loan", {"loan_id": "L1"}, '{"ok": true}'),
            ("pay_fine", {}, '{"error": "no fine"}'),
        ],
        "hello",
        [("renew_loan", {"loan_id": "L1"})],
    )
    assert [(c.tool, c.ok) for c in run_calls(rec)] == [
        ("renew_loan", False),
        ("renew_loan", True),
        ("pay_fine", False),
    ]
    assert expected_actions(rec) == [Call("renew_loan", {"loan_id": "L1"})]
    del rec["info"]["task"]
    assert expected_actions(rec) == [Call("renew_loan", {"loan_id": "L1"})]  # reward_info


def test_a_block_names_a_difference_in_any_form() -> None:
    diff = Difference("arg", "book_reservation", "payment_methods")
    for text in (
        "Before calling book_reservation, check the payment methods.",
        "book-reservation: payment_method must match",
        "BookReservation needs PaymentMethods",
    ):
        assert names_difference(text, diff), text
    assert not names_difference("book_reservation failed", diff)  # the key is not named
    assert not names_difference("rebook_reservation payment methods", diff)
    assert names_difference("call cancel_reservation", Difference("missing", "cancel_reservation"))
    assert mentions("two addresses", "address") and mentions("check baggage", "baggages")
    assert corrected(
        "pay_fine first",
        [Difference("arg", "renew_loan", "weeks"), Difference("missing", "pay_fine")],
    )


# -- ranking metrics and their random values -----------------------------------------------------
def test_metrics_on_a_hand_made_ranking() -> None:
    ranked = ["a", "b", "c", "d"]
    relevant = {"b", "d", "z"}
    assert recall_at_k(ranked, relevant, 2) == pytest.approx(1 / 3)
    assert normalized_recall_at_k(ranked, relevant, 2) == pytest.approx(1 / 2)
    assert normalized_recall_at_k(ranked, {"a"}, 5) == 1.0
    assert hit_at_k(ranked, relevant, 1) == 0.0 and hit_at_k(ranked, relevant, 2) == 1.0
    assert reciprocal_rank(ranked, relevant, 5) == 0.5
    assert reciprocal_rank(ranked, {"d"}, 3) == 0.0
    for fn in (recall_at_k, normalized_recall_at_k):
        with pytest.raises(ValueError, match="no relevant"):
            fn(["a"], set(), 5)
    with pytest.raises(ValueError, match="relevant <= pool"):
        random_expectation(3, 4, 2)


@pytest.mark.parametrize(("pool", "rel", "k"), [(6, 2, 3), (7, 1, 5), (5, 4, 2), (6, 3, 6)])
def test_random_expectation_matches_every_permutation(pool: int, rel: int, k: int) -> None:
    relevant = {str(i) for i in range(rel)}
    fns = {
        "recall": recall_at_k,
        "normalized_recall": normalized_recall_at_k,
        "hit": hit_at_k,
        "rr": reciprocal_rank,
    }
    totals = dict.fromkeys(fns, 0.0)
    perms = list(itertools.permutations([str(i) for i in range(pool)]))
    for perm in perms:
        for name, fn in fns.items():
            totals[name] += fn(perm, relevant, k)
    exact = random_expectation(pool, rel, k)
    for name, total in totals.items():
        assert isclose(exact[name], total / len(perms), rel_tol=1e-12), name


def test_random_subset_probability_matches_enumeration() -> None:
    flags = [0b01, 0b10, 0b00, 0b11, 0b01, 0b00, 0b10]
    accept = lambda u: u & 0b11 == 0b11  # noqa: E731
    for k in (1, 2, 3, 7, 9):
        draw = min(k, len(flags))
        subsets = list(itertools.combinations(range(len(flags)), draw))
        want = sum(accept(sum_or([flags[i] for i in s])) for s in subsets) / comb(len(flags), draw)
        assert random_subset_probability(flags, k, accept) == pytest.approx(want)
    assert random_subset_probability([], 3, accept) == 0.0


def sum_or(masks: list[int]) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


def test_score_queries_counts_every_query() -> None:
    out = score_queries(
        {"1": ["a", "b"], "2": ["c"], "3": ["e"]},
        {"1": {"b"}, "2": {"x", "y"}, "3": set()},
        pool=10,
        k=2,
    )
    # query 3 has no relevant item: it counts 0 on both sides, never left out
    assert out["queries"] == 3 and out["without_relevant"] == 1 and out["pool"] == 10
    assert out["hit"] == pytest.approx(1 / 3) and out["mrr"] == pytest.approx(0.5 / 3)
    assert out["normalized_recall"] == pytest.approx(1 / 3)
    rand = [random_expectation(10, 1, 2), random_expectation(10, 2, 2)]
    assert out["random"]["mrr"] == pytest.approx((rand[0]["rr"] + rand[1]["rr"]) / 3)
    empty = score_queries({}, {}, pool=3, k=1)
    assert empty["hit"] is None and empty["random"]["hit"] is None
    none_relevant = score_queries({"1": []}, {"1": set()}, pool=3, k=1)
    assert none_relevant["hit"] == 0.0 and none_relevant["random"]["hit"] == 0.0


def test_lesson_figures_on_hand_made_lessons() -> None:
    det = IdentifierDetector(ids=["mbr_4471"])
    ctx = Context(
        split=None,
        detector=det,
        quotes=QuoteMasker([MSG]),  # type: ignore[arg-type]
        ignore=frozenset(),
        k=5,
    )

    def exp(content: str, sources: list[str], confidence: float) -> Experience:
        return Experience(
            tenant_id="t",
            kind=ExperienceKind.RULE,
            content=content,
            source_trajectory_ids=sources,
            confidence=confidence,
        )

    items = [
        exp("Pay <amount> before renewing.", ["ok1"], 0.8),
        exp("pay 250 before  renewing", ["bad1"], 0.4),  # same masked text as the first
        exp(f"For '{MSG}' ask first.", ["ok1", "bad1"], 0.6),  # quotes the task; mixed sources
        exp("Member mbr_4471 owes money.", ["bad1"], 0.2),  # an id (and 4 digits)
    ]
    out = lesson_figures(ctx, items, runs=8, sources_ok={"ok1": True, "bad1": False})
    assert out["count"] == 4 and out["per_run"] == 0.5
    assert out["duplicates"] == {"rate": 0.5, "lessons": 2, "distinct_texts": 3, "largest_group": 2}
    assert out["identifiers"]["lessons"] == 2 and out["identifiers"]["share"] == 0.5
    assert out["identifiers"]["by_kind"] == {"number": 2, "value": 1}
    assert out["quoted_task_text"] == {"lessons": 1, "share": 0.25}
    conf = out["confidence_by_source"]
    assert conf["success"] == {"n": 1, "mean": 0.8}
    assert conf["failure"]["n"] == 2 and conf["failure"]["mean"] == pytest.approx(0.3)
    assert conf["mixed"] == {"n": 1, "mean": 0.6}


# -- the harness on a synthetic file with known answers ------------------------------------------
MSG_A = "Hello, I would like more time with the novel I borrowed last month."
MSG_B = "Hi there, I think I owe some money and want to clear it today."
RENEW = ("renew_loan", {"loan_id": "LN8812", "weeks": 2})
PAY = ("pay_fine", {"member_id": "mbr_4471", "amount": 15})
LOOKUP = ("get_member", {"member_id": "mbr_4471"}, MEMBER)


def _synthetic(path: Path) -> Path:
    """Task 0 (renew a loan): trials 0 and 1 fail (wrong weeks; no renewal), 2 succeeds, held-out
    3 fails with the wrong weeks. Task 1 (pay a fine): every trial succeeds."""
    ok = '{"status": "ok"}'
    wrong = ("renew_loan", {"loan_id": "LN8812", "weeks": 4}, ok)
    right = (*RENEW, ok)
    records = [
        _record(0, 0, 0.0, [LOOKUP, wrong], MSG_A, [RENEW]),
        _record(0, 1, 0.0, [LOOKUP], MSG_A, [RENEW]),
        _record(0, 2, 1.0, [LOOKUP, right], MSG_A, [RENEW]),
        _record(0, 3, 0.0, [LOOKUP, wrong], MSG_A, [RENEW]),
    ] + [_record(1, t, 1.0, [LOOKUP, (*PAY, ok)], MSG_B, [PAY]) for t in range(4)]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


class ScriptedReviewer:
    """Known lessons: one per task quoting its request (identical across its trials, so they
    fold into one), and one with a member id from task 0's first trial. None shares a word
    with the queries once the quote is masked."""

    name = "scripted"

    async def review(self, trajectory: Trajectory) -> list[Lesson]:
        task, trial = int(trajectory.metadata["task_id"]), int(trajectory.metadata["trial"])
        text = (
            f"For '{MSG_A}': call renew_loan using requested weeks."
            if task == 0
            else f"For '{MSG_B}': use pay_fine; amount exact."
        )
        out = [Lesson(kind=ExperienceKind.RULE, content=text, confidence=0.6)]
        if (task, trial) == (0, 0):
            out.append(
                Lesson(
                    kind=ExperienceKind.ANTI_PATTERN,
                    confidence=0.6,
                    content="Member mbr_4471 double charged: refund promptly.",
                )
            )
        return out


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Context]:
    path = _synthetic(tmp_path_factory.mktemp("learning") / "tau.json")
    runs, records = load_runs(path)
    split = split_runs(runs, [0, 1, 2], 3)
    yield Context.build(split, records, runs, k=1)


def test_split_and_ground_truth_of_the_synthetic_file(synthetic: Context) -> None:
    split = synthetic.split
    assert [(r.task, r.trial) for r in split.train] == [
        ("0", 0),
        ("1", 0),
        ("0", 1),
        ("1", 1),
        ("0", 2),
        ("1", 2),
    ]
    assert [(r.task, r.success) for r in split.held] == [("0", False), ("1", True)]
    assert synthetic.ignore == frozenset()  # the successful runs match their ground truth
    assert differences(split.held[0].expected, split.held[0].calls) == [
        Difference("arg", "renew_loan", "weeks")
    ]


def test_harness_figures_on_the_synthetic_file(synthetic: Context) -> None:
    out = evaluate_reviewer(synthetic, make_embedder("hash"), ScriptedReviewer())
    assert out["reviewer"] == "scripted" and out["reviewed_runs"] == 6
    assert out["review_failures"] == 0 and out["episodes"] == 6
    # the id lesson names a member id that only get_member's result holds: held by its
    # provenance (docs/security.md#provenance), so not among the lessons the figures count
    assert out["quarantined"] == 1
    lessons = out["lessons"]
    # two lessons: the quoting ones, each folded over its task's runs
    assert lessons["count"] == 2 and lessons["per_run"] == pytest.approx(1 / 3)
    assert lessons["duplicates"]["rate"] == 0.0
    assert lessons["identifiers"]["lessons"] == 0
    assert lessons["quoted_task_text"]["lessons"] == 2
    conf = lessons["confidence_by_source"]
    assert (conf["success"]["n"], conf["failure"]["n"], conf["mixed"]["n"]) == (1, 0, 1)

    rec = out["recall"]
    stored = rec["as_stored"]["with_situation"]
    assert stored["queries"] == 2 and stored["pool"] == 2
    assert stored["hit"] == stored["mrr"] == stored["normalized_recall"] == 1.0
    # each task has one relevant lesson of the two
    assert stored["random"]["hit"] == pytest.approx(1 / 2)
    assert rec["as_stored"]["lesson_text_only"]["hit"] == 1.0
    # the quotes masked, nothing of a lesson's own text is left for the query to match...
    assert rec["masked"]["lesson_text_only"]["hit"] == 0.0
    # ... unless recall matches the situation (the episodes of the lesson's source runs)
    situation = 1.0 if rec["situation_exposed"] else 0.0
    assert rec["masked"]["with_situation"]["hit"] == situation
    assert rec["replay"] == {
        "lessons_as_stored": 2,
        "lessons_masked": 2,
        "same_top_k_as_first_store": 2,
        "queries": 2,
    }

    outcomes = out["outcomes"]
    failed, succeeded = (
        outcomes["recalled_by_failed_only"],
        outcomes["recalled_by_successful_only"],
    )
    assert failed["n"] == 1 and succeeded["n"] == 1 and outcomes["recalled_by_both"]["n"] == 0
    assert failed["after"] < failed["before"] and succeeded["after"] > succeeded["before"]

    cor = out["corrective"]
    assert (cor["failed_runs"], cor["with_difference"], cor["corrected"]) == (1, 1, 1)
    assert cor["share"] == 1.0
    assert cor["random"] == pytest.approx(1 / 2)  # one lesson of two names renew_loan + weeks
    assert cor["by_op"]["arg"] == {"runs": 1, "corrected": 1}
    assert cor["per_run"] == [
        {"task": "0", "differences": ["arg renew_loan.weeks"], "corrected": True}
    ]
    # the scripted lessons carry no argument condition, so no check names the
    # class of weeks the ground truth used (the heuristic reviewer's contrast rules do); the
    # rule about renew_loan is shown before the call, so it names the tool only
    assert out["checks"] == {
        "failed_runs": 1,
        "failed_runs_with_state_change": 1,
        "failed_runs_with_difference": 1,
        "named": 0,
        "share": 0.0,
        "named_tool_only": 1,
        "share_tool_only": 1.0,
        "by_op": {
            "missing": {"runs": 0, "named": 0, "named_tool_only": 0},
            "extra": {"runs": 0, "named": 0, "named_tool_only": 0},
            "arg": {"runs": 1, "named": 0, "named_tool_only": 1},
        },
    }


WEEKS_RULE = {
    "lesson_key": "contrast:arg:renew_loan:weeks:higher",
    "contrast": {"op": "arg", "tool": "renew_loan", "key": "weeks", "how": "higher",
                 "expected": "a number", "actual": "a number"},
}  # fmt: skip
# failed runs renewed the loan where the reference paid the fine: shown before renew_loan
FINE_RULE = {
    "lesson_key": "contrast:missing:pay_fine",
    "contrast": {"op": "missing", "tool": "pay_fine", "key": "", "how": "", "expected": "",
                 "actual": "", "references": [], "instead": ["renew_loan"]},
}  # fmt: skip


@pytest.mark.parametrize(
    ("lesson", "named", "tool_only"),
    [
        (None, 0, 0),  # no lesson: nothing shown
        ({"tools": ["renew_loan"], "confidence": 0.8}, 0, 1),  # the tool, not the class
        ({"tools": ["renew_loan"], "confidence": 0.8, "metadata": WEEKS_RULE}, 1, 1),
        # too weak for the gate (score < 0.3): an integration would not show it
        ({"tools": ["renew_loan"], "confidence": 0.2, "metadata": WEEKS_RULE}, 0, 0),
        ({"tools": ["pay_fine"], "confidence": 0.8}, 0, 0),  # about another tool
        # shown before renew_loan but about pay_fine (instead_of): not about renew_loan's weeks
        ({"tools": ["pay_fine", "renew_loan"], "confidence": 0.8, "metadata": FINE_RULE}, 0, 0),
    ],
)
def test_checks_figure_counts_what_a_check_shown_before_the_call_names(
    synthetic: Context, lesson: dict[str, Any] | None, named: int, tool_only: int
) -> None:
    from hindsight.bench.learning._data import TENANT
    from hindsight.bench.learning._harness import _checks_figure
    from hindsight.testing import test_memory

    with test_memory() as mem:
        if lesson is not None:
            mem.add_experience("Before calling renew_loan, use the weeks the member asked for.",
                               tenant_id=TENANT, kind="rule", **lesson)  # fmt: skip
        out = _checks_figure(synthetic, mem)
    # the denominator: the held-out failed runs with a state-changing call (task 0's)
    assert out["failed_runs_with_state_change"] == out["failed_runs"] == 1
    assert (out["named"], out["named_tool_only"]) == (named, tool_only)
    assert out["by_op"]["arg"] == {"runs": 1, "named": named, "named_tool_only": tool_only}


def test_baseline_figures_on_the_synthetic_file(synthetic: Context) -> None:
    out = evaluate_baseline(synthetic, make_embedder("hash"))
    items = out["items"]
    assert items["count"] == 2  # the same message of each task folds into one
    assert items["quoted_task_text"]["share"] == 1.0 and items["identifiers"]["share"] == 0.0
    assert out["recall"]["hit"] == 1.0 and out["recall"]["pool"] == 2
    assert out["corrective"]["corrected"] == 0 and out["corrective"]["random"] is None


# -- the command on the real airline file ---------------------------------------------------------
def test_cli_json_on_a_few_airline_tasks(tau_bench_path: Path, tmp_path: Path) -> None:
    parent = tmp_path / "stores"
    parent.mkdir()
    proc = run_cli(
        "bench",
        "learning",
        str(tau_bench_path),
        "--tasks",
        "3",
        "--json",
        "--data-dir",
        str(parent),
        data_dir=tmp_path / "unused",
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["tasks"], doc["train_runs"], doc["held_out_runs"], doc["k"]) == (3, 9, 3, 5)
    assert doc["train_trials"] == [0, 1, 2] and doc["query_trial"] == 3
    assert doc["commit"] is None or len(doc["commit"]) == 40
    assert doc["cpu_seconds"] > 0 and doc["wall_seconds"] > 0 and doc["machine"]["cpus"] >= 1
    (base,) = doc["baselines"]
    (run,) = doc["runs"]
    assert base["embedder"] == run["embedder"] and run["reviewer"] == "heuristic"
    assert base["embedder_spec"] == run["embedder_spec"] == "hash"
    assert base["items"]["quoted_task_text"]["share"] == 1.0  # raw messages quote themselves
    lessons = run["lessons"]
    assert lessons["count"] > 0 and lessons["per_run"] == pytest.approx(lessons["count"] / 9)
    recall = run["recall"]
    for text in ("as_stored", "masked"):
        for match in ("with_situation", "lesson_text_only"):
            s = recall[text][match]
            for name in ("hit", "normalized_recall", "mrr"):
                assert s[name] is None or 0.0 <= s[name] <= 1.0
                assert 0.0 <= s["random"][name] <= 1.0
    assert recall["replay"]["same_top_k_as_first_store"] == recall["replay"]["queries"] == 3
    cor = run["corrective"]
    assert cor["with_difference"] <= cor["failed_runs"] == doc["held_out_failed"]
    checks = run["checks"]  # checks before the held-out failed runs' calls
    assert checks["failed_runs_with_difference"] == cor["with_difference"]
    assert checks["failed_runs"] == cor["failed_runs"]
    assert checks["failed_runs_with_difference"] <= checks["failed_runs_with_state_change"]
    assert 0 <= checks["named"] <= checks["named_tool_only"]
    assert checks["named_tool_only"] <= checks["failed_runs_with_state_change"]
    assert 0.0 <= cor["random"] <= 1.0 and len(cor["per_run"]) == cor["failed_runs"]
    assert list(parent.iterdir()) == []  # every temporary store was removed
    assert not (tmp_path / "unused").exists()  # the global data dir was never opened


def test_cli_text_tables(tau_bench_path: Path, tmp_path: Path) -> None:
    proc = run_cli(
        "bench", "learning", str(tau_bench_path), "--tasks", "2", data_dir=tmp_path, timeout=900
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for title in (
        "Same-task lessons in the top 5",
        "Lessons (episodes excluded)",
        "Held-out runs",
        "masked, text only",
        "raw messages",
        "commit ",
    ):
        assert title in out, title
    assert "learning: " in proc.stderr  # progress goes to stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["NOFILE"], "error: no such file: NOFILE"),
        (["TAU", "--train-trials", "0,x"], "error: --train-trials: 'x' is not a trial number"),
        (["TAU", "--query-trial", "1"], "error: trial 1 cannot be both reviewed and held out"),
        (["TAU", "--query-trial", "7"], "error: the file has no run of trial 7 to hold out"),
        (["TAU", "--k", "0"], "error: --k must be in 1..1000, got 0"),
        (["TAU", "--tasks", "0"], "error: --tasks must be >= 1, got 0"),
        (["TAU", "--reviewers", "llm"], "error: reviewer 'llm' needs a model"),
        (["TAU", "--reviewers", "gpt"], "error: --reviewers: unknown ['gpt']"),
        (["TAU", "--embedders", "word2vec"], "error: unknown embedding model"),
    ],
)
def test_cli_rejects_bad_input_in_one_line(
    tau_bench_path: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    args = [str(tau_bench_path) if a == "TAU" else a for a in args]
    proc = run_cli(
        "bench",
        "learning",
        *args,
        data_dir=tmp_path,
        REFLECTION_MODEL="",
        HINDSIGHT_REFLECTION_MODEL="",
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and message in errors[0], proc.stderr


# -- rules that say when (hindsight.bench.learning._conditions) -----------------------------------
def test_the_strict_figures_on_a_generic_domain(tmp_path: Path) -> None:
    """A planted policy (renewing a suspended member fails): on tasks never reviewed, the failed
    runs that renewed for a suspended member get a block and a check naming the condition they
    violated; without expected actions too; a condition-less rule never counts."""
    from hindsight.bench.learning import Run, evaluate_conditions, parse_every, task_split
    from hindsight.bench.learning._conditions import violates
    from hindsight.review.mining import record_of
    from tests.domains import library_runs

    trajs = library_runs(31, tasks=40, replicas=4, expected=True)
    runs = []
    for i, traj in enumerate(trajs):
        traj = traj.model_copy(update={"tenant_id": "bench-learning"})
        runs.append(Run(traj, traj.task_key or "", i % 4, traj.outcome.value == "success",
                        traj.task, (), ()))  # fmt: skip
    split = task_split(runs, 5)
    assert {r.task for r in split.held}.isdisjoint({r.task for r in split.train})
    for mode in ("expected", "outcome"):
        out = evaluate_conditions(runs, split="task", mode=mode, k=5, every=5, parent=tmp_path)
        assert out["conditional_rules"] >= 1 and out["truisms"] == 0, out
        assert out["failed_runs"] == sum(not r.success for r in split.held)
        assert out["text_only"]["queries"] == len(split.held)  # every query counted
        assert out["opposed_blocks"] == 0
        # the failed held-out runs that renewed for a suspended member violated the rule
        violators = [
            r for r in split.held if not r.success and any(c.tool == "renew_loan" for c in
            record_of(r.trajectory).calls) and "suspended" in str(r.trajectory.events[2].content)
        ]  # fmt: skip
        assert violators and out["corrective"] >= len(violators), out
        assert out["corrective_checks"] >= len(violators), out
        assert out["corrective_random"] < 0.5
    bare = {"tool": "renew_loan", "form": "avoid", "predicates": []}
    assert not any(violates(bare, record_of(r.trajectory)) for r in runs)
    # why a rule was written or not: the strongest condition per decision, in both modes
    from hindsight.bench.learning._conditions import nearest_conditions
    from hindsight.bench.learning._report import _nearest

    near = nearest_conditions(runs, train_trials=[0, 1, 2], query_trial=3)
    for mode in ("expected", "outcome"):
        [renew] = [n for n in near[mode] if (n["tool"], n["form"]) == ("renew_loan", "avoid")]
        assert renew["condition"] == "member.standing (from get_member) is suspended"
        assert renew["stands"] and _nearest(renew).endswith("(stands)")
    weak = {**renew, "stands": False, "p": 0.2, "needed": 0.002, "wilson": 0.3}
    assert _nearest(weak).endswith(
        f"p 0.2 (needs p <= 0.002, {renew['tested']} conditions tested and bad-rate lower "
        "bound 0.30 < 0.4)"
    )
    assert parse_every("every:5") == 5
    for bad in ("5", "every:1", "every:x", ""):
        with pytest.raises(UsageError):
            parse_every(bad)


def test_within_task_contrasts_count_task_groups_where_calling_went_worse_or_better() -> None:
    from hindsight.bench.learning import Run
    from hindsight.bench.learning._conditions import within_task_contrasts
    from hindsight.bench.learning._truth import Call

    traj = Trajectory(task="t", tenant_id="bench-learning")

    def runs(task: str, *made: tuple[bool, bool]) -> list[Run]:
        """(called renew_loan, succeeded) per run of ``task``."""
        calls = (Call("get_member"),)
        return [
            Run(traj, task, i, ok, "t", (), (*calls, Call("renew_loan")) if called else calls)
            for i, (called, ok) in enumerate(made)
        ]

    given = [
        *runs("a", (True, False), (False, True)),  # calling went worse
        *runs("b", (True, False), (True, True), (False, True)),  # worse: 0.5 < 1.0
        *runs("c", (True, True), (False, False)),  # better
        *runs("d", (True, True), (False, True)),  # a tie: neither
        *runs("e", (True, False), (True, False)),  # no run without it: not a contrast
    ]
    assert within_task_contrasts(given) == {"renew_loan": {"worse": 2, "better": 1}}
    assert within_task_contrasts([]) == {}
