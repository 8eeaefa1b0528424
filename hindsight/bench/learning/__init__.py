"""``hindsight bench learning FILE``: do the lessons learned from some runs help the next run
of the same task, and are they the right kind of lesson? (docs/benchmarks.md#learning)

Measured on a tau-bench results file given as argument (other domains than airline work the
same: nothing here knows a tool or a field of one domain), **through the public API only**:
``Memory.store_episode`` / ``review_now`` (review), ``list_experiences``, ``recall``,
``record_outcome``, ``add_experience`` (the raw baseline), ``delete_experience`` and
``adjust_confidence`` (the replay stores, below) and the ``Reviewer`` port. Each
embedder x reviewer gets fresh temporary embedded stores.

Split: the runs of the train trials (default 0, 1, 2) are stored and reviewed, trial after
trial; the query trial (default 3) is held out, one run per task. Figures:

1. **Recall of same-task lessons**, queried with each held-out run's first user message: a
   recalled lesson is relevant when one of its source runs is a train run of the same task.
   hit@k ("recall@5" in older reports), recall@k normalised (``|top k & relevant| / min(k,
   |relevant|)``) and MRR@k (:mod:`._ranking`). Four ways: lessons **as stored** and with the
   **task text masked** (every quote of a train run's first user message replaced by
   ``<task>``, :mod:`._quotes`), each **with the situation match** recall does (its
   similarity to the episodes of the lesson's source runs) and on the **lesson text only**.
   Masking rewrites nothing in the first store: a second store holds the same runs, reviewed
   by a :class:`ReplayReviewer` that returns the first store's lessons (kind, confidence,
   tools, tags, metadata) with the masked text and the same episodes, through the same review
   and write path (guard, dedup, merge); confidences are then set to the first store's
   (``adjust_confidence``), so only the text differs. "Lesson text only" deletes the episodes
   of such a store before recalling again. A replay with the text unchanged gives the "as
   stored, text only" figure and checks the replay (its top k must equal the first store's).
2. **Identifiers or personal data**: the share of lessons holding a value that identifies a
   run or a person (:mod:`._identifiers`, written independently of the reviewers' masking).
3. **Lessons per reviewed run** and the **duplicate rate**: lessons whose masked, case-folded
   text equals another active lesson's. Episodes are excluded from every lesson figure.
4. **Confidence** of lessons whose sources all succeeded vs all failed; and after outcome
   attribution: each held-out run is stored (no review), recalls with its ``trajectory_id``,
   then its real outcome is recorded; the mean confidence of the lessons recalled only by
   failed runs and only by successful ones, before and after.
5. **Corrective block**: for each held-out failed run, what it got wrong against the
   record's ground truth (:mod:`._truth`: a missing, extra or mis-argued state-changing call);
   it counts as corrected when its rendered recall block (``RecallResult.render()``) names
   that tool and, for an argument, that key.
6. **Risk checks** (``checks`` in the JSON), from the train runs' lessons only
   (computed before any held-out run is stored). Denominator: every held-out failed run with
   a state-changing call, its own or the ground truth's (``failed_runs_with_state_change``).
   Before each of the run's state-changing calls, in order, the checks an integration would
   show with its defaults (:meth:`hindsight.AsyncMemory.check_action` with its default
   ``top_k``, nothing recorded, then the default gate: score >= 0.3). The run counts
   (``named``) when a check shown before the call names one of its differences from the ground
   truth, tool **and** the ground truth's argument class (``value_class``: a condition on the
   argument whose reference class it is, or an advice naming a class that is a word of its
   own): for a mis-argued call, a check shown before that call; for a missing call, a check
   shown before another state-changing call whose advice names the missing tool and a class
   of its arguments; an extra call has no ground-truth class and never counts there.
   ``named_tool_only`` counts a check naming only the tool; ``by_op`` splits both.

7. **Rules that say when** (``conditions`` in the JSON, :mod:`._conditions`): on the trial
   split and on a **task split** (every run of every N-th task held out, tasks never
   reviewed), with and without the expected actions: rules with and without a condition,
   lesson-text-only recall over every held-out query, opposed blocks, and the failed runs
   whose block or decision-time checks hold a rule whose condition their own state met and
   which they violated, beside a random block and the tool-name-only criterion.

Every held-out query is in every denominator (a query whose task taught nothing counts 0).
Each figure stands next to the **raw-first-message baseline** (the train runs' first user
messages indexed with ``add_experience``, no review; a hit is a message of the same task) and,
for 1 and 5, its exact value under **random** choice from the same pool.

May import: the engine (through :class:`hindsight.Memory`), the ingest (to parse the file),
the embedders (built once per run), models, ports and the guard's reserved metadata keys.
"""

from __future__ import annotations

from hindsight.bench.learning._conditions import evaluate_conditions, task_split, violates
from hindsight.bench.learning._data import TENANT, Run, Split, load_runs, split_runs
from hindsight.bench.learning._harness import (
    Context,
    ReplayReviewer,
    evaluate_baseline,
    evaluate_reviewer,
    score_queries,
)
from hindsight.bench.learning._identifiers import Finding, IdentifierDetector, normalized_text
from hindsight.bench.learning._quotes import MASK, QuoteMasker
from hindsight.bench.learning._ranking import (
    hit_at_k,
    normalized_recall_at_k,
    random_expectation,
    random_subset_probability,
    recall_at_k,
    reciprocal_rank,
)
from hindsight.bench.learning._report import render_report
from hindsight.bench.learning._run import (
    REVIEWERS,
    commit_info,
    parse_every,
    parse_trials,
    run_learning,
)
from hindsight.bench.learning._truth import (
    Call,
    Difference,
    corrected,
    differences,
    expected_actions,
    is_state_changing,
    mentions,
    names_difference,
    run_calls,
    unjudged,
)

__all__ = [
    "MASK",
    "REVIEWERS",
    "TENANT",
    "Call",
    "Context",
    "Difference",
    "Finding",
    "IdentifierDetector",
    "QuoteMasker",
    "ReplayReviewer",
    "Run",
    "Split",
    "commit_info",
    "corrected",
    "differences",
    "evaluate_baseline",
    "evaluate_conditions",
    "evaluate_reviewer",
    "expected_actions",
    "hit_at_k",
    "is_state_changing",
    "load_runs",
    "mentions",
    "names_difference",
    "normalized_recall_at_k",
    "normalized_text",
    "parse_every",
    "parse_trials",
    "random_expectation",
    "random_subset_probability",
    "recall_at_k",
    "reciprocal_rank",
    "render_report",
    "run_calls",
    "run_learning",
    "score_queries",
    "split_runs",
    "task_split",
    "unjudged",
    "violates",
]
