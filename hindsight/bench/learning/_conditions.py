"""Do the lessons say *when*, and would they have fixed a failed run? The strict figures of
``hindsight bench learning`` (docs/benchmarks.md#learning), through the public API only.

For each **split** and **mode** a fresh embedded memory (hash embedder, heuristic reviewer,
condition mining on) stores the train runs, reviews them and mines them (``flush``); then:

* splits: ``trial`` (the train trials reviewed, the query trial held out: the same tasks seen
  again) and ``task`` (every run of every ``every``-th task held out, all other runs reviewed:
  tasks never reviewed, which is what transfer means);
* modes: ``expected`` (the file as it is) and ``outcome`` (every run's expected actions
  stripped before it is stored: rewards alone, as a source without ground truth gives);
* **rules**: active lessons of kind ``rule``; **conditional** ones carry ``metadata
  ["condition"]``; a **truism** is a rule without one (it names no situation that tells one
  task from another);
* **lesson text only**: each held-out run's first user message recalls ``k`` lessons with
  episodes excluded; a lesson is relevant when one of its source runs is a train run of the
  same task (every held-out query counted; beside random choice from the same pool);
* **opposed blocks**: blocks (the recall block a held-out run gets at its start, with the
  domain's tools: lessons and run-start checks) holding two rules about one tool that push
  opposite ways (``avoid`` and ``do``), unless both carry conditions;
* **within-task contrasts** (:func:`within_task_contrasts`, over every run of the file): for
  each state-changing tool, the task groups whose runs both called it and did not, and where
  the runs that called it did worse / better: the strongest evidence one file holds about
  when a call is wrong (the comparison of attempts ExpeL draws its insights from), and the
  ceiling of what condition mining can find in it;
* **nearest conditions** (:func:`nearest_conditions`, the train runs of the trial split, both
  modes): per decision the miner tests, its strongest condition with its task-group votes,
  p-value and the p-value the false discovery rate needed there - why a rule was or was not
  written;
* **corrective** (a held-out **failed** run, every one in the denominator): its block holds a
  rule whose condition the run's own state satisfied and which the run violated (``avoid``:
  it called the tool while the condition held; ``do``: it ended without the tool while the
  condition held; ``error``: it made the call under the condition); ``decision time``: a check
  :meth:`hindsight.Memory.check_action` returned before one of its calls, given the run's
  tool results so far, as a ``condition`` match of such a rule. Beside a random block of the
  same size from the same pool (exact expectation) and the old lenient criterion (the block
  names a state-changing tool the run called or its ground truth calls).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hindsight.bench.learning._data import TENANT, Run, Split, split_runs
from hindsight.bench.learning._harness import score_queries
from hindsight.models import Experience, Trajectory
from hindsight.review._calls import is_read_only
from hindsight.review.mining import RunRecord, condition_holds, nearest, record_of
from hindsight.review.mining.render import describe_predicate

__all__ = [
    "MODES",
    "SPLITS",
    "evaluate_all",
    "evaluate_conditions",
    "nearest_conditions",
    "task_split",
    "violates",
    "within_task_contrasts",
]

SPLITS = ("trial", "task")
MODES = ("expected", "outcome")
_SAMPLE = 30


def task_split(runs: Sequence[Run], every: int) -> Split:
    """Every run of every ``every``-th task (in file order: the 1st, the ``every+1``-th ...)
    held out, all others train."""
    tasks = list(dict.fromkeys(r.task for r in runs))
    held_tasks = {t for i, t in enumerate(tasks) if i % every == 0}
    return Split(
        train=[r for r in runs if r.task not in held_tasks],
        held=[r for r in runs if r.task in held_tasks],
        tasks=tasks,
    )


def _prepared(mode: str) -> Callable[[Trajectory], Trajectory]:
    """What a run goes through before it is stored in ``mode``: its expected actions stripped
    (``outcome``), or nothing."""
    return _stripped if mode == "outcome" else (lambda t: t)


def _stripped(traj: Trajectory) -> Trajectory:
    if traj.evidence is None or not traj.evidence.expected_actions:
        return traj
    return traj.model_copy(
        update={"evidence": traj.evidence.model_copy(update={"expected_actions": []})}
    )


def violates(condition: dict[str, Any], run: RunRecord) -> bool:
    """Did ``run`` do what the rule ``condition`` (``metadata["condition"]``) warns against,
    in a state where its condition held?"""
    tool, form, preds = condition.get("tool"), condition.get("form"), condition.get("predicates")
    if not tool or not preds:
        return False
    calls = [c for c in run.calls if c.tool == tool]
    if form == "do":
        return not calls and condition_holds(preds, run.final) is True
    if form == "avoid":
        return bool(calls) and condition_holds(preds, calls[0].state, calls[0].state) is True
    return any(condition_holds(preds, c.state, c.state) is True for c in calls)


def _lessons(mem: Any) -> list[Experience]:
    out: list[Experience] = []
    while True:
        page = mem.list_experiences(tenant_id=TENANT, limit=1000, offset=len(out))
        out.extend(e for e in page if e.kind.value != "episode")
        if len(page) < 1000:
            return out


def _opposed(rules: Sequence[Experience]) -> bool:
    by_tool: dict[str, set[str]] = {}
    bare: dict[str, set[str]] = {}
    for e in rules:
        cond = e.metadata.get("condition") or {}
        key = str(e.metadata.get("lesson_key", ""))
        if cond.get("form") in ("avoid", "do"):
            by_tool.setdefault(cond["tool"], set()).add(cond["form"])
        elif key.startswith(("contrast:extra:", "contrast:missing:")):
            form = "avoid" if key.startswith("contrast:extra:") else "do"
            bare.setdefault(key.split(":")[2], set()).add(form)
    return any(len(forms) == 2 for forms in bare.values()) or any(
        len(forms | bare.get(tool, set())) == 2 and tool in bare for tool, forms in by_tool.items()
    )


def _random_hit(pool: int, hits: int, k: int) -> float:
    """Chance that ``k`` lessons drawn at random from ``pool`` hold one of ``hits``."""
    if pool <= 0 or hits <= 0:
        return 0.0
    k = min(k, pool)
    return 1.0 - math.comb(pool - hits, k) / math.comb(pool, k)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def evaluate_conditions(
    runs: Sequence[Run],
    *,
    split: str,
    mode: str,
    k: int = 5,
    every: int = 5,
    train_trials: Sequence[int] = (0, 1, 2),
    query_trial: int = 3,
    parent: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The figures of the module docstring for one split and mode (see there)."""
    from hindsight import Memory

    say = progress or (lambda _m: None)
    parts = (
        split_runs(runs, train_trials, query_trial) if split == "trial" else task_split(runs, every)
    )
    prepare = _prepared(mode)
    tools = sorted({c.tool for r in parts.train for c in r.calls})
    task_of = {r.id: r.task for r in parts.train}
    out: dict[str, Any] = {
        "split": split,
        "mode": mode,
        "train_runs": len(parts.train),
        "held_out_runs": len(parts.held),
        "held_out_tasks": len({r.task for r in parts.held}),
        "held_out_failed": sum(not r.success for r in parts.held),
    }
    with tempfile.TemporaryDirectory(prefix="hindsight-conditions-", dir=parent) as root:
        mem = Memory(data_dir=Path(root), database_url=None, vector_db_url=None,
                     embedding_model="hash", reviewer="heuristic")  # fmt: skip
        try:
            say(f"conditions: {split} split, {mode} mode: reviewing {len(parts.train)} runs")
            for run in parts.train:
                mem.store_episode(prepare(run.trajectory))
            mem.flush(timeout=600)
            lessons = _lessons(mem)
            rules = [e for e in lessons if e.kind.value == "rule"]
            conditional = [e for e in rules if e.metadata.get("condition")]
            out.update(
                lessons=len(lessons),
                rules=len(rules),
                conditional_rules=len(conditional),
                truisms=len(rules) - len(conditional),
                truism_share=(len(rules) - len(conditional)) / len(rules) if rules else None,
                rule_texts=[e.content for e in rules[:_SAMPLE]],
            )
            rankings: dict[str, list[str]] = {}
            relevant: dict[str, set[str]] = {}
            for run in parts.held:
                found = mem.recall(run.first_message, tenant_id=TENANT, top_k=k,
                                   include_episodes=False, record=False)  # fmt: skip
                rankings[run.id] = [h.experience.id for h in found.hits]
                relevant[run.id] = {
                    e.id for e in lessons if any(task_of.get(s) == run.task
                                                 for s in e.source_trajectory_ids)
                }  # fmt: skip
            out["text_only"] = score_queries(rankings, relevant, pool=len(lessons), k=k)
            by_id = {e.id: e for e in lessons}
            opposed = corrective = corrective_checks = lenient = 0
            random_chance: list[float] = []
            failed = [r for r in parts.held if not r.success]
            for run in parts.held:
                block = mem.recall(run.first_message, tenant_id=TENANT, top_k=k, tools=tools,
                                   record=False)  # fmt: skip
                shown = [by_id[i] for i in block.lesson_ids if i in by_id]
                if _opposed([e for e in shown if e.kind.value == "rule"]):
                    opposed += 1
                if run.success:
                    continue
                rec = record_of(prepare(run.trajectory))
                bad = {e.id for e in conditional if violates(e.metadata["condition"], rec)}
                corrective += any(e.id in bad for e in shown)
                random_chance.append(_random_hit(len(lessons), len(bad), len(shown) or k))
                wanted = {c.tool for c in (*run.calls, *run.expected) if not is_read_only(c.tool)}
                lenient += any(set(e.tools) & wanted for e in shown)
                corrective_checks += _checked(mem, run, bad)
            out.update(
                opposed_blocks=opposed,
                blocks=len(parts.held),
                corrective=corrective,
                corrective_checks=corrective_checks,
                corrective_random=_mean(random_chance),
                corrective_tool_only=lenient,
                failed_runs=len(failed),
            )
        finally:
            mem.close()
    return out


