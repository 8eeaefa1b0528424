"""Every performance goal of docs/benchmarks.md#the-goals-in-one-run measured in one process
run and printed as one table with its anchor and ratio (``hindsight bench goals``).

Rows (each a median over ``repeats`` repeats, wall and CPU time):

* recall p50 next to the raw Qdrant Edge query with the same filter, single tenant at each
  recall size, and the largest as 10 tenants (for information) (:mod:`._recall`);
* public batch ingest lessons/s (``Memory.add_experiences``, guard and dedup on, embedding
  excluded) at each ingest size, and the slowdown per 10x of store size (:mod:`._perf`);
* cold start next to a new process loading the raw Edge shard and querying once;
* review CPU ms per tau-bench run with the heuristic reviewer (needs a tau-bench file);
* capture overhead of each framework integration registered in the ``hindsight.bench`` entry
  point group (the LangChain handler, the LangChain middleware, the LangGraph nodes; a
  third-party package may add its own), including the background writer and the review
  (:mod:`._overhead`). The core never imports an integration: the entry point is loaded by
  name, and a row says how to install the integration when it does not import.

Nothing is asserted: the command measures, the reader judges (``met?`` compares with the goal).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "CAPTURE_PLUGINS",
    "ENTRY_POINT_GROUP",
    "GoalSettings",
    "capture_plugins",
    "render_goals",
    "run_goals",
]

ENTRY_POINT_GROUP = "hindsight.bench"
"""Entry point group of the capture-overhead bench functions of the framework integrations."""

CAPTURE_PLUGINS = (
    (
        "langchain_handler",
        "LangChain handler",
        "langchain",
        "hindsight_langchain._bench:handler_overhead",
    ),
    (
        "langchain_middleware",
        "LangChain HindsightMiddleware",
        "langchain",
        "hindsight_langchain._bench:middleware_overhead",
    ),
    (
        "langgraph_nodes",
        "LangGraph nodes",
        "langgraph",
        "hindsight_langgraph._bench:nodes_overhead",
    ),
)
"""``(entry point name, label, extra, target)`` of the shipped integrations; the target is
used when the installed metadata lacks the entry point (an editable install made before it
was declared in pyproject.toml). A plugin is ``fn(*, runs, repeats, tools, seeded, data_dir)``
returning :func:`~hindsight.bench._overhead.added_cost`'s dict plus ``"what"``."""

CAPTURE_GOAL_MS = 5.0
"""Goal: the middleware and the nodes add <= 5 ms CPU per run on the agent's path
(docs/benchmarks.md#the-goals-in-one-run)."""
RECALL_GOAL_RATIO = 3.0
INGEST_GOAL_PER_S = 2_000.0
INGEST_GOAL_SLOPE = 1.3
COLD_GOAL_RATIO = 1.5
REVIEW_GOAL_MS = 10.0
TAU_BENCH_DEFAULT = Path("../shared/data/tau-bench/gpt-4o-airline.json")
"""Where ``--tau-bench`` looks by default (relative to the working directory)."""


@dataclass(frozen=True)
class GoalSettings:
    """How much each row measures. :meth:`full` is the default, :meth:`quick` a smoke run
    (seconds; its figures mean nothing)."""

    recall_sizes: tuple[int, ...] = (10_000, 100_000)
    multi_tenants: int = 10
    queries: int = 200
    ingest_sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    ingest_batch: int = 1_000
    cold_size: int = 1_000
    review_runs: int | None = None
    capture_runs: int = 30
    capture_tools: int = 10
    capture_seeded: int = 500
    repeats: int = 5
    ingest_repeats: int | None = None
    """Repeats of the ingest rows (each fills a new store to the largest size); None:
    ``repeats``."""

    @classmethod
    def full(cls) -> GoalSettings:
        return cls()

    @classmethod
    def quick(cls) -> GoalSettings:
        return cls(
            recall_sizes=(100, 300),
            multi_tenants=3,
            queries=5,
            ingest_sizes=(20, 200),
            ingest_batch=20,
            cold_size=20,
            review_runs=3,
            capture_runs=2,
            capture_tools=2,
            capture_seeded=20,
            repeats=1,
        )

    def with_sizes(self, sizes: Sequence[int]) -> GoalSettings:
        """Recall and ingest at ``sizes`` (ascending, >= 1)."""
        return replace(self, recall_sizes=tuple(sizes), ingest_sizes=tuple(sizes))


