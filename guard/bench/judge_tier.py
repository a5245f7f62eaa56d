"""The LLM judge tier measured on a bench: how much of a suite falls in the judge band (offline, no model), and what
a live judge changes (`--judge-tier MODEL`): catch and false-block rates with and without it, calls and latency.

The classifier decisions come first (batched, as `couchguard check`); the judged pass reuses their scores, so only
the judge calls are new. The band, timeout, cache and on_error come from the policy's `judge:` block when it has one,
else the defaults; the call budget is lifted, so that a measurement is not cut short by it.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence

from classifiers.conversation import Conversation
from classifiers.signals import SIGNALS

from ..judge import JudgeTier
from ..policy import evaluate, tightening
from ..policy.schema import JudgeConfig
from .counting import Tally
from .progress import bar
from .stats import pct
from .types import BenchOptions, Table

if TYPE_CHECKING:
    from ..decision import Decision
    from ..pipeline import Guard

# what a measurement asks the judge at most at once: a provider's rate limit, not couchguard's budget, is the limit
MEASURE_BUDGET = 100_000


def judge_config(guard: "Guard", model: str | None = None, api_base: str | None = None) -> JudgeConfig:
    """The policy's judge block (or the defaults), with the model and base URL given on the command line."""
    base = guard.policy.judge or JudgeConfig(model=model or "(none: offline estimate)")
    update: dict[str, Any] = {"max_calls_per_minute": MEASURE_BUDGET}
    if model is not None:
        update.update(model=model, api_base=api_base or base.api_base)
    return base.model_copy(update=update)


def band_estimate(guard: "Guard", signals: Sequence[dict[str, float]]) -> dict[str, Any]:
    """How many items would go to the judge, from their classifier scores alone (no model needed)."""
    config = judge_config(guard)
    tier = JudgeTier(config)
    judged, questions = 0, 0
    by_criterion: Counter[str] = Counter()
    for scores in signals:
        user_scores = {k: v for k, v in scores.items() if SIGNALS[k].side == "user"}
        tightened = tightening(evaluate(guard.policy, "input", user_scores, guard.thresholds()))
        asked = tier.questions(guard.policy.output_rules, scores, guard.thresholds(tightened))
        judged += bool(asked)
        questions += len(asked)
        by_criterion.update(q.criterion for q in asked)
    n = len(signals)
    return {
        "band": {"default": list(config.default_band) if config.default_band else None, **config.band},
        "items": n,
        "items_in_band": judged,
        "fraction_in_band": round(judged / n, 4) if n else None,
        "judge_calls": questions,
        # one conversation = one checked response; a cache hit (a repeated conversation) would make it fewer
        "calls_per_1000_conversations": round(1000 * questions / n, 1) if n else None,
        "by_criterion": dict(by_criterion.most_common()),
        "source": "offline classifier scores (no judge model)",
    }


def estimate_table(estimate: dict[str, Any]) -> Table:
    return Table(
        title="Judge tier: what would go to the judge (estimate from offline scores, no model)",
        headers=["items", "in the band", "share", "judge calls", "calls per 1,000 conversations"],
        rows=[
            [
                str(estimate["items"]),
                str(estimate["items_in_band"]),
                pct(estimate["fraction_in_band"]),
                str(estimate["judge_calls"]),
                f"{estimate['calls_per_1000_conversations']}",
            ]
        ],
        note=f"band {estimate['band']}; questions by criterion {estimate['by_criterion']}",
    )


def judged_decisions(
    guard: "Guard", conversations: list[Conversation], decisions: list["Decision"], options: BenchOptions
) -> list["Decision"]:
    """The output rail again on each conversation with a live judge tier, reusing the classifier scores."""
    from ..pipeline import Guard

    assert options.judge_tier is not None
    policy = guard.policy.model_copy(
        update={"judge": judge_config(guard, options.judge_tier, options.judge_tier_api_base)}
    )
    judged = Guard(policy, guard.scorer, locale=guard.locale)
    return asyncio.run(_judge_all(judged, conversations, decisions, options))


async def _judge_all(
    guard: "Guard", conversations: list[Conversation], decisions: list["Decision"], options: BenchOptions
) -> list["Decision"]:
    limit = asyncio.Semaphore(max(1, options.concurrency))
    progress = bar(len(conversations), "moore2025: judge tier", options.progress)

    async def one(conversation: Conversation, decision: "Decision") -> "Decision":
        async with limit:
            try:
                return await guard.output_rail(conversation, scores=decision.signals)
            finally:
                progress.update(1)

    try:
        return await asyncio.gather(*(one(c, d) for c, d in zip(conversations, decisions)))
    finally:
        progress.close()


def compare(
    appropriate: Sequence[bool], before: Sequence["Decision"], after: Sequence["Decision"], model: str
) -> dict[str, Any]:
    """Catch and false-block rates without and with the tier, the share judged, the calls and their latency."""

    def tally(decisions: Sequence["Decision"]) -> dict[str, Any]:
        result = Tally()
        for label, decision in zip(appropriate, decisions):
            result.add(label, decision.action)
        return result.as_dict()

    calls = [call for decision in after for call in decision.judge]
    latencies = [c.latency_ms for c in calls if c.outcome not in ("cache_hit", "budget_exhausted")]
    n = len(after)
    return {
        "model": model,
        "without": tally(before),
        "with": tally(after),
        "items": n,
        "items_judged": sum(bool(d.judge) for d in after),
        "fraction_judged": round(sum(bool(d.judge) for d in after) / n, 4) if n else None,
        "judge_calls": len(latencies),
        "outcomes": dict(Counter(c.outcome for c in calls).most_common()),
        "decisions_changed": sum(a.action != b.action for a, b in zip(before, after)),
        "latency_ms_p50": _percentile(latencies, 50),
        "latency_ms_p95": _percentile(latencies, 95),
    }


def compare_table(result: dict[str, Any]) -> Table:
    def row(name: str, t: dict[str, Any]) -> list[str]:
        return [
            name,
            f"{t['caught']}/{t['inappropriate']}",
            pct(t["catch_rate"]),
            f"{t['false_blocks']}/{t['appropriate']}",
            pct(t["false_block_rate"]),
        ]

    return Table(
        title=f"Judge tier ({result['model']}): with and without",
        headers=["", "caught", "catch rate", "false blocks", "false-block rate"],
        rows=[row("classifiers alone", result["without"]), row("with the judge tier", result["with"])],
        note=(
            f"{result['items_judged']}/{result['items']} items judged ({pct(result['fraction_judged'])}), "
            f"{result['judge_calls']} judge calls, outcomes {result['outcomes']}, latency p50 "
            f"{result['latency_ms_p50']} ms, p95 {result['latency_ms_p95']} ms; "
            f"{result['decisions_changed']} decisions changed"
        ),
    )


def _percentile(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 1)
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 1)
