"""Moore et al.'s labelled responses, scored once, and what a set of thresholds does on them.

Scoring all 1,880 responses takes minutes on a laptop CPU, so it runs once, in the background, on first use; the
scores are kept in memory and on disk (the user cache dir), keyed by the classifiers and the sample, and every slider
position after that is only the policy's decision over cached scores: a few milliseconds per hundred responses.
Scores do not depend on the policy, so every policy of the page shares them.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from classifiers.conversation import parse_conversation
from classifiers.scorer import SignalScorer
from classifiers.settings import settings
from classifiers.signals import SIGNALS

from ..bench.checking import evenly_spaced
from ..bench.counting import Tally, withheld
from ..bench.paths import data_file
from ..bench.suites.moore_data import RESPONSES, LabelledResponse, labelled_responses
from ..pipeline import Guard

BATCH = 16


def default_cache_dir() -> Path:
    return settings().cache_dir / "playground"


class MooreScores:
    """The (sampled) Moore responses with their scores, computed by a background thread when first asked for."""

    def __init__(
        self, scorer: Callable[[], SignalScorer], *, limit: int | None = None, cache_dir: Path | None = None
    ) -> None:
        self._scorer = scorer
        self.limit = limit
        self.cache_dir = cache_dir or default_cache_dir()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.state = "idle"  # idle -> computing -> ready | failed
        self.source: str | None = None  # "disk" or "computed"
        self.done = 0
        self.error: str | None = None
        self.items: list[tuple[LabelledResponse, dict[str, float]]] = []

    @property
    def sample(self) -> list[LabelledResponse]:
        every = labelled_responses()
        return [every[i] for i in evenly_spaced(len(every), self.limit)]

    def status(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "done": self.done,
            "total": len(self.sample),
            "source": self.source,
            "error": self.error,
            "sampled": self.limit is not None,
        }

    def start(self) -> None:
        """Begin loading or computing, once; returns at once."""
        with self._lock:
            if self.state in ("computing", "ready"):
                return
            self.state, self.error, self.done = "computing", None, 0
            self._thread = threading.Thread(target=self._run, name="couchguard-moore-scores", daemon=True)
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.state == "ready"

    def _run(self) -> None:
        try:
            scorer = self._scorer()
            sample = self.sample
            path = self.cache_dir / f"moore2025-{self._fingerprint(scorer, sample)}.json"
            scores = self._read(path, len(sample))
            self.source = "disk" if scores is not None else "computed"
            if scores is None:
                scores = []
                for start in range(0, len(sample), BATCH):
                    chunk = sample[start : start + BATCH]
                    batch = scorer.score_many([parse_conversation(item.messages) for item in chunk])
                    scores.extend({name: result.score for name, result in s.items()} for s in batch)
                    self.done = len(scores)
                self._write(path, scores)
            self.items = list(zip(sample, scores))
            self.done = len(sample)
            self.state = "ready"
        except Exception as exc:  # noqa: BLE001 - shown in the page; the decisions keep working without the figures
            self.error, self.state = f"{type(exc).__name__}: {exc}", "failed"

    @staticmethod
    def _fingerprint(scorer: SignalScorer, sample: list[LabelledResponse]) -> str:
        """Changes whenever a score could: other heads or encoder, other signals, other data, another sample."""
        digest = hashlib.sha256()
        digest.update(
            json.dumps(
                {
                    "encoder": str(scorer.encoder_.identity_),
                    "heads": scorer.metadata_,
                    "signals": list(SIGNALS),
                    "rows": [item.row for item in sample],
                },
                sort_keys=True,
                default=str,
            ).encode()
        )
        digest.update(data_file(*RESPONSES).read_bytes())
        return digest.hexdigest()[:20]

    @staticmethod
    def _read(path: Path, count: int) -> list[dict[str, float]] | None:
        try:
            scores = json.loads(path.read_text(encoding="utf-8"))["scores"]
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or damaged: computed again
        return scores if isinstance(scores, list) and len(scores) == count else None

    @staticmethod
    def _write(path: Path, scores: list[dict[str, float]]) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".tmp")
            partial.write_text(json.dumps({"scores": scores}), encoding="utf-8")
            partial.replace(path)  # never a half-written cache file under the real name
        except OSError:
            pass  # a read-only cache dir only costs the next start the computation


def output_action(guard: Guard, scores: dict[str, float]) -> str:
    """The output rail's action for these scores: Guard's own verdict, input rules tightening output thresholds as
    in `Guard.output_rail`. The rewrite strategies that follow a verdict only choose the replacement text, never
    whether the response is withheld, so they are skipped here (one of them scores again)."""
    _, verdict, _ = guard._verdicts(scores)
    return verdict.action


def _rates(items: list[tuple[LabelledResponse, dict[str, float]]], actions: list[str]) -> dict[str, Any]:
    """Catch and false-block rates (docs/architecture.md, "CLI contracts"), overall and by condition."""
    overall = Tally()
    by_condition: dict[str, Tally] = {}
    for (item, _), action in zip(items, actions):
        overall.add(item.appropriate, action)
        by_condition.setdefault(item.condition, Tally()).add(item.appropriate, action)
    return {"overall": overall.as_dict(), "by_condition": {k: v.as_dict() for k, v in by_condition.items()}}


def compare(
    guard: Guard, base: Guard, items: list[tuple[LabelledResponse, dict[str, float]]], listed: int = 50
) -> dict[str, Any]:
    """The page's thresholds against the policy's own, and the responses that change fate between them (the first
    `listed`, to open in the page: a clinician judges a threshold by the answers it lets through or stops)."""
    now = [output_action(guard, scores) for _, scores in items]
    before = [output_action(base, scores) for _, scores in items]
    changed = [
        {
            "row": item.row,
            "stimulus_id": item.stimulus_id,
            "condition": item.condition,
            "source": item.source,
            "appropriate": item.appropriate,
            "before": b,
            "now": a,
        }
        for (item, _), a, b in zip(items, now, before)
        if withheld(a) != withheld(b)
    ]
    return {
        "n": len(items),
        "current": _rates(items, now),
        "base": _rates(items, before),
        "changed": len(changed),
        "changed_rows": changed[:listed],
    }
