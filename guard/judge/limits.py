"""What keeps the judge tier cheap: an answer cache (one call per conversation and question) and a call budget."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from typing import Callable, Literal

Answer = Literal["yes", "no"]


class AnswerCache:
    """A bounded LRU of answers keyed by (conversation, question, model); a size of 0 keeps nothing.

    Only answers are kept: a timeout or a malformed reply is asked again next time, not remembered as a verdict."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, Answer] = OrderedDict()
        self._lock = threading.Lock()  # `Guard.check` may run rails from several threads

    def get(self, key: str) -> Answer | None:
        with self._lock:
            answer = self._items.get(key)
            if answer is not None:
                self._items.move_to_end(key)
            return answer

    def put(self, key: str, answer: Answer) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = answer
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class CallBudget:
    """At most `per_minute` calls in any rolling 60 seconds; `take()` is False once they are spent."""

    window_s = 60.0

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute, self.clock = per_minute, clock
        self._calls: deque[float] = deque()
        self._lock = threading.Lock()

    def take(self) -> bool:
        now = self.clock()
        with self._lock:
            while self._calls and now - self._calls[0] >= self.window_s:
                self._calls.popleft()
            if len(self._calls) >= self.per_minute:
                return False
            self._calls.append(now)
            return True
