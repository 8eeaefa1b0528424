"""Plot geometry for server-rendered SVG (no plotting library, no script).

Each function turns numbers into rectangles and labels in SVG user units; the templates
(``_macros.html``) draw them. Colours come from CSS classes (``s0``, ``s1`` ... per series).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

__all__ = ["breakdown_bars", "columns", "days", "hbars"]


def hbars(items: Sequence[tuple[str, float]], *, width: int = 420, row: int = 20) -> dict[str, Any]:
    """Horizontal bars, one per ``(label, value)``, scaled to the largest value."""
    label_w, value_w = 130, 50
    span = width - label_w - value_w
    top = max((v for _, v in items), default=0) or 1
    bars = [
        {
            "label": label,
            "value": value,
            "x": label_w,
            "y": i * row,
            "w": round(span * max(value, 0) / top, 2),
            "h": row - 6,
            "tx": label_w + round(span * max(value, 0) / top, 2) + 4,
        }
        for i, (label, value) in enumerate(items)
    ]
    return {"width": width, "height": max(len(items), 1) * row, "bars": bars}


def columns(
    labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    width: int = 640,
    height: int = 160,
    line: Sequence[float | None] | None = None,
) -> dict[str, Any]:
    """Vertical stacked columns: one column per label, one stacked block per series (in the
    order given). ``line`` (values in [0, 1], ``None`` = no point) is drawn over the columns
    on its own [0, 1] scale, e.g. a rate."""
    left, bottom, top_pad = 36, 22, 8
    plot_h = height - bottom - top_pad
    n = max(len(labels), 1)
    step = (width - left) / n
    totals = [sum(s[i] for s in series.values()) for i in range(len(labels))]
    top = max(totals, default=0) or 1
    blocks: list[dict[str, Any]] = []
    for i in range(len(labels)):
        y = float(top_pad + plot_h)
        for k, (name, values) in enumerate(series.items()):
            h = plot_h * values[i] / top
            if h > 0:
                y -= h
                blocks.append(
                    {
                        "x": round(left + i * step + step * 0.1, 2),
                        "y": round(y, 2),
                        "w": round(step * 0.8, 2),
                        "h": round(h, 2),
                        "cls": f"s{k}",
                        "title": f"{labels[i]}: {name} {values[i]:g}",
                    }
                )
    every = max(1, -(-n // 10))
    ticks = [
        {"x": round(left + i * step + step / 2, 2), "label": label}
        for i, label in enumerate(labels)
        if i % every == 0
    ]
    points = ""
    if line is not None:
        points = " ".join(
            f"{left + i * step + step / 2:.2f},{top_pad + plot_h * (1 - v):.2f}"
            for i, v in enumerate(line)
            if v is not None
        )
    return {
        "width": width,
        "height": height,
        "blocks": blocks,
        "ticks": ticks,
        "max": top,
        "base_y": top_pad + plot_h,
        "left": left,
        "top_y": top_pad,
        "legend": list(series),
        "points": points,
    }


def days(now: datetime, count: int) -> list[str]:
    """The ``count`` UTC days ending today, oldest first, as ``YYYY-MM-DD``."""
    return [(now - timedelta(days=count - 1 - i)).strftime("%Y-%m-%d") for i in range(count)]


def breakdown_bars(breakdown: Mapping[str, Any], prefix: str = "") -> list[dict[str, Any]]:
    """Every number of a score breakdown as a bar, whatever the fields are (nested mappings
    such as ``weights`` flattened to ``weights.similarity``). A bar's length is ``|value|``
    clipped to [0, 1]; ``negative`` marks values below zero."""
    out: list[dict[str, Any]] = []
    for name, value in breakdown.items():
        label = f"{prefix}{name}"
        if isinstance(value, Mapping):
            out += breakdown_bars(value, prefix=f"{label}.")
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out.append(
                {
                    "label": label,
                    "value": float(value),
                    "w": round(min(abs(float(value)), 1.0) * 100, 2),
                    "negative": value < 0,
                }
            )
    return out
