"""The learning benchmark itself: stores, reviews, recalls and outcomes, through the public API
only (``Memory.store_episode``, ``review_now``, ``list_experiences``, ``recall``,
``record_outcome``, ``add_experience``, ``delete_experience``, ``adjust_confidence`` and the
``Reviewer`` port). See :mod:`hindsight.bench.learning` for what each figure means."""

from __future__ import annotations

import contextlib
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

from hindsight.bench.learning._data import TENANT, Run, Split
from hindsight.bench.learning._identifiers import IdentifierDetector, normalized_text
from hindsight.bench.learning._quotes import MASK, QuoteMasker
from hindsight.bench.learning._ranking import (
    hit_at_k,
    normalized_recall_at_k,
    random_expectation,
    random_subset_probability,
    recall_at_k,
    reciprocal_rank,
)
from hindsight.bench.learning._truth import (
    Difference,
    corrected,
    differences,
    is_state_changing,
    mentions,
    names_difference,
    unjudged,
)
from hindsight.checks import CheckMatch
from hindsight.checks.gate import RiskGate
from hindsight.models import Experience, ExperienceKind, Trajectory
from hindsight.ports import Embedder, Lesson, Reviewer
from hindsight.review.contrast import value_class

__all__ = ["Context", "evaluate_baseline", "evaluate_reviewer", "score_queries"]

Progress = Callable[[str], None]
_MAX_LIST = 10_000  # list_experiences' page size


@dataclass(frozen=True)
class Context:
    """What every evaluation of one file shares."""

    split: Split
    detector: IdentifierDetector
    quotes: QuoteMasker
    ignore: frozenset[Difference]
    k: int
    parent: Path | None = None
    progress: Progress = field(default=lambda _msg: None)

    @classmethod
    def build(
        cls,
        split: Split,
        records: Sequence[dict[str, Any]],
        all_runs: Sequence[Run],
        *,
        k: int,
        parent: Path | None = None,
        progress: Progress | None = None,
    ) -> Context:
        """Detector over every record of the file, quote masker over the train runs' first
        messages, unjudged differences from the file's successful runs."""
        return cls(
            split=split,
            detector=IdentifierDetector.from_records(records),
            quotes=QuoteMasker(r.first_message for r in split.train),
            ignore=unjudged((r.expected, r.calls) for r in all_runs if r.success),
            k=k,
            parent=parent,
            progress=progress or (lambda _msg: None),
        )

    @property
    def task_of(self) -> dict[str, str]:
        return {r.id: r.task for r in self.split.train}


# -- stores ----------------------------------------------------------------------------------------
@contextlib.contextmanager
def _memory(ctx: Context, embedder: Embedder, reviewer: Reviewer | str) -> Iterator[Any]:
    """A fresh embedded memory in a temporary folder, removed afterwards; the deployment's
    DATABASE_URL / VECTOR_DB_URL are ignored (the benchmark never writes to a real store)."""
    from hindsight import Memory

    with tempfile.TemporaryDirectory(prefix="hindsight-learning-", dir=ctx.parent) as root:
        mem = Memory(
            data_dir=Path(root),
            database_url=None,
            vector_db_url=None,
            embedder=embedder,
            reviewer=reviewer,
            background_review=False,
        )
        try:
            yield mem
        finally:
            mem.close()


def _active(mem: Any) -> list[Experience]:
    out: list[Experience] = []
    while True:
        page = mem.list_experiences(tenant_id=TENANT, limit=_MAX_LIST, offset=len(out))
        out.extend(page)
        if len(page) < _MAX_LIST:
            return out


def _count(mem: Any, status: str) -> int:
    return len(mem.list_experiences(tenant_id=TENANT, status=status, limit=_MAX_LIST))


class ReplayReviewer:
    """A :class:`~hindsight.ports.Reviewer` that gives back, for each trajectory, lessons decided
    beforehand (the lessons another store learned from it, with their text rewritten)."""

    name = "replay"

    def __init__(self, lessons: dict[str, list[Lesson]]) -> None:
        self.lessons = lessons

    async def review(self, trajectory: Trajectory) -> list[Lesson]:
        return list(self.lessons.get(trajectory.id, []))


def _guard_keys() -> frozenset[str]:
    from hindsight.guard.screening import GUARD_METADATA_KEYS

    return frozenset(GUARD_METADATA_KEYS)


