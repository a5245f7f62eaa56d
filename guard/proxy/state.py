"""Everything the app builds once at start-up and then only reads: config, products, observers, engines."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..audit import AuditLog, shared_redactor
from ..escalation import EscalationWebhook
from ..pipeline import Observer
from ..policy import load_policy
from .config import ServeConfig
from .metrics import Metrics
from .products import Products

log = logging.getLogger("couchguard.proxy")


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
            self.products.build(scorer, observers)
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
