"""Operating points and the threshold choice.

The chosen threshold is the highest one whose recall on the product's positives reaches the target: recall and false
alarms both fall as the threshold rises, so the highest such threshold has the fewest false alarms. The rule itself is
`classifiers.thresholds.threshold_for_recall`, the one training and `couchguard eval` use; here it is refused when the
data cannot support it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import roc_curve

from classifiers.thresholds import threshold_for_recall

from ..stats import rounded, wilson

MIN_POSITIVES = 10
DECIMALS = 4


class TuneRefusal(ValueError):
    """The data cannot support what was asked (too few positives, an unreachable false-alarm limit)."""


@dataclass(frozen=True)
class OperatingPoint:
    threshold: float
    tp: int
    fn: int
    fp: int
    tn: int

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else float("nan")

    @property
    def false_alarm_rate(self) -> float:
        return self.fp / (self.fp + self.tn) if self.fp + self.tn else float("nan")

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall_ci(self) -> tuple[float, float] | None:
        return wilson(self.tp, self.tp + self.fn)

    @property
    def false_alarm_ci(self) -> tuple[float, float] | None:
        return wilson(self.fp, self.fp + self.tn)

    def as_dict(self) -> dict:
        return {
            "threshold": self.threshold,
            "recall": round(self.recall, 4),
            "recall_ci95": rounded(self.recall_ci),
            "false_alarm_rate": round(self.false_alarm_rate, 4),
            "false_alarm_ci95": rounded(self.false_alarm_ci),
            "precision": None if self.precision is None else round(self.precision, 4),
            "tp": self.tp,
            "fn": self.fn,
            "fp": self.fp,
            "tn": self.tn,
        }


def operating_point(scores: np.ndarray, labels: np.ndarray, threshold: float) -> OperatingPoint:
    """Flagged = score at or above the threshold, as the policy engine decides."""
    flagged = scores >= threshold
    positive = labels == 1
    return OperatingPoint(
        threshold=float(threshold),
        tp=int((flagged & positive).sum()),
        fn=int((~flagged & positive).sum()),
        fp=int((flagged & ~positive).sum()),
        tn=int((~flagged & ~positive).sum()),
    )


def min_positives(target_recall: float) -> int:
    """Positives needed before a recall target means anything: at least one miss must be possible within the target
    (1 / (1 - R) positives: 20 for 0.95, 50 for 0.98), and never fewer than MIN_POSITIVES."""
    if not 0 < target_recall < 1:
        raise TuneRefusal(
            f"--target-recall must be strictly between 0 and 1, got {target_recall} (a recall of 1.0 "
            "cannot be demonstrated on a finite sample; ask for e.g. 0.99)"
        )
    return max(MIN_POSITIVES, math.ceil(1 / (1 - target_recall) - 1e-9))


def choose_point(
    scores: np.ndarray,
    labels: np.ndarray,
    target_recall: float,
    *,
    max_false_alarm: float | None = None,
    signal: str = "signal",
) -> OperatingPoint:
    """The highest threshold reaching `target_recall`; TuneRefusal when the data cannot support it."""
    needed = min_positives(target_recall)
    positives = int((labels == 1).sum())
    negatives = int((labels == 0).sum())
    if positives < needed:
        raise TuneRefusal(
            f"{signal}: {positives} positive example(s), but recall {target_recall:g} needs at "
            f"least {needed} (so that one miss still fits the target); label more positives or lower "
            "--target-recall"
        )
    if negatives == 0:
        raise TuneRefusal(
            f"{signal}: no negative examples, so false alarms cannot be measured; add conversations "
            f"labelled {signal}: 0"
        )
    threshold = threshold_for_recall(scores, labels, target_recall, decimals=DECIMALS)
    point = operating_point(scores, labels, threshold)
    if max_false_alarm is not None and point.false_alarm_rate > max_false_alarm:
        best = best_recall_within(scores, labels, max_false_alarm)
        within = (
            f"the best recall within that limit is {best.recall:.3f} at threshold {best.threshold:g}"
            if best
            else "no threshold keeps false alarms within that limit"
        )
        raise TuneRefusal(
            f"{signal}: recall {target_recall:g} costs a false-alarm rate of {point.false_alarm_rate:.3f} "
            f"(threshold {threshold:g}), above --max-false-alarm {max_false_alarm:g}; {within}"
        )
    return point


def best_recall_within(scores: np.ndarray, labels: np.ndarray, max_false_alarm: float) -> OperatingPoint | None:
    """The lowest threshold with the best recall whose false-alarm rate stays within the limit, or None."""
    # roc_curve flags `score >= threshold`, as the policy engine does; its first threshold (inf) flags nothing
    false_alarms, recalls, thresholds = roc_curve(labels, scores, drop_intermediate=False)
    within = [i for i in range(1, len(thresholds)) if false_alarms[i] <= max_false_alarm]
    if not within:
        return None
    best = max(within, key=lambda i: (recalls[i], i))  # ties: the later index, i.e. the lower threshold
    return operating_point(scores, labels, float(thresholds[best]))


def recall_grid_points(scores: np.ndarray, labels: np.ndarray, targets=(0.8, 0.9, 0.95, 0.98, 0.99)):
    """Operating points at a few standard recall targets the data can support (for the table)."""
    points = []
    for target in targets:
        try:
            points.append((f"recall {target:g}", choose_point(scores, labels, target)))
        except TuneRefusal:
            continue
    return points