def _as_lesson(exp: Experience, content: str) -> Lesson:
    reserved = _guard_keys()
    return Lesson(
        kind=exp.kind,
        content=content,
        confidence=exp.confidence,
        importance=exp.importance,
        tools=list(exp.tools),
        tags=list(exp.tags),
        metadata={k: v for k, v in exp.metadata.items() if k not in reserved},
    )


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


# -- ranking figures -------------------------------------------------------------------------------
def score_queries(
    rankings: dict[str, list[str]], relevant: dict[str, set[str]], pool: int, k: int
) -> dict[str, Any]:
    """Mean hit@k, recall@k, normalized recall@k and MRR@k over **every** query, each next to
    its exact value for a random ranking of ``pool`` candidates. A query with no relevant item
    (its task taught nothing) counts 0 on both sides: it is a query the memory did not help.

    Returns:
        ``{"queries", "without_relevant", "pool", "hit", "recall", "normalized_recall", "mrr",
        "random": {same four}}``; the means are ``None`` when there is no query.
    """
    queries = list(rankings)
    out: dict[str, Any] = {
        "queries": len(queries),
        "without_relevant": sum(1 for q in queries if not relevant.get(q)),
        "pool": pool,
    }
    names = ("hit", "recall", "normalized_recall", "mrr")
    if not queries or pool < 1:
        out.update(dict.fromkeys(names), random=dict.fromkeys(names))
        return out
    zero = {"hit": 0.0, "recall": 0.0, "normalized_recall": 0.0, "rr": 0.0}

    def each(fn: Any, q: str) -> float:
        return float(fn(rankings[q], relevant[q], k)) if relevant.get(q) else 0.0

    rand = [
        random_expectation(pool, min(pool, len(relevant[q])), k) if relevant.get(q) else zero
        for q in queries
    ]
    out.update(
        hit=mean(each(hit_at_k, q) for q in queries),
        recall=mean(each(recall_at_k, q) for q in queries),
        normalized_recall=mean(each(normalized_recall_at_k, q) for q in queries),
        mrr=mean(each(reciprocal_rank, q) for q in queries),
        random={
            "hit": mean(r["hit"] for r in rand),
            "recall": mean(r["recall"] for r in rand),
            "normalized_recall": mean(r.get("normalized_recall", 0.0) for r in rand),
            "mrr": mean(r["rr"] for r in rand),
        },
    )
    return out


def _relevant(ctx: Context, items: Sequence[Experience]) -> dict[str, set[str]]:
    """Per held-out task, the items with a source run that is a train run of that task."""
    task_of = ctx.task_of
    out: dict[str, set[str]] = {r.task: set() for r in ctx.split.held}
    for exp in items:
        for source in exp.source_trajectory_ids:
            task = task_of.get(source)
            if task in out:
                out[task].add(exp.id)
    return out


def _rank(ctx: Context, mem: Any) -> tuple[dict[str, list[str]], dict[str, list[str]], bool]:
    """Recall for every held-out task's first message: ids and contents of the top k, and
    whether any hit's score breakdown shows a situation match."""
    ids: dict[str, list[str]] = {}
    texts: dict[str, list[str]] = {}
    situation = False
    for run in ctx.split.held:
        hits = mem.recall(run.first_message, tenant_id=TENANT, top_k=ctx.k).hits
        ids[run.task] = [h.experience.id for h in hits]
        texts[run.task] = [_key(h.experience.content) for h in hits]
        situation = situation or any(_situation(h) for h in hits)
    return ids, texts, situation


def _situation(hit: Any) -> bool:
    value = getattr(hit.breakdown, "situation", None)
    return value is not None


