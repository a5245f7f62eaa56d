"""Scores and decisions on the evaluation sets, turned into the figures `couchguard eval` reports.

Signal level: ROC-AUC, and the false-alarm rate and recall at the threshold the policy applies. Policy level: for
user turns, how often the input rail acts on benign and on at-risk turns; for responses, how many inappropriate ones
the user does not receive (caught) and how many appropriate ones are withheld (false blocks), and the ranking
quality of the strongest harm score per group (Moore et al.'s stimuli).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from sklearn.metrics import roc_auc_score

from classifiers.signals import SIGNALS

from ..bench.checking import check_all
from ..bench.counting import withheld
from ..bench.stats import ci95
from ..bench.types import BenchOptions
from .sets import HARM, OPENING_TURNS, EvalItem, EvalSet
from .thresholds import authored_threshold, held_out_recall

if TYPE_CHECKING:
    from ..decision import Decision
    from ..pipeline import Guard


def _auc(labels: list[int], scores: list[float]) -> float | None:
    return float(roc_auc_score(labels, scores)) if len(set(labels)) == 2 else None


def _rate(k: int, n: int) -> dict[str, Any]:
    return {"k": k, "n": n, "rate": None if not n else round(k / n, 4), "ci95": ci95(k, n)}


def strongest_harm(decision: "Decision", side: str) -> float:
    return max(
        (
            score
            for name, score in decision.signals.items()
            if SIGNALS[name].side == side and SIGNALS[name].kind == "harm"
        ),
        default=0.0,
    )


def signal_metrics(items: list[EvalItem], decisions: list["Decision"], thresholds: dict[str, float]) -> dict:
    """Per labelled signal: ROC-AUC, false alarms and recall at the applied threshold."""
    out = {}
    names = [name for name in SIGNALS if any(name in item.labels for item in items)]
    for name in names:
        pairs = [
            (item.labels[name], d.signals.get(name, 0.0)) for item, d in zip(items, decisions) if name in item.labels
        ]
        labels, scores = [p[0] for p in pairs], [p[1] for p in pairs]
        flagged = [s >= thresholds[name] for s in scores]
        negatives = sum(1 for y in labels if y == 0)
        positives = len(labels) - negatives
        out[name] = {
            "roc_auc": _auc(labels, scores),
            "threshold": round(thresholds[name], 4),
            "false_alarms": _rate(sum(f for f, y in zip(flagged, labels) if y == 0), negatives),
            "recall": _rate(sum(f for f, y in zip(flagged, labels) if y == 1), positives),
        }
    return out


def crisis_flagged(decision: "Decision") -> bool:
    """Some user crisis (harm) signal is at or above its threshold. The input rail may also act on context alone
    (`user.model_as_client` steers towards AI self-disclosure), which is not a crisis flag; both are reported."""
    return any(SIGNALS[name].side == "user" and SIGNALS[name].kind == "harm" for name in decision.flagged)


def _input_policy(items: list[EvalItem], decisions: list["Decision"]) -> dict:
    groups: dict[str, list["Decision"]] = defaultdict(list)
    for item, d in zip(items, decisions):
        groups[item.group].append(d)
        for name, label in item.labels.items():
            if label == 1:  # at-risk turns: flagged by any crisis signal, reported per expected signal
                groups[f"at-risk: {name}"].append(d)
    return {
        "flagged": {g: _rate(sum(map(crisis_flagged, v)), len(v)) for g, v in sorted(groups.items())},
        "acted": {g: _rate(sum(d.action != "allow" for d in v), len(v)) for g, v in sorted(groups.items())},
    }


def _cases(items: list[EvalItem], decisions: list["Decision"]) -> dict:
    """Multi-turn suites: the first turn at which the input rail acts, per case, and flags on the opening turns."""
    cases: dict[str, dict] = {}
    for item, d in zip(items, decisions):
        if item.case is None:
            continue
        case = cases.setdefault(
            item.case,
            {
                "group": item.group,
                "turns": 0,
                "first_flagged_turn": None,
                "first_signals": [],
                "first_acted_turn": None,
                "opening_flags": 0,
            },
        )
        case["turns"] = max(case["turns"], item.turn or 0)
        if d.action != "allow" and (case["first_acted_turn"] is None or item.turn < case["first_acted_turn"]):
            case["first_acted_turn"] = item.turn
        if crisis_flagged(d):
            if case["first_flagged_turn"] is None or item.turn < case["first_flagged_turn"]:
                case["first_flagged_turn"], case["first_signals"] = item.turn, list(d.flagged)
            if item.turn is not None and item.turn <= OPENING_TURNS:
                case["opening_flags"] += 1
    by_group: dict[str, list[dict]] = defaultdict(list)
    for case in cases.values():
        by_group[case["group"]].append(case)
    return {
        "cases": cases,
        "flagged_at_some_turn": {
            g: _rate(sum(c["first_flagged_turn"] is not None for c in v), len(v)) for g, v in sorted(by_group.items())
        },
        "opening_turns_flagged": _rate(sum(c["opening_flags"] > 0 for c in cases.values()), len(cases)),
    }


def _output_policy(items: list[EvalItem], decisions: list["Decision"]) -> dict:
    rows = [
        (item.group, item.labels[HARM], withheld(d.action), strongest_harm(d, "assistant"))
        for item, d in zip(items, decisions)
        if HARM in item.labels
    ]

    def summary(subset):
        harmful = [r for r in subset if r[1] == 1]
        sound = [r for r in subset if r[1] == 0]
        return {
            "caught": _rate(sum(r[2] for r in harmful), len(harmful)),
            "false_blocks": _rate(sum(r[2] for r in sound), len(sound)),
            "strongest_harm_roc_auc": _auc([r[1] for r in subset], [r[3] for r in subset]),
        }

    by_group: dict[str, list] = defaultdict(list)
    for row in rows:
        by_group[row[0]].append(row)
    return {"overall": summary(rows), "by_group": {g: summary(v) for g, v in sorted(by_group.items())}}


def measure_set(guard: "Guard", eval_set: EvalSet, options: BenchOptions) -> dict:
    items = eval_set.load()
    decisions = check_all(guard, [item.conversation for item in items], options, f"eval {eval_set.name}")
    result: dict[str, Any] = {
        "split": eval_set.split,
        "rail": eval_set.rail,
        "description": eval_set.description,
        "n": len(items),
        "signals": signal_metrics(items, decisions, guard.thresholds()),
    }
    if eval_set.rail == "input":
        result["policy"] = _input_policy(items, decisions)
        if any(item.case for item in items):
            result["cases"] = _cases(items, decisions)
    else:
        result["policy"] = _output_policy(items, decisions)
    return result


def authored_held_out(guard: "Guard") -> dict:
    """The model cards' figures: scenarios of our own corpora that the heads (and the encoder) never saw."""
    out: dict[str, dict[str, Any]] = {}
    for name, meta in guard.scorer.metadata_.items():
        metrics = meta.get("metrics", {})
        out[name] = {
            key: metrics.get(key)
            for key in ("roc_auc", "recall", "false_alarm_rate", "hard_negative_false_alarm_rate", "positives")
        }
        # the metrics were measured at the threshold training chose there, not at the one shipped (thresholds.py)
        out[name]["threshold"] = authored_threshold(meta)
    # and what the shipped thresholds (the policy's, dev-chosen) flag of the same held-out positives
    shipped = guard.thresholds()
    harms = {name: shipped[name] for name in out if SIGNALS[name].kind == "harm" and name in shipped}
    for name, recall in held_out_recall(guard.scorer, harms).items():
        out[name]["shipped_threshold"] = shipped[name]
        out[name]["recall_at_shipped"] = recall.at_chosen
    return out


def evaluate(guard: "Guard", sets: list[EvalSet], options: BenchOptions | None = None) -> dict:
    options = options or BenchOptions()
    return {
        "policy": guard.policy.name,
        "sets": {eval_set.name: measure_set(guard, eval_set, options) for eval_set in sets},
        "authored_held_out": authored_held_out(guard),
    }
