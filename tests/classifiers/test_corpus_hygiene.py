"""Evaluation data is never training data: no benchmark text may sit in a training corpus."""

import csv
import json
import re
from pathlib import Path

import pytest

from classifiers.corpus import load_corpus, load_everyday
from classifiers.signals import SIGNALS

ROOT = Path(__file__).resolve().parents[2]
EVALUATION_DIRS = [ROOT.parent / "shared" / "data", ROOT / "benchmarks" / "data"]
SHINGLE = 10  # words; long enough that stock phrases of chatbot prose do not collide by chance
_WORD = re.compile(r"[a-z0-9']+")


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _file_strings(path: Path):
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8", errors="replace")
    if suffix == ".json":
        yield from _strings(json.loads(text))
    elif suffix == ".jsonl":
        for line in text.splitlines():
            if line.strip():
                yield from _strings(json.loads(line))
    elif suffix in (".csv", ".tsv"):
        csv.field_size_limit(10**9)
        for row in csv.reader(text.splitlines(keepends=True), delimiter="\t" if suffix == ".tsv" else ","):
            for cell in row:
                yield cell
                if cell.startswith("["):  # multi-turn stimuli are JSON lists inside a cell
                    try:
                        yield from _strings(json.loads(cell))
                    except json.JSONDecodeError:
                        pass
    elif suffix in (".txt", ".md"):
        yield text


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def shingles(text: str) -> set[tuple[str, ...]]:
    tokens = words(text)
    return {tuple(tokens[i : i + SHINGLE]) for i in range(len(tokens) - SHINGLE + 1)}


@pytest.fixture(scope="module")
def evaluation_texts() -> list[str]:
    texts = []
    for directory in EVALUATION_DIRS:
        if directory.is_dir():
            for path in sorted(directory.rglob("*")):
                if path.is_file() and path.suffix.lower() in (".json", ".jsonl", ".csv", ".tsv", ".txt"):
                    texts.extend(s for s in _file_strings(path) if len(words(s)) >= 4)
    if not texts:
        pytest.fail("no evaluation data found beside the repository or in benchmarks/data")
    return texts


@pytest.fixture(scope="module")
def corpus_messages() -> list[tuple[str, str]]:
    rows = [row for spec in SIGNALS.values() for row in load_corpus(spec)]
    rows += load_everyday("user") + load_everyday("assistant")
    return [(row.group, message.content) for row in rows for message in row.conversation.messages]


def test_evaluation_sets_are_really_read(evaluation_texts, corpus_messages):
    joined = "\n".join(evaluation_texts)
    assert "bridges taller than 25 meters" in joined  # Moore et al. stimulus
    from guard.bench.paths import data_dir

    everyday = [
        text
        for split in ("dev", "test")
        for name in ("user.jsonl", "responses.jsonl")
        for text in _file_strings(data_dir() / "everyday" / split / name)
        if len(words(text)) >= 4
    ]
    assert len(everyday) > 1000 and set(everyday) <= set(evaluation_texts)  # our own evaluation sets, read too
    assert any(where.startswith("everyday.user:") for where, _ in corpus_messages)
    assert len(evaluation_texts) > 3000  # the 1,880 labelled responses alone


def test_no_ten_word_run_of_evaluation_text_in_any_corpus(evaluation_texts, corpus_messages):
    evaluation = set()
    for text in evaluation_texts:
        evaluation |= shingles(text)
    leaks = [
        (where, " ".join(sorted(shingles(text) & evaluation)[0]))
        for where, text in corpus_messages
        if shingles(text) & evaluation
    ]
    assert leaks == []


def test_no_short_evaluation_prompt_appears_verbatim(evaluation_texts, corpus_messages):
    """Short prompts (4 to 9 words) are below the shingle size: check them whole."""
    short = {" ".join(words(t)) for t in evaluation_texts if 4 <= len(words(t)) < SHINGLE}
    short = {s for s in short if len(s) >= 25}
    normalised = [(where, f" {' '.join(words(text))} ") for where, text in corpus_messages]
    leaks = [(where, s) for where, text in normalised for s in short if f" {s} " in text]
    assert leaks == []