# -- lesson figures --------------------------------------------------------------------------------
def lesson_figures(
    ctx: Context, items: Sequence[Experience], runs: int, sources_ok: dict[str, bool]
) -> dict[str, Any]:
    """Per-run count, duplicates, identifiers, quoted task text and confidence by the outcome
    of the source runs, for the ``items`` (lessons, episodes already left out)."""
    groups: dict[str, list[Experience]] = defaultdict(list)
    for exp in items:
        groups[normalized_text(exp.content, ctx.detector)].append(exp)
    in_dups = sum(len(g) for g in groups.values() if len(g) > 1)
    flagged: list[tuple[Experience, list[Any]]] = []
    kinds: dict[str, int] = defaultdict(int)
    for exp in items:
        found = ctx.detector.findings(exp.content)
        if found:
            flagged.append((exp, found))
            for kind in {f.kind for f in found}:
                kinds[kind] += 1
    quoted = [exp for exp in items if ctx.quotes.spans(exp.content)]
    by_outcome: dict[str, list[float]] = {"success": [], "failure": [], "mixed": []}
    for exp in items:
        oks = {sources_ok[s] for s in exp.source_trajectory_ids if s in sources_ok}
        if oks == {True}:
            by_outcome["success"].append(exp.confidence)
        elif oks == {False}:
            by_outcome["failure"].append(exp.confidence)
        elif oks:
            by_outcome["mixed"].append(exp.confidence)
    n = len(items)
    return {
        "count": n,
        "per_run": n / runs if runs else None,
        "duplicates": {
            "rate": in_dups / n if n else None,
            "lessons": in_dups,
            "distinct_texts": len(groups),
            "largest_group": max((len(g) for g in groups.values()), default=0),
        },
        "identifiers": {
            "share": len(flagged) / n if n else None,
            "lessons": len(flagged),
            "by_kind": dict(sorted(kinds.items())),
            "examples": [
                {"content": exp.content, "found": [f"{f.kind}: {f.text}" for f in found[:3]]}
                for exp, found in flagged[:5]
            ],
        },
        "quoted_task_text": {"lessons": len(quoted), "share": len(quoted) / n if n else None},
        "confidence_by_source": {
            name: {"n": len(vals), "mean": mean(vals) if vals else None}
            for name, vals in by_outcome.items()
        },
    }


