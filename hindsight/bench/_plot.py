"""The PNG plot of ``hindsight bench --plot``: recall latency against store size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["MATPLOTLIB_MISSING", "write_plot"]

MATPLOTLIB_MISSING = "--plot needs matplotlib: pip install matplotlib"


def write_plot(report: dict[str, Any], path: Path) -> Path:
    """Draw recall latency p50 / p95 / p99 (ms, log y) against the number of experiences
    (log x) of ``report["results"]`` into the PNG ``path``; returns ``path``.

    Raises:
        ImportError: matplotlib is not installed (message: :data:`MATPLOTLIB_MISSING`).
        OSError: ``path`` cannot be written.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(MATPLOTLIB_MISSING) from exc
    results = sorted(report["results"], key=lambda r: r["size"])
    sizes = [r["size"] for r in results]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    try:
        for key, style in (("p50", "o-"), ("p95", "s--"), ("p99", "^:")):
            ax.plot(sizes, [r["recall_ms"][key] for r in results], style, label=key)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("experiences in the store")
        ax.set_ylabel("recall latency (ms, embedding excluded)")
        ax.set_title("hindsight bench: recall latency vs store size")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)
    return path
