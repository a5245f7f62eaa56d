"""`couchguard train` is deterministic and its artifacts are what the corpora say."""

import json

import numpy as np
import pytest

from classifiers import training
from classifiers.corpus import corpus_hash
from classifiers.heads import CalibratedLinearHead, artifact_path
from classifiers.scorer import ARTIFACTS_DIR
from classifiers.signals import SIGNALS


def test_shipped_artifacts_are_fresh_and_stamped(scorer):
    stamp = corpus_hash()
    for name in SIGNALS:
        meta = json.loads(artifact_path(ARTIFACTS_DIR / name, ".json").read_text())
        assert meta["corpus_hash"] == stamp, f"{name}: corpora changed since training; run `couchguard train`"
        assert meta["encoder"] == scorer.encoder_.identity_
        assert meta["signal"] == name and meta["side"] == SIGNALS[name].side


def test_artifacts_load_without_pickle():
    for name in SIGNALS:
        with np.load(artifact_path(ARTIFACTS_DIR / name, ".npz"), allow_pickle=False) as arrays:
            assert set(arrays.files) == {"coef", "intercept", "platt"}
            assert arrays["coef"].dtype == np.float32 and np.isfinite(arrays["coef"]).all()


@pytest.mark.parametrize("name", list(SIGNALS))
def test_model_card_reports_held_out_quality(name):
    meta = json.loads(artifact_path(ARTIFACTS_DIR / name, ".json").read_text())
    metrics = meta["metrics"]
    assert metrics["roc_auc"] >= 0.95  # the bar every signal is held to
    assert (training.CARDS_DIR / f"{name}.md").exists()


def test_shipped_user_thresholds_hold_on_the_independent_dev_set(guard):
    """Ordinary life must pass and people at risk must not: measured on the dev set, written by someone who did not
    write the corpora, at the thresholds the release ships (before them, 11.2% of its ordinary turns were flagged)."""
    from guard.evaluation import EVAL_SETS
    from guard.evaluation.measure import crisis_flagged

    items = EVAL_SETS["everyday-user-dev"].load()
    flagged = [crisis_flagged(d) for d in guard.check_many([item.conversation for item in items])]
    benign = [f for item, f in zip(items, flagged) if item.group == "benign"]
    at_risk = [f for item, f in zip(items, flagged) if item.group == "at-risk"]
    assert sum(benign) / len(benign) <= 0.07
    assert sum(at_risk) / len(at_risk) >= 0.95


def test_training_twice_gives_identical_bytes(tmp_path, scorer):
    signal = "user.mania"
    for run in ("a", "b"):
        training.train(
            tmp_path / run / "artifacts",
            tmp_path / run / "cards",
            encoder=scorer.encoder_,
            signals=[signal],
            use_cache=True,
            log=lambda *_: None,
        )
    for suffix in (".npz", ".json"):
        first = artifact_path(tmp_path / "a" / "artifacts" / signal, suffix).read_bytes()
        second = artifact_path(tmp_path / "b" / "artifacts" / signal, suffix).read_bytes()
        assert first == second
    assert (tmp_path / "a" / "cards" / f"{signal}.md").read_text() == (
        tmp_path / "b" / "cards" / f"{signal}.md"
    ).read_text()


def test_heads_follow_fit_predict_proba_conventions():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (60, 4)), rng.normal(1.5, 1, (60, 4))])
    y = np.array([0] * 60 + [1] * 60)
    groups = np.arange(120) // 4
    head = CalibratedLinearHead()
    with pytest.raises(RuntimeError, match="not fitted"):
        head.predict_proba(X)
    proba = head.fit(X, y, groups).predict_proba(X)
    assert proba.shape == (120, 2) and np.allclose(proba.sum(1), 1.0)
    assert ((proba >= 0) & (proba <= 1)).all()
    assert proba[y == 1, 1].mean() > proba[y == 0, 1].mean()
    with pytest.raises(ValueError, match="C must be a float > 0"):
        CalibratedLinearHead(C=0)
    with pytest.raises(ValueError, match="both classes"):
        CalibratedLinearHead().fit(X, np.zeros(120, dtype=int), groups)


def test_the_training_cache_keeps_every_key_and_vector_and_no_padding(tmp_path):
    """Texts of any length and script, and the sentence keys that start with NUL, come back exactly; the file holds
    the texts' bytes once, not each text padded to the longest."""
    long = "a long window of text. " * 200
    cache = {
        "short": np.full(384, 0.5, np.float32),
        "ünïcode, 日本語 and an emoji 🙂": np.arange(384, dtype=np.float32),
        long: np.zeros(384, np.float32),
        "\x000:5\x00" + "f" * 64: np.ones(384, np.float32),
    }
    path = tmp_path / "cache.npz"
    training.save_cache(cache, path)
    again = training.read_cache(path)
    assert list(again) == list(cache)
    assert all(np.array_equal(again[key], cache[key]) for key in cache)
    with np.load(path) as stored:
        assert stored["text_bytes"].size == sum(len(key.encode("utf-8")) for key in cache) < 2 * len(long)
