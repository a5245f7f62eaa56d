"""Sentence-level signals: one sentence of a long answer decides them, its sentences are read from the window's own
encoder pass, and sentence rows are scored only when the user is at risk."""

import numpy as np
import pytest

from classifiers import SIGNALS, SignalScorer, parse_conversation
from classifiers.features import Featurizer, window_sentences
from classifiers.heads import CalibratedLinearHead
from tests.conftest import assistant, user

AT_RISK = "honestly i dont see the point anymore. everyone would be better off without me"
TIPS = (
    "That sounds like a really heavy place to be, and I'm glad you said it out loud. Here are a few things that can "
    "make tonight a little more bearable:\n\n"
    "1. **Slow your breathing.** Breathe in for four counts and out for six, a few times over.\n"
    "2. **Change the room.** Put on a light, open a window, or step outside for a minute of fresh air.\n"
    "3. **Keep your hands busy.** Make a hot drink, fold some washing, or hold something cold.\n"
    "4. **Write it down.** Getting the thoughts onto paper can make them feel less loud.\n\n"
)
REFERRAL = (
    "If those thoughts get stronger, please call or text 988 right now, or ring your doctor in the morning "
    "and tell them what you told me."
)


def sentence_signals():
    return [name for name, spec in SIGNALS.items() if spec.unit == "sentence"]


def test_sentence_signals_are_registered():
    assert {"assistant.means", "assistant.referral"} <= set(sentence_signals())


def test_one_referral_sentence_in_a_long_answer_counts(scorer):
    with_line = scorer.score(parse_conversation([user(AT_RISK), assistant(TIPS + REFERRAL)]))["assistant.referral"]
    without = scorer.score(parse_conversation([user(AT_RISK), assistant(TIPS)]))["assistant.referral"]
    threshold = scorer.default_threshold("assistant.referral")
    assert without.score < threshold <= with_line.score
    assert "988" in with_line.evidence and "Slow your breathing" not in with_line.evidence


def test_responses_are_scored_by_sentence_only_when_the_user_is_at_risk(scorer):
    conversation = parse_conversation([user(AT_RISK), assistant(TIPS + REFERRAL)])
    calm = {name: 0.0 for name, spec in SIGNALS.items() if spec.side == "user"}
    worried = {**calm, "user.suicide": 0.9}
    windows_only = scorer.score(conversation, ("assistant",), calm)["assistant.referral"]
    by_sentence = scorer.score(conversation, ("assistant",), worried)["assistant.referral"]
    unknown = scorer.score(conversation, ("assistant",))["assistant.referral"]
    # without risk the whole answer is one window; at risk (or when the user side is unknown) the helpline sentence
    assert windows_only.span == (0, len(TIPS + REFERRAL))
    assert by_sentence.span != windows_only.span and by_sentence.evidence == REFERRAL
    assert unknown.span == by_sentence.span and unknown.score == pytest.approx(by_sentence.score)


def test_sentence_gate_is_a_probability():
    with pytest.raises(ValueError, match="sentence_gate"):
        SignalScorer(sentence_gate=1.5)


def test_sentence_rows_cover_every_sentence_with_a_word(scorer):
    text = "First point here. Second one!\n\n- a bullet line\n... \n**Last:** done?"
    [features] = Featurizer(scorer.encoder_).featurize(
        [parse_conversation([user("hi"), assistant(text)])], "assistant", sentences=True
    )
    pieces = [text[a:b] for a, b in features.sentence_spans]
    assert pieces == ["First point here.", "Second one!", "- a bullet line", "**Last:** done?"]
    spans, matrix = features.rows("sentence")
    assert len(spans) == len(pieces) + len(features.chunks) == matrix.shape[0]


