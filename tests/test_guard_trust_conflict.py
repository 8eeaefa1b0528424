"""Conflicts settled by trust and evidence, not by count (docs/security.md, layer 2).

A lesson is quarantined for contradicting established lessons only when they outweigh it:
their total support mass is at least its own and the most trusted of them is at least as
trusted as it (:func:`hindsight.guard.outweighs`). Repeating a low-trust claim, however often
and however confidently, never quarantines a more trusted lesson that contradicts it. Tested as
a property of mixed-trust write sequences through the engine's write path.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight import Memory
from hindsight.guard import Established, Guard, compare, outweighs, trust_weight
from hindsight.testing import test_memory

PAIRS = [
    ("Retry order_query once after a timeout.", "Never retry order_query after a timeout."),
    ("Cache order_query results for one hour.", "Never cache order_query results."),
    ("超时后先重试一次 refund_order。", "超时后不要重试 refund_order。"),
]
SOURCES = ["system", "user", "tool", "unknown"]
WRITE = st.tuples(
    st.integers(0, len(PAIRS) - 1),  # which claim
    st.booleans(),  # the claim or its opposite
    st.sampled_from(SOURCES),
    st.floats(0.5, 1.0),  # confidence
    st.integers(1, 7),  # times repeated (low-trust floods repeat)
)


def _contradicts(a: str, b: str) -> bool:
    return compare(a, b).contradicts(0.6)


def _conflict_reasons(exp: Any) -> list[str]:
    return [r for r in exp.metadata.get("quarantine_reasons", []) if r.startswith("conflict:")]


def _state(mem: Memory, tenant: str) -> dict[str, Any]:
    rows = mem.list_experiences(tenant_id=tenant, limit=1000)
    rows += mem.list_quarantined(tenant_id=tenant, limit=1000)
    return {e.id: e for e in rows}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(writes=st.lists(WRITE, min_size=1, max_size=10))
def test_no_lesson_is_quarantined_by_lower_trust_repetition(
    writes: list[tuple[int, bool, str, float, int]],
) -> None:
    with test_memory() as mem:
        tenant = "t"
        for pair, flip, source, confidence, times in writes:
            content = PAIRS[pair][int(flip)]
            for _ in range(times):
                before = _state(mem, tenant)
                mem.add_experience(content, tenant_id=tenant, source=source, confidence=confidence)
                after = _state(mem, tenant)
                for eid, exp in after.items():
                    old = before.get(eid)
                    if not _conflict_reasons(exp) or (old and _conflict_reasons(old)):
                        continue
                    # quarantined for a conflict by this write: the active, confident lessons
                    # it contradicts outweigh it in trust and in total trust
                    against = [
                        o
                        for o in before.values()
                        if o.status.value == "active"
                        and o.id != eid
                        and o.confidence >= 0.8
                        and _contradicts(exp.content, o.content)
                    ]
                    assert against, exp.metadata["quarantine_reasons"]
                    assert max(o.trust for o in against) >= exp.trust
                    assert sum(o.trust for o in against) >= exp.trust
                    assert trust_weight(source) <= max(o.trust for o in against)


def test_seven_confident_tool_repeats_do_not_quarantine_a_system_lesson() -> None:
    wrong, right = PAIRS[0][1], PAIRS[0][0]
    with test_memory() as mem:
        for run in range(7):
            mem.add_experience(
                wrong, tenant_id="t", source="tool", confidence=0.8, tags=[f"run{run}"]
            )
        good = mem.add_experience(right, tenant_id="t", source="system", confidence=0.7)
        assert good.status.value == "active", good.metadata.get("quarantine_reasons")
        hits = mem.recall("retry order_query after a timeout", tenant_id="t", top_k=10)
        assert good.id in [h.experience.id for h in hits.hits]
        # the same wrong claim from a single user is still outweighed by the system lesson
        user = mem.add_experience(wrong, tenant_id="t2", source="user", confidence=0.95)
        system = mem.add_experience(right, tenant_id="t2", source="system", confidence=0.9)
        assert user.status.value == "active" and system.status.value == "active"
        # the other way round the low-trust newcomer is quarantined, with the weights shown
        # (a tool-sourced lesson is held until approved: docs/security.md#held-until-confirmed)
        late = mem.add_experience(wrong, tenant_id="t3", source="tool", confidence=0.5)
        assert late.status.value == "quarantined"
        late = mem.approve(late.id, tenant_id="t3")
        mem.add_experience(right, tenant_id="t3", source="system", confidence=0.9)
        newcomer = mem.add_experience(wrong + " ", tenant_id="t3", source="tool", confidence=0.5)
        assert late.status.value == "active"
        reason = _conflict_reasons(mem.get_experience(newcomer.id, tenant_id="t3"))
        assert reason and "trust 1.00 >= 0.60" in reason[0], reason


@pytest.mark.parametrize(
    ("against", "trust", "support", "expected"),
    [
        ([Established("x", 0.9, 0.6, 0.6)] * 7, 1.0, 1.0, False),  # lower trust, repeated
        ([Established("x", 0.9, 1.0, 1.0)], 1.0, 1.0, True),  # equal: the established wins
        ([Established("x", 0.9, 1.0, 1.0)], 0.9, 2.7, False),  # more support on the candidate
        ([Established("x", 0.9, 0.9, 0.9)] * 3, 0.9, 2.7, True),
        ([Established("x", 0.9)], 1.0, 1.0, True),  # unknown trust: the older test
    ],
)
def test_outweighs(
    against: list[Established], trust: float, support: float, expected: bool
) -> None:
    assert outweighs(against, trust, support) is expected


def test_guard_check_weighs_the_candidate() -> None:
    guard = Guard(rules=[])
    right, wrong = PAIRS[1]
    existing = [Established(wrong, 0.95, 0.6, 0.6)]
    assert guard.check(right, source="system", existing=existing).verdict == "allow"
    assert guard.check(right, source="tool", existing=existing).rule_ids == ("conflict",)
    assert guard.check(right, existing=existing, trust=0.6, support=0.7).verdict == "allow"
    assert guard.check(right, existing=[(wrong, 0.95)], source="system").quarantined
