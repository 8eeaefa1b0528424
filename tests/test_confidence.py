"""Evidence-based confidence (hindsight.writeback.confidence;
docs/lifecycle.md#confidence-hindsightwritebackconfidence):
the Beta posterior with numbers, the saturation rules, and properties (hypothesis) of mixed-
trust writes: repetition from one source or from low-trust sources cannot buy confidence, and
a contradiction between a high-trust and a low-trust lesson is not settled by count."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight._errors import UsageError
from hindsight.models import Experience
from hindsight.writeback import confidence as cf

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def run(trust: float, polarity: int = 1, tid: str | None = None) -> dict[str, Any]:
    return {
        "trajectory_id": tid or str(uuid.uuid4()),
        "polarity": polarity,
        "role": "test",
        "trust": trust,
    }


def lesson(prior: float, support: list[dict[str, Any]], **kw: Any) -> Experience:
    exp = Experience(
        tenant_id="t",
        kind="rule",
        content=kw.pop("content", "check the total before paying"),
        confidence=prior,
        metadata={cf.SUPPORT_KEY: support, **kw.pop("metadata", {})},
        **kw,
    )
    return cf.initial(exp)


# -- the formula, with numbers ------------------------------------------------------------------


def test_no_evidence_is_the_prior() -> None:
    assert cf.posterior(0.6, []) == 0.6
    assert cf.posterior(0.0, []) == 0.0
    exp = lesson(0.6, [])
    assert exp.confidence == 0.6
    assert cf.SUPPORT_KEY not in exp.metadata and cf.BASIS_KEY not in exp.metadata


@pytest.mark.parametrize(
    ("prior", "support", "outcomes", "expected"),
    [
        # one supporting run of full trust: (2*0.6 + 1) / (2 + 1)
        (0.6, [(1.0, 1)], (0, 0), 2.2 / 3),
        # a user run (0.9) and a system run (1.0): (1.2 + 1.9) / (2 + 1.9)
        (0.6, [(0.9, 1), (1.0, 1)], (0, 0), 3.1 / 3.9),
        # a supporting and a contradicting run of full trust: (1.2 + 1) / (2 + 2)
        (0.6, [(1.0, 1), (1.0, -1)], (0, 0), 2.2 / 4),
        # Laplace's rule of succession: c0 = 0.5, 3 successes of 4: (1 + 3) / (2 + 4)
        (0.5, [(1.0, 1)] * 0, (3, 1), 4 / 6),
        # five tool-output runs (0.6 each) weigh MAX_LOW_TRUST_MASS = 1.0 together
        (0.7, [(0.6, 1)] * 5, (0, 0), (1.4 + 1.0) / 3),
        # low-trust contradictions saturate too: (1.2 + 0) / (2 + 1.0)
        (0.6, [(0.5, -1)] * 4, (0, 0), 1.2 / 3),
    ],
)
def test_posterior_numbers(
    prior: float,
    support: list[tuple[float, int]],
    outcomes: tuple[float, float],
    expected: float,
) -> None:
    entries = [run(t, p) for t, p in support]
    assert cf.posterior(prior, entries, outcomes=outcomes) == pytest.approx(expected)


def test_one_run_counts_once_per_polarity_at_its_highest_trust() -> None:
    tid = str(uuid.uuid4())
    once = cf.posterior(0.6, [run(0.9, tid=tid)])
    assert cf.posterior(0.6, [run(0.9, tid=tid)] * 10) == once
    assert cf.posterior(0.6, [run(0.6, tid=tid), run(0.9, tid=tid)]) == once
    both = cf.posterior(0.6, [run(0.9, tid=tid), run(0.9, -1, tid=tid)])
    assert both == pytest.approx((1.2 + 0.9) / (2 + 1.8))


def test_support_mass_adds_outcomes() -> None:
    exp = lesson(0.6, [run(1.0), run(0.6), run(0.6), run(0.9, -1)])
    assert cf.support_mass(exp) == pytest.approx((2.0, 0.9))
    exp = cf.with_outcome(cf.with_outcome(exp, True, NOW), False, NOW)
    assert cf.support_mass(exp) == pytest.approx((3.0, 1.9))
    assert (exp.helped_count, exp.misled_count) == (1, 1)
    assert exp.confidence == pytest.approx((1.2 + 3.0) / (2 + 4.9))


def test_legacy_experience_without_basis_keeps_its_confidence_as_prior() -> None:
    old = Experience(tenant_id="t", kind="rule", content="x y z", confidence=0.73, trust=0.9)
    assert cf.support_mass(old) == (0.9, 0.0)  # no run: backed by its source alone
    helped = cf.with_outcome(old, True, NOW)
    assert helped.confidence == pytest.approx((2 * 0.73 + 1) / 3)
    assert helped.metadata[cf.BASIS_KEY]["prior"] == 0.73


def test_adjust_is_an_offset_that_survives_new_evidence() -> None:
    exp = lesson(0.6, [run(1.0)])  # 0.7333
    down = cf.adjusted(exp, -0.3, NOW)
    assert down.confidence == pytest.approx(2.2 / 3 - 0.3)
    assert down.metadata[cf.BASIS_KEY]["offset"] == pytest.approx(-0.3)
    more = cf.folded(down, lesson(0.6, [run(1.0)]), NOW)  # a second run of full trust
    assert more.confidence == pytest.approx(3.2 / 4 - 0.3)
    assert cf.adjusted(exp, 0.9, NOW).confidence == 1.0  # clamped like before
    back = cf.adjusted(cf.adjusted(exp, 0.9, NOW), -0.1, NOW)
    assert back.confidence == pytest.approx(0.9)  # from the clamped value, as asked


def test_fold_unites_evidence_without_inflating_on_the_same_run() -> None:
    tid = str(uuid.uuid4())
    first = lesson(0.6, [run(0.9, tid=tid)], source_trajectory_ids=[tid])
    same = lesson(0.9, [run(0.9, tid=tid)], source_trajectory_ids=[tid], content="other words")
    again = cf.folded(first, same, NOW)
    assert again.confidence == first.confidence and again.support_count == 1
    assert again.content == first.content  # the first writer's text
    other = str(uuid.uuid4())
    new = lesson(0.6, [run(0.9, tid=other)], source_trajectory_ids=[other])
    grown = cf.folded(again, new, NOW)
    assert grown.support_count == 2 and grown.source_trajectory_ids == [tid, other]
    assert grown.confidence == pytest.approx((1.2 + 1.8) / 3.8)


def test_manual_repeats_count_once_per_source() -> None:
    first = lesson(0.5, [])  # add_experience: no evidence, confidence is the caller's
    again = lesson(0.9, [], trust=0.9)  # a user-sourced add (trust 0.9)
    one = cf.folded(first, again, NOW)
    assert one.confidence == pytest.approx((1.0 + 0.9) / 2.9) and one.support_count == 2
    two = cf.folded(one, again, NOW)
    assert (two.confidence, two.support_count) == (one.confidence, 2)
    system = cf.folded(two, lesson(0.5, [], provenance="system", trust=1.0), NOW)
    assert system.confidence == pytest.approx((1.0 + 1.9) / 3.9) and system.support_count == 3


def test_superseding_counts_the_newer_runs_against_the_older() -> None:
    older = lesson(0.6, [run(1.0)])
    newer = lesson(0.6, [run(0.9), run(1.0)])
    down = cf.superseded(older, newer, NOW)
    assert down.confidence == pytest.approx((1.2 + 1.0) / (2 + 1.0 + 1.9))
    roles = [e["role"] for e in down.metadata[cf.SUPPORT_KEY] if e["polarity"] == -1]
    assert roles == ["superseded_by", "superseded_by"]
    manual = cf.superseded(lesson(0.6, []), lesson(0.5, [], trust=0.9), NOW)
    assert manual.confidence == pytest.approx(1.2 / 2.9)


def test_combined_unites_members() -> None:
    shared = str(uuid.uuid4())
    a = lesson(0.6, [run(1.0, tid=shared)])
    b = cf.with_outcome(lesson(0.7, [run(1.0, tid=shared), run(0.9)]), False, NOW)
    fields = cf.combined([a, b])
    assert fields["confidence"] == pytest.approx((1.4 + 1.9) / (2 + 1.9 + 1))


def test_check_support_refuses_malformed_entries_in_one_line() -> None:
    good = str(uuid.uuid4())
    assert cf.check_support([{"trajectory_id": good.upper(), "polarity": -1, "role": "r"}]) == [
        {"trajectory_id": good, "polarity": -1, "role": "r"}
    ]
    for bad, word in [
        ("x", "list"),
        ([1], "object"),
        ([{"trajectory_id": good, "polarity": 2}], "polarity"),
        ([{"trajectory_id": good, "polarity": True}], "polarity"),
        ([{"trajectory_id": "run-1", "polarity": 1}], "trajectory_id"),
        ([{"trajectory_id": good, "polarity": 1, "trust": 1.5}], "trust"),
    ]:
        with pytest.raises(UsageError, match=word) as info:
            cf.check_support(bad)
        assert "\n" not in str(info.value)


# -- properties --------------------------------------------------------------------------------

trusts = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
low_trusts = st.floats(min_value=0.0, max_value=cf.LOW_TRUST, exclude_max=True)
priors = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(prior=priors, trust=trusts, repeats=st.integers(1, 50))
def test_repeats_of_one_source_count_once(prior: float, trust: float, repeats: int) -> None:
    tid = str(uuid.uuid4())
    exp = lesson(prior, [run(trust, tid=tid)], source_trajectory_ids=[tid])
    first = exp
    for _ in range(repeats):
        exp = cf.folded(exp, lesson(0.99, [run(trust, tid=tid)], source_trajectory_ids=[tid]), NOW)
    assert exp.confidence == first.confidence
    assert exp.support_count == first.support_count


@PROPS
@given(prior=priors, runs=st.lists(low_trusts, min_size=1, max_size=60))
def test_low_trust_support_saturates(prior: float, runs: list[float]) -> None:
    """Any number of distinct low-trust runs is worth at most MAX_LOW_TRUST_MASS: no more than
    one full-trust run."""
    many = cf.posterior(prior, [run(t) for t in runs])
    cap = cf.posterior(prior, [run(cf.MAX_LOW_TRUST_MASS)])
    assert many <= cap + 1e-9
    assert cf.mass([run(t) for t in runs])[0] <= cf.MAX_LOW_TRUST_MASS + 1e-9


@PROPS
@given(
    high=st.lists(st.floats(min_value=cf.LOW_TRUST, max_value=1.0), min_size=1, max_size=5),
    low=st.lists(low_trusts, min_size=1, max_size=80),
    prior=st.floats(min_value=0.3, max_value=0.9),
)
def test_a_high_trust_lesson_is_not_outweighed_by_counting_low_trust_repeats(
    high: list[float], low: list[float], prior: float
) -> None:
    """Two contradicting lessons with the same prior: one learned from high-trust runs, one
    repeated by any number of low-trust runs (each run also counting against the other
    lesson). Count alone never gives the low-trust one more support or more confidence when
    its trust total is lower."""
    high_runs = [run(t) for t in high]
    low_runs = [run(t) for t in low]
    against_low = [{**r, "polarity": -1} for r in high_runs]
    against_high = [{**r, "polarity": -1} for r in low_runs]
    trusted = lesson(prior, high_runs + against_high)
    repeated = lesson(prior, low_runs + against_low)
    s_high, c_high = cf.support_mass(trusted)
    s_low, _ = cf.support_mass(repeated)
    assert s_low <= cf.MAX_LOW_TRUST_MASS + 1e-9 and c_high <= cf.MAX_LOW_TRUST_MASS + 1e-9
    if sum(high) >= cf.MAX_LOW_TRUST_MASS:
        assert s_high >= s_low
        assert trusted.confidence >= repeated.confidence


@PROPS
@given(prior=priors, weights=st.lists(trusts, min_size=0, max_size=12), extra=trusts)
def test_supporting_evidence_never_lowers_and_contradiction_never_raises(
    prior: float, weights: list[float], extra: float
) -> None:
    base = [run(t) for t in weights]
    before = cf.posterior(prior, base)
    assert cf.posterior(prior, [*base, run(extra)]) >= before - 1e-12
    assert cf.posterior(prior, [*base, run(extra, -1)]) <= before + 1e-12
    assert 0.0 <= before <= 1.0
