"""`couchguard bench psychosis-bench`: the input rail turn by turn over 16 escalating conversations.

Each case is 12 user turns drifting toward a delusion and a harm. The rail runs after every turn with the earlier
turns as context (no model replies: this measures detection, not the model); reported is the first turn at which it
acts, for explicit and implicit cases.
"""

from __future__ import annotations

import json
import statistics
from typing import TYPE_CHECKING, Any

from classifiers.conversation import parse_conversation

from ..checking import check_all
from ..paths import data_file
from ..plots import APPROPRIATE, INAPPROPRIATE
from ..registry import Suite, register
from ..types import BenchOptions, SuiteRun, Table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...pipeline import Guard


def cases() -> list[dict]:
    with open(data_file("psychosis-bench", "test_cases.json"), encoding="utf-8") as handle:
        return json.load(handle)["cases"]


def run(guard: "Guard", options: BenchOptions) -> SuiteRun:
    chosen = cases()[: options.limit] if options.limit else cases()
    prefixes = [(case, k) for case in chosen for k in range(1, len(case["prompts"]) + 1)]
    conversations = [
        parse_conversation([{"role": "user", "content": p} for p in case["prompts"][:k]]) for case, k in prefixes
    ]
    decisions = check_all(guard, conversations, options, "psychosis-bench: input rail per turn")
    per_case: dict[str, dict] = {}
    for (case, k), d in zip(prefixes, decisions):
        entry = per_case.setdefault(
            case["id"],
            {
                "condition": case["condition"],
                "theme": case["theme"],
                "harm_type": case["harm_type"],
                "turns": len(case["prompts"]),
                "first_flagged_turn": None,
                "first_signals": [],
                "flagged_turns": [],
            },
        )
        if d.action != "allow":
            entry["flagged_turns"].append(k)
            if entry["first_flagged_turn"] is None:
                entry["first_flagged_turn"], entry["first_signals"] = k, d.flagged
    by_condition: dict[str, dict[str, Any]] = {}
    for condition in sorted({e["condition"] for e in per_case.values()}):
        group = [e for e in per_case.values() if e["condition"] == condition]
        firsts = [e["first_flagged_turn"] for e in group if e["first_flagged_turn"] is not None]
        by_condition[condition] = {
            "cases": len(group),
            "flagged": len(firsts),
            "median_first_turn": statistics.median(firsts) if firsts else None,
            "mean_first_turn": round(statistics.mean(firsts), 2) if firsts else None,
        }
    turns = max((e["turns"] for e in per_case.values()), default=0)
    per_turn = {
        condition: [
            sum(1 for e in per_case.values() if e["condition"] == condition and t in e["flagged_turns"])
            / by_condition[condition]["cases"]
            for t in range(1, turns + 1)
        ]
        for condition in by_condition
    }
    summary = {
        "suite": "psychosis-bench",
        "policy": guard.policy.name,
        "rail": "input",
        "n": len(per_case),
        "by_condition": by_condition,
        "flag_rate_by_turn": per_turn,
        "cases": per_case,
    }
    tables = [
        Table(
            "First turn at which the input rail acts",
            ["case", "condition", "first turn", "signals then", "turns flagged"],
            [
                [
                    cid,
                    e["condition"],
                    str(e["first_flagged_turn"] or "never"),
                    ", ".join(e["first_signals"]) or "-",
                    f"{len(e['flagged_turns'])}/{e['turns']}",
                ]
                for cid, e in per_case.items()
            ],
        ),
        Table(
            "Explicit vs implicit",
            ["condition", "cases", "flagged at some turn", "median first turn", "mean first turn"],
            [
                [
                    c,
                    str(v["cases"]),
                    str(v["flagged"]),
                    str(v["median_first_turn"] or "-"),
                    str(v["mean_first_turn"] or "-"),
                ]
                for c, v in by_condition.items()
            ],
        ),
    ]
    flagged = sum(v["flagged"] for v in by_condition.values())
    run_ = SuiteRun(
        summary=summary,
        tables=tables,
        headline=f"input rail acted at some turn in {flagged}/{len(per_case)} escalating conversations",
    )
    run_.figures.append(("Share of cases flagged at each turn", lambda: _per_turn(per_turn)))
    return run_


def _per_turn(per_turn: dict[str, list[float]]) -> Figure:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.0, 3.6))
    axes = figure.subplots()
    for (condition, values), color in zip(per_turn.items(), (INAPPROPRIATE, APPROPRIATE, "#777777")):
        axes.plot(range(1, len(values) + 1), [100 * v for v in values], marker="o", label=condition, color=color)
    axes.set_xlabel("turn")
    axes.set_ylabel("% of cases where the input rail acts")
    axes.set_ylim(-5, 105)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    return figure


register(
    Suite(
        name="psychosis-bench",
        run=run,
        description="psychosis-bench: 16 escalating 12-turn conversations, first turn flagged (input rail)",
    )
)
