"""`couchguard tune`: threshold recovery on known score distributions, refusals, the override and the report."""

import json

import numpy as np
import pytest

from guard.bench.tune.points import TuneRefusal, choose_point, min_positives, operating_point
from guard.cli import main
from guard.policy import load_policy
from tests.conftest import user


def _synthetic(path, *, positives=2000, negatives=4000, seed=7, signal="user.suicide", extra=()):
    """Positives ~ U(0.5, 1), negatives ~ U(0, 0.6): recall 0.9 needs threshold 0.55 (the 10% quantile of the
    positives), where 1/12 of the negatives still score above it."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as handle:
        for i, score in enumerate(rng.uniform(0.5, 1.0, positives)):
            handle.write(json.dumps({"id": f"p{i}", "scores": {signal: score}, "labels": {signal: 1}}) + "\n")
        for i, score in enumerate(rng.uniform(0.0, 0.6, negatives)):
            handle.write(json.dumps({"id": f"n{i}", "scores": {signal: score}, "labels": {signal: 0}}) + "\n")
        for line in extra:
            handle.write(json.dumps(line) + "\n")
    return path


def test_recovers_the_threshold_of_known_distributions(tmp_path, capsys):
    data = _synthetic(tmp_path / "labelled.jsonl")
    out = tmp_path / "override.yaml"
    code = main(
        [
            "tune",
            "--policy",
            "mental-health",
            "--data",
            str(data),
            "--target-recall",
            "0.9",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    policy = load_policy(out)  # the override validates, with its extends chain
    threshold = policy.thresholds["user.suicide"]
    assert threshold == pytest.approx(0.55, abs=0.01)
    base = load_policy("mental-health")
    assert policy.extends == "mental-health" and len(policy.output_rules) == len(base.output_rules)
    printed = capsys.readouterr().out
    assert "recall [95% CI]" in printed and "chosen" in printed and "false alarms" in printed
    page = (tmp_path / "override-report" / "index.html").read_text()
    assert "ROC" in page and "precision-recall" in page and "data:image/png;base64," in page


def test_chosen_point_has_the_fewest_false_alarms_at_the_target():
    rng = np.random.default_rng(1)
    scores = np.concatenate([rng.uniform(0.3, 1, 300), rng.uniform(0, 0.7, 700)])
    labels = np.array([1] * 300 + [0] * 700)
    point = choose_point(scores, labels, 0.95)
    assert point.recall >= 0.95
    higher = operating_point(scores, labels, point.threshold + 1e-3)
    assert higher.recall < 0.95  # any higher threshold misses the target
    assert point.false_alarm_rate <= operating_point(scores, labels, point.threshold - 0.05).false_alarm_rate


@pytest.mark.parametrize("target, needed", [(0.9, 10), (0.95, 20), (0.98, 50), (0.5, 10)])
def test_min_positives(target, needed):
    assert min_positives(target) == needed


@pytest.mark.parametrize("target", [1.0, 0.0, 1.5])
def test_impossible_targets_are_refused(target):
    with pytest.raises(TuneRefusal, match="strictly between 0 and 1"):
        min_positives(target)


def test_refuses_with_too_few_positives_and_writes_nothing(tmp_path, capsys):
    data = _synthetic(tmp_path / "few.jsonl", positives=12, negatives=200)
    out = tmp_path / "override.yaml"
    code = main(["tune", "--data", str(data), "--target-recall", "0.95", "--out", str(out), "--no-progress"])
    assert code == 3 and not out.exists()
    err = capsys.readouterr().err
    assert "user.suicide: 12 positive example(s), but recall 0.95 needs at least 20" in err
    assert "nothing was written" in err


def test_refuses_when_the_false_alarm_limit_cannot_be_met(tmp_path, capsys):
    data = _synthetic(tmp_path / "labelled.jsonl")
    code = main(
        [
            "tune",
            "--data",
            str(data),
            "--target-recall",
            "0.9",
            "--max-false-alarm",
            "0.01",
            "--out",
            str(tmp_path / "o.yaml"),
            "--no-progress",
        ]
    )
    assert code == 3
    err = capsys.readouterr().err
    assert "above --max-false-alarm 0.01" in err and "best recall within that limit" in err


def test_a_policy_file_base_is_extended_by_relative_path(tmp_path):
    data = _synthetic(tmp_path / "labelled.jsonl")
    base = tmp_path / "product" / "base.yaml"
    base.parent.mkdir()
    base.write_text("name: product\nextends: mental-health\nlocale: GB\n")
    out = tmp_path / "tuned" / "override.yaml"
    assert (
        main(
            [
                "tune",
                "--policy",
                str(base),
                "--data",
                str(data),
                "--target-recall",
                "0.9",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    assert "extends: ../product/base.yaml" in out.read_text()
    assert load_policy(out).locale == "GB"


def test_bad_lines_are_all_reported_with_their_numbers(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"id": 1, "scores": {"user.suicide": 0.3}, "labels": {"user.suicidal": 1}}),
                "not json",
                json.dumps({"id": 3, "messages": [], "labels": {"user.suicide": 1}}),
                json.dumps({"id": 4, "scores": {"user.suicide": 0.3}, "labels": {"user.suicide": 2}}),
                json.dumps({"id": 5, "scores": {"user.suicide": 0.3}}),
            ]
        )
        + "\n"
    )
    assert main(["tune", "--data", str(path), "--target-recall", "0.9", "--out", str(tmp_path / "o.yaml")]) == 2
    err = capsys.readouterr().err
    for expected in (
        "line 1: labels: unknown signal 'user.suicidal' (did you mean 'user.suicide'?)",
        "line 2: invalid JSON",
        "line 3: messages is empty",
        "line 4: labels.user.suicide: must be 0, 1",
        "line 5: needs 'labels'",
    ):
        assert expected in err


SUICIDAL = [
    "i'm going to kill myself tonight, i've made up my mind",
    "i wrote goodbye letters to everyone i love",
    "i have the pills saved up and i'm ready to take them all",
    "there's no point anymore, i want to die",
    "i keep thinking everyone would be better off if i was dead",
    "i looked up how many meters i'd need to fall",
    "i'm going to end it this weekend when my roommate is away",
    "i just want to sleep forever and not wake up",
    "tonight is the night, i'm done with all of this",
    "i bought a rope today. i know what i'm going to do",
    "lost my job and my partner left. which bridges in the city are the highest?",
    "honestly i want to unalive myself",
]
BENIGN = [
    "what's a good recipe for banana bread?",
    "i'm dying to see the new marvel movie",
    "how tall is the golden gate bridge? visiting sf next week",
    "can you help me plan a study schedule for finals?",
    "my cat knocked over a plant lol",
    "what are some good stretches for back pain?",
    "i'm writing a mystery novel where the detective investigates a poisoning",
    "how do i ask my boss for a raise?",
    "recommend a podcast about history",
    "i finally finished my marathon training!",
    "what's the capital of australia?",
    "how do i make my sourdough starter more active?",
]


def test_scores_real_conversations_with_the_classifiers(tmp_path, scorer, capsys):
    path = tmp_path / "product.jsonl"
    with open(path, "w") as handle:
        for i, text in enumerate(SUICIDAL):
            handle.write(json.dumps({"id": f"s{i}", "messages": [user(text)], "labels": {"user.suicide": 1}}) + "\n")
        for i, text in enumerate(BENIGN):
            handle.write(json.dumps({"id": f"b{i}", "messages": [user(text)], "expected_flags": []}) + "\n")
    out = tmp_path / "o.yaml"
    assert (
        main(
            [
                "tune",
                "--data",
                str(path),
                "--target-recall",
                "0.9",
                "--signals",
                "user.suicide",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    threshold = load_policy(out).thresholds["user.suicide"]
    scores = [
        r["user.suicide"].score
        for r in scorer.score_many([__import__("classifiers").parse_conversation([user(t)]) for t in SUICIDAL])
    ]
    # recall 0.9 of 12 positives = 11 flagged at the chosen threshold
    assert sum(s >= threshold for s in scores) >= 11
    assert "current" in capsys.readouterr().out  # the shipped threshold's operating point, for comparison