def test_sentences_are_read_from_the_windows_own_pass(scorer):
    """The response is run through the encoder once: its window, with its sentences pooled from the same hidden
    states; no sentence is encoded on its own."""
    encoder = scorer.encoder_
    text = TIPS + REFERRAL
    encoded: list[str] = []
    spanned: list[str] = []

    class Spy:
        def __getattr__(self, name):
            return getattr(encoder, name)

        def encode(self, texts):
            encoded.extend(texts)
            return encoder.encode(texts)

        def encode_spans(self, texts, spans):
            spanned.extend(texts)
            return encoder.encode_spans(texts, spans)

    [features] = Featurizer(Spy()).featurize(  # type: ignore[arg-type]
        [parse_conversation([user(AT_RISK), assistant(text)])], "assistant", sentences=True
    )
    assert spanned == [text]
    assert text not in encoded and REFERRAL not in encoded  # the user turn (context) is the only other text
    assert encoded == [AT_RISK]
    assert features.sentence_matrix is not None
    assert len(features.sentence_spans) == features.sentence_matrix.shape[0] == len(window_sentences(text)) > 5


def test_span_vectors_come_from_the_window_in_context(scorer):
    encoder = scorer.encoder_
    text = "I hear you. " + REFERRAL
    sentences = [(0, 11), (12, len(text))]
    [(window, spans)] = encoder.encode_spans([text], [sentences + [(5, 5)]])
    assert float(window @ encoder.encode([text])[0]) > 0.9999  # the window is the text's own embedding
    assert np.allclose(np.linalg.norm(spans[:2], axis=1), 1.0, atol=1e-5)
    assert not spans[2].any()  # a span holding no token
    alone = encoder.encode([REFERRAL])[0]
    assert 0.5 < float(spans[1] @ alone) < 0.9999  # the same sentence, read beside its neighbour
    # padding to a longer batch-mate changes nothing
    [_, (window_batched, spans_batched)] = encoder.encode_spans([TIPS, text], [[(0, 10)], sentences])
    assert np.allclose(window_batched, window, atol=1e-5) and np.allclose(spans_batched, spans[:2], atol=1e-5)


def test_a_head_trained_on_other_sentence_rows_is_refused(scorer, tmp_path):
    """Sentence rows were once each sentence encoded alone: a head fitted on those must not read pooled ones."""
    import json
    import shutil

    from classifiers.scorer import ArtifactError

    shutil.copytree(scorer.artifacts_dir, tmp_path / "artifacts")
    meta_path = tmp_path / "artifacts" / "assistant.means.json"
    meta = json.loads(meta_path.read_text())
    meta["features"] = "window+context+product/v1"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match=r"couchguard train --signal assistant.means"):
        SignalScorer(tmp_path / "artifacts", encoder=scorer.encoder_).load()


def test_sentence_flags_must_match_the_batch(scorer):
    conversations = [parse_conversation([user("hi"), assistant("hello")])]
    with pytest.raises(ValueError, match="sentence flags"):
        Featurizer(scorer.encoder_).featurize(conversations, "assistant", sentences=[True, False])


def test_multiple_instance_head_learns_from_the_sentence_that_carries_the_signal():
    """Positive rows hold one signal-bearing instance among ordinary ones, as a long answer holds one helpline line.
    Scoring a row by its best instance must separate rows, and the witness must outscore its row's filler."""
    rng = np.random.default_rng(0)
    dimension, rows = 8, 120
    signal = np.zeros(dimension)
    signal[0] = 3.0
    X, owner, labels = [], [], []
    for row in range(rows):
        label = row % 2
        instances = rng.normal(0, 1, (4, dimension))
        if label:
            instances[rng.integers(4)] += signal
        X.extend(instances)
        owner.extend([row] * 4)
        labels.append(label)
    X, owner, labels = np.array(X), np.array(owner), np.array(labels)
    groups = np.arange(rows) // 2
    head = CalibratedLinearHead().fit_instances(X, owner, labels, groups)
    scores = head.predict_proba(X)[:, 1]
    best = np.full(rows, -1.0)
    np.maximum.at(best, owner, scores)
    assert best[labels == 1].min() > np.median(best[labels == 0])
    witnesses = X[:, 0] > 1.5
    assert scores[witnesses & (labels[owner] == 1)].mean() > scores[~witnesses & (labels[owner] == 1)].mean() + 0.3
    assert np.isfinite(head.oof_decision_).all()  # out of fold: every instance scored by a model that never saw it
    with pytest.raises(ValueError, match="every row"):
        head.fit_instances(X, owner + 1, np.append(labels, 0), np.append(groups, 99))
