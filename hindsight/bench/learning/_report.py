"""The learning report as rich tables (what ``hindsight bench learning`` prints)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from hindsight.review.mining.miner import MIN_RATE

__all__ = ["render_report"]

BASELINE = "raw messages"


def _f(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _table(title: str, *columns: str, first: str = "system") -> Table:
    """A table whose first column (``first``) names the row and never shrinks; the other
    columns wrap their headers and cells in a narrow terminal rather than cut them."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column(first, no_wrap=True, min_width=len(first))
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", overflow="fold")
    return table


def _load(values: Any) -> str:
    return "n/a" if not values else " ".join(f"{v:.1f}" for v in values)


def _embedder(doc: dict[str, Any]) -> str:
    return str(doc.get("embedder_spec") or doc["embedder"])


def _systems(report: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    """(label, document, is_baseline) in print order: per embedder, the baseline then runs."""
    out = []
    for base in report["baselines"]:
        out.append((f"{_embedder(base)}\n{BASELINE}", base, True))
        for run in report["runs"]:
            if run["embedder"] == base["embedder"]:
                out.append((f"{_embedder(run)}\n{run['reviewer']}", run, False))
    return out


def _recall_table(report: dict[str, Any]) -> Table:
    k = report["k"]
    table = _table(
        f"Same-task lessons in the top {k} for held-out first messages",
        "lesson text, match",
        "pool",
        f"hit@{k}",
        f"recall@{k}n",
        f"MRR@{k}",
    )

    def rows(label: str, variants: list[tuple[str, dict[str, Any]]]) -> None:
        last_pool = None
        for i, (name, s) in enumerate(variants):
            table.add_row(
                label if i == 0 else "", name, str(s["pool"]),
                _f(s["hit"]), _f(s["normalized_recall"]), _f(s["mrr"]),
            )  # fmt: skip
            nxt = variants[i + 1][1]["pool"] if i + 1 < len(variants) else None
            last_pool = s["pool"]
            if nxt != last_pool:
                r = s["random"]
                table.add_row(
                    "", "  random, same pool", "",
                    _f(r["hit"]), _f(r["normalized_recall"]), _f(r["mrr"]),
                )  # fmt: skip
        table.add_section()

    for label, doc, baseline in _systems(report):
        rec = doc["recall"]
        if baseline:
            rows(label, [("as is", rec)])
            continue
        rows(
            label,
            [
                ("stored, situation", rec["as_stored"]["with_situation"]),
                ("stored, text only", rec["as_stored"]["lesson_text_only"]),
                ("masked, situation", rec["masked"]["with_situation"]),
                ("masked, text only", rec["masked"]["lesson_text_only"]),
            ],
        )
    return table


def _lesson_table(report: dict[str, Any]) -> Table:
    table = _table(
        "Lessons (episodes excluded); confidence by the outcome of their source runs",
        "lessons",
        "/run",
        "dupl.",
        "ids/PII",
        "quote",
        "conf ok",
        "conf fail",
    )
    for label, doc, baseline in _systems(report):
        items = doc["items"] if baseline else doc["lessons"]
        conf = items["confidence_by_source"]
        table.add_row(
            label,
            str(items["count"]),
            _f(items["per_run"]),
            _pct(items["duplicates"]["rate"]),
            _pct(items["identifiers"]["share"]),
            _pct(items["quoted_task_text"]["share"]),
            _f(conf["success"]["mean"]),
            _f(conf["failure"]["mean"]),
        )
    return table


def _outcome_table(report: dict[str, Any]) -> Table:
    table = _table(
        "Held-out runs: confidence of what they recalled, before -> after their outcome; "
        "failed runs whose block names what they got wrong",
        "by failed runs",
        "by successful",
        "corrective",
        "random",
    )

    def conf(group: dict[str, Any]) -> str:
        return f"{_f(group['before'])} -> {_f(group['after'])}"

    for label, doc, _baseline in _systems(report):
        out, cor = doc["outcomes"], doc["corrective"]
        table.add_row(
            label,
            conf(out["recalled_by_failed_only"]),
            conf(out["recalled_by_successful_only"]),
            f"{_pct(cor['share'])} {cor['corrected']}/{cor['with_difference']}",
            _pct(cor["random"]),
        )
    return table


def render_report(report: dict[str, Any]) -> list[Any]:
    """Rich renderables: three tables and the run's facts (file, split, commit, time, machine)."""
    m = report["machine"]
    commit = report.get("commit") or "unknown (not a git checkout)"
    if report.get("dirty"):
        commit += " + uncommitted changes"
    trials = ",".join(str(t) for t in report["train_trials"])
    facts = [
        f"{report['file']}: {report['tasks']} tasks; trials {trials} reviewed "
        f"({report['train_runs']} runs, {report['train_failed']} failed), trial "
        f"{report['query_trial']} held out ({report['held_out_runs']} runs, "
        f"{report['held_out_failed']} failed)",
        f"commit {commit}; CPU {report['cpu_seconds']:.1f} s, wall {report['wall_seconds']:.1f} s;"
        f" hindsight {m['hindsight']}, Python {m['python']}, {m['platform']}, {m['cpus']} CPUs, "
        f"load {_load(m.get('load_average_at_start'))}",
    ]
    for run in report["runs"]:
        rec = run["recall"]
        who = f"{_embedder(run)} / {run['reviewer']}"
        if not rec["situation_exposed"]:
            facts.append(
                f"{who}: recall's score breakdown shows no situation match, so 'situation' "
                "and 'text only' rank alike"
            )
        replay = rec["replay"]
        if replay["same_top_k_as_first_store"] != replay["queries"]:
            facts.append(
                f"{who}: the replayed store ranked {replay['same_top_k_as_first_store']} of "
                f"{replay['queries']} queries as the first store did"
            )
        if run["review_failures"]:
            facts.append(f"{who}: {run['review_failures']} reviews failed")
    contrasts = report.get("contrasts") or {}
    if contrasts:
        facts.append(
            "within-task contrasts (task groups whose runs did and did not call the tool; "
            "calling went worse / better): "
            + ", ".join(f"{t} {c['worse']} / {c['better']}" for t, c in contrasts.items())
        )
    for mode, rows in (report.get("nearest") or {}).items():
        if rows:
            facts.append(
                f"nearest conditions (trial split, {mode} mode; task groups where it held and "
                "the decision went wrong, against where it did not; p, and the p the 5% false "
                "discovery rate needed among the conditions tested): "
                + "; ".join(_nearest(row) for row in rows)
            )
    tables = [_recall_table(report), _lesson_table(report), _outcome_table(report)]
    if report.get("conditions"):
        tables.append(_conditions_table(report))
    return [*tables, *facts]


def _nearest(row: dict[str, Any]) -> str:
    what = f"{row['tool']} {row['form']}" + (f" '{row['message']}'" if row["message"] else "")
    lacks = []
    if row["p"] > row["needed"]:
        lacks.append(f"needs p <= {row['needed']:.2g}, {row['tested']} conditions tested")
    if row["wilson"] < MIN_RATE:
        lacks.append(f"bad-rate lower bound {row['wilson']:.2f} < {MIN_RATE:g}")
    verdict = "stands" if row["stands"] else " and ".join(lacks) or "not kept"
    return (
        f"{what}: when {row['condition']}, {row['bad']} of {row['held']} vs "
        f"{row['bad_else']} of {row['held_else']}, p {row['p']:.2g} ({verdict})"
    )


def _conditions_table(report: dict[str, Any]) -> Table:
    """The strict figures (:mod:`hindsight.bench.learning._conditions`), one row per split and
    mode: rules, truisms, lesson-text-only recall, opposed blocks, corrective blocks and
    checks, beside random and the tool-name-only criterion."""
    k = report["k"]
    table = _table(
        "Rules that say when (hash embedder, heuristic reviewer + condition mining)",
        "rules (conditional / truisms)",
        f"text-only hit@{k} (random)",
        "opposed blocks",
        "corrective block (random)",
        "corrective check",
        "tool named only",
        first="split, mode",
    )
    for row in report["conditions"]:
        text = row["text_only"]
        failed = row["failed_runs"]
        table.add_row(
            f"{row['split']} split\n{row['mode']}",
            f"{row['rules']} ({row['conditional_rules']} / {row['truisms']})",
            f"{_f(text['hit'])} ({_f(text['random']['hit'])}) of {text['queries']}",
            f"{row['opposed_blocks']} of {row['blocks']}",
            f"{row['corrective']} of {failed} ({_f(row['corrective_random'])})",
            f"{row['corrective_checks']} of {failed}",
            f"{row['corrective_tool_only']} of {failed}",
        )
    return table
