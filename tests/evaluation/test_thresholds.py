"""The shipped harm thresholds are what `couchguard eval --choose-thresholds` chooses on the dev sets."""

import pytest

from classifiers.signals import SIGNALS
from guard.evaluation import thresholds


def test_shipped_thresholds_are_chosen_on_the_dev_sets(scorer):
    chosen = thresholds.choose(scorer)
    assert set(chosen) == {name for name, spec in SIGNALS.items() if spec.kind == "harm"}
    for name, (threshold, rule) in chosen.items():
        # one step of the 6-decimal grid apart at most: the torch and ONNX backends differ in the 7th decimal of a
        # score, and the crisis caps (user.suicide) sit on a positive's score rounded down to that grid
        assert threshold == pytest.approx(scorer.default_threshold(name), abs=1.01e-6), name
        assert rule == scorer.metadata_[name]["threshold_rule"], name
