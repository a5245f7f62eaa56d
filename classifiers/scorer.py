"""Runtime scoring: a conversation in, one calibrated probability per registered signal out."""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .conversation import Conversation
from .encoder import Encoder, shared_encoder
from .features import Featurizer, SideFeatures, combine, context_of
from .heads import CalibratedLinearHead, artifact_path
from .signals import SIGNALS, Side

ARTIFACTS_DIR = Path(__file__).resolve().parent / "artifacts"
ARTIFACTS_ENV = "COUCHGUARD_ARTIFACTS"
EVIDENCE_CHARS = 280
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")


@dataclass(frozen=True)
class SignalResult:
    """One signal's verdict on a conversation.

    `score` is a calibrated probability in [0, 1]. For long turns it is the highest score over the turn's windows;
    `span` (character offsets in message `turn_index`) and `evidence` point at that window.
    """

    signal: str
    score: float
    turn_index: int
    span: tuple[int, int]
    evidence: str


class ArtifactError(RuntimeError):
    pass


class SignalScorer:
    """Loads every registered signal's head once and scores conversations with the shared encoder."""

    def __init__(self, artifacts_dir: str | Path | None = None, encoder: Encoder | None = None) -> None:
        self.artifacts_dir = Path(artifacts_dir or os.environ.get(ARTIFACTS_ENV) or ARTIFACTS_DIR)
        self.encoder = encoder

    def load(self) -> "SignalScorer":
        encoder = self.encoder if self.encoder is not None and self.encoder.loaded else None
        encoder = encoder or shared_encoder(self.encoder.model_path if self.encoder else None)
        heads: dict[str, CalibratedLinearHead] = {}
        metadata: dict[str, dict] = {}
        for name in SIGNALS:
            stem = self.artifacts_dir / name
            if not artifact_path(stem, ".npz").exists():
                raise ArtifactError(f"no trained head for {name} in {self.artifacts_dir}: run `couchguard train`")
            head, meta = CalibratedLinearHead.load(stem)
            if meta.get("encoder") != encoder.identity_:
                raise ArtifactError(
                    f"{stem}.json was trained on encoder {meta.get('encoder')!r}, but {encoder.identity_!r} is loaded"
                )
            heads[name], metadata[name] = head, meta
        self.encoder_ = encoder
        self.heads_ = heads
        self.metadata_ = metadata
        return self

    @property
    def loaded(self) -> bool:
        return hasattr(self, "heads_")

    def _check_loaded(self) -> None:
        if not self.loaded:
            raise ArtifactError("SignalScorer.load() must be called before scoring")

    def default_threshold(self, signal: str) -> float:
        self._check_loaded()
        return float(self.metadata_[signal]["threshold"])

    # -- scoring ---------------------------------------------------------------------------------------------------
    def score(self, conversation: Conversation, sides: tuple[Side, ...] = ("user", "assistant")) -> dict[str, SignalResult]:
        return self.score_many([conversation], sides)[0]

    def score_many(self, conversations: list[Conversation],
                   sides: tuple[Side, ...] = ("user", "assistant")) -> list[dict[str, SignalResult]]:
        """Score a batch; each message text is encoded once for the whole batch.

        `sides` limits the work to user or assistant signals, e.g. when the input rail has already scored the user
        turns that a response answers.
        """
        self._check_loaded()
        featurizer = Featurizer(self.encoder_)
        results: list[dict[str, SignalResult]] = [{} for _ in conversations]
        for side in sides:
            names = [name for name, spec in SIGNALS.items() if spec.side == side]
            fine = any(SIGNALS[name].sentence_level for name in names)
            for conversation, result, features in zip(conversations, results, featurizer.featurize(conversations, side)):
                if features is not None:
                    sentences = self._sentence_rows(featurizer, conversation, features) if fine else None
                    result.update(self._score_side(features, names, sentences))
        return results

    def _sentence_rows(self, featurizer: Featurizer, conversation: Conversation,
                       features: SideFeatures) -> tuple[list[tuple[int, int]], np.ndarray] | None:
        """(spans, feature rows) of each sentence of the scored turn, with the turn's context; None if one sentence."""
        rows = self._sentence_matrix(featurizer, conversation, features, min_words=3)
        return rows if rows is not None and len(rows[0]) >= 2 else None

    @staticmethod
    def _sentence_matrix(featurizer: Featurizer, conversation: Conversation, features: SideFeatures,
                         min_words: int = 1) -> tuple[list[tuple[int, int]], np.ndarray] | None:
        text = conversation.messages[features.turn_index].content
        spans = [(m.start(), m.end()) for m in _SENTENCE.finditer(text) if len(m.group().split()) >= min_words]
        if not spans:
            return None
        sentences = [text[a:b].strip() for a, b in spans]
        featurizer.embed(sentences)
        return spans, combine(np.stack([featurizer.cache[s] for s in sentences]), context_of(features))

    def _score_side(self, features: SideFeatures, names: list[str],
                    sentences: tuple[list[tuple[int, int]], np.ndarray] | None) -> dict[str, SignalResult]:
        out = {}
        text_of = {(c.start, c.end): c.text for c in features.chunks}
        window_spans = list(text_of)
        for name in names:
            spans = window_spans
            probabilities = self.heads_[name].predict_proba(features.matrix)[:, 1]
            if sentences is not None and SIGNALS[name].sentence_level:
                spans = spans + sentences[0]
                probabilities = np.concatenate([probabilities, self.heads_[name].predict_proba(sentences[1])[:, 1]])
            best = int(np.argmax(probabilities))
            span = spans[best]
            out[name] = SignalResult(
                signal=name,
                score=float(probabilities[best]),
                turn_index=features.turn_index,
                span=span,
                evidence=text_of.get(span, "")[:EVIDENCE_CHARS] or self._excerpt(features, span),
            )
        return out

    @staticmethod
    def _excerpt(features: SideFeatures, span: tuple[int, int]) -> str:
        for chunk in features.chunks:
            if chunk.start <= span[0] and span[1] <= chunk.end:
                return chunk.text[span[0] - chunk.start : span[1] - chunk.start][:EVIDENCE_CHARS]
        return ""

    def sentence_scores(self, conversation: Conversation, side: Side = "assistant") -> list[tuple[tuple[int, int], dict[str, float]]]:
        """Score each sentence of the scored turn on its own (with the same context).

        Used to find the sentences that carry a harmful pattern, e.g. to remove them from a response.
        """
        self._check_loaded()
        featurizer = Featurizer(self.encoder_)
        [whole] = featurizer.featurize([conversation], side)
        rows = self._sentence_matrix(featurizer, conversation, whole) if whole is not None else None
        if rows is None:
            return []
        spans, matrix = rows
        names = [name for name, spec in SIGNALS.items() if spec.side == side]
        table = {name: self.heads_[name].predict_proba(matrix)[:, 1] for name in names}
        return [(span, {name: float(table[name][i]) for name in names}) for i, span in enumerate(spans)]


_shared_scorer: SignalScorer | None = None
_lock = threading.Lock()


def shared_scorer() -> SignalScorer:
    """The process-wide scorer with the bundled artifacts (loaded on first use)."""
    global _shared_scorer
    with _lock:
        if _shared_scorer is None:
            _shared_scorer = SignalScorer().load()
        return _shared_scorer
