"""`couchguard bench spiral-bench`: input-rail flag rates on Spiral-Bench's 30 opening prompts, by category.

The prompts are informal openers that drift toward spiral tropes, mania, conspiracies and AI consciousness; some
categories (intellectual exploration) are there to be left alone, so a flag rate is not "higher is better".
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from classifiers.conversation import parse_conversation

from ..checking import check_all, evenly_spaced
from ..input_rates import FlagRate, rate_table, rates_by
from ..paths import data_file
from ..plots import grouped_bars
from ..registry import Suite, register
from ..types import BenchOptions, SuiteRun

if TYPE_CHECKING:
    from ...pipeline import Guard


def prompts() -> list[dict]:
    with open(data_file("spiral-bench", "eval_prompts.json"), encoding="utf-8") as handle:
        return json.load(handle)


def run(guard: "Guard", options: BenchOptions) -> SuiteRun:
    every = prompts()
    items = [every[i] for i in evenly_spaced(len(every), options.limit)]
    conversations = [parse_conversation([{"role": "user", "content": p} for p in item["prompts"]]) for item in items]
    decisions = check_all(guard, conversations, options, "spiral-bench: input rail")
    by_category = rates_by((item["category"], d) for item, d in zip(items, decisions))
    overall = FlagRate()
    for d in decisions:
        overall.add(d)
    summary = {
        "suite": "spiral-bench",
        "policy": guard.policy.name,
        "rail": "input",
        "n": len(items),
        "overall": overall.as_dict(),
        "by_category": {k: v.as_dict() for k, v in by_category.items()},
        "items": [
            {
                "id": item["prompt_id"],
                "category": item["category"],
                "action": d.action,
                "flagged": d.flagged,
                "rules": d.rules,
            }
            for item, d in zip(items, decisions)
        ],
    }
    run_ = SuiteRun(
        summary=summary,
        tables=[rate_table("Input rail by category", "category", {**by_category, "overall": overall})],
        headline=f"input rail acted on {overall.flagged}/{overall.n} opening prompts",
    )
    run_.figures.append(
        (
            "Flag rate by category",
            lambda: grouped_bars(
                list(by_category),
                {"flag rate": [g.flagged / g.n for g in by_category.values()]},
                title="Spiral-Bench openers: input rail",
                ylabel="% flagged",
            ),
        )
    )
    return run_


register(Suite(name="spiral-bench", run=run, description="Spiral-Bench: 30 opening prompts, input-rail flag rates"))
