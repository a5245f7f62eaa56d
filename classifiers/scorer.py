"""Runtime scoring: a conversation in, one calibrated probability per registered signal out."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .conversation import Conversation
from .embedding_cache import DEFAULT_CAPACITY, EmbeddingCache
from .encoder import Encoder, shared_encoder
from .features import FEATURES, Featurizer, SideFeatures
from .heads import CalibratedLinearHead, artifact_path
from .onnx_backend import BACKEND_ENV, BACKENDS
from .settings import Settings, settings
from .signals import SIGNALS, Side

ARTIFACTS_DIR = Path(__file__).resolve().parent / "artifacts"
ARTIFACTS_ENV = Settings.env("artifacts")
EVIDENCE_CHARS = 280
# The calibrated probability of any user harm signal from which responses' sentences are also scored; well below
# every shipped threshold, so that borderline conversations get the finer scoring too. 0 = always.
SENTENCE_GATE = 0.2
# The encoder backend that scoring uses unless COUCHGUARD_BACKEND or `SignalScorer(backend=...)` says otherwise.
# ONNX fp32 matched torch exactly on `couchguard eval` (every ROC-AUC within 1e-6, every false alarm and recall count)
# and on 200 Moore responses (largest score difference < 1e-4, no decision changed), and is faster. int8 is opt-in: it
# moved Moore ROC-AUCs by up to 0.012 and changed 4 of those 200 actions. Where the ONNX graph is missing or was
# exported from other weights, the encoder logs why and runs torch. Training always uses torch, the reference.
DEFAULT_BACKEND = "onnx"


def runtime_backend(backend: str | None = None) -> str:
    """The scoring backend: the argument, else COUCHGUARD_BACKEND, else DEFAULT_BACKEND."""
    name = (backend or settings().backend or DEFAULT_BACKEND).strip().lower()
    if name not in BACKENDS:
        raise ValueError(
            f"unknown encoder backend {name!r} (from {BACKEND_ENV} or backend=); expected one of {', '.join(BACKENDS)}"
        )
    return name


@dataclass(frozen=True)
class SignalResult:
    """One signal's verdict on a conversation.

    `score` is a calibrated probability in [0, 1]: the highest over the turn's scored units (windows, or sentences
    for sentence-level signals); `span` (character offsets in message `turn_index`) and `evidence` point at that unit.
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

    def __init__(
        self,
        artifacts_dir: str | Path | None = None,
        encoder: Encoder | None = None,
        sentence_gate: float = SENTENCE_GATE,
        backend: str | None = None,
        cache_size: int = DEFAULT_CAPACITY,
    ) -> None:
        if not 0.0 <= sentence_gate <= 1.0:
            raise ValueError(f"sentence_gate must be a probability in [0, 1], got {sentence_gate!r}")
        self.artifacts_dir = Path(artifacts_dir or settings().artifacts or ARTIFACTS_DIR)
        self.encoder = encoder
        self.sentence_gate = sentence_gate
        self.backend = backend
        # recently encoded texts, reused across calls (see classifiers/embedding_cache.py); 0 turns it off
        self.cache_size = cache_size

    def load(self) -> "SignalScorer":
        """Reads every head; the encoder is the one given (loaded as it is), else the shared one for the backend."""
        encoder = self.encoder if self.encoder is not None and self.encoder.loaded else None
        if encoder is None:
            backend = self.encoder.backend if self.encoder is not None else runtime_backend(self.backend)
            encoder = shared_encoder(self.encoder.model_path if self.encoder else None, backend)
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
            if meta.get("features") != FEATURES[SIGNALS[name].unit]:
                raise ArtifactError(
                    f"{stem}.json was trained on {meta.get('features')!r} feature rows, but this release computes "
                    f"{FEATURES[SIGNALS[name].unit]!r}: run `couchguard train --signal {name}`"
                )
            heads[name], metadata[name] = head, meta
        self.encoder_ = encoder
        self.embeddings_ = EmbeddingCache(self.cache_size)
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
    def score(
        self,
        conversation: Conversation,
        sides: tuple[Side, ...] = ("user", "assistant"),
        user_scores: dict[str, float] | None = None,
    ) -> dict[str, SignalResult]:
        return self.score_many([conversation], sides, None if user_scores is None else [user_scores])[0]

    def score_many(
        self,
        conversations: Sequence[Conversation],
        sides: tuple[Side, ...] = ("user", "assistant"),
        user_scores: Sequence[dict[str, float] | None] | None = None,
    ) -> list[dict[str, SignalResult]]:
        """Score a batch; each message text is encoded once for the whole batch.

        `sides` limits the work to user or assistant signals, e.g. when the input rail has already scored the user
        turns that a response answers; pass those scores as `user_scores` (one entry per conversation, None where
        they are not known) so that they decide whether the response's sentences are scored (see `sentence_gate`).
        """
        self._check_loaded()
        featurizer = Featurizer(self.encoder_, self.embeddings_.for_call())
        results: list[dict[str, SignalResult]] = [{} for _ in conversations]
        for side in sides:
            names = [name for name, spec in SIGNALS.items() if spec.side == side]
            sentences = [False] * len(conversations)
            if any(SIGNALS[name].unit == "sentence" for name in names):
                sentences = [
                    self._needs_sentences(result, None if user_scores is None else user_scores[i])
                    for i, result in enumerate(results)
                ]
            featurized = featurizer.featurize(list(conversations), side, sentences=sentences)
            for result, features in zip(results, featurized):
                if features is not None:
                    result.update(self._score_side(features, names))
        return results

    def _needs_sentences(self, scored: dict[str, SignalResult], given: dict[str, float] | None) -> bool:
        user = {name: result.score for name, result in scored.items() if SIGNALS[name].side == "user"} or given
        return self.scores_sentences(user)

    def scores_sentences(self, user_scores: dict[str, float] | None) -> bool:
        """Whether a response's sentences are also scored, given its conversation's user-side scores.

        The signals that read sentences (a height or a dose in one sentence of a long answer; a single helpline
        line) matter when the user is at risk, so sentences are scored when any user harm signal reaches
        `sentence_gate`, or when the user side is unknown; otherwise those signals score the response's windows,
        which their heads are trained on as well. Sentences cost no second encoder pass (they are pooled from the
        window's), so the gate is about decisions, not time: the thresholds and policy levels were chosen on the dev
        sets with it, and ordinary answers to calm users (a dose in first-aid advice) were never weighed sentence by
        sentence.
        """
        if not user_scores:
            return True
        harms = [
            score
            for name, score in user_scores.items()
            if name in SIGNALS and SIGNALS[name].side == "user" and SIGNALS[name].kind == "harm"
        ]
        return max(harms, default=1.0) >= self.sentence_gate

    def _score_side(self, features: SideFeatures, names: list[str]) -> dict[str, SignalResult]:
        out = {}
        for name in names:
            spans, matrix = features.rows(SIGNALS[name].unit)
            probabilities = self.heads_[name].predict_proba(matrix)[:, 1]
            best = int(np.argmax(probabilities))
            out[name] = SignalResult(
                signal=name,
                score=float(probabilities[best]),
                turn_index=features.turn_index,
                span=spans[best],
                evidence=_excerpt(features, spans[best]),
            )
        return out

    def sentence_scores(
        self, conversation: Conversation, side: Side = "assistant"
    ) -> list[tuple[tuple[int, int], dict[str, float]]]:
        """Score each sentence of the scored turn (with the same context), for every signal of the side.

        Used to find the sentences that carry a harmful pattern, e.g. to remove them from a response. Window heads
        read each sentence's row as they would a short window; windows that scoring has just encoded come with their
        sentences from the embedding cache.
        """
        self._check_loaded()
        # right after `score`, every text here is in the embedding cache: no encoder pass
        [whole] = Featurizer(self.encoder_, self.embeddings_.for_call()).featurize([conversation], side, sentences=True)
        if whole is None or whole.sentence_matrix is None or not whole.sentence_spans:
            return []
        spans = list(whole.sentence_spans)
        names = [name for name, spec in SIGNALS.items() if spec.side == side]
        table = {name: self.heads_[name].predict_proba(whole.sentence_matrix)[:, 1] for name in names}
        return [(span, {name: float(table[name][i]) for name in names}) for i, span in enumerate(spans)]


def _excerpt(features: SideFeatures, span: tuple[int, int]) -> str:
    """The scored text inside `span` (character offsets in the turn), cut to EVIDENCE_CHARS."""
    for chunk in features.chunks:
        if chunk.start <= span[0] and span[1] <= chunk.end:
            return chunk.text[span[0] - chunk.start : span[1] - chunk.start][:EVIDENCE_CHARS]
    return ""


_shared_scorer: SignalScorer | None = None
_lock = threading.Lock()


def shared_scorer() -> SignalScorer:
    """The process-wide scorer with the bundled artifacts (loaded on first use)."""
    global _shared_scorer
    with _lock:
        if _shared_scorer is None:
            _shared_scorer = SignalScorer().load()
        return _shared_scorer
