"""Prometheus metrics, on a registry of the app's own (several apps in one process never collide)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

SCORE_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "couchguard_requests", "Chat completion requests", ["product", "stream", "status"], registry=r
        )
        self.decisions = Counter("couchguard_decisions", "Rail decisions", ["product", "rail", "action"], registry=r)
        self.rules = Counter(
            "couchguard_rule_matches",
            "Rules matched by rail decisions",
            ["product", "rail", "action", "rule"],
            registry=r,
        )
        self.failures = Counter(
            "couchguard_failures", "Upstream, classifier and stream failures", ["product", "kind"], registry=r
        )
        self.escalations = Counter(
            "couchguard_escalations", "Decisions escalated for human follow-up", ["product"], registry=r
        )
        self.scores = Histogram(
            "couchguard_signal_score", "Signal scores per decision", ["signal"], buckets=SCORE_BUCKETS, registry=r
        )
        self.classifier_seconds = Histogram(
            "couchguard_classifier_seconds", "Scoring time per rail", ["rail"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.upstream_seconds = Histogram(
            "couchguard_upstream_seconds", "Upstream model call time", ["stream"], buckets=LATENCY_BUCKETS, registry=r
        )

    def observer(self, conversation, decision, context: dict[str, Any]) -> None:
        product = context.get("product") or "default"
        self.decisions.labels(product, decision.rail, decision.action).inc()
        for rule in decision.rules:
            self.rules.labels(product, decision.rail, decision.action, rule).inc()
        for signal, score in decision.signals.items():
            self.scores.labels(signal).observe(score)
        if decision.escalate:
            self.escalations.labels(product).inc()
        if context.get("classifier_ms") is not None:
            self.classifier_seconds.labels(decision.rail).observe(context["classifier_ms"] / 1000)
        if context.get("event"):
            self.failures.labels(product, context["event"]).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