Say = Callable[[str], None]


def _prefixed(say: Say, prefix: str) -> Say:
    return lambda line: say(f"{prefix}: {line}")


def capture_plugins() -> list[dict[str, Any]]:
    """The capture-overhead plugins: the shipped ones (always listed) and any other entry
    point of :data:`ENTRY_POINT_GROUP`. Each is ``{"name", "label", "fn"}`` with ``fn`` None
    and ``"note"`` saying why when it does not load (e.g. ``not installed: pip install
    'hindsight-memory[langchain]'``)."""
    found = {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    out = []
    for name, label, extra, target in CAPTURE_PLUGINS:
        ep = found.pop(name, None) or metadata.EntryPoint(name, target, ENTRY_POINT_GROUP)
        out.append(_load(ep, label, f"pip install 'hindsight-memory[{extra}]'"))
    for name in sorted(found):
        out.append(_load(found[name], name, f"install the package of {found[name].value}"))
    return out


def _load(ep: metadata.EntryPoint, label: str, install: str) -> dict[str, Any]:
    try:
        return {"name": ep.name, "label": label, "fn": ep.load()}
    except ImportError as exc:
        note = f"not installed: {install} ({exc})"
    except Exception as exc:  # a broken plugin is reported, never timed or hidden
        note = f"failed to load {ep.value}: {type(exc).__name__}: {exc}"
    return {"name": ep.name, "label": label, "fn": None, "note": note}


def _header(cwd: Path) -> dict[str, Any]:
    import platform

    from hindsight import __version__
    from hindsight.config import MemoryConfig

    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
            )
        except OSError:
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    # an installed package is no checkout: a git repository around site-packages is not ours
    top = git("rev-parse", "--show-toplevel")
    ours = (root / "pyproject.toml").is_file() and bool(top) and Path(top).resolve() == root
    return {
        "commit": (ours and git("rev-parse", "HEAD")) or "unknown (not a git checkout)",
        "describe": (ours and git("describe", "--always", "--dirty", "--tags")) or "unknown",
        "version": __version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "embedder": MemoryConfig().embedding_model,
        "load_start": list(os.getloadavg()),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cwd": str(cwd),
    }


def run_goals(
    settings: GoalSettings | None = None,
    *,
    tau_bench: Path | None = None,
    parent: Path | None = None,
    progress: Say | None = None,
) -> dict[str, Any]:
    """Measure every row (module docstring) in this process; returns ``{"header", "rows"}``.

    Args:
        settings: sizes and counts (default :meth:`GoalSettings.full`).
        tau_bench: the tau-bench results file for the review row (None: the row is skipped
            with a note).
        parent: folder for the temporary stores (default: the system temp dir).
        progress: called with a short line as each part starts.

    Returns:
        ``header``: commit, describe, version, python, cpus, embedder, load_start/load_end
        (1/5/15-minute load averages), started/seconds; ``rows``: ``{"goal", "measured",
        "anchor", "ratio", "target", "met", "note", "data"}`` (``data``: the raw figures).

    Raises:
        ValueError: a size or count below 1.
    """
    s = settings or GoalSettings.full()
    say = progress or (lambda _line: None)
    header = _header(Path.cwd())
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    rows += _recall_rows(s, parent, say)
    rows += _ingest_rows(s, parent, say)
    rows.append(_cold_row(s, parent, say))
    rows.append(_review_row(s, tau_bench, parent, say))
    rows += _capture_rows(s, parent, say)
    header["load_end"] = list(os.getloadavg())
    header["seconds"] = round(time.perf_counter() - start, 1)
    return {"header": header, "settings": s.__dict__, "rows": rows}


