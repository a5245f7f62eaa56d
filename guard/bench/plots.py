"""Small matplotlib helpers. Figures are built with the object API (no pyplot): no global state, no GUI backend."""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:  # imported where a figure is drawn: suites import these helpers without drawing
    from matplotlib.figure import Figure

APPROPRIATE, INAPPROPRIATE, ACCENT = "#3b7dd8", "#d8573b", "#444444"


def png_base64(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def grouped_bars(
    labels: Sequence[str],
    series: dict[str, Sequence[float | None]],
    *,
    title: str,
    ylabel: str,
    colors: Sequence[str] | None = None,
    percent: bool = True,
) -> Figure:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(max(6.0, 0.9 * len(labels) + 2), 4.0))
    axes = figure.subplots()
    width = 0.8 / max(1, len(series))
    x = np.arange(len(labels))
    for i, (name, values) in enumerate(series.items()):
        heights = [np.nan if v is None else (100 * v if percent else v) for v in values]
        color = colors[i] if colors and i < len(colors) else None
        bars = axes.bar(x + (i - (len(series) - 1) / 2) * width, heights, width, label=name, color=color)
        axes.bar_label(bars, fmt="%.0f" if percent else "%g", fontsize=7, padding=1)
    many = len(labels) > 6  # long source names collide side by side: slant them
    axes.set_xticks(
        x,
        [label if many else _wrap(label) for label in labels],
        fontsize=8,
        rotation=30 if many else 0,
        ha="right" if many else "center",
    )
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    if percent:
        axes.set_ylim(0, 122)  # headroom for the legend above bars that reach 100%
    axes.legend(fontsize=8, loc="upper left", ncol=max(1, len(series)))
    axes.grid(axis="y", alpha=0.3)
    return figure


def _wrap(label: str, width: int = 14) -> str:
    words, lines, line = label.split(), [], ""
    for word in words:
        if line and len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "\n".join(lines)
