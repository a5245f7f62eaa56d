"""A resumable completion cache: one JSON line per finished call, appended as soon as it finishes.

An interrupted live run loses at most the calls in flight; rerunning the same command reads the file back and only
asks for what is missing. Keys hash everything that determines the answer (model, endpoint, messages, temperature,
sample number), so changing any of them asks again rather than reusing a stale answer.

Not litellm's disk cache: it needs the `diskcache` package besides litellm, it is switched on process-wide
(`litellm.cache`), so the proxy's and the judge's calls in the same process would be cached too, and it keys a call
by its request alone, so the several samples a live run draws at temperature from one request would collapse into
one answer unless each carried a made-up parameter.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any


def cache_key(**parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class CompletionCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict[str, str] = {}
        if path.exists():
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short by an interruption: that call is simply made again
                    if isinstance(record, dict) and isinstance(record.get("value"), str):
                        self._entries[record["key"]] = record["value"]

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> str | None:
        return self._entries.get(key)

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._entries[key] = value
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"key": key, "value": value}, ensure_ascii=False) + "\n")
