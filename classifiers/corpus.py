"""Reading the training corpora (classifiers/corpora/*.jsonl) into validated rows."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from . import signals
from .conversation import Conversation, ConversationError, parse_conversation
from .signals import CORPORA_DIR, SIGNALS, SignalSpec

KINDS = ("positive", "negative", "hard_negative")


class CorpusError(ValueError):
    pass


@dataclass(frozen=True)
class CorpusRow:
    signal: str
    scenario: str
    label: int
    kind: str
    conversation: Conversation

    @property
    def group(self) -> str:
        """Scenario id unique across files, used to hold out whole scenarios."""
        return f"{self.signal}:{self.scenario}"


def load_corpus(spec: SignalSpec, path: Path | None = None) -> list[CorpusRow]:
    path = path or spec.corpus_path
    if not path.exists():
        raise CorpusError(f"{path}: corpus file for {spec.name} is missing")
    return _read_rows(path, spec.name, spec.side)


def everyday_files(side: str) -> list[Path]:
    return sorted((signals.CORPORA_DIR / signals.EVERYDAY_DIR / side).glob("*.jsonl"))


def load_everyday(side: str) -> list[CorpusRow]:
    """Ordinary life on one side (corpora/everyday/<side>/<domain>.jsonl): label-0 rows only, negatives for the
    signals of that side that learn from them (`SignalSpec.everyday_negatives`)."""
    rows = []
    for path in everyday_files(side):
        for row in _read_rows(path, f"everyday.{side}", side):
            if row.label != 0:
                raise CorpusError(f"{path.name}: everyday rows are negatives; scenario {row.scenario!r} has label 1")
            rows.append(row)
    return rows


def _read_rows(path: Path, signal: str, side: str) -> list[CorpusRow]:
    rows: list[CorpusRow] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{where}: invalid JSON ({exc.msg})") from exc
        kind, label = raw.get("kind"), raw.get("label")
        if kind not in KINDS:
            raise CorpusError(f"{where}: kind must be one of {KINDS}, got {kind!r}")
        if label not in (0, 1) or (label == 1) != (kind == "positive"):
            raise CorpusError(f"{where}: label {label!r} does not match kind {kind!r}")
        scenario = raw.get("scenario")
        if not isinstance(scenario, str) or not scenario.strip():
            raise CorpusError(f"{where}: scenario must be a non-empty string")
        try:
            conversation = parse_conversation(raw.get("messages"))
        except ConversationError as exc:
            raise CorpusError(f"{where}: {exc}") from exc
        expected_last = "assistant" if side == "assistant" else "user"
        if conversation.last.role != expected_last:
            raise CorpusError(f"{where}: the last message must be a {expected_last} turn for {signal}")
        rows.append(CorpusRow(signal, scenario, label, kind, conversation))
    return rows


def load_all(sides: tuple[str, ...] = ("user", "assistant")) -> dict[str, list[CorpusRow]]:
    return {name: load_corpus(spec) for name, spec in SIGNALS.items() if spec.side in sides}


def corpus_files() -> list[Path]:
    return sorted(spec.corpus_path for spec in SIGNALS.values()) + everyday_files("user") + everyday_files("assistant")


def corpus_hash() -> str:
    """SHA-256 over every corpus file (path within the corpora folder, and bytes): the stamp that ties artifacts to
    their data."""
    digest = hashlib.sha256()
    for path in corpus_files():
        digest.update(path.relative_to(signals.CORPORA_DIR).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes() if path.exists() else b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()


__all__ = ["CORPORA_DIR", "CorpusError", "CorpusRow", "corpus_hash", "load_all", "load_corpus", "load_everyday"]
