"""The shipped thresholds of the harm signals, chosen on the dev sets and never on the test sets.

Training picks each threshold on the authored held-out (the highest that keeps the signal's target recall there),
but text written by the corpora's own authors is the wrong place to set a false-alarm rate: on an independent
writer's everyday turns those thresholds flagged 11.6% of ordinary messages. So the shipped threshold of a harm signal
is the score that at most `budget` of the dev set's benign items reach (ordinary user turns for user signals, sound
answers for response signals), and never below `floor`, which keeps a signal with no benign scores near the top from
firing on noise. The budgets and floors below were chosen on the dev sets (couchguard eval, docs/evaluation.md):
they are the operating points with the highest dev recall whose dev false alarms stayed near 3% for user turns and
whose withheld sound answers stayed under 6% for responses.

Crisis signals (`SignalSpec.crisis`: suicide and self-harm) put recall first: their threshold is also capped at the
highest one that still flags CRISIS_RECALL of the dev set's turns labelled with that signal. On the dev set this
keeps 97% of at-risk turns flagged at 5.6% false alarms, where the budget alone gave 92% at 3.1%: a missed suicidal
user costs more than a gentle check-in with someone who was joking.

Every harm signal's threshold is also capped at the highest one that still flags HELD_OUT_RECALL_FLOOR of the
signal's authored held-out positives. Benign dev text says where a threshold starts to flag ordinary life, not what
it stops catching: once a head learns compliance in an ordinary assistant's manner, sound everyday answers reach
higher scores and the budget alone rose over plain harm (docs/evaluation.md, items 19 and 21).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from classifiers.signals import SIGNALS, Side
from classifiers.thresholds import threshold_for_recall

from .sets import EVAL_SETS, is_benign

if TYPE_CHECKING:
    from classifiers.scorer import SignalScorer


CRISIS_RECALL = 0.9
# The share of a harm signal's authored held-out positives that a dev-chosen threshold must still flag: `choose` caps
# every threshold there. Set below the lowest value of the thresholds shipped when the check was added (0.805,
# user.violence), as a guard against a rule that moves a threshold over the corpus's clear-cut cases; it binds only
# where the dev budget would have crossed it (assistant.enabling on this release).
HELD_OUT_RECALL_FLOOR = 0.8


@dataclass(frozen=True)
class ThresholdRule:
    eval_sets: tuple[str, ...]  # pooled: the budget is a share of all their benign items together
    budget: float  # share of the dev sets' benign items a signal may flag on its own
    floor: float

    def describe(self, crisis: bool = False) -> str:
        text = (
            f"score reached by at most {100 * self.budget:.2g}% of the benign items of {' and '.join(self.eval_sets)}, "
            f"and at least {self.floor}"
        )
        if crisis:
            text += f"; for a crisis signal no higher than keeps {CRISIS_RECALL:.0%} of its labelled turns there"
        return text + f"; no higher than keeps {HELD_OUT_RECALL_FLOOR:.0%} of its authored held-out positives"


RULES: dict[Side, ThresholdRule] = {
    "user": ThresholdRule(("everyday-user-dev",), budget=0.0075, floor=0.9),
    "assistant": ThresholdRule(("everyday-responses-dev",), budget=0.02, floor=0.5),
}


def harm_signals() -> list[str]:
    """The signals that get a shipped threshold here (protective and context signals keep training's)."""
    return [name for name, spec in SIGNALS.items() if spec.kind == "harm"]


def choose(scorer: "SignalScorer", held_out: dict[str, np.ndarray] | None = None) -> dict[str, tuple[float, str]]:
    """(threshold, how it was chosen) for every harm signal, from the scorer's scores on the dev sets.

    `held_out`: `held_out_positive_scores` of every harm signal, when the caller has them already."""
    chosen = {}
    if held_out is None:
        held_out = held_out_positive_scores(scorer, harm_signals())
    for side, rule in RULES.items():
        items = [item for name in rule.eval_sets for item in EVAL_SETS[name].load()]
        scores = scorer.score_many([item.conversation for item in items], (side,))
        benign = [s for item, s in zip(items, scores) if is_benign(item)]
        for name, spec in SIGNALS.items():
            if spec.side != side or spec.kind != "harm":
                continue
            quantile = float(np.quantile([s[name].score for s in benign], 1 - rule.budget))
            threshold = min(max(rule.floor, quantile + 1e-6), 0.999999)
            labelled = [(item.labels[name], s[name].score) for item, s in zip(items, scores) if item.labels.get(name)]
            if spec.crisis and labelled:
                cap = threshold_for_recall(
                    np.array([x for _, x in labelled]), np.array([y for y, _ in labelled]), CRISIS_RECALL
                )
                threshold = min(threshold, cap)
            if (positives := held_out.get(name)) is not None:
                floor_cap = threshold_for_recall(positives, np.ones(len(positives)), HELD_OUT_RECALL_FLOOR)
                threshold = min(threshold, floor_cap)
            chosen[name] = (round(threshold, 6), rule.describe(spec.crisis))
    return chosen


def authored_threshold(meta: dict) -> float:
    """The threshold training chose on the authored held-out: kept beside the shipped one once `write` has replaced
    it, else still the head's own."""
    return float(meta.get("authored_threshold", meta["threshold"]))


def write(chosen: dict[str, tuple[float, str]], artifacts_dir: Path, cards_dir: Path | None = None) -> None:
    """Store the thresholds in the heads' metadata (what the scorer ships as each signal's default) and in the model
    cards, keeping the threshold training chose on the authored held-out beside them."""
    for name, (threshold, rule) in chosen.items():
        path = artifacts_dir / f"{name}.json"
        meta = json.loads(path.read_text())
        meta.setdefault("authored_threshold", meta["threshold"])
        meta["threshold"], meta["threshold_rule"] = threshold, rule
        path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        card = cards_dir / f"{name}.md" if cards_dir is not None else None
        if card is not None and card.exists():
            text = re.sub(
                r"^\| shipped threshold \|.*$",
                f"| shipped threshold | {threshold:.3f}: the {rule} (chosen on the dev set; "
                f"{meta['authored_threshold']:.3f} would keep the target recall on the authored held-out) |",
                card.read_text(),
                count=1,
                flags=re.M,
            )
            card.write_text(text)


@dataclass(frozen=True)
class HeldOutRecall:
    """A harm signal's own positives in the authored held-out, flagged at a chosen threshold and at training's."""

    positives: int
    at_chosen: float
    at_authored: float


def held_out_positive_scores(scorer: "SignalScorer", names: list[str]) -> dict[str, np.ndarray]:
    """Each signal's scores on its corpus's held-out positives: scenarios that neither the encoder nor the linear heads
    were fitted on (the heads' calibration was fitted on them). Signals without held-out positives are left out."""
    from classifiers.corpus import load_all
    from classifiers.finetune import is_holdout

    corpora = load_all()
    out = {}
    for name in names:
        rows = [row for row in corpora[name] if row.label == 1 and is_holdout(row.group)]
        if rows:
            results = scorer.score_many([row.conversation for row in rows], (SIGNALS[name].side,))
            out[name] = np.array([result[name].score for result in results])
    return out


def held_out_recall(
    scorer: "SignalScorer", thresholds: dict[str, float], held_out: dict[str, np.ndarray] | None = None
) -> dict[str, HeldOutRecall]:
    """Recall on the corpora's held-out positives at each given threshold (`held_out`: their scores, if known).

    The dev sets set a threshold by what benign text reaches; they cannot say what the signal stops missing. The
    authored held-out can: its positives are the corpus's clear-cut cases. A threshold chosen on dev that lets
    many of them through (a blatant "stop your medication, you were chosen" below the collusion threshold) is a
    threshold the dev set's benign text pushed too high.
    """
    if held_out is None:
        held_out = held_out_positive_scores(scorer, list(thresholds))
    out = {}
    for name, threshold in thresholds.items():
        if (scores := held_out.get(name)) is None:
            continue
        authored = authored_threshold(scorer.metadata_[name])
        out[name] = HeldOutRecall(len(scores), float(np.mean(scores >= threshold)), float(np.mean(scores >= authored)))
    return out
