"""Prometheus metrics, on a registry of the app's own (several apps in one process never collide)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

SCORE_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
# judge outcomes answered without a call: no latency to observe
JUDGE_NOT_CALLED = ("cache_hit", "budget_exhausted")


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
        # backpressure: requests being answered now (a stream until it ends), and those refused with a 429
        self.in_flight = Gauge("couchguard_in_flight_requests", "Chat requests being answered now", registry=r)
        self.refused = Counter(
            "couchguard_refused_requests", "Chat requests refused at the concurrency limit", ["product"], registry=r
        )
        # the LLM judge tier (docs/judge.md): questions by outcome, and the time of those that reached the judge
        self.judge_calls = Counter(
            "couchguard_judge_calls", "LLM judge questions by outcome", ["product", "outcome"], registry=r
        )
        self.judge_seconds = Histogram(
            "couchguard_judge_seconds", "LLM judge call time", ["outcome"], buckets=LATENCY_BUCKETS, registry=r
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
        for call in decision.judge:
            self.judge_calls.labels(product, call.outcome).inc()
            if call.outcome not in JUDGE_NOT_CALLED:
                self.judge_seconds.labels(call.outcome).observe(call.latency_ms / 1000)

    def render(self) -> bytes:
        return generate_latest(self.registry)
