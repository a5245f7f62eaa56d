"""The serve configuration file: upstream, policy, products keyed by client API key, limits, audit, escalation.

Errors keep their location (`products.clinic.thresholds.user.suicid: unknown signal`) so people can act on them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from classifiers.signals import SIGNALS

DEFAULT_MAX_BODY_BYTES = 1_048_576  # 1 MiB: far above any chat request, far below what could hurt the process


class ConfigError(ValueError):
    """The serve configuration is invalid; the message lists every problem with its location."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class UpstreamConfig(_Strict):
    # litellm model string ("openai/gpt-4o-mini", "anthropic/claude-...", "ollama/llama3"); keys come from the
    # environment the way litellm reads them
    model: str | None = None
    api_base: str | None = None
    # name of the environment variable holding the upstream key, when it is not the provider's usual one
    api_key_env: str | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    # a stream that sends nothing for this long is treated as cut
    stream_idle_timeout_s: float = Field(default=30.0, gt=0)

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


class AuditConfig(_Strict):
    # SQLAlchemy URL: sqlite:///path.db (default) or postgresql+psycopg://user@host/db
    url: str = "sqlite:///couchguard-audit.db"
    # message text is stored only when this or the policy's store_text is set, and then only after PII redaction
    store_text: bool = False
    # HMAC key (from this environment variable) for conversation hashes, so short messages cannot be guessed back
    hash_key_env: str | None = None


class EscalationConfig(_Strict):
    webhook_url: str | None = None
    timeout_s: float = Field(default=5.0, gt=0)


class StreamConfig(_Strict):
    # a checked window is released once it holds at least this many characters of complete sentences
    min_window_chars: int = Field(default=1, ge=1)
    # each check scores the whole response so far, so a window per sentence encodes a 10-sentence answer about
    # five times over; a window that must take the text released so far to this many times its length bounds a
    # stream's checks to about twice one pass (1.0: a window per sentence, as fast as sentences arrive)
    window_growth: float = Field(default=2.0, ge=1.0, le=10.0)


DEFAULT_MAX_IN_FLIGHT = 64


class ConcurrencyConfig(_Strict):
    """Backpressure for one replica. Each chat request holds a slot from before its body is read until its answer
    ends (a stream until its last event): scoring is CPU-bound, so past the cores' capacity more requests at once
    only make every one of them slower, and each held stream keeps its buffers in memory."""

    # chat requests answered at once; beyond it (and a full wait queue) 429 with Retry-After
    max_in_flight: int = Field(default=DEFAULT_MAX_IN_FLIGHT, ge=1)
    # requests that may wait for a slot instead of being refused at once; 0: refuse at once
    max_waiting: int = Field(default=0, ge=0, le=10_000)
    # how long a waiting request waits for a slot before it is refused
    max_wait_s: float = Field(default=1.0, gt=0, le=60)
    # the Retry-After header of a 429, in whole seconds (the header takes no fractions)
    retry_after_s: int = Field(default=1, ge=1, le=3600)


class BatchingConfig(_Strict):
    """Micro-batching of scoring (guard/batching.py): concurrent requests' texts share encoder passes."""

    enabled: bool = True
    # how long a batch may wait for more requests, only while several are already waiting (a lone one never waits)
    max_wait_ms: float = Field(default=2.0, ge=0, le=50)
    # requests scored in one batch
    max_batch: int = Field(default=16, ge=1, le=256)
    # requests that may wait for the scorer; beyond it a request fails at once (its fail mode answers)
    max_queue: int = Field(default=1024, ge=1)


class ProductConfig(_Strict):
    policy: str | None = None
    thresholds: dict[str, float] = Field(default_factory=dict)
    locale: str | None = None
    upstream: UpstreamConfig | None = None
    # client model names this product may request, mapped to litellm models
    models: dict[str, str] = Field(default_factory=dict)
    # client API keys of this product; "sha256:<hex>" entries keep the keys themselves out of the file
    keys: list[str] = Field(default_factory=list)
    # policies a request may pick with the x-couchguard-policy header (none unless listed)
    policy_header: list[str] = Field(default_factory=list)

    @field_validator("thresholds")
    @classmethod
    def _known_signals(cls, value: dict[str, float]) -> dict[str, float]:
        for signal, threshold in value.items():
            if signal not in SIGNALS:
                raise ValueError(f"unknown signal {signal!r}")
            if not 0.0 <= threshold <= 1.0:
                raise ValueError(f"threshold for {signal} must be in [0, 1], got {threshold}")
        return value


class ServeConfig(_Strict):
    policy: str = "mental-health"
    locale: str | None = None
    upstream: UpstreamConfig = Field(default_factory=UpstreamConfig)
    models: dict[str, str] = Field(default_factory=dict)
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, gt=0)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    escalation: EscalationConfig = Field(default_factory=EscalationConfig)
    stream: StreamConfig = Field(default_factory=StreamConfig)
    batching: BatchingConfig = Field(default_factory=BatchingConfig)
    concurrency: ConcurrencyConfig = Field(default_factory=ConcurrencyConfig)
    products: dict[str, ProductConfig] = Field(default_factory=dict)

    @property
    def keys_required(self) -> bool:
        return any(product.keys for product in self.products.values())


def parse_config(data: Any, source: str = "<config>") -> ServeConfig:
    try:
        return ServeConfig.model_validate(data or {})
    except ValidationError as exc:
        lines = [
            f"{source}: {'.'.join(str(step) for step in error['loc']) or '(top)'}: {error['msg']}"
            for error in exc.errors()
        ]
        raise ConfigError("\n".join(lines)) from None


def load_config(path: str | Path | None, **overrides: Any) -> ServeConfig:
    """Read the YAML file (if any), then apply command-line overrides (None means 'not given')."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise ConfigError(f"{path}: file not found") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: invalid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the config must be a mapping")
    upstream = dict(data.get("upstream") or {})
    for key in ("model", "api_base"):
        if overrides.get(key) is not None:
            upstream[key] = overrides[key]
    data = {**data, "upstream": upstream}
    for key in ("policy", "locale"):
        if overrides.get(key) is not None:
            data[key] = overrides[key]
    if overrides.get("audit_url") is not None:
        data["audit"] = {**(data.get("audit") or {}), "url": overrides["audit_url"]}
    concurrency = data.get("concurrency") or {}
    if overrides.get("max_in_flight") is not None and isinstance(concurrency, dict):  # else validation says why
        data["concurrency"] = {**concurrency, "max_in_flight": overrides["max_in_flight"]}
    return parse_config(data, str(path or "<command line>"))
