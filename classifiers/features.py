"""Features for the signal heads: the scored turn read together with the user turns around it.

Each message is encoded once (windowed when long), and the features of one window are
`[window, context, window * context]`: the embedding of the scored text, the embedding of its context, and their
element-wise product, so that a linear head can learn interactions such as "a question about bridges *after*
distress" that neither text carries alone. Sentence rows (for the heads whose unit is a sentence) take the same form,
with each sentence's vector pooled from the hidden states of its own tokens in its window's encoder pass: the
sentence read beside its neighbours, at no second pass over the response.

- user side: the scored turn is the latest user turn; the context is the mean of up to three earlier user turns.
- assistant side: the scored turn is the latest assistant turn; the context is the user turns it answers (the
  latest counted twice, up to two earlier ones once).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable, MutableMapping, Sequence

import numpy as np

from .conversation import Conversation
from .encoder import Chunk, Encoder, sentence_spans
from .signals import Side, Unit

CONTEXT_TURNS = 3
# What a head's feature rows are, stored with it: a head is refused at load when this release computes other rows.
FEATURES = {
    "window": "window+context+product/v1",
    # each sentence's vector pooled from its window's own encoder pass (v1 encoded each sentence alone)
    "sentence": "window+context+product/v1; sentences pooled in their window/v2",
}


@dataclass(frozen=True)
class SideFeatures:
    """The feature rows of the windows of one scored turn."""

    side: Side
    turn_index: int
    chunks: tuple[Chunk, ...]
    matrix: np.ndarray  # (len(chunks), 3 * dimension)
    # each sentence of the turn (character spans in the turn) and its feature row, when sentences were asked for
    sentence_spans: tuple[tuple[int, int], ...] = ()
    sentence_matrix: np.ndarray | None = None

    def rows(self, unit: Unit) -> tuple[list[tuple[int, int]], np.ndarray]:
        """(spans, feature rows) that a head of this unit scores; the turn is as risky as its riskiest row.

        Sentence heads score every sentence and also every window, so that what a response says as a whole (its
        stance) still counts next to what one sentence says. Features computed without sentences give the windows
        alone, which sentence heads are trained on too.
        """
        windows = [(chunk.start, chunk.end) for chunk in self.chunks]
        if unit == "window" or self.sentence_matrix is None:
            return windows, self.matrix
        return list(self.sentence_spans) + windows, np.vstack([self.sentence_matrix, self.matrix])


@dataclass(frozen=True)
class _Plan:
    side: Side
    turn_index: int
    chunks: tuple[Chunk, ...]
    context: tuple[tuple[str, float], ...]  # (text, weight)


def scored_turn_index(conversation: Conversation, side: Side) -> int | None:
    if side == "assistant":
        return len(conversation.messages) - 1 if conversation.last.role == "assistant" else None
    return conversation.last_user_index


def context_texts(conversation: Conversation, side: Side) -> tuple[int, list[tuple[str, float]]]:
    """(index of the scored turn, [(context text, weight)]); raises ValueError when the side has no turn."""
    index = scored_turn_index(conversation, side)
    if index is None:
        raise ValueError(f"no {side} turn to score")
    earlier_users = conversation.user_turns(upto=index)[-CONTEXT_TURNS:]
    if side == "user":
        return index, [(text, 1.0) for text in earlier_users]
    weights = [1.0] * (len(earlier_users) - 1) + [2.0] if earlier_users else []
    return index, list(zip(earlier_users, weights))


class Featurizer:
    """Turns conversations into feature matrices with a shared text-embedding cache.

    One instance per scoring call (runtime) or per training run (where the cache saves re-encoding the same
    user turns that appear in many rows).
    """

    def __init__(self, encoder: Encoder, cache: MutableMapping[str, np.ndarray] | None = None) -> None:
        self.encoder = encoder
        self.cache: MutableMapping[str, np.ndarray] = cache if cache is not None else {}
        # the user turn a response answers is both scored (user side) and context (assistant side): window it once
        self._windows: dict[str, tuple[Chunk, ...]] = {}
        # a window's sentences are needed to encode it and again to lay out its rows: split and key them once
        self._sentences_of: dict[str, tuple[list[tuple[int, int]], list[str]]] = {}

    def windows(self, text: str) -> tuple[Chunk, ...]:
        if text not in self._windows:
            self._windows[text] = tuple(self.encoder.chunks(text))
        return self._windows[text]

    def _plan(self, conversation: Conversation, side: Side) -> _Plan | None:
        if scored_turn_index(conversation, side) is None:
            return None
        index, context = context_texts(conversation, side)
        return _Plan(
            side=side,
            turn_index=index,
            chunks=self.windows(conversation.messages[index].content),
            context=tuple(context),
        )

    def embed(self, texts: Iterable[str]) -> None:
        """Encode every text not yet in the cache, in one batched call."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            for text, vector in zip(missing, self.encoder.encode(missing)):
                self.cache[text] = vector

    def sentences_of(self, window: str) -> tuple[list[tuple[int, int]], list[str]]:
        """(spans, cache keys) of the window's sentences that hold at least one word."""
        if window not in self._sentences_of:
            spans = window_sentences(window)
            self._sentences_of[window] = (spans, sentence_keys(window, spans))
        return self._sentences_of[window]

    def embed_sentences(self, chunks: Iterable[Chunk]) -> None:
        """Encode each window not yet in the cache with its sentences, in one batched pass (`Encoder.encode_spans`)."""
        windows = list(dict.fromkeys(chunk.text for chunk in chunks))
        missing = [text for text in windows if any(key not in self.cache for key in self.sentences_of(text)[1])]
        if not missing:
            return
        encoded = self.encoder.encode_spans(missing, [self.sentences_of(text)[0] for text in missing])
        for text, (window, sentences) in zip(missing, encoded):
            self.cache[text] = window
            for key, vector in zip(self.sentences_of(text)[1], sentences):
                self.cache[key] = vector

    def _sentences(self, plan: _Plan) -> list[tuple[tuple[int, int], str]]:
        """(span in the turn, cache key) of each sentence of the scored turn's windows that holds at least one word."""
        pieces: list[tuple[tuple[int, int], str]] = []
        for chunk in plan.chunks:
            spans, keys = self.sentences_of(chunk.text)
            pieces.extend(((chunk.start + a, chunk.start + b), key) for (a, b), key in zip(spans, keys))
        return pieces

    def _turn_vector(self, text: str) -> np.ndarray:
        """One vector for a whole turn: the mean of its windows, re-normalised."""
        vectors = np.stack([self.cache[w.text] for w in self.windows(text)])
        return _normalise(vectors.mean(axis=0))

    def featurize(
        self, conversations: list[Conversation], side: Side, *, sentences: bool | Sequence[bool] = False
    ) -> list[SideFeatures | None]:
        """Feature rows for the scored turn of each conversation (None where the side has no turn).

        With `sentences` (for all conversations, or one flag each), each sentence of the scored turn also gets a
        feature row (`SideFeatures.rows("sentence")`), its vector pooled from its window's pass.
        """
        plans = [self._plan(c, side) for c in conversations]
        flags = [sentences] * len(plans) if isinstance(sentences, bool) else list(sentences)
        if len(flags) != len(plans):
            raise ValueError(f"{len(flags)} sentence flags for {len(plans)} conversations")
        sentences_of = [
            self._sentences(plan) if plan is not None and flag else None for plan, flag in zip(plans, flags)
        ]
        # a window whose sentences are scored is encoded once for both (its sentences read inside it)
        self.embed_sentences(
            chunk for plan, pieces in zip(plans, sentences_of) if plan is not None and pieces for chunk in plan.chunks
        )
        needed: list[str] = []
        for plan in plans:
            if plan is None:
                continue
            needed.extend(chunk.text for chunk in plan.chunks)
            for text, _ in plan.context:
                needed.extend(window.text for window in self.windows(text))
        self.embed(needed)
        dimension = self.encoder.dimension_
        results: list[SideFeatures | None] = []
        for plan, pieces in zip(plans, sentences_of):
            if plan is None:
                results.append(None)
                continue
            if plan.context:
                weighted = sum(
                    (weight * self._turn_vector(text) for text, weight in plan.context),
                    np.zeros(dimension, dtype=np.float32),
                )
                context = _normalise(weighted)
            else:
                context = np.zeros(dimension, dtype=np.float32)
            matrix = combine(np.stack([self.cache[chunk.text] for chunk in plan.chunks]), context)
            spans: tuple[tuple[int, int], ...] = ()
            sentence_matrix = None
            if pieces is not None:
                spans = tuple(span for span, _ in pieces)
                vectors = [self.cache[key] for _, key in pieces]
                sentence_matrix = combine(
                    np.stack(vectors) if vectors else np.zeros((0, dimension), np.float32), context
                )
            results.append(
                SideFeatures(
                    side=plan.side,
                    turn_index=plan.turn_index,
                    chunks=plan.chunks,
                    matrix=matrix,
                    sentence_spans=spans,
                    sentence_matrix=sentence_matrix,
                )
            )
        return results


def window_sentences(text: str) -> list[tuple[int, int]]:
    """The spans of a window's sentences that hold at least one word: the units sentence heads score."""
    return [(a, b) for a, b in sentence_spans(text) if any(c.isalnum() for c in text[a:b])]


def sentence_keys(window: str, spans: list[tuple[int, int]]) -> list[str]:
    """The embedding cache's keys for sentences read inside their window: the span and a digest of the window (a
    cache of training texts would otherwise hold each window once per sentence). Message text never starts with
    NUL (`parse_conversation` drops control characters), so no text anyone sends can stand for one."""
    digest = hashlib.sha256(window.encode("utf-8", "surrogatepass")).hexdigest()
    return [f"\x00{a}:{b}\x00{digest}" for a, b in spans]


def combine(windows: np.ndarray, context: np.ndarray) -> np.ndarray:
    """Feature rows `[window, context, window * context]` for each window embedding."""
    tiled = np.broadcast_to(context, windows.shape)
    return np.hstack([windows, tiled, windows * tiled]).astype(np.float32)


def _normalise(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm > 0 else vector.astype(np.float32)