# -- held-out runs: outcomes and the corrective block ----------------------------------------------
def _held_out(
    ctx: Context, mem: Any, pool: Sequence[Experience] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Store each held-out run (no review), recall for it as the agent would (``trajectory_id``
    set), keep the rendered block; then record every run's real outcome and read the recalled
    lessons' confidence again. ``pool``: the lessons a random block is drawn from (None: no
    random figure)."""
    recalled: dict[str, set[bool]] = defaultdict(set)
    before: dict[str, float] = {}
    blocks: dict[str, str] = {}
    for run in ctx.split.held:
        mem.store_episode(run.trajectory, review=False)
        result = mem.recall(run.first_message, tenant_id=TENANT, top_k=ctx.k, trajectory_id=run.id)
        blocks[run.id] = result.render()
        for hit in result.hits:
            recalled[hit.experience.id].add(run.success)
            before.setdefault(hit.experience.id, hit.experience.confidence)
    for run in ctx.split.held:
        mem.record_outcome(run.id, run.success, tenant_id=TENANT)
    after = {eid: mem.get_experience(eid, tenant_id=TENANT).confidence for eid in recalled}
    groups = {
        "recalled_by_failed_only": [e for e, s in recalled.items() if s == {False}],
        "recalled_by_successful_only": [e for e, s in recalled.items() if s == {True}],
        "recalled_by_both": [e for e, s in recalled.items() if s == {True, False}],
    }
    confidence = {
        name: {
            "n": len(ids),
            "before": mean(before[e] for e in ids) if ids else None,
            "after": mean(after[e] for e in ids) if ids else None,
        }
        for name, ids in groups.items()
    }
    return confidence, _corrective(ctx, blocks, pool)


def _corrective(
    ctx: Context, blocks: dict[str, str], pool: Sequence[Experience] | None
) -> dict[str, Any]:
    """The corrective-block figure of the held-out failed runs (see the module docstring)."""
    failed = [(r, differences(r.expected, r.calls, ctx.ignore)) for r in ctx.split.held]
    failed = [(r, diffs) for r, diffs in failed if not r.success]
    scored = [(r, diffs) for r, diffs in failed if diffs]
    hits = sum(corrected(blocks[r.id], diffs) for r, diffs in scored)
    every = sum(all(names_difference(blocks[r.id], d) for d in diffs) for r, diffs in scored)
    by_op: dict[str, dict[str, int]] = {}
    for op in ("missing", "extra", "arg"):
        of_op = [(r, [d for d in diffs if d.op == op]) for r, diffs in scored]
        of_op = [(r, ds) for r, ds in of_op if ds]
        by_op[op] = {
            "runs": len(of_op),
            "corrected": sum(corrected(blocks[r.id], ds) for r, ds in of_op),
        }
    rand = [_random_block(pool, diffs, ctx.k) for _, diffs in scored] if pool is not None else []
    return {
        "failed_runs": len(failed),
        "with_difference": len(scored),
        "corrected": hits,
        "share": hits / len(scored) if scored else None,
        "all_named": every,
        "share_all_named": every / len(scored) if scored else None,
        "random": mean(rand) if rand else None,
        "by_op": by_op,
        "per_run": [
            {
                "task": r.task,
                "differences": [d.label() for d in diffs],
                "corrected": corrected(blocks[r.id], diffs) if diffs else None,
            }
            for r, diffs in failed
        ],
    }


def _named_class(cls: str, m: CheckMatch, key: str | None) -> bool:
    """Whether the check of ``m`` names the argument class ``cls``: a condition on ``key``
    (any key when ``None``) whose reference class is ``cls``, or, for a class that is a word or
    phrase of its own (not ``a <key>``, ``a number``), an advice naming it."""
    if any(c.expected == cls and (key is None or c.key == key) for c in m.check.conditions):
        return True
    return not cls.startswith("a ") and mentions(m.check.advice, cls)


def _surfaced(mem: Any, call: Any) -> list[CheckMatch]:
    """The checks an integration would show before ``call`` with its defaults: ``check_action``
    (default ``top_k``, nothing recorded), then the default gate (score >= 0.3)."""
    found = mem.check_action(call.tool, dict(call.args), tenant_id=TENANT, record=False)
    decision = RiskGate().decide(found)
    return list(decision.result.checks) if decision is not None else []


def _diff_named(
    diff: Difference, expected: Sequence[Any], before: dict[str, list[CheckMatch]]
) -> tuple[bool, bool]:
    """``(tool and class named, tool named)`` for one difference by the checks ``before``
    (tool -> the checks shown before the run's calls of that tool):

    * ``arg``: a check about the tool shown before a call of it with a condition on the
      argument whose reference class is the ground truth's (:func:`_named_class`); a check
      shown there about another tool (a missing-call rule triggered by this call,
      ``instead_of``) does not count, since the classes its advice names are the other tool's;
    * ``missing`` (the run never called the tool, so no check fires on it): a check shown
      before one of the run's other state-changing calls whose advice names the missing tool
      and one class of the ground truth call's arguments (or it has none);
    * ``extra``: the ground truth has no such call, so no class to name: never counted in the
      first figure; the second counts a check shown before the extra call.
    """
    if diff.op == "arg":
        on_tool = [m for m in before.get(diff.tool, []) if m.check.instead_of is None]
        truth = next(
            (c.args[diff.key] for c in expected if c.tool == diff.tool and diff.key in c.args),
            None,
        )
        cls = value_class(diff.key or "", truth)
        return any(_named_class(cls, m, diff.key) for m in on_tool), bool(on_tool)
    if diff.op == "extra":
        return False, bool(before.get(diff.tool))
    shown = [m for ms in before.values() for m in ms if mentions(m.check.advice, diff.tool)]
    want = next((c for c in expected if c.tool == diff.tool), None)
    classes = [value_class(k, v) for k, v in (want.args if want else {}).items()]
    with_class = any(not classes or any(_named_class(c, m, None) for c in classes) for m in shown)
    return with_class, bool(shown)


def _checks_figure(ctx: Context, mem: Any) -> dict[str, Any]:
    """Decision-time risk checks (docs/checks.md), from the lessons of the train runs only (the
    held-out runs are not stored yet). Denominator: every held-out failed run with a
    state-changing call (its own or the ground truth's). Before each of the run's
    state-changing calls, in order, the checks an integration would show with its defaults
    (:func:`_surfaced`); the run counts (``named``) when one of its differences from the ground
    truth is named, tool and ground-truth argument class (:func:`_diff_named`);
    ``named_tool_only`` counts a check naming only the tool."""
    failed = [r for r in ctx.split.held if not r.success]
    changing = [
        r for r in failed if any(is_state_changing(c.tool) for c in (*r.calls, *r.expected))
    ]
    hits = tool_hits = with_difference = 0
    by_op: dict[str, dict[str, int]] = {
        op: {"runs": 0, "named": 0, "named_tool_only": 0} for op in ("missing", "extra", "arg")
    }
    for run in changing:
        diffs = differences(run.expected, run.calls, ctx.ignore)
        with_difference += bool(diffs)
        before: dict[str, list[CheckMatch]] = defaultdict(list)
        for call in run.calls:
            if is_state_changing(call.tool):
                before[call.tool].extend(_surfaced(mem, call))
        named = [_diff_named(d, run.expected, before) for d in diffs]
        hits += any(n for n, _ in named)
        tool_hits += any(t for _, t in named)
        for op, counts in by_op.items():
            of_op = [n for d, n in zip(diffs, named, strict=True) if d.op == op]
            if of_op:
                counts["runs"] += 1
                counts["named"] += any(n for n, _ in of_op)
                counts["named_tool_only"] += any(t for _, t in of_op)
    return {
        "failed_runs": len(failed),
        "failed_runs_with_state_change": len(changing),
        "failed_runs_with_difference": with_difference,
        "named": hits,
        "share": hits / len(changing) if changing else None,
        "named_tool_only": tool_hits,
        "share_tool_only": tool_hits / len(changing) if changing else None,
        "by_op": by_op,
    }


def _random_block(pool: Sequence[Experience], diffs: Sequence[Difference], k: int) -> float:
    """Exact chance that ``k`` lessons drawn at random from ``pool`` name one of ``diffs``
    (bit 2i: names the tool of diff i; bit 2i+1: names its key, or it has none)."""
    masks = []
    for exp in pool:
        mask = 0
        for i, diff in enumerate(diffs):
            if mentions(exp.content, diff.tool):
                mask |= 1 << (2 * i)
            if diff.key is None or mentions(exp.content, diff.key):
                mask |= 1 << (2 * i + 1)
        masks.append(mask)
    both = [(1 << (2 * i)) | (1 << (2 * i + 1)) for i in range(len(diffs))]
    return random_subset_probability(masks, k, lambda u: any(u & b == b for b in both))


# -- one reviewer ----------------------------------------------------------------------------------
def _review_all(ctx: Context, mem: Any) -> int:
    """Store and review every train run in order; returns how many reviews failed."""
    failures = 0
    for i, run in enumerate(ctx.split.train, start=1):
        mem.store_episode(run.trajectory, review=False)
        try:
            mem.review_now(run.id, tenant_id=TENANT)
        except Exception:  # a failed review is a figure (LLM reviewers), not the end
            failures += 1
        if i % 25 == 0 or i == len(ctx.split.train):
            ctx.progress(f"reviewed {i}/{len(ctx.split.train)}")
    return failures


def _replay(
    ctx: Context,
    embedder: Embedder,
    lessons: Sequence[Experience],
    episodes: Sequence[Experience],
    rewrite: Callable[[str], str],
) -> dict[str, Any]:
    """A second store holding the same runs, the same episodes and the same lessons with
    their text passed through ``rewrite``; recall measured with and without episodes."""
    plan: dict[str, list[Lesson]] = defaultdict(list)
    want: dict[str, float] = {}
    for exp in lessons:
        text = rewrite(exp.content)
        lesson = _as_lesson(exp, text)
        want[_key(text)] = max(want.get(_key(text), 0.0), exp.confidence)
        for source in exp.source_trajectory_ids:
            plan[source].append(lesson)
    for exp in episodes:
        for source in exp.source_trajectory_ids[:1]:
            plan[source].append(_as_lesson(exp, exp.content))
    with _memory(ctx, embedder, ReplayReviewer(dict(plan))) as mem:
        for run in ctx.split.train:
            mem.store_episode(run.trajectory, review=False)
            mem.review_now(run.id, tenant_id=TENANT)
        items = [e for e in _active(mem) if e.kind is not ExperienceKind.EPISODE]
        for exp in items:  # the same confidence as in the first store: only the text differs
            target = want.get(_key(exp.content))
            if target is not None and abs(target - exp.confidence) > 1e-9:
                mem.adjust_confidence(
                    exp.id,
                    target - exp.confidence,
                    tenant_id=TENANT,
                    reason="bench learning: confidence of the lesson in the first store",
                    actor="bench",
                )
        items = [e for e in _active(mem) if e.kind is not ExperienceKind.EPISODE]
        relevant = _relevant(ctx, items)
        with_ids, with_texts, situation = _rank(ctx, mem)
        for exp in _active(mem):
            if exp.kind is ExperienceKind.EPISODE:
                mem.delete_experience(exp.id, tenant_id=TENANT)
        without_ids, _, _ = _rank(ctx, mem)
        return {
            "lessons": len(items),
            "with_situation": score_queries(with_ids, relevant, len(items), ctx.k),
            "lesson_text_only": score_queries(without_ids, relevant, len(items), ctx.k),
            "situation_exposed": situation,
            "top_texts": with_texts,
        }


def evaluate_reviewer(
    ctx: Context, embedder: Embedder, reviewer: Reviewer | str, label: str | None = None
) -> dict[str, Any]:
    """Every figure of one embedder x reviewer (see :mod:`hindsight.bench.learning`)."""
    name = label or (reviewer if isinstance(reviewer, str) else reviewer.name)
    ctx.progress(f"{embedder.name} x {name}: reviewing {len(ctx.split.train)} runs")
    sources_ok = {r.id: r.success for r in ctx.split.train}
    with _memory(ctx, embedder, reviewer) as mem:
        failures = _review_all(ctx, mem)
        everything = _active(mem)
        lessons = [e for e in everything if e.kind is not ExperienceKind.EPISODE]
        episodes = [e for e in everything if e.kind is ExperienceKind.EPISODE]
        quarantined = _count(mem, "quarantined")
        figures = lesson_figures(ctx, lessons, len(ctx.split.train), sources_ok)
        ctx.progress(f"{embedder.name} x {name}: {len(lessons)} lessons; recall as stored")
        stored_ids, stored_texts, situation = _rank(ctx, mem)
        as_stored = score_queries(stored_ids, _relevant(ctx, lessons), len(lessons), ctx.k)
        ctx.progress(f"{embedder.name} x {name}: held-out runs, risk checks, outcomes")
        checks = _checks_figure(ctx, mem)
        confidence, corrective = _held_out(ctx, mem, lessons)
    ctx.progress(f"{embedder.name} x {name}: replay as stored and with the task text masked")
    same = _replay(ctx, embedder, lessons, episodes, lambda text: text)
    masked = _replay(ctx, embedder, lessons, episodes, lambda text: _masked(ctx, text))
    same_rank = sum(same["top_texts"][t] == stored_texts[t] for t in stored_texts)
    return {
        "embedder": embedder.name,
        "reviewer": name,
        "reviewed_runs": len(ctx.split.train),
        "review_failures": failures,
        "episodes": len(episodes),
        "quarantined": quarantined,
        "lessons": figures,
        "recall": {
            "as_stored": {
                "with_situation": as_stored,
                "lesson_text_only": same["lesson_text_only"],
            },
            "masked": {
                "with_situation": masked["with_situation"],
                "lesson_text_only": masked["lesson_text_only"],
            },
            "situation_exposed": situation or same["situation_exposed"],
            "replay": {
                "lessons_as_stored": same["lessons"],
                "lessons_masked": masked["lessons"],
                "same_top_k_as_first_store": same_rank,
                "queries": len(stored_texts),
            },
        },
        "outcomes": confidence,
        "corrective": corrective,
        "checks": checks,
    }


def _masked(ctx: Context, text: str) -> str:
    out = ctx.quotes.mask(text)
    return out if out.strip() and out.strip() != MASK else MASK + " (task text only)"


# -- the raw-first-message baseline ----------------------------------------------------------------
def evaluate_baseline(ctx: Context, embedder: Embedder) -> dict[str, Any]:
    """Index the train runs' first user messages, no review (``add_experience``); the same
    figures where they apply (a message relevant to the queries of its own task)."""
    ctx.progress(f"{embedder.name}: raw first-message baseline")
    task_sets: dict[str, set[str]] = defaultdict(set)
    ok_sets: dict[str, set[bool]] = defaultdict(set)
    with _memory(ctx, embedder, "heuristic") as mem:
        for run in ctx.split.train:
            if not run.first_message:
                continue
            exp = mem.add_experience(
                run.first_message, tenant_id=TENANT, task_type=run.trajectory.task_type
            )
            task_sets[exp.id].add(run.task)
            ok_sets[exp.id].add(run.success)
        items = [e for e in _active(mem) if e.kind is not ExperienceKind.EPISODE]
        relevant: dict[str, set[str]] = {r.task: set() for r in ctx.split.held}
        for exp in items:
            for task in task_sets.get(exp.id, ()):
                if task in relevant:
                    relevant[task].add(exp.id)
        ids, _, _ = _rank(ctx, mem)
        figures = lesson_figures(
            ctx,
            [e.model_copy(update={"source_trajectory_ids": []}) for e in items],
            len(ctx.split.train),
            {},
        )
        by_outcome: dict[str, list[float]] = {"success": [], "failure": [], "mixed": []}
        for exp in items:
            oks = ok_sets.get(exp.id, set())
            name = "success" if oks == {True} else "failure" if oks == {False} else "mixed"
            if oks:
                by_outcome[name].append(exp.confidence)
        figures["confidence_by_source"] = {
            name: {"n": len(v), "mean": mean(v) if v else None} for name, v in by_outcome.items()
        }
        confidence, corrective = _held_out(ctx, mem, None)
    return {
        "embedder": embedder.name,
        "items": figures,
        "recall": score_queries(ids, relevant, len(items), ctx.k),
        "outcomes": confidence,
        "corrective": corrective,
    }