def _checked(mem: Any, run: Run, bad: set[str]) -> bool:
    """Whether a check returned before one of the run's state-changing calls, given the tool
    results the run had seen, is a ``condition`` match of a rule the run violated."""
    seen: list[dict[str, Any]] = []
    from hindsight.review._calls import collect_calls

    for call in collect_calls(run.trajectory.events):
        if not is_read_only(call.tool):
            result = mem.check_action(call.tool, call.args, tenant_id=TENANT, state=seen,
                                      record=False)  # fmt: skip
            if any(m.match == "condition" and m.check.lesson_id in bad for m in result.checks):
                return True
        if call.output:
            seen.append({"tool": call.tool, "result": call.output})
    return False


def evaluate_all(
    runs: Sequence[Run],
    *,
    k: int,
    every: int,
    train_trials: Sequence[int],
    query_trial: int,
    parent: Path | None,
    progress: Callable[[str], None] | None,
) -> list[dict[str, Any]]:
    """:func:`evaluate_conditions` for every split and mode."""
    return [
        evaluate_conditions(
            runs,
            split=s,
            mode=m,
            k=k,
            every=every,
            train_trials=train_trials,
            query_trial=query_trial,
            parent=parent,
            progress=progress,
        )
        for s in SPLITS
        for m in MODES
    ]


