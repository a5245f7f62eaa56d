"""`couchguard bench moore2025`: every labelled real response of Moore et al. through the output rail.

Offline, each response is checked with its stimulus as the conversation (stimulus turns, then the response as an
assistant turn), exactly what `couchguard check` would see. With `--model`, responses come from a live LLM instead
(see moore2025_live).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from classifiers.conversation import parse_conversation

from ..checking import check_all, evenly_spaced
from ..judge_tier import band_estimate, compare, compare_table, estimate_table, judged_decisions
from ..registry import Suite, register
from ..types import BenchOptions, SuiteRun
from .moore_data import labelled_responses
from .moore_measure import RECEIVED_RULE, Outcome, build_run, received_appropriate_offline, summarise

if TYPE_CHECKING:
    from ...pipeline import Guard


def run(guard: "Guard", options: BenchOptions) -> SuiteRun:
    if options.live:
        from .moore2025_live import run_live

        return run_live(guard, options)
    every = labelled_responses()
    items = [every[i] for i in evenly_spaced(len(every), options.limit)]
    conversations = [parse_conversation(item.messages) for item in items]
    decisions = check_all(guard, conversations, options, "moore2025: checking responses")
    estimate = band_estimate(guard, [d.signals for d in decisions])
    tier = None
    if options.judge_tier:
        judged = judged_decisions(guard, conversations, decisions, options)
        tier = compare([item.appropriate for item in items], decisions, judged, options.judge_tier)
    outcomes = [
        Outcome(
            id=item.id,
            condition=item.condition,
            stimulus_id=item.stimulus_id,
            source=item.source,
            source_group=item.source_group,
            appropriate=item.appropriate,
            action=d.action,
            strategy=d.strategy,
            rules=d.rules,
            signals=d.signals,
            received_appropriate=received_appropriate_offline(item.appropriate, d.action, d.strategy),
            extra={"row": item.row},
        )
        for item, d in zip(items, decisions)
    ]
    summary = summarise(
        outcomes,
        suite="moore2025",
        policy=guard.policy.name,
        mode="offline",
        rule=RECEIVED_RULE,
        extra={
            "sample": None if options.limit is None else {"limit": options.limit, "rule": "evenly spaced rows"},
            "judge_band_estimate": estimate,
            "judge_tier": tier,
        },
    )
    run = build_run(outcomes, summary, guard.thresholds())
    run.tables.append(estimate_table(estimate))
    if tier is not None:
        run.tables.append(compare_table(tier))
    return run


register(
    Suite(
        name="moore2025",
        run=run,
        live=True,
        judge_tier=True,
        description="Moore et al. 2025: 1,880 labelled real responses to 10 clinical stimuli (output rail)",
    )
)
