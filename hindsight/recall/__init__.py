"""Recall (docs/concepts.md#recall): from a query to the block at the tail of a system prompt.

Owns the candidates a recall looks at (:mod:`.candidates`: lessons and episodes, vector or
task_type mode), scoring and selection (:mod:`.scoring`), the explanations of what was left out
(:mod:`.explain`), the pipeline that runs them in order (:mod:`.pipeline`), the result
(:mod:`.result`) and its rendering (:mod:`.render`).

May import: the foundation and the guard (escaping while rendering, the consensus check after
recall). Never capture, review, write-back, the engine, the service or the CLI.
"""

from hindsight.models import Exclusion
from hindsight.recall.result import RecallResult
from hindsight.recall.scoring import (
    Candidate,
    RecallMode,
    recency_weight,
    score_candidates,
    select_hits,
)

__all__ = [
    "Candidate",
    "Exclusion",
    "RecallMode",
    "RecallResult",
    "recency_weight",
    "score_candidates",
    "select_hits",
]
