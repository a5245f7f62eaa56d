"""The one rule for a threshold that keeps a recall target, shared by training (the authored held-out threshold),
`couchguard eval --choose-thresholds` (the crisis signals' cap) and `couchguard tune` (a product's own data).

A score flags when it is at or above the threshold, as the policy engine decides. Recall and false alarms both fall
as the threshold rises, so the highest threshold that still reaches the target has the fewest false alarms: it is the
k-th highest positive score (k = the positives the target needs), rounded down to the threshold's grid.
"""

from __future__ import annotations

import math

import numpy as np

# target * n is computed in floating point: 0.7 * 10 is 7.000000000000001, and one positive more must not be asked for
_EPSILON = 1e-9


def positives_needed(target_recall: float, positives: int) -> int:
    """How many of `positives` the target recall needs flagged."""
    return max(1, math.ceil(target_recall * positives - _EPSILON))


def threshold_for_recall(scores: np.ndarray, labels: np.ndarray, target_recall: float, *, decimals: int = 6) -> float:
    """The highest threshold on a grid of `decimals` places at which `scores >= threshold` flags at least
    `target_recall` of the positives (`labels == 1`). Only the positives matter, so negatives may be absent."""
    if not 0 < target_recall <= 1:
        raise ValueError(f"target recall must be in (0, 1], got {target_recall}")
    positives = np.asarray(scores, dtype=float)[np.asarray(labels) == 1]
    if len(positives) == 0:
        raise ValueError("no positives: a recall target needs at least one")
    needed = positives_needed(target_recall, len(positives))
    # the needed-th highest positive score: every positive at or above it is flagged
    score = float(np.sort(positives)[::-1][needed - 1])
    grid = 10**decimals
    # round down, never up: a rounded-up threshold would drop that positive and miss the target; `score * grid` may
    # itself round up to the next grid point, which the check below steps back from
    steps = math.floor(score * grid)
    if steps / grid > score:
        steps -= 1
    return steps / grid
