"""The shipped harm thresholds are what `couchguard eval --choose-thresholds` chooses on the dev sets."""

import pytest

from classifiers.signals import SIGNALS
from guard.evaluation import thresholds


@pytest.fixture(scope="module")
def held_out(scorer):
    # every harm signal's held-out positives, scored once for the tests below (the first test lets `choose` score them)
    return thresholds.held_out_positive_scores(scorer, thresholds.harm_signals())


def test_shipped_thresholds_are_chosen_on_the_dev_sets(scorer):
    chosen = thresholds.choose(scorer)
    assert set(chosen) == {name for name, spec in SIGNALS.items() if spec.kind == "harm"}
    for name, (threshold, rule) in chosen.items():
        # one step of the 6-decimal grid apart at most: the torch and ONNX backends differ in the 7th decimal of a
        # score, and the crisis caps (user.suicide) sit on a positive's score rounded down to that grid
        assert threshold == pytest.approx(scorer.default_threshold(name), abs=1.01e-6), name
        assert rule == scorer.metadata_[name]["threshold_rule"], name


def test_the_shipped_thresholds_still_flag_the_authored_held_out_positives(scorer, held_out):
    shipped = {name: scorer.default_threshold(name) for name, spec in SIGNALS.items() if spec.kind == "harm"}
    recalls = thresholds.held_out_recall(scorer, shipped, held_out)
    assert set(recalls) == set(shipped)
    assert all(recall.at_chosen >= thresholds.HELD_OUT_RECALL_FLOOR for recall in recalls.values()), recalls
    assert all(recall.positives >= 20 for recall in recalls.values())


def test_a_threshold_over_the_held_out_positives_is_below_the_floor(scorer, held_out):
    # user.violence at 0.999999 (a dev budget pushed to the top) lets most of its clear-cut held-out positives through
    chosen = {"user.violence": 0.999999, "assistant.means": scorer.default_threshold("assistant.means")}
    recalls = thresholds.held_out_recall(scorer, chosen, held_out)
    assert recalls["user.violence"].at_chosen < recalls["user.violence"].at_authored
    assert recalls["user.violence"].at_chosen < thresholds.HELD_OUT_RECALL_FLOOR
    assert recalls["assistant.means"].at_chosen >= thresholds.HELD_OUT_RECALL_FLOOR


def test_choose_caps_every_threshold_at_the_held_out_floor(scorer, held_out, monkeypatch):
    # at a floor of 99% the dev budgets would leave most thresholds over some clear-cut held-out positive; the cap
    # must bring each one down to where it flags them, crisis caps and 0.5 floors notwithstanding
    monkeypatch.setattr(thresholds, "HELD_OUT_RECALL_FLOOR", 0.99)
    chosen = {name: threshold for name, (threshold, _) in thresholds.choose(scorer, held_out).items()}
    recalls = thresholds.held_out_recall(scorer, chosen, held_out)
    assert all(recall.at_chosen >= 0.99 for recall in recalls.values()), recalls
    assert any(chosen[name] < scorer.default_threshold(name) for name in chosen)
