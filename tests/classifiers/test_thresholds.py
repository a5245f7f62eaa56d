"""The one threshold rule for a recall target (training, `couchguard eval --choose-thresholds`, `couchguard tune`)."""

import numpy as np
import pytest

from classifiers.thresholds import positives_needed, threshold_for_recall


def test_the_threshold_is_the_highest_on_its_grid_that_keeps_the_target():
    rng = np.random.default_rng(3)
    scores = np.concatenate([rng.uniform(0.3, 1, 200), rng.uniform(0, 0.7, 500)])
    labels = np.array([1] * 200 + [0] * 500)
    for target in (0.8, 0.9, 0.95):
        for decimals in (4, 6):
            threshold = threshold_for_recall(scores, labels, target, decimals=decimals)
            assert round(threshold, decimals) == threshold
            flagged = scores[labels == 1] >= threshold
            assert flagged.mean() >= target
            assert (scores[labels == 1] >= threshold + 10**-decimals).mean() < target  # one step up misses it


def test_only_the_positives_matter():
    positives = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05])
    assert threshold_for_recall(positives, np.ones(10), 0.9) == 0.1
    with_negatives = threshold_for_recall(np.append(positives, [0.95, 0.0]), np.array([1] * 10 + [0, 0]), 0.9)
    assert with_negatives == 0.1


def test_a_score_just_below_a_grid_point_is_still_flagged():
    # 0.4243 * 10**4 rounds to exactly 4243.0 although the score is the float just below 0.4243: a plain floor would
    # return 0.4243 and miss this positive
    score = 0.42429999999999995
    assert score < 0.4243 and np.floor(score * 10**4) == 4243
    threshold = threshold_for_recall(np.array([score]), np.array([1]), 1.0, decimals=4)
    assert threshold == 0.4242 and score >= threshold


@pytest.mark.parametrize(
    "target, n, needed", [(0.9, 19, 18), (0.7, 10, 7), (0.95, 20, 19), (0.98, 42, 42), (0.5, 1, 1)]
)
def test_positives_needed_is_not_fooled_by_floating_point(target, n, needed):
    assert positives_needed(target, n) == needed


def test_impossible_requests_are_refused():
    with pytest.raises(ValueError, match="no positives"):
        threshold_for_recall(np.array([0.2, 0.4]), np.array([0, 0]), 0.9)
    with pytest.raises(ValueError, match="target recall"):
        threshold_for_recall(np.array([0.2]), np.array([1]), 0.0)
