"""The tune report: ROC and precision-recall curves per signal, with the chosen and current operating points."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from sklearn.metrics import auc, precision_recall_curve, roc_curve

from ..plots import ACCENT, APPROPRIATE, INAPPROPRIATE
from ..report import write_report
from ..types import Table
from .points import OperatingPoint

if TYPE_CHECKING:  # imported where the curves are drawn
    from matplotlib.figure import Figure


def curves(
    signal: str, scores: np.ndarray, labels: np.ndarray, chosen: OperatingPoint, current: OperatingPoint | None
) -> Figure:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9.0, 3.8))
    roc_axes, pr_axes = figure.subplots(1, 2)
    fpr, tpr, _ = roc_curve(labels, scores)
    roc_axes.plot(fpr, tpr, color=APPROPRIATE, label=f"ROC (AUC {auc(fpr, tpr):.3f})")
    roc_axes.plot([0, 1], [0, 1], color="#cccccc", linestyle=":")
    precision, recall, _ = precision_recall_curve(labels, scores)
    pr_axes.plot(recall, precision, color=APPROPRIATE, label=f"PR (AP-style area {auc(recall, precision):.3f})")
    for point, name, color, marker in ((chosen, "chosen", INAPPROPRIATE, "o"), (current, "current", ACCENT, "s")):
        if point is None:
            continue
        label = f"{name} (threshold {point.threshold:g})"
        roc_axes.scatter([point.false_alarm_rate], [point.recall], color=color, marker=marker, zorder=3, label=label)
        if point.precision is not None:
            pr_axes.scatter([point.recall], [point.precision], color=color, marker=marker, zorder=3, label=label)
    roc_axes.set(xlabel="false-alarm rate", ylabel="recall", title=f"{signal}: ROC")
    pr_axes.set(xlabel="recall", ylabel="precision", title=f"{signal}: precision-recall")
    for axes in (roc_axes, pr_axes):
        axes.set_xlim(-0.02, 1.02)
        axes.set_ylim(-0.02, 1.02)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7, loc="lower right" if axes is roc_axes else "lower left")
    return figure


def write(
    directory: Path,
    *,
    headline: str,
    meta: dict,
    tables: list[Table],
    data,
    chosen: dict,
    current: dict,
    notes: list[str],
) -> Path:
    figures = [
        (
            f"{signal}: ROC and precision-recall",
            (lambda s=signal: curves(s, data.scores[s], data.labels[s], chosen[s], current.get(s))),
        )
        for signal in chosen
    ]
    return write_report(
        directory, title="couchguard tune", headline=headline, meta=meta, tables=tables, figures=figures, notes=notes
    )
