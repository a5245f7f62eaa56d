"""The product's labelled file, read and scored.

One JSON object per line:
  {"id": "c1", "messages": [...], "labels": {"user.suicide": 1, "user.mania": 0}}
The conversation is scored by the real classifiers (`shared_scorer().score_many`), like at runtime. Two variants:
  - "expected_flags": ["user.suicide"] instead of "labels": the listed signals are positive and every other signal
    scored on the conversation negative (the product states exactly what should be flagged);
  - "scores": {"user.suicide": 0.83, ...} instead of "messages": pre-computed scores, used as they are (scores kept
    from an earlier run, or a synthetic set with known score distributions).
A signal a line does not label is simply not used for that line. Every bad line is reported, with its number.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from classifiers.conversation import ConversationError, parse_conversation
from classifiers.signals import SIGNALS

from ..progress import bar

MAX_REPORTED = 20


class LabelledDataError(ValueError):
    def __init__(self, path: Path, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:MAX_REPORTED]
        more = f"\n... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
        super().__init__(f"{path}: {len(problems)} problem(s)\n" + "\n".join(shown) + more)


@dataclass(frozen=True)
class Labelled:
    """Per signal: the scores and 0/1 labels of the lines that label it."""

    scores: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]
    lines: int
    scored_by_model: bool


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, list(SIGNALS), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _labels(record: dict, where: str, problems: list[str]) -> dict[str, int] | None:
    if "labels" in record:
        raw = record["labels"]
        if not isinstance(raw, dict) or not raw:
            problems.append(f"{where}: 'labels' must be a non-empty object like {{\"user.suicide\": 1}}")
            return None
        labels = {}
        for name, value in raw.items():
            if name not in SIGNALS:
                problems.append(f"{where}: labels: unknown signal {name!r}{_suggest(name)}")
            elif not (isinstance(value, (bool, int, float)) and value in (0, 1)):
                problems.append(f"{where}: labels.{name}: must be 0, 1, true or false, got {value!r}")
            else:
                labels[name] = int(value)
        return labels
    if "expected_flags" in record:
        raw = record["expected_flags"]
        if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
            problems.append(f"{where}: 'expected_flags' must be a list of signal names")
            return None
        for name in raw:
            if name not in SIGNALS:
                problems.append(f"{where}: expected_flags: unknown signal {name!r}{_suggest(name)}")
        return {name: 1 for name in raw if name in SIGNALS} | {"*": 0}
    problems.append(f"{where}: needs 'labels' (or 'expected_flags')")
    return None


def load(path: Path, scorer_factory=None, *, batch: int = 64, progress: bool = True) -> Labelled:
    """Read, validate and score the whole file; LabelledDataError lists every bad line."""
    problems: list[str] = []
    pending_conversations, pending_labels, rows = [], [], []
    try:
        handle = open(path, encoding="utf-8")
    except OSError as exc:
        raise LabelledDataError(path, [f"cannot read: {exc.strerror or exc}"]) from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})")
                continue
            if not isinstance(record, dict):
                problems.append(f"{where}: expected an object, got {type(record).__name__}")
                continue
            labels = _labels(record, where, problems)
            if labels is None:
                continue
            if "scores" in record:
                scores = record["scores"]
                if not isinstance(scores, dict) or not all(
                    name in SIGNALS and isinstance(v, (int, float)) and 0 <= v <= 1 for name, v in scores.items()
                ):
                    problems.append(f"{where}: 'scores' must map signal names to numbers in [0, 1]")
                    continue
                rows.append((where, {k: float(v) for k, v in scores.items()}, labels))
            elif "messages" in record:
                try:
                    pending_conversations.append(parse_conversation(record["messages"]))
                except ConversationError as exc:
                    problems.append(f"{where}: {exc}")
                    continue
                pending_labels.append((where, labels))
            else:
                problems.append(f"{where}: needs 'messages' (or pre-computed 'scores')")
    if problems:
        raise LabelledDataError(path, problems)
    if pending_conversations:
        from classifiers import shared_scorer

        scorer = (scorer_factory or shared_scorer)()
        with bar(len(pending_conversations), "tune: scoring", progress) as moving:
            for start in range(0, len(pending_conversations), batch):
                chunk = pending_conversations[start : start + batch]
                for (where, labels), results in zip(pending_labels[start : start + batch], scorer.score_many(chunk)):
                    rows.append((where, {n: r.score for n, r in results.items()}, labels))
                moving.update(len(chunk))
    return _collect(path, rows, scored=bool(pending_conversations))


def _collect(path: Path, rows, scored: bool) -> Labelled:
    problems: list[str] = []
    scores: dict[str, list[float]] = {}
    labels: dict[str, list[int]] = {}
    for where, row_scores, row_labels in rows:
        default = row_labels.get("*")
        expanded = {n: row_labels.get(n, default) for n in row_scores} if default is not None else dict(row_labels)
        missing = [n for n in row_labels if n != "*" and n not in row_scores]
        for name in missing:
            side = SIGNALS[name].side
            problems.append(
                f"{where}: {name} is labelled but has no score: "
                + (
                    "the conversation must end with an assistant turn for assistant signals"
                    if side == "assistant"
                    else "add it to 'scores'"
                )
            )
        for name, label in expanded.items():
            if label is None or name not in row_scores:
                continue
            scores.setdefault(name, []).append(row_scores[name])
            labels.setdefault(name, []).append(label)
    if problems:
        raise LabelledDataError(path, problems)
    return Labelled(
        scores={k: np.array(v) for k, v in scores.items()},
        labels={k: np.array(v, dtype=int) for k, v in labels.items()},
        lines=len(rows),
        scored_by_model=scored,
    )
