"""Embeddings of recently encoded texts, kept across scoring calls so that no text is encoded twice in a row.

After `check` scores a response, the rewrite loop scores its sentences again (`SignalScorer.sentence_scores`) and
re-checks candidates made of the same sentences and the same user turns; the proxy sees a conversation's earlier turns
again with every request. Keys are SHA-256 digests of the texts, so the cache holds vectors, never the words.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping

import numpy as np

# 4,096 vectors of 384 float32: about 6 MB
DEFAULT_CAPACITY = 4096


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """A thread-safe least-recently-used map from text to its embedding; capacity 0 keeps nothing."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity!r}")
        self.capacity = capacity
        self._vectors: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        key = _key(text)
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
            return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        if self.capacity == 0:
            return
        key = _key(text)
        # a copy: the encoder's rows are views of its whole batch, which the cache must not keep alive
        vector = np.array(vector, dtype=np.float32, copy=True)
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.capacity:
                self._vectors.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def __len__(self) -> int:
        return len(self._vectors)

    def for_call(self) -> "CallCache":
        return CallCache(self)


class CallCache(MutableMapping[str, np.ndarray]):
    """One scoring call's text -> embedding map (what Featurizer takes), backed by the shared cache.

    A vector found in the shared cache is copied into the call's own map, so that another thread evicting it between
    the encoder pass and the feature rows cannot lose it.
    """

    def __init__(self, shared: EmbeddingCache) -> None:
        self.shared = shared
        self.local: dict[str, np.ndarray] = {}

    def __contains__(self, text: object) -> bool:
        if text in self.local:
            return True
        if not isinstance(text, str):
            return False
        vector = self.shared.get(text)
        if vector is None:
            return False
        self.local[text] = vector
        return True

    def __getitem__(self, text: str) -> np.ndarray:
        if text not in self:
            raise KeyError(text)
        return self.local[text]

    def __setitem__(self, text: str, vector: np.ndarray) -> None:
        self.local[text] = vector
        self.shared.put(text, vector)

    def __delitem__(self, text: str) -> None:
        del self.local[text]

    def __iter__(self) -> Iterator[str]:
        return iter(self.local)

    def __len__(self) -> int:
        return len(self.local)
