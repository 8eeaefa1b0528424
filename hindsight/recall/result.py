"""The recall result: hits, exclusions, episodes, and how they render (docs/concepts.md#recall)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hindsight._contract import TokenBudget, check
from hindsight.models import Exclusion, RecallHit
from hindsight.recall.render import render_block
from hindsight.recall.scoring import RecallMode

__all__ = ["RecallResult"]


class RecallResult(BaseModel):
    """What :meth:`hindsight.AsyncMemory.recall` returns.

    ``hits`` are ordered best first (private namespace first, then shared). ``excluded``
    lists close candidates that were dropped, with the reason. ``episodes`` holds the most
    similar past run summaries when recall was asked for them (``include_episodes=True``),
    best first; they are rendered after the lessons, in their own section.
    ``risk_section`` is the run-start risk checks of the asking agent's tools ("before you
    call X: ...", docs/checks.md), rendered first in the block;
    ``risk_lesson_ids`` the lessons behind them.
    """

    model_config = ConfigDict(frozen=True)

    query: str
    tenant_id: str
    namespaces: list[str]
    mode: RecallMode
    hits: list[RecallHit]
    excluded: list[Exclusion] = Field(default_factory=list)
    token_budget: int = 2000
    similarity_floor: float | None = None
    episodes: list[RecallHit] = Field(default_factory=list)
    risk_section: str = ""
    risk_lesson_ids: list[str] = Field(default_factory=list)

    @property
    def lesson_ids(self) -> list[str]:
        """The lessons the rendered block shows: the hits' and those behind the risk checks,
        once each (what a caller that recalled with ``record=False`` passes to
        :meth:`hindsight.AsyncMemory.record_recall` once the model saw the block)."""
        return list(dict.fromkeys([*(h.experience.id for h in self.hits), *self.risk_lesson_ids]))

    def render(self, token_budget: int | None = None) -> str:
        """The delimited block for the system-prompt tail ('' when nothing was recalled).

        Args:
            token_budget: max estimated tokens, 150 to 1000000 (``None``: the recall's
                budget, 2000 by default).

        Raises:
            UsageError: a budget that is not such an integer (one line).
        """
        budget = check(TokenBudget, token_budget)
        return render_block(
            self.hits,
            self.token_budget if budget is None else budget,
            self.episodes,
            self.risk_section,
        )[0]

    @property
    def truncated(self) -> bool:
        """True when :meth:`render` had to cut or leave out items to fit the budget."""
        return render_block(self.hits, self.token_budget, self.episodes, self.risk_section)[1]

    def hits_json(self) -> list[dict[str, Any]]:
        """``to_json()["hits"]`` without rendering the block: each hit in the shape every
        interface gives (docs/concepts.md#one-hit-shape-on-every-interface)."""
        return [_hit_json(hit) for hit in self.hits]

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        """The JSON shape printed by ``hindsight recall --json`` (``episodes``: same shape as
        ``hits``, empty unless recall was asked for episodes)."""
        hits = self.hits_json()
        text, truncated = render_block(
            self.hits, self.token_budget, self.episodes, self.risk_section
        )
        doc: dict[str, Any] = {"hits": hits, "rendered": text, "truncated": truncated}
        doc["episodes"] = [_hit_json(hit) for hit in self.episodes]
        if explain:
            doc["excluded"] = [e.model_dump(mode="json") for e in self.excluded]
            doc["similarity_floor"] = self.similarity_floor
            doc["mode"] = self.mode
        return doc


def _hit_json(hit: RecallHit) -> dict[str, Any]:
    """One recall hit, the shape every interface gives
    (docs/concepts.md#one-hit-shape-on-every-interface): ``experience`` (the experience, as
    ``GET /v1/experiences/{id}`` returns it), ``score`` and ``breakdown`` (the score's terms),
    as in :class:`~hindsight.models.RecallHit` and the HTTP API; plus flat copies of the
    experience's main fields (``id``, ``content``, ``kind``, ``task_type``, ``namespace``,
    ``confidence``, ``source_trajectory_ids``), for clients written before that shape."""
    exp = hit.experience
    return {
        "experience": exp.model_dump(mode="json"),
        "id": exp.id,
        "content": exp.content,
        "kind": exp.kind.value,
        "task_type": exp.task_type,
        "namespace": exp.namespace,
        "confidence": exp.confidence,
        "score": hit.score,
        "breakdown": hit.breakdown.model_dump(mode="json"),
        "source_trajectory_ids": list(exp.source_trajectory_ids),
    }
