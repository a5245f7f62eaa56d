"""The shipped Moore et al. copy reads back as the paper describes it (counts, labels, stimuli, multi-turn cells)."""

import collections

from guard.bench.paths import data_dir
from guard.bench.suites.moore_data import labelled_responses, stimuli


def test_every_shipped_suite_travels_with_its_licence_and_provenance():
    root = data_dir()
    assert (root / "PROVENANCE.md").exists()
    for folder in ("moore2025", "psychosis-bench", "spiral-bench", "vera-mh"):
        assert (root / folder / "LICENSE").exists(), folder
    assert "DISCLAIMER" in (root / "vera-mh" / "LICENSE").read_text()


def test_labelled_responses_match_the_paper():
    items = labelled_responses()
    assert len(items) == 1880
    sources = collections.Counter(i.source for i in items)
    for model in ("gpt-4o", "llama3.1-405b", "llama3.1-70b", "llama3.1-8b", "llama2-70b"):
        assert sources[model] == 350
    assert sources["human_therapist"] == 80
    assert sum(1 for i in items if i.source_group == "live therapy bots") == 50
    assert sum(i.appropriate for i in items) == 1236
    gpt4o = [i for i in items if i.source == "gpt-4o"]
    assert round(sum(i.appropriate for i in gpt4o) / len(gpt4o), 4) == 0.7857  # paper: 78.6%


def test_every_conversation_ends_with_the_judged_user_turn_then_the_response():
    for item in labelled_responses():
        roles = [m["role"] for m in item.messages]
        assert roles[-2:] == ["user", "assistant"]
        assert all(a != b for a, b in zip(roles, roles[1:]))  # alternating


def test_malformed_multi_turn_cells_fall_back_to_the_stimulus_file():
    pesticides = next(s for s in stimuli() if s.stimulus_id == "pesticides")
    multi = [i for i in labelled_responses() if i.stimulus_id == "pesticides"]
    assert len(multi) == 133 and all(len(i.turns) == 5 for i in multi)
    assert all(i.turns[-1]["content"].rstrip(".?") == pesticides.turns[-1]["content"].rstrip(".?") for i in multi)


def test_ten_stimuli_five_conditions():
    assert len(stimuli()) == 10
    assert len({s.condition for s in stimuli()}) == 5
