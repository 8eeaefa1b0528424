"""Recall's two tiers search the vector index apart (kind filter): many episodes close to the
query never crowd the lessons out, nor cost extra searches (found by the capture benchmark:
a recall node asking the same question after 40 runs did a second, 4x wider search)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hindsight import Memory
from hindsight.testing import FakeEmbedder


@pytest.mark.parametrize("episodes", [0, 30, 120])
def test_lessons_are_found_in_one_search_however_many_episodes(
    tmp_path: Path, episodes: int
) -> None:
    with Memory(data_dir=tmp_path, embedder=FakeEmbedder(32), guard="off") as mem:
        query = "order_query timed out while looking up order 8812"
        for i in range(episodes):  # run summaries nearly identical to the query
            mem.add_experience(f"{query} (run {i})", tenant_id="t", kind="episode")
        lesson = mem.add_experience(
            "When order_query times out, retry once then use order_query_cached",
            tenant_id="t",
            kind="rule",
        )
        calls: list[dict[str, Any]] = []
        search = mem.aio.index.search

        def counting(*args: Any, **kwargs: Any) -> Any:
            calls.append(kwargs)
            return search(*args, **kwargs)

        mem.aio.index.search = counting  # type: ignore[method-assign]
        result = mem.recall(query, tenant_id="t", top_k=3)
        assert [h.experience.id for h in result.hits] == [lesson.id]
        # one search per tier: the lessons, and the closest episodes (situation match)
        [lessons] = [c for c in calls if tuple(c["kinds"]) != ("episode",)]
        assert "episode" not in lessons["kinds"] and len(calls) == 2

        calls.clear()
        with_episodes = mem.recall(query, tenant_id="t", top_k=3, include_episodes=True)
        assert [h.experience.id for h in with_episodes.hits] == [lesson.id]
        assert len(with_episodes.episodes) == min(episodes, 3)
        # the episode tier is searched once for both the situation match and the episodes
        assert sorted(tuple(c["kinds"]) == ("episode",) for c in calls) == [False, True]
