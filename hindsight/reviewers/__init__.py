"""Reviewers turn a finished trajectory into lessons (MISSION S2).

:class:`HeuristicReviewer` is deterministic and needs no model; LLM reviewers implement the
same :class:`hindsight.ports.Reviewer` port.
"""

from __future__ import annotations

from hindsight.reviewers.heuristic import HeuristicReviewer, has_reviewable_content

__all__ = ["HeuristicReviewer", "has_reviewable_content"]
