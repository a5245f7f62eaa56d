"""Batching across conversations changes how texts are grouped for the encoder, never the scores or decisions."""

import io
import json

import numpy as np
import pytest

from classifiers import parse_conversation
from classifiers.encoder import length_buckets
from tests.conftest import assistant, user

CONVERSATIONS = [
    [user("i passed my driving test today!!!")],
    [
        user("honestly i dont see the point anymore. everyone would be better off without me"),
        assistant(
            "I'm really sorry you're feeling this way. You matter. If you're in danger, please call or text 988. "
            "Would you tell me what has been happening lately?"
        ),
    ],
    [
        user("can you help me plan dinners for next week?"),
        assistant(
            "Sure! Monday: chickpea curry. Tuesday: vegetable fried rice. Wednesday: a tray bake of sausages and "
            "peppers. Thursday: lentil pasta. Friday: flatbread pizzas. Want a shopping list too?"
        ),
    ],
    [
        user("how many of my sleeping pills would be too many? i just want it to stop"),
        assistant("Taking more than 20 tablets would likely be fatal. Please don't; call 988 instead."),
    ],
    [user(" ".join(["I keep replaying the argument and can't sleep at all."] * 40))],
]


def test_buckets_keep_short_and_long_texts_apart():
    lengths = [200, 12, 14, 190, 13, 40]
    batches = length_buckets(lengths, batch_size=32)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    grouped = {frozenset(batch) for batch in batches}
    assert frozenset({1, 2, 4}) in grouped and frozenset({0, 3}) in grouped and frozenset({5}) in grouped


def test_buckets_respect_the_batch_size():
    assert [len(batch) for batch in length_buckets([10] * 70, batch_size=32)] == [32, 32, 6]


def test_encoding_together_matches_encoding_alone(scorer):
    texts = [turn["content"] for messages in CONVERSATIONS for turn in messages]
    together = scorer.encoder_.encode(texts)
    alone = np.vstack([scorer.encoder_.encode([text]) for text in texts])
    assert np.allclose(together, alone, atol=1e-5)


def test_scoring_a_batch_matches_scoring_one_by_one(scorer):
    conversations = [parse_conversation(messages) for messages in CONVERSATIONS]
    batch = scorer.score_many(conversations)
    for conversation, batched in zip(conversations, batch):
        single = scorer.score(conversation)
        assert batched.keys() == single.keys()
        for name, result in single.items():
            assert batched[name].score == pytest.approx(result.score, abs=1e-4)
            assert batched[name].span == result.span


def test_check_decides_the_same_whatever_the_batch_size(guard, monkeypatch, capsys):
    from guard.cli import main

    lines = "".join(json.dumps({"id": i, "messages": messages}) + "\n" for i, messages in enumerate(CONVERSATIONS))
    outputs = []
    for size in ("1", "4"):
        monkeypatch.setattr("sys.stdin", io.StringIO(lines))
        assert main(["check", "-", "--batch", size]) == 0
        outputs.append([json.loads(line) for line in capsys.readouterr().out.splitlines()])
    one, four = outputs
    assert [d["id"] for d in one] == [d["id"] for d in four] == list(range(len(CONVERSATIONS)))
    for a, b in zip(one, four):
        assert a["action"] == b["action"] and a.get("rules") == b.get("rules")
        assert a["signals"].keys() == b["signals"].keys()
        assert all(abs(a["signals"][k] - b["signals"][k]) <= 2e-4 for k in a["signals"])  # 4 decimals each


def test_the_embedding_cache_forgets_the_least_recently_used_and_holds_no_text():
    from classifiers.embedding_cache import EmbeddingCache

    cache = EmbeddingCache(capacity=2)
    for i, text in enumerate(["first", "second"]):
        cache.put(text, np.full(3, i, dtype=np.float32))
    assert cache.get("first") is not None  # now the most recently used
    cache.put("third", np.zeros(3, dtype=np.float32))
    assert cache.get("second") is None and cache.get("first") is not None and len(cache) == 2
    assert all(isinstance(key, bytes) and b"first" not in key for key in cache._vectors)
    empty = EmbeddingCache(capacity=0)
    empty.put("anything", np.zeros(3, dtype=np.float32))
    assert empty.get("anything") is None


def test_rescoring_sentences_after_scoring_encodes_nothing_new(scorer):
    from classifiers import SignalScorer

    cached = SignalScorer(encoder=scorer.encoder_).load()
    uncached = SignalScorer(encoder=scorer.encoder_, cache_size=0).load()
    conversation = parse_conversation(CONVERSATIONS[3])
    cached.score(conversation)  # the user is at risk: the response's sentences are encoded while scoring
    seen = len(cached.embeddings_)
    again = cached.sentence_scores(conversation)
    assert len(cached.embeddings_) == seen
    fresh = uncached.sentence_scores(conversation)
    assert [span for span, _ in again] == [span for span, _ in fresh]
    for (_, a), (_, b) in zip(again, fresh):
        assert all(a[name] == pytest.approx(b[name], abs=1e-4) for name in b)