def _row(
    goal: str,
    measured: str,
    anchor: str,
    ratio: str,
    target: str,
    met: str,
    data: Any,
    note: str = "",
) -> dict[str, Any]:
    return {
        "goal": goal,
        "measured": measured,
        "anchor": anchor,
        "ratio": ratio,
        "target": target,
        "met": met,
        "note": note,
        "data": data,
    }


def _met(wall_ok: bool, cpu_ok: bool) -> str:
    if wall_ok and cpu_ok:
        return "yes"
    if cpu_ok:
        return "CPU only"
    return "wall only" if wall_ok else "no"


def _recall_rows(s: GoalSettings, parent: Path | None, say: Say) -> list[dict[str, Any]]:
    from hindsight.bench._recall import recall_vs_edge

    layouts = [(size, 1) for size in s.recall_sizes]
    if s.multi_tenants > 1 and s.recall_sizes[-1] >= s.multi_tenants:
        layouts.append((s.recall_sizes[-1], s.multi_tenants))
    rows = []
    for size, tenants in layouts:
        r = recall_vs_edge(
            size,
            tenants=tenants,
            queries=s.queries,
            repeats=s.repeats,
            parent=parent,
            progress=_prefixed(say, "recall"),
        )
        h, e, x = r["hindsight_ms"], r["raw_edge_ms"], r["ratio"]
        single = tenants == 1
        layout = (
            f"{size:,} in 1 tenant" if single else f"{size:,} as {tenants} x {r['per_tenant']:,}"
        )
        rows.append(
            _row(
                f"recall p50, {layout}",
                f"{h['wall']['p50']:.3f} ms wall, {h['cpu']['p50']:.3f} ms CPU",
                f"raw Edge query, same filter: {e['wall']['p50']:.3f} / {e['cpu']['p50']:.3f} ms",
                f"{x['wall_p50']:.2f}x wall, {x['cpu_p50']:.2f}x CPU",
                f"<= {RECALL_GOAL_RATIO:g}x" if single else "info",
                _met(x["wall_p50"] <= RECALL_GOAL_RATIO, x["cpu_p50"] <= RECALL_GOAL_RATIO)
                if single
                else "info",
                r,
                f"top_k {r['top_k']}, {r['queries']} queries x {r['repeats']} repeats, "
                f"{r['embedder']}, embedding excluded",
            )
        )
    return rows


def _ingest_rows(s: GoalSettings, parent: Path | None, say: Say) -> list[dict[str, Any]]:
    from hindsight.bench._perf import _slopes, batch_ingest

    ingest_repeats = s.ingest_repeats or s.repeats
    runs = [
        batch_ingest(
            s.ingest_sizes,
            batch=s.ingest_batch,
            parent=parent,
            progress=_prefixed(say, f"ingest {k + 1}/{ingest_repeats}"),
        )
        for k in range(ingest_repeats)
    ]
    sizes = []
    for i, size in enumerate(s.ingest_sizes):
        per = [run["sizes"][i] for run in runs]
        sizes.append(
            {
                "size": size,
                "lessons_per_s_wall": statistics.median(p["lessons_per_s_wall"] for p in per),
                "lessons_per_s_cpu": statistics.median(p["lessons_per_s_cpu"] for p in per),
                **{k: per[-1][k] for k in ("created", "merged", "quarantined")},
            }
        )
    rows = []
    for row in sizes:
        wall, cpu = row["lessons_per_s_wall"], row["lessons_per_s_cpu"]
        rows.append(
            _row(
                f"public batch ingest at {row['size']:,}",
                f"{wall:,.0f} lessons/s wall, {cpu:,.0f} CPU",
                f"goal {INGEST_GOAL_PER_S:,.0f} lessons/s (at 10k)",
                f"{wall / INGEST_GOAL_PER_S:.2f}x wall, {cpu / INGEST_GOAL_PER_S:.2f}x CPU of goal",
                f">= {INGEST_GOAL_PER_S:,.0f}/s" if row["size"] == 10_000 else "info (goal at 10k)",
                _met(wall >= INGEST_GOAL_PER_S, cpu >= INGEST_GOAL_PER_S)
                if row["size"] == 10_000
                else "info",
                row,
                f"Memory.add_experiences, batches of {s.ingest_batch:,}, guard+dedup on, "
                f"{runs[0]['embedder']} vectors precomputed; medians of {len(runs)} stores; "
                f"{row['created']} created, {row['merged']} merged, {row['quarantined']} "
                "quarantined (last store)",
            )
        )
    for slope in _slopes(sizes):
        rows.append(
            _row(
                f"ingest slowdown per 10x, {slope['from']:,} -> {slope['to']:,}",
                f"{slope['wall']:.2f}x wall, {slope['cpu']:.2f}x CPU slower per 10x",
                f"lessons/s at {slope['from']:,}",
                f"{slope['wall']:.2f}x wall, {slope['cpu']:.2f}x CPU",
                f"<= {INGEST_GOAL_SLOPE:g}x",
                _met(slope["wall"] <= INGEST_GOAL_SLOPE, slope["cpu"] <= INGEST_GOAL_SLOPE),
                slope,
                "rate at the smaller size over the rate at the larger, per 10x of size",
            )
        )
    return rows


