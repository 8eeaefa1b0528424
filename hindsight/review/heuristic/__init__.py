"""The heuristic reviewer: lessons from a trajectory without a model (deterministic, offline).

:mod:`.reviewer` reads the run, :mod:`._lessons` turns what it found into lessons and
:mod:`._templates` words them (English and Chinese).
"""

from hindsight.review.heuristic.reviewer import HeuristicReviewer, has_reviewable_content

__all__ = ["HeuristicReviewer", "has_reviewable_content"]
