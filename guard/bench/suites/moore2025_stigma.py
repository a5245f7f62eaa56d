"""`couchguard bench moore2025-stigma`: Moore et al.'s coded answers to stigma questions through the output rail.

Each answer becomes a conversation: the vignette and question as the user turn, the chosen option in words
("Probably unwilling.") as the assistant turn (the models answered with an option letter, which carries no text to
score). Stigmatising = coded 1 by the authors' rule (derived/stigma_coding.json); "stopped" = rewrite or block.
"""

from __future__ import annotations

import csv
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from classifiers.conversation import parse_conversation

from ..checking import check_all, evenly_spaced
from ..counting import Tally, tally_by
from ..paths import data_file
from ..plots import APPROPRIATE, INAPPROPRIATE, grouped_bars
from ..registry import Suite, register
from ..stats import pct_ci
from ..types import BenchOptions, SuiteRun, Table

if TYPE_CHECKING:
    from ...pipeline import Guard

ANSWERS = ("moore2025", "results", "stigma", "coded_answers.csv")


class CodedAnswer(BaseModel):
    model_config = ConfigDict(frozen=True)

    row: int
    model: str
    condition: str
    question: str
    prompt: str
    answer: str
    stigmatising: bool

    @property
    def messages(self) -> list[dict[str, str]]:
        return [{"role": "user", "content": self.prompt}, {"role": "assistant", "content": f"{self.answer}."}]


def coded_answers() -> list[CodedAnswer]:
    items = []
    with open(data_file(*ANSWERS), encoding="utf-8", newline="") as handle:
        for row, record in enumerate(csv.DictReader(handle)):
            if record["code"] not in ("0.0", "1.0"):
                continue  # 'Do not know' or unparseable: not coded upstream
            items.append(
                CodedAnswer(
                    row=row,
                    model=record["model"],
                    condition=record["condition"],
                    question=record["question_only"],
                    prompt=record["prompt"],
                    answer=record["answer"],
                    stigmatising=record["code"] == "1.0",
                )
            )
    return items


def run(guard: "Guard", options: BenchOptions) -> SuiteRun:
    every = coded_answers()
    items = [every[i] for i in evenly_spaced(len(every), options.limit)]
    decisions = check_all(
        guard, [parse_conversation(i.messages) for i in items], options, "moore2025-stigma: checking answers"
    )
    pairs = list(zip(items, decisions))
    label, action = (lambda p: not p[0].stigmatising), (lambda p: p[1].action)
    overall = Tally()
    for p in pairs:
        overall.add(label(p), action(p))
    groups = {
        "by_condition": tally_by(pairs, lambda p: p[0].condition, label, action),
        "by_source": tally_by(pairs, lambda p: p[0].model, label, action),
        "by_question": tally_by(pairs, lambda p: p[0].question, label, action),
    }
    summary = {
        "suite": "moore2025-stigma",
        "policy": guard.policy.name,
        "mode": "offline",
        "n": len(items),
        "note": "inappropriate = a stigmatising answer (code 1); caught = the answer is rewritten or blocked",
        "overall": overall.as_dict(),
        **{name: {k: v.as_dict() for k, v in table.items()} for name, table in groups.items()},
        "items": [
            {
                "id": f"stigma-{i.row:04d}",
                "model": i.model,
                "condition": i.condition,
                "question": i.question,
                "answer": i.answer,
                "stigmatising": i.stigmatising,
                "action": d.action,
                "assistant.stigma": d.signals.get("assistant.stigma"),
            }
            for i, d in pairs
        ],
    }
    headers = [
        "",
        "stigmatising",
        "stopped",
        "stop rate [95% CI]",
        "not stigmatising",
        "stopped anyway",
        "false-stop rate [95% CI]",
    ]

    def row(name, t: Tally) -> list[str]:
        return [
            name,
            str(t.inappropriate),
            str(t.caught),
            pct_ci(t.caught, t.inappropriate),
            str(t.appropriate),
            str(t.false_blocks),
            pct_ci(t.false_blocks, t.appropriate),
        ]

    tables = [
        Table(f"By {name[3:]}", headers, [row(k, v) for k, v in table.items()] + [row("overall", overall)])
        for name, table in groups.items()
    ]
    result = SuiteRun(
        summary=summary,
        tables=tables,
        headline=f"stopped {overall.caught}/{overall.inappropriate} stigmatising answers "
        f"({pct_ci(overall.caught, overall.inappropriate)}); stopped "
        f"{overall.false_blocks}/{overall.appropriate} non-stigmatising ones",
    )
    by_model = groups["by_source"]
    result.figures.append(
        (
            "Stigmatising answers stopped, by model",
            lambda: grouped_bars(
                list(by_model),
                {
                    "stigmatising answers stopped": [t.catch_rate for t in by_model.values()],
                    "non-stigmatising answers stopped": [t.false_block_rate for t in by_model.values()],
                },
                title="assistant.stigma on coded answers",
                ylabel="% of answers",
                colors=[APPROPRIATE, INAPPROPRIATE],
            ),
        )
    )
    return result


register(
    Suite(
        name="moore2025-stigma",
        run=run,
        description="Moore et al. 2025: LLM answers to stigma questions, coded stigmatising or not",
    )
)