def _cold_row(s: GoalSettings, parent: Path | None, say: Say) -> dict[str, Any]:
    from hindsight.bench._perf import cold_start_vs_edge

    r = cold_start_vs_edge(
        s.cold_size,
        repeats=s.repeats,
        parent=parent,
        progress=_prefixed(say, "cold start"),
    )
    ours, edge, x = r["hindsight"], r["edge"], r["ratio"]
    return _row(
        f"cold start, {s.cold_size:,} lessons",
        f"{ours['wall_ms']:.0f} ms wall, {ours['cpu_ms']:.0f} ms CPU",
        f"new process loading the raw Edge shard + 1 query: {edge['wall_ms']:.0f} / "
        f"{edge['cpu_ms']:.0f} ms",
        f"{x['wall']:.2f}x wall, {x['cpu']:.2f}x CPU",
        f"<= {COLD_GOAL_RATIO:g}x",
        _met(x["wall"] <= COLD_GOAL_RATIO, x["cpu"] <= COLD_GOAL_RATIO),
        r,
        f"whole new processes (interpreter start included), open + 1 recall, medians of "
        f"{s.repeats}; OS file cache warm",
    )


def _review_row(
    s: GoalSettings, tau_bench: Path | None, parent: Path | None, say: Say
) -> dict[str, Any]:
    from hindsight.bench._perf import review_cpu

    goal = "review CPU per tau-bench run (heuristic)"
    target = f"<= {REVIEW_GOAL_MS:g} ms CPU"
    if tau_bench is None or not tau_bench.is_file():
        where = f" ({tau_bench} not found)" if tau_bench is not None else ""
        return _row(
            goal,
            "skipped",
            "-",
            "-",
            target,
            "not measured",
            None,
            f"needs a tau-bench file: --tau-bench PATH{where}",
        )
    runs = [
        review_cpu(
            tau_bench,
            runs=s.review_runs,
            parent=parent,
            progress=_prefixed(say, f"review {k + 1}/{s.repeats}"),
        )
        for k in range(s.repeats)
    ]
    cpu = statistics.median(r["cpu_ms"]["median"] for r in runs)
    wall = statistics.median(r["wall_ms"]["median"] for r in runs)
    return _row(
        goal,
        f"{wall:.1f} ms wall, {cpu:.1f} ms CPU per run (p50)",
        f"budget {REVIEW_GOAL_MS:g} ms CPU",
        f"{wall / REVIEW_GOAL_MS:.2f}x wall, {cpu / REVIEW_GOAL_MS:.2f}x CPU of budget",
        target,
        _met(wall <= REVIEW_GOAL_MS, cpu <= REVIEW_GOAL_MS),
        {"file": str(tau_bench), "runs": runs},
        f"Memory.review_now (review + write-back) over {runs[0]['runs']} runs of "
        f"{tau_bench.name}, {runs[0]['lessons']} lessons",
    )


