"""Condition mining: rules that say *when* they apply, from outcomes across runs.

docs/review.md#condition-mining explains the method, its threshold and its sources.
"""

from hindsight.review.mining.features import (
    RunRecord,
    State,
    record_of,
    state_of_args,
    state_of_results,
)
from hindsight.review.mining.miner import (
    MinedRule,
    Nearest,
    Predicate,
    condition_holds,
    mine,
    nearest,
)

__all__ = [
    "MinedRule",
    "Nearest",
    "Predicate",
    "RunRecord",
    "State",
    "condition_holds",
    "mine",
    "nearest",
    "record_of",
    "state_of_args",
    "state_of_results",
]
