"""`couchguard bench vera-mh`: input-rail flag rates on VERA-MH personas' sample prompts, by suicide-risk level.

Each sample prompt is checked as a single user turn; each persona is also checked as one conversation holding all
its prompts, turn by turn, and counts as flagged if the rail acts at any turn. The None-risk persona measures false
alarms; the others detection. `user.suicide` is reported on its own, since it is what these personas exercise.
"""

from __future__ import annotations

import csv
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from classifiers.conversation import parse_conversation

from ..checking import check_all
from ..input_rates import rate_table, rates_by
from ..paths import data_file
from ..plots import APPROPRIATE, INAPPROPRIATE, grouped_bars
from ..registry import Suite, register
from ..types import BenchOptions, SuiteRun, Table

if TYPE_CHECKING:
    from ...pipeline import Guard

RISK_LEVELS = ("None", "Low", "High", "Imminent")


class Persona(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    risk: str
    prompts: list[str]


def personas() -> list[Persona]:
    with open(data_file("vera-mh", "personas.tsv"), encoding="utf-8", newline="") as handle:
        return [
            Persona(
                name=r["Name"],
                risk=r["Current Risk Level"].strip(),
                prompts=[p.strip() for p in r["Sample Prompts"].split(";") if p.strip()],
            )
            for r in csv.DictReader(handle, delimiter="\t")
        ]


def run(guard: "Guard", options: BenchOptions) -> SuiteRun:
    people = personas()[: options.limit] if options.limit else personas()
    singles = [(p, text) for p in people for text in p.prompts]
    # every prefix of a persona's prompts: the rail runs at each turn of the conversation
    prefixes = [(p, k) for p in people for k in range(1, len(p.prompts) + 1)]
    conversations = [parse_conversation([{"role": "user", "content": text}]) for _, text in singles] + [
        parse_conversation([{"role": "user", "content": t} for t in p.prompts[:k]]) for p, k in prefixes
    ]
    decisions = check_all(guard, conversations, options, "vera-mh: input rail")
    single_decisions, prefix_decisions = decisions[: len(singles)], decisions[len(singles) :]
    by_prompt = rates_by(((p.risk, d) for (p, _), d in zip(singles, single_decisions)), RISK_LEVELS)
    persona_hits: dict[str, dict] = {}
    for (p, k), d in zip(prefixes, prefix_decisions):
        entry = persona_hits.setdefault(
            p.name, {"risk": p.risk, "turns": len(p.prompts), "first_flagged_turn": None, "suicide_flagged": False}
        )
        if d.action != "allow" and entry["first_flagged_turn"] is None:
            entry["first_flagged_turn"] = k
        entry["suicide_flagged"] |= "user.suicide" in d.flagged
    suicide = {
        level: sum("user.suicide" in d.flagged for (p, _), d in zip(singles, single_decisions) if p.risk == level)
        for level in by_prompt
    }
    summary = {
        "suite": "vera-mh",
        "policy": guard.policy.name,
        "rail": "input",
        "n": len(singles),
        "by_risk_level": {k: {**v.as_dict(), "user.suicide_flagged": suicide[k]} for k, v in by_prompt.items()},
        "personas": persona_hits,
        "items": [
            {
                "persona": p.name,
                "risk": p.risk,
                "prompt": text,
                "action": d.action,
                "flagged": d.flagged,
                "user.suicide": d.signals.get("user.suicide"),
            }
            for (p, text), d in zip(singles, single_decisions)
        ],
    }
    persona_rows = [
        [
            name,
            e["risk"],
            str(e["turns"]),
            str(e["first_flagged_turn"] or "never"),
            "yes" if e["suicide_flagged"] else "no",
        ]
        for name, e in persona_hits.items()
    ]
    tables = [
        rate_table(
            "Sample prompts by risk level (each prompt alone)",
            "risk level",
            by_prompt,
            note="None-risk prompts flagged are false alarms.",
        ),
        Table(
            "Personas (prompts as one conversation)",
            ["persona", "risk", "turns", "first turn flagged", "user.suicide flagged"],
            persona_rows,
        ),
    ]
    flagged_at_risk = sum(g.flagged for k, g in by_prompt.items() if k != "None")
    at_risk = sum(g.n for k, g in by_prompt.items() if k != "None")
    run_ = SuiteRun(
        summary=summary,
        tables=tables,
        headline=f"input rail acted on {flagged_at_risk}/{at_risk} prompts of at-risk personas and on "
        f"{by_prompt['None'].flagged if 'None' in by_prompt else 0}/"
        f"{by_prompt['None'].n if 'None' in by_prompt else 0} of the no-risk persona",
    )
    run_.figures.append(
        (
            "Flag rate by risk level",
            lambda: grouped_bars(
                list(by_prompt),
                {
                    "input rail acts": [g.flagged / g.n for g in by_prompt.values()],
                    "user.suicide flagged": [suicide[k] / g.n for k, g in by_prompt.items()],
                },
                title="VERA-MH sample prompts",
                ylabel="% of prompts",
                colors=[APPROPRIATE, INAPPROPRIATE],
            ),
        )
    )
    return run_


register(Suite(name="vera-mh", run=run, description="VERA-MH: persona prompts by suicide-risk level (input rail)"))
