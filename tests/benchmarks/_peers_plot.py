"""PNG plot of a peer-benchmark report: recall latency (p50, with p95 as a thin bar) per size
and system, log scale. Needs matplotlib (extra ``bench``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_report(report: dict[str, Any], path: Path) -> Path:
    """Write the plot of ``report`` (``peers.py --json`` shape) to ``path`` (PNG); return it.

    Raises:
        ImportError: matplotlib is missing (names the ``bench`` extra).
        ValueError: the report has no results.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("the plot needs matplotlib: pip install -e '.[bench]'") from exc
    results = report.get("results") or []
    if not results:
        raise ValueError("the report has no results to plot")
    systems = list(results[0]["systems"])
    sizes = [r["size"] for r in results]
    width = 0.8 / len(systems)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for i, name in enumerate(systems):
        xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(sizes))]
        p50 = [r["systems"][name]["recall_ms"]["p50"] for r in results]
        p95 = [r["systems"][name]["recall_ms"]["p95"] for r in results]
        ax.bar(xs, p95, width * 0.35, color="lightgray")
        bars = ax.bar(xs, p50, width * 0.9, label=name)
        for bar, value in zip(bars, p50, strict=True):
            ax.annotate(
                f"{value:.1f}",
                (bar.get_x() + bar.get_width() / 2, value),
                ha="center",
                va="bottom",
                fontsize=8,
            )
    ax.set_yscale("log")
    ax.set_xticks(range(len(sizes)), [f"{n:,} lessons" for n in sizes])
    ax.set_ylabel("tenant-filtered recall, ms (p50; grey: p95)")
    load = report.get("machine", {}).get("loadavg", ["?"])[0]
    ax.set_title(
        f"Recall latency, embedding excluded ({report['machine']['cpus']} CPUs, load {load})"
    )
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