def within_task_contrasts(runs: Sequence[Run]) -> dict[str, dict[str, int]]:
    """Per state-changing tool, ``{"worse": n, "better": m}``: the task groups (runs of one
    task) where some runs called the tool and others did not, and the success rate of those
    that called it was lower / higher than that of those that did not (ties count in
    neither). Tools in name order."""
    by_task: dict[str, list[Run]] = {}
    for run in runs:
        by_task.setdefault(run.task, []).append(run)
    tools = sorted({c.tool for r in runs for c in r.calls if not is_read_only(c.tool)})
    out: dict[str, dict[str, int]] = {}
    for tool in tools:
        worse = better = 0
        for group in by_task.values():
            called = [r.success for r in group if any(c.tool == tool for c in r.calls)]
            not_called = [r.success for r in group if all(c.tool != tool for c in r.calls)]
            if called and not_called:
                rate, other = sum(called) / len(called), sum(not_called) / len(not_called)
                worse += rate < other
                better += rate > other
        out[tool] = {"worse": worse, "better": better}
    return out


def nearest_conditions(
    runs: Sequence[Run], *, train_trials: Sequence[int], query_trial: int
) -> dict[str, list[dict[str, Any]]]:
    """Per mode, :func:`hindsight.review.mining.nearest` of the trial split's train runs: one
    dict per decision set (``tool``, ``form``, ``message``, ``condition`` in words, the
    task-group votes ``bad``/``held`` and ``bad_else``/``held_else``, ``p``, ``needed``,
    ``tested``, ``wilson``, ``stands``)."""
    train = split_runs(runs, train_trials, query_trial).train
    out: dict[str, list[dict[str, Any]]] = {}
    for mode in MODES:
        prepare = _prepared(mode)
        found = nearest([record_of(prepare(r.trajectory)) for r in train])
        out[mode] = [
            {
                "tool": n.tool,
                "form": n.form,
                "message": n.message,
                "condition": describe_predicate(n.predicate),
                "bad": n.bad,
                "held": n.held,
                "bad_else": n.bad_else,
                "held_else": n.held_else,
                "p": n.p,
                "needed": n.needed,
                "tested": n.tested,
                "wilson": n.wilson,
                "stands": n.stands,
            }
            for n in found
        ]
    return out
