"""The evaluation sets load with the labels they promise, and dev and test are apart."""

from __future__ import annotations

from collections import Counter

import pytest

from classifiers.signals import SIGNALS
from guard.evaluation import EVAL_SETS, eval_sets
from guard.evaluation.sets import HARM, is_benign


def _user_harms():
    return {name for name, spec in SIGNALS.items() if spec.side == "user" and spec.kind == "harm"}


@pytest.mark.parametrize("name", sorted(EVAL_SETS))
def test_every_set_loads_and_ends_on_the_rail_it_names(name):
    eval_set = EVAL_SETS[name]
    items = eval_set.load()
    assert items, name
    assert len({item.id for item in items}) == len(items)
    last = "assistant" if eval_set.rail == "output" else "user"
    assert all(item.conversation.last.role == last for item in items)
    assert all(set(item.labels) <= set(SIGNALS) | {HARM} and set(item.labels.values()) <= {0, 1} for item in items)


# (set, ordinary turns, at-risk turns, turns of each crisis signal): at least
USER_SETS = [("everyday-user", 250, 100, 15), ("feelings-user", 120, 50, 5)]


@pytest.mark.parametrize(("name", "benign", "at_risk", "per_signal"), USER_SETS)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_user_sets_cover_ordinary_life_and_every_crisis(split, name, benign, at_risk, per_signal):
    items = EVAL_SETS[f"{name}-{split}"].load()
    groups = Counter(item.group for item in items)
    assert groups["benign"] >= benign and groups["at-risk"] >= at_risk
    for item in items:
        if item.group == "benign":  # a benign turn is a negative for every user crisis signal
            assert item.labels == {name: 0 for name in _user_harms()}
        else:  # an at-risk turn is a positive for its own signal and says nothing of the others
            assert item.labels and set(item.labels.values()) == {1}
    positives = Counter(name for item in items for name, label in item.labels.items() if label)
    assert set(positives) == _user_harms() and min(positives.values()) >= per_signal


# (set, harmful answers, sound answers): at least. The deployed sets' writers were told nothing of labels, so they
# hold what the reviewers found harmful: fewer, most of them enabling or collusion.
RESPONSE_SETS = [("everyday-responses", 50, 90), ("stance-responses", 50, 90), ("deployed-responses", 25, 150)]


@pytest.mark.parametrize(("name", "harmful_at_least", "sound_at_least"), RESPONSE_SETS)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_response_sets_hold_sound_and_harmful_answers(split, name, harmful_at_least, sound_at_least):
    items = EVAL_SETS[f"{name}-{split}"].load()
    harmful = [item for item in items if item.labels[HARM] == 1]
    sound = [item for item in items if item.labels[HARM] == 0]
    assert len(harmful) >= harmful_at_least and len(sound) >= sound_at_least
    assert all(len(item.labels) > 1 for item in harmful)  # each names the harm it shows


@pytest.mark.parametrize("split", ["dev", "test"])
def test_deployed_sets_report_by_the_kind_of_assistant_that_answered(split):
    items = EVAL_SETS[f"deployed-responses-{split}"].load()
    kinds = {item.group for item in items}
    assert {"literal", "companion", "brief"} <= kinds <= {"literal", "companion", "careful", "brief", "sycophant"}
    # the group is the writer, not the label: benign-ness comes from the labels alone
    assert {is_benign(item) for item in items if item.group == "literal"} == {True, False}
    assert all(is_benign(item) == (item.labels[HARM] == 0) for item in items)


def test_a_deployed_row_without_its_writer_is_refused(monkeypatch):
    from guard.evaluation import sets

    row = {"id": "x-1", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    monkeypatch.setattr(sets, "_jsonl", lambda *parts: [{**row, "appropriate": True, "expected_flags": []}])
    with pytest.raises(ValueError, match="x-1: no 'answered_as'"):
        sets.labelled_responses("deployed", "dev", group_by="answered_as")


def test_benign_means_labelled_and_negative_for_everything():
    for split in ("dev", "test"):
        for item in EVAL_SETS[f"everyday-user-{split}"].load():
            assert is_benign(item) == (item.group == "benign")
        for item in EVAL_SETS[f"everyday-responses-{split}"].load():
            assert is_benign(item) == (item.group == "sound")


def test_dev_and_test_share_no_text():
    # two writers may both open with "I'm sorry. What happened?"; no message of eight words or more is shared
    def texts(split):
        return {
            m.content
            for s in eval_sets(split)
            if s.name.startswith(("everyday", "stance", "feelings", "deployed"))
            for item in s.load()
            for m in item.conversation.messages
            if len(m.content.split()) >= 8
        }

    assert texts("dev") and not texts("dev") & texts("test")


def test_splits_select_sets():
    assert {s.split for s in eval_sets("dev")} == {"dev"}
    assert {s.name for s in eval_sets("test")} >= {"moore2025", "psychosis-bench", "spiral-bench", "vera-mh"}
    with pytest.raises(ValueError, match="split"):
        eval_sets("train")
