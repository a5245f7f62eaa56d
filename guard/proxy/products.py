"""Products: who is calling (client API key) decides the policy, locale and upstream model of a request."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field

from classifiers.scorer import SignalScorer

from ..batching import ScoreBatcher
from ..pipeline import Guard, Observer
from ..policy import load_policy
from .config import ProductConfig, ServeConfig, UpstreamConfig

DEFAULT_PRODUCT = "default"


class AccessError(Exception):
    """The request may not be served as asked: 401 (unknown key) or 403 (a policy the product does not allow)."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


@dataclass
class Product:
    name: str
    config: ProductConfig
    upstream: UpstreamConfig
    models: dict[str, str]
    policy: str
    locale: str | None
    guards: dict[str, Guard] = field(default_factory=dict)

    def upstream_model(self, requested: str | None) -> str:
        """The litellm model for a request: a configured alias, else the product's model."""
        if requested and requested in self.models:
            return self.models[requested]
        if self.upstream.model:
            return self.upstream.model
        raise AccessError(
            400, f"model {requested!r} is not served here; available: {', '.join(self.models)}", "model_not_found"
        )


def _key_matches(candidate: str, configured: str) -> bool:
    if configured.startswith("sha256:"):
        digest = hashlib.sha256(candidate.encode()).hexdigest()
        return hmac.compare_digest(digest, configured.removeprefix("sha256:"))
    return hmac.compare_digest(candidate.encode(), configured.encode())


class Products:
    """Holds one Guard per (product, policy), built at start-up so that requests never load a policy."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.products: dict[str, Product] = {}
        for name, product in (config.products or {DEFAULT_PRODUCT: ProductConfig()}).items():
            self.products[name] = Product(
                name=name,
                config=product,
                upstream=product.upstream or config.upstream,
                models={**config.models, **product.models},
                policy=product.policy or config.policy,
                locale=product.locale or config.locale,
            )

    def build(self, scorer: SignalScorer, observers: list[Observer], batcher: ScoreBatcher | None = None) -> None:
        """Load every policy a product may use (raises PolicyError early, at start-up, not on a request). Every guard
        shares `batcher`, so that requests of all products are batched together."""
        for product in self.products.values():
            for policy_name in dict.fromkeys([product.policy, *product.config.policy_header]):
                policy = load_policy(policy_name)
                if product.config.thresholds:
                    policy = policy.model_copy(
                        update={"thresholds": {**policy.thresholds, **product.config.thresholds}}
                    )
                guard = Guard(policy, scorer, locale=product.locale, batcher=batcher)
                guard.observers.extend(observers)
                product.guards[policy_name] = guard

    def resolve(self, api_key: str | None) -> Product:
        if not self.config.keys_required:
            return next(iter(self.products.values()))
        for product in self.products.values():
            if api_key and any(_key_matches(api_key, key) for key in product.config.keys):
                return product
        raise AccessError(
            401,
            "Incorrect API key provided" if api_key else "Missing API key (Authorization: Bearer)",
            "invalid_api_key",
        )

    @staticmethod
    def guard_for(product: Product, policy_header: str | None) -> Guard:
        if policy_header is None or policy_header == product.policy:
            return product.guards[product.policy]
        if policy_header not in product.config.policy_header:
            raise AccessError(
                403, f"product {product.name!r} may not choose policy {policy_header!r} by header", "policy_not_allowed"
            )
        return product.guards[policy_header]

    def model_names(self) -> list[str]:
        names = {alias for product in self.products.values() for alias in product.models}
        names |= {p.upstream.model for p in self.products.values() if p.upstream.model and not p.models}
        return sorted(names)
