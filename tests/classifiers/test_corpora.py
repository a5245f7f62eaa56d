"""The training corpora meet the bar every signal is promised: size, hard negatives, scenarios, format."""

from collections import Counter

import pytest

from classifiers.corpus import CorpusError, corpus_hash, load_corpus
from classifiers.signals import SIGNALS, SignalSpec


@pytest.mark.parametrize("name", list(SIGNALS))
def test_corpus_size_and_hard_negatives(name):
    rows = load_corpus(SIGNALS[name])
    kinds = Counter(row.kind for row in rows)
    negatives = kinds["negative"] + kinds["hard_negative"]
    assert kinds["positive"] >= 150
    assert negatives >= 300
    assert kinds["hard_negative"] >= negatives / 3
    scenarios = Counter(row.scenario for row in rows)
    assert len(scenarios) >= 60
    multi_turn = sum(len(row.conversation.messages) > 1 for row in rows)
    assert multi_turn / len(rows) >= 0.2


@pytest.mark.parametrize("name", list(SIGNALS))
def test_corpus_varies_in_length_and_register(name):
    last = [row.conversation.last.content for row in load_corpus(SIGNALS[name])]
    lengths = sorted(len(text.split()) for text in last)
    assert lengths[0] <= 25 and lengths[-1] >= 100
    if SIGNALS[name].side == "user":
        assert sum(text == text.lower() for text in last) / len(last) >= 0.2  # people type in lowercase


def test_corpus_errors_name_the_line(tmp_path):
    spec = SignalSpec("user.suicide", "user", "harm", "")
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"scenario": "s", "label": 1, "kind": "positive", "messages": [{"role": "user", "content": "x"}]}\n'
        '{"scenario": "s", "label": 0, "kind": "positive", "messages": []}\n'
    )
    with pytest.raises(CorpusError, match=r"c.jsonl:2: label 0 does not match kind 'positive'"):
        load_corpus(spec, path)
    path.write_text(
        '{"scenario": "s", "label": 1, "kind": "positive", "messages": [{"role": "assistant", "content": "x"}]}\n'
    )
    with pytest.raises(CorpusError, match=r"c.jsonl:1: the last message must be a user turn"):
        load_corpus(spec, path)


def test_corpus_hash_tracks_every_corpus_byte(tmp_path, monkeypatch):
    import shutil

    import classifiers.signals as signals

    shipped = corpus_hash()
    copy = tmp_path / "corpora"
    shutil.copytree(signals.CORPORA_DIR, copy)
    monkeypatch.setattr(signals, "CORPORA_DIR", copy)
    assert corpus_hash() == shipped  # the same bytes under another folder give the same stamp
    path = copy / "user.mania.jsonl"
    path.write_bytes(path.read_bytes() + b"\n")
    assert corpus_hash() != shipped
    path.write_bytes(path.read_bytes()[:-1])
    assert corpus_hash() == shipped
    everyday = sorted((copy / "everyday" / "user").glob("*.jsonl"))[0]
    everyday.write_bytes(everyday.read_bytes() + b"\n")
    assert corpus_hash() != shipped  # the everyday corpora are part of the stamp too


def test_other_crises_are_negatives_only_between_harms_that_do_not_co_occur():
    from classifiers.corpus import load_all
    from classifiers.signals import CO_OCCURRING, excludes
    from classifiers.training import OTHER_SIGNAL, training_set

    assert excludes("user.violence", "user.suicide") and excludes("user.suicide", "user.violence")
    for pair in CO_OCCURRING:
        a, b = sorted(pair)
        assert not excludes(a, b) and not excludes(b, a)
    assert not excludes("user.violence", "assistant.means")  # other side
    assert not excludes("assistant.means", "assistant.referral")  # protective
    corpora = load_all()
    borrowed = Counter(
        row.signal for row in training_set(SIGNALS["user.violence"], corpora) if row.kind == OTHER_SIGNAL
    )
    assert set(borrowed) == {
        "user.suicide",
        "user.delusion",
        "user.hallucination",
        "user.mania",
        "user.compulsion",
        "user.self_harm",
    }
    assert all(row.label == 0 for row in training_set(SIGNALS["user.violence"], corpora) if row.kind == OTHER_SIGNAL)
    assert not any(row.kind == OTHER_SIGNAL for row in training_set(SIGNALS["user.suicide"], corpora))
    assert not any(row.kind == OTHER_SIGNAL for row in training_set(SIGNALS["assistant.referral"], corpora))


def test_a_protective_signal_learns_the_harm_it_opposes_as_its_negative():
    from classifiers.corpus import load_all
    from classifiers.training import training_set

    corpora = load_all()
    rows = training_set(SIGNALS["assistant.declines_task"], corpora)
    opposed = [row for row in rows if row.signal != "assistant.declines_task"]
    # every positive of enabling and means (an answer that performs the task) and nothing else borrowed
    assert Counter(row.signal for row in opposed) == {
        name: sum(row.label for row in corpora[name]) for name in ("assistant.enabling", "assistant.means")
    }
    assert all(row.label == 0 and row.kind == "hard_negative" for row in opposed)
    assert all(row.signal == "assistant.referral" for row in training_set(SIGNALS["assistant.referral"], corpora))


@pytest.mark.parametrize(
    ("kind", "opposes", "message"),
    [
        ("harm", ("assistant.enabling",), "only a protective signal opposes"),
        ("protective", ("assistant.no_such",), "'assistant.no_such' is not a harm signal"),
        ("protective", ("user.suicide",), "'user.suicide' is not a harm signal of its side"),
        ("protective", ("assistant.referral",), "'assistant.referral' is not a harm signal"),
    ],
)
def test_opposing_a_signal_that_is_not_a_harm_of_the_same_side_is_refused(kind, opposes, message):
    from classifiers.signals import register

    with pytest.raises(ValueError, match=message):
        register("assistant.checks_opposes", "assistant", kind, "a signal only this test registers", opposes=opposes)
    assert "assistant.checks_opposes" not in SIGNALS
