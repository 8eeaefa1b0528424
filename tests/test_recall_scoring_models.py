"""The hits recall builds without validation (hindsight/recall/scoring.py builds each
:class:`RecallHit` and :class:`ScoreBreakdown` with pydantic's ``model_construct``) are the
models validation would build: equal to their validated copies, with exact field types, and
no two hits sharing a mutable value - in vector mode with tag and tool matches, through the
situation match, and in exact task_type mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hindsight import ExperienceKind, Lesson, Memory, RecallHit, ScoreBreakdown, Trajectory
from hindsight.embedders import HashEmbedder
from hindsight.testing import ScriptedReviewer
from tests.helpers import trajectory

TRIP = "Fly me from Boston to Denver next Tuesday with two checked bags, window seat please."
QUERY = "a flight from Boston to Denver next Tuesday with two checked bags and a window seat"
ADVICE = "Sum every payment method, compare the result against the fare total before booking."


def _lessons(traj: Trajectory) -> list[Lesson]:
    if traj.task != TRIP:
        return []
    return [Lesson(kind=ExperienceKind.RULE, content=ADVICE, confidence=0.6)]


def _exact(hit: RecallHit) -> None:
    again = RecallHit.model_validate(hit.model_dump())
    assert again == hit
    assert again.model_dump_json() == hit.model_dump_json()
    b = hit.breakdown
    assert type(b) is ScoreBreakdown and type(hit.score) is float
    for name in ("similarity", "confidence", "recency", "trust", "boost", "age_days",
                 "kind_bonus"):  # fmt: skip
        assert type(getattr(b, name)) is float, name
    assert b.situation is None or type(b.situation) is float
    assert all(type(v) is float for v in b.weights.values())
    assert all(type(r) is str for r in b.reasons)


def _recalled(mem: Memory, *args: Any, **kwargs: Any) -> list[RecallHit]:
    result = mem.recall(*args, **kwargs)
    hits = [*result.hits, *result.episodes]
    for hit in hits:
        _exact(hit)
    weights = [id(h.breakdown.weights) for h in hits]
    reasons = [id(h.breakdown.reasons) for h in hits]
    assert len(set(weights)) == len(weights) and len(set(reasons)) == len(reasons)
    return hits


def test_recalled_hits_equal_their_validated_copies(tmp_path: Path) -> None:
    with Memory(
        data_dir=tmp_path,
        embedder=HashEmbedder(384),
        reviewer=ScriptedReviewer(_lessons),
        background_review=False,
        guard=False,
    ) as mem:
        mem.add_experiences(
            [
                {"content": f"Retry the order lookup once after a timeout ({i})",
                 "tags": ["orders", "retry"], "tools": ["lookup_order"],
                 "task_type": "support", "confidence": 0.5 + i / 20}
                for i in range(6)
            ],
            tenant_id="t",
        )  # fmt: skip
        run = trajectory("t", TRIP, tool="book_reservation", status="failure", outcome="failure")
        mem.store_episode(run, review=False)
        assert mem.review_now(run.id, tenant_id="t")
        hits = _recalled(
            mem, "order lookup timed out", tenant_id="t", tags=["retry"], tools=["lookup_order"]
        )
        assert hits and any(
            "tag match: retry" in h.breakdown.reasons and "tool match: lookup_order"
            in h.breakdown.reasons for h in hits
        )  # fmt: skip
        hits = _recalled(mem, QUERY, tenant_id="t", include_episodes=True)
        assert any(h.breakdown.situation is not None for h in hits)
        hits = _recalled(mem, "", task_type="support", tenant_id="t")
        assert hits and all(h.breakdown.mode == "task_type" for h in hits)
        hits[0].breakdown.weights["similarity"] = -1.0  # one hit's dict, not the others'
        assert hits[1].breakdown.weights["similarity"] != -1.0


def test_score_candidates_refuses_what_validation_refused_in_one_line() -> None:
    """``hindsight.recall.score_candidates`` is public: candidates a caller builds are
    checked before their values are copied into a hit (a NaN similarity, a UUID object as
    the episode id, an infinite kind bonus, an unknown mode), each a one-line UsageError;
    numpy numbers are numbers."""
    import uuid
    from datetime import UTC, datetime

    import numpy as np
    import pytest

    from hindsight import UsageError
    from hindsight.config import RecallWeights
    from hindsight.models import Experience
    from hindsight.recall import score_candidates
    from hindsight.recall.scoring import Candidate

    exp = Experience(tenant_id="t", kind="rule", content="Retry the lookup once.", confidence=0.5)
    now = datetime.now(UTC)

    def score(cand: Candidate, **kw: Any) -> Any:
        kw = {"weights": RecallWeights(), "half_life_days": 30, **kw}
        return score_candidates([cand], now=now, **kw)

    [(_, hit)] = score(Candidate(exp, np.float32(0.5), 0, situation=np.float64(0.7),
                                 episode_id=str(uuid.uuid4())))  # fmt: skip
    _exact(hit)
    NUMBER = "kind_bonus of rule must be a number"
    bad: list[tuple[Candidate, dict[str, Any], str]] = [
        (Candidate(exp, float("nan"), 0), {}, "similarity .* must be finite"),
        (Candidate(exp, "0.5", 0), {}, "similarity .* must be a number, got str"),  # type: ignore[arg-type]
        (Candidate(exp, 0.5, 0, situation=float("inf")), {}, "situation .* must be finite"),
        (Candidate(exp, 0.5, 0, episode_id=uuid.uuid4()), {}, "episode_id .* must be a str"),  # type: ignore[arg-type]
        (Candidate(exp, 0.5, 0), {"kind_bonus": {"rule": float("inf")}}, "kind_bonus of rule"),
        (Candidate(exp, 0.5, 0), {"mode": "fuzzy"}, "mode must be 'vector' or 'task_type'"),
        (Candidate(exp, 0.5, 0), {"kind_bonus": {"rule": "x"}}, NUMBER),
        (Candidate(exp, 0.5, 0), {"kind_bonus": {"rule": None}}, NUMBER),
        (Candidate(exp, 0.5, 0), {"kind_bonus": {"rule": True}}, NUMBER),
        (Candidate(exp, 0.5, 0), {"half_life_days": float("nan")}, "half_life_days must be finite"),
        (Candidate(exp, 0.5, 0), {"half_life_days": 0}, "half_life_days must be > 0"),
        (Candidate(exp, 0.5, 0), {"half_life_days": -1e-300}, "half_life_days must be > 0"),
        (Candidate(exp, 0.5, 0), {"weights": RecallWeights(similarity=float("inf"))},
         "similarity weight must be finite"),
    ]  # fmt: skip
    for cand, kw, message in bad:
        with pytest.raises(UsageError, match=message) as caught:
            score(cand, **kw)
        assert "\n" not in str(caught.value)
