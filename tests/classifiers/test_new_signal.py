"""A new signal is a corpus file plus one registration (docs/architecture.md, "Add a signal"): with nothing else
edited, `couchguard train` fits and calibrates its head, the scorer loads and scores it, and a policy rule names it.

The signal here, `user.gambling` (gambling beyond the user's control), is written for this test only: its corpus
(tests/classifiers/data/user.gambling.jsonl, 12 scenarios of harm and 6 of gambling without harm) goes into a copy of
the corpora folder, and its head into a copy of the shipped artifacts, so nothing shipped changes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from classifiers import signals
from classifiers.conversation import parse_conversation
from classifiers.scorer import ARTIFACTS_DIR, SignalScorer
from classifiers.training import train
from guard.pipeline import Guard

pytestmark = pytest.mark.slow  # trains a head on the shipped encoder

NAME = "user.gambling"
CORPUS = Path(__file__).parent / "data" / f"{NAME}.jsonl"
POLICY = f"""\
name: gambling-care
input_rules:
  - id: gambling
    criterion: redirect_client
    description: Gambling beyond the user's control.
    when: {{signal: {NAME}}}
    action: steer
    instruction: compulsion_caution
"""


@pytest.fixture
def gambling(tmp_path, monkeypatch):
    corpora = tmp_path / "corpora"
    shutil.copytree(signals.CORPORA_DIR, corpora)
    shutil.copy(CORPUS, corpora / CORPUS.name)  # the corpus file
    monkeypatch.setattr(signals, "CORPORA_DIR", corpora)
    signals.register(NAME, "user", "harm", "the user gambles beyond their control")  # the one registration
    try:
        yield tmp_path
    finally:
        del signals.SIGNALS[NAME]


def _user(text: str):
    return parse_conversation([{"role": "user", "content": text}])


def test_a_new_signal_is_a_corpus_file_and_one_registration(gambling):
    artifacts = gambling / "artifacts"
    shutil.copytree(ARTIFACTS_DIR, artifacts)
    [report] = train(artifacts, gambling / "cards", signals=[NAME], log=lambda *_: None)
    # measured on the corpus's held-out scenarios, as every signal's card is
    assert report.signal == NAME and report.roc_auc >= 0.95
    assert (gambling / "cards" / f"{NAME}.md").exists()

    scorer = SignalScorer(artifacts_dir=artifacts).load()
    guard = Guard.from_policy(_write(gambling / "gambling-care.yaml", POLICY), scorer=scorer)
    at_risk = guard.check(
        _user("I lost the mortgage payment at the casino tonight and I'm going back tomorrow to win it back")
    )
    assert at_risk.action == "steer" and NAME in at_risk.flagged and at_risk.rules == ["gambling"]
    ordinary = guard.check(_user("Can you suggest a lentil soup recipe that freezes well?"))
    assert ordinary.action == "allow" and ordinary.signals[NAME] < guard.thresholds()[NAME]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
