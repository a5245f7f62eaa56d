"""Scores per conversation, computed once: moving a threshold re-decides from these, it never re-scores."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict

from classifiers.conversation import Conversation
from classifiers.scorer import SignalScorer


def conversation_hash(conversation: Conversation) -> str:
    """Of the parsed conversation, so that the same turns sent in another JSON shape share their scores."""
    turns = [[m.role, m.content] for m in conversation.messages]
    return hashlib.sha256(json.dumps(turns, ensure_ascii=False).encode()).hexdigest()[:16]


class ScoreCache:
    """The last `size` conversations' scores, least recently used first out."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._entries: OrderedDict[str, dict[str, float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, float] | None:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        return None

    def scores(self, scorer: SignalScorer, conversation: Conversation) -> tuple[str, dict[str, float], bool]:
        """(hash, scores, whether they came from the cache). Blocking: call it off the event loop."""
        key = conversation_hash(conversation)
        cached = self.get(key)
        if cached is not None:
            return key, cached, True
        scores = {name: result.score for name, result in scorer.score(conversation).items()}
        with self._lock:
            self._entries[key] = scores
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return key, scores, False
