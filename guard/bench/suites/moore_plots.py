"""moore2025 figures: per-condition and per-source bars, score distributions, operating points."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..plots import ACCENT, APPROPRIATE, INAPPROPRIATE, grouped_bars
from ..types import FigureBuilder

# The assistant signal that carries each condition's failure mode (what the judge question asks about).
CONDITION_SIGNAL = {
    "suicidal ideation": "assistant.means",
    "delusions": "assistant.collusion",
    "hallucinations": "assistant.collusion",
    "mania": "assistant.enabling",
    "compulsive behavior, obsessive behavior": "assistant.enabling",
}


def figures(outcomes, summary: dict[str, Any], thresholds: dict[str, float]) -> list[tuple[str, FigureBuilder]]:
    judged = [o for o in outcomes if o.appropriate is not None]
    built: list[tuple[str, FigureBuilder]] = []
    if judged:
        built.append(("Catch and false-block rates by condition", lambda: _rates(summary["by_condition"], "condition")))
        built.append(("Catch and false-block rates by source", lambda: _rates(summary["by_source"], "source")))
        built.append(("Appropriate as the user receives it, before and after", lambda: _received(summary)))
        built.append(
            ("Score distributions: appropriate vs inappropriate responses", lambda: _distributions(judged, thresholds))
        )
        built.append(
            (
                "Operating points: the condition's signal alone vs the full policy",
                lambda: _operating_points(judged, summary, thresholds),
            )
        )
    return built


def _rates(groups: dict[str, dict], what: str) -> Figure:
    labels = list(groups)
    return grouped_bars(
        labels,
        {
            "catch rate": [groups[k]["catch_rate"] for k in labels],
            "false-block rate": [groups[k]["false_block_rate"] for k in labels],
        },
        title=f"By {what}",
        ylabel="% of responses",
        colors=[APPROPRIATE, INAPPROPRIATE],
    )


def _received(summary: dict[str, Any]) -> Figure:
    table = {k: v for k, v in summary["received_appropriate"].items() if not k.startswith("all ")}
    labels = list(table)
    return grouped_bars(
        labels,
        {
            "before couchguard": [table[k]["before"] for k in labels],
            "after couchguard": [table[k]["after"] for k in labels],
        },
        title="Appropriate as the user receives it",
        ylabel="% appropriate",
        colors=["#bbbbbb", APPROPRIATE],
    )


def _conditions(judged) -> list[str]:
    present = {o.condition for o in judged}
    return [c for c in CONDITION_SIGNAL if c in present]


def _distributions(judged, thresholds: dict[str, float]) -> Figure:
    conditions = _conditions(judged)
    figure = Figure(figsize=(3.2 * max(1, len(conditions)), 3.2))
    axes_row = np.atleast_1d(figure.subplots(1, max(1, len(conditions)), sharey=False))
    bins = np.linspace(0, 1, 21)
    for axes, condition in zip(axes_row, conditions):
        signal = CONDITION_SIGNAL[condition]
        group = [o for o in judged if o.condition == condition and signal in o.signals]
        for label, color, name in ((True, APPROPRIATE, "appropriate"), (False, INAPPROPRIATE, "inappropriate")):
            scores = [o.signals[signal] for o in group if o.appropriate is label]
            if scores:
                axes.hist(scores, bins=bins, alpha=0.6, color=color, label=f"{name} ({len(scores)})")
        if signal in thresholds:
            axes.axvline(thresholds[signal], color=ACCENT, linestyle="--", linewidth=1, label="policy threshold")
        axes.set_title(f"{condition[:24]}\n{signal}", fontsize=8)
        axes.set_xlabel("score", fontsize=8)
        axes.legend(fontsize=6)
    return figure


def _operating_points(judged, summary: dict[str, Any], thresholds: dict[str, float]) -> Figure:
    """Swept threshold on the condition's own signal (descriptive only: nothing is fitted on these data)."""
    conditions = _conditions(judged)
    figure = Figure(figsize=(6.0, 4.6))
    axes = figure.subplots()
    grid = np.linspace(0, 1, 201)
    for condition in conditions:
        signal = CONDITION_SIGNAL[condition]
        group = [o for o in judged if o.condition == condition and signal in o.signals]
        bad = np.array([o.signals[signal] for o in group if not o.appropriate])
        good = np.array([o.signals[signal] for o in group if o.appropriate])
        if not len(bad) or not len(good):
            continue
        catch = [(bad >= t).mean() for t in grid]
        false_block = [(good >= t).mean() for t in grid]
        (line,) = axes.plot(false_block, catch, linewidth=1.2, label=f"{condition[:22]} ({signal} alone)")
        point = summary["by_condition"].get(condition, {})
        if point.get("catch_rate") is not None and point.get("false_block_rate") is not None:
            axes.scatter(
                [point["false_block_rate"]],
                [point["catch_rate"]],
                color=line.get_color(),
                marker="o",
                s=45,
                edgecolor="black",
                zorder=3,
            )
    axes.set_xlabel("false-block rate (appropriate responses withheld)")
    axes.set_ylabel("catch rate (inappropriate responses withheld)")
    axes.set_title("Curves: one signal's threshold swept; dots: the full policy as run", fontsize=9)
    axes.set_xlim(-0.02, 1.02)
    axes.set_ylim(-0.02, 1.02)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=6, loc="lower right")
    return figure
