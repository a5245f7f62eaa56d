"""Everything the app builds once at start-up and then only reads: config, products, observers, engines."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import anyio

from ..audit import AuditLog, shared_redactor
from ..batching import ScoreBatcher
from ..escalation import EscalationWebhook
from ..pipeline import Observer
from ..policy import load_policy
from .config import ServeConfig
from .limits import ConcurrencyLimit
from .metrics import Metrics
from .products import Products

log = logging.getLogger("couchguard.proxy")

# after a burst: wait this long with nothing in flight, and trim at most once per interval (a trim walks the heap)
TRIM_IDLE_S = 2.0
TRIM_INTERVAL_S = 30.0


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None where the C library has none (musl, macOS)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()


@dataclass
class ProxyState:
    config: ServeConfig
    products: Products
    metrics: Metrics = field(default_factory=Metrics)
    audit: AuditLog | None = None
    escalation: EscalationWebhook | None = None
    redactor: Any = None
    hash_key: bytes | None = None
    needs_redactor: bool = False
    ready: bool = False
    load_error: str | None = None
    limit: ConcurrencyLimit = field(init=False)

    # glibc's malloc_trim, or None where there is none; per instance, so that a replica's own trims are its own
    trim_heap: Callable[[int], int] | None = field(default=_MALLOC_TRIM, repr=False)
    _trim: asyncio.TimerHandle | None = field(default=None, init=False, repr=False)
    _trimmed_at: float = field(default=float("-inf"), init=False, repr=False)

    def __post_init__(self) -> None:
        self.limit = ConcurrencyLimit(self.config.concurrency)
        self.limit.on_idle = self._schedule_trim
        self.metrics.in_flight.set_function(lambda: self.limit.in_flight)

    def _schedule_trim(self) -> None:
        """Once a burst is over, hand the heap pages it freed back to the OS.

        A burst allocates from several malloc arenas (one per worker thread that scored); glibc keeps freed pages
        mapped, and `malloc_trim` returns them (33 MiB after 64 concurrent scorings in one process). It runs on a
        worker thread, only when nothing is in flight, at most once per TRIM_INTERVAL_S. What stays after a burst
        is the allocator's high-water mark, bounded by max_in_flight (docs/proxy.md, "Load and backpressure")."""
        if self.trim_heap is None:
            return
        if self._trim is not None:
            self._trim.cancel()
        delay = max(TRIM_IDLE_S, self._trimmed_at + TRIM_INTERVAL_S - time.monotonic())
        self._trim = asyncio.get_running_loop().call_later(delay, self._trim_if_idle)

    def _trim_if_idle(self) -> None:
        self._trim = None
        if self.limit.in_flight == 0 and self.trim_heap is not None:
            self._trimmed_at = time.monotonic()
            asyncio.get_running_loop().run_in_executor(None, self.trim_heap, 0)

    @classmethod
    def from_config(cls, config: ServeConfig) -> "ProxyState":
        """Validates every policy now, so a bad file stops start-up instead of failing a request later."""
        products = Products(config)
        policies = [
            load_policy(name)
            for product in products.products.values()
            for name in (product.policy, *product.config.policy_header)
        ]
        key_env = config.audit.hash_key_env
        return cls(
            config=config,
            products=products,
            hash_key=(os.environ.get(key_env) or "").encode() or None if key_env else None,
            needs_redactor=config.audit.store_text or any(p.redact_upstream_pii or p.store_text for p in policies),
        )

    def start(self) -> None:
        self.audit = AuditLog(
            self.config.audit.url,
            store_text=self.config.audit.store_text,
            redactor=shared_redactor,
            hash_key=self.hash_key,
        ).start()
        if self.config.escalation.webhook_url:
            self.escalation = EscalationWebhook(
                self.config.escalation.webhook_url, timeout_s=self.config.escalation.timeout_s
            )

    async def load_models(self) -> None:
        """The slow part (seconds): runs after the server listens, /healthz says 'loading' until it is done."""
        from classifiers.scorer import shared_scorer

        try:
            scorer = await anyio.to_thread.run_sync(shared_scorer)
            observers: list[Observer] = [self.metrics.observer]
            if self.audit is not None:
                observers.insert(0, self.audit.observer)
            if self.escalation is not None:
                observers.append(self.escalation.observer)
            batching = self.config.batching
            batcher = (
                ScoreBatcher(
                    scorer,
                    max_batch=batching.max_batch,
                    max_wait_ms=batching.max_wait_ms,
                    max_queue=batching.max_queue,
                )
                if batching.enabled
                else None
            )
            self.products.build(scorer, observers, batcher)
            if self.needs_redactor:
                self.redactor = await anyio.to_thread.run_sync(shared_redactor)
            # litellm takes seconds to import: pay it now, not on the first request
            await anyio.to_thread.run_sync(_import_litellm)
            self.ready = True
        except Exception as exc:  # reported by /healthz and the log; requests get 503
            log.exception("couchguard: loading failed")
            self.load_error = f"{type(exc).__name__}: {exc}"

    def stop(self) -> None:
        if self.audit is not None:
            self.audit.close()
        if self.escalation is not None:
            self.escalation.close()


def _import_litellm() -> None:
    import litellm

    litellm.suppress_debug_info = True  # its banner on every upstream error is noise in a proxy's log
    # litellm sets up its response path (cost map, tokenizer, logging) on the first call: ~0.7 s that the first
    # request would wait. A mocked call (no network) pays it at start-up instead.
    litellm.completion(model="openai/warm-up", messages=[{"role": "user", "content": "warm-up"}], mock_response="ok")
