"""Chat completions from any LLM through litellm: bounded concurrency, cached, with a progress bar."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from .cache import CompletionCache, cache_key
from .progress import bar


@dataclass(frozen=True)
class Endpoint:
    model: str
    api_base: str | None = None
    temperature: float = 0.7
    max_tokens: int = 600


class Completer:
    """`await complete(messages, sample=i)` -> text, at most `concurrency` calls in flight, answers cached."""

    def __init__(self, endpoint: Endpoint, cache: CompletionCache, concurrency: int = 8) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.endpoint = endpoint
        self.cache = cache
        self._semaphore = asyncio.Semaphore(concurrency)
        self.calls = 0  # made to the model in this run (cache hits excluded)

    def key(self, messages: list[dict[str, Any]], sample: int | str) -> str:
        e = self.endpoint
        return cache_key(
            model=e.model,
            api_base=e.api_base,
            temperature=e.temperature,
            max_tokens=e.max_tokens,
            messages=messages,
            sample=sample,
        )

    async def complete(self, messages: list[dict[str, Any]], sample: int | str = 0) -> str:
        key = self.key(messages, sample)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        import litellm  # slow to import; only live runs need it

        async with self._semaphore:
            self.calls += 1
            response = await litellm.acompletion(
                model=self.endpoint.model,
                messages=messages,
                api_base=self.endpoint.api_base,
                temperature=self.endpoint.temperature,
                max_tokens=self.endpoint.max_tokens,
            )
        text = response.choices[0].message.content or ""
        self.cache.put(key, text)
        return text


async def gather_with_progress(coroutines: list, description: str, enabled: bool = True) -> list:
    """Run coroutines concurrently (the Completer bounds the calls), results in order, the bar moving as each ends."""
    progress = bar(len(coroutines), description, enabled)

    async def tracked(coroutine):
        try:
            return await coroutine
        finally:
            progress.update(1)

    try:
        return await asyncio.gather(*(tracked(c) for c in coroutines))
    finally:
        progress.close()