def _capture_rows(s: GoalSettings, parent: Path | None, say: Say) -> list[dict[str, Any]]:
    rows = []
    for plugin in capture_plugins():
        goal = f"capture overhead: {plugin['label']}"
        is_goal = plugin["name"] != "langchain_handler"
        target = f"<= +{CAPTURE_GOAL_MS:g} ms CPU" if is_goal else "info"
        if plugin["fn"] is None:
            rows.append(
                _row(goal, "skipped", "-", "-", target, "not measured", None, plugin["note"])
            )
            continue
        say(f"capture: {plugin['label']}")
        folder = Path(tempfile.mkdtemp(prefix="hindsight-bench-capture-", dir=parent))
        try:
            r = plugin["fn"](
                runs=s.capture_runs,
                repeats=s.repeats,
                tools=s.capture_tools,
                seeded=s.capture_seeded,
                data_dir=folder / "data",
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        add, base, path, x = r["added"], r["without"], r["on_path_added"], r["ratio"]
        side = r.get("side")
        recall = (
            f"; its recall {side['cpu_ms']:.2f} ms CPU (timed in the run, subtracted)"
            if side
            else ""
        )
        floor = r.get("floor")
        framework = (
            f" (the framework's part, {r.get('floor_what', 'empty hooks')}: "
            f"+{floor['cpu_ms']:.2f} ms CPU; hindsight's: +{path['cpu_ms'] - floor['cpu_ms']:.2f})"
            if floor
            else ""
        )
        rows.append(
            _row(
                goal,
                f"on the agent's path +{path['cpu_ms']:.2f} ms CPU, +{path['wall_ms']:.2f} ms "
                f"wall per run{framework}; with its background work +{add['cpu_ms']:.2f} ms CPU",
                f"the same agent without hindsight: {base['cpu_ms']:.2f} ms CPU, "
                f"{base['wall_ms']:.2f} ms wall",
                f"{x['wall']:.2f}x wall, {x['cpu']:.2f}x CPU",
                target,
                ("yes" if path["cpu_ms"] <= CAPTURE_GOAL_MS else "no") if is_goal else "info",
                r,
                f"{r['what']}; the goal is the agent's path: the run alone, the CPU of every "
                f"thread of the process while it runs{recall}; with its background work "
                f"(the writer storing the trajectory, then its review, timed until done) "
                f"+{add['cpu_ms']:.2f} ms CPU, +{add['wall_ms']:.2f} ms wall; ratio of the "
                f"whole: {x['wall']:.2f}x wall, {x['cpu']:.2f}x CPU; {r['runs']} pairs x "
                f"{r['repeats']} repeats",
            )
        )
    return rows


_COLUMNS = ("goal", "measured", "anchor", "ratio", "target", "met")


def render_goals(report: dict[str, Any]) -> list[str]:
    """The header lines, then one Markdown table (``goal | measured (p50 wall, p50 CPU) |
    anchor | ratio | goal | met?``), then one note line per row."""
    h = report["header"]
    load = (
        "/".join(f"{v:.2f}" for v in h["load_start"]),
        "/".join(f"{v:.2f}" for v in h["load_end"]),
    )
    lines = [
        f"hindsight {h['version']} at {h['describe']} ({h['commit']}), Python {h['python']}, "
        f"{h['cpus']} CPUs, embedder {h['embedder']}",
        f"load average (1/5/15 min) at start {load[0]}, at end {load[1]}; {h['seconds']} s",
        "",
        "| goal | measured (p50 wall, p50 CPU) | anchor | ratio | goal | met? |",
        "|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        lines.append("| " + " | ".join(str(row[c]) for c in _COLUMNS) + " |")
    lines.append("")
    lines += [f"- {row['goal']}: {row['note']}" for row in report["rows"] if row["note"]]
    return lines
