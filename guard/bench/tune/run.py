"""What `couchguard tune` does: load and score, choose per signal, print the table, write override and report."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from classifiers.scorer import ARTIFACTS_DIR, ARTIFACTS_ENV
from classifiers.signals import SIGNALS

from ..render import text_table
from ..stats import pct
from ..types import Table
from . import data as labelled_data
from . import override, report
from .points import OperatingPoint, TuneRefusal, choose_point, operating_point, recall_grid_points


@dataclass(frozen=True)
class TuneRequest:
    policy: str
    data: Path
    target_recall: float
    out: Path
    max_false_alarm: float | None = None
    signals: tuple[str, ...] = ()
    report_dir: Path | None = None
    name: str | None = None
    progress: bool = True


def current_thresholds(policy) -> dict[str, float]:
    """The thresholds the base policy runs with now: its own, else each signal's shipped default (read from the
    artifact metadata, so that pre-computed scores need no model loaded)."""
    directory = Path(os.environ.get(ARTIFACTS_ENV) or ARTIFACTS_DIR)
    current = {}
    for name in SIGNALS:
        try:
            current[name] = float(json.loads((directory / f"{name}.json").read_text())["threshold"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # no shipped default known: the table simply has no 'current' row for it
    return {**current, **policy.thresholds}


def _cell(value: float | None, interval) -> str:
    if value is None or value != value:
        return "-"
    return pct(value) if interval is None else f"{pct(value)} [{100 * interval[0]:.1f}-{100 * interval[1]:.1f}]"


def point_row(signal: str, label: str, p: OperatingPoint) -> list[str]:
    return [
        signal,
        label,
        f"{p.threshold:.4f}",
        _cell(p.recall, p.recall_ci),
        _cell(p.false_alarm_rate, p.false_alarm_ci),
        pct(p.precision),
        str(p.tp),
        str(p.fn),
        str(p.fp),
        str(p.tn),
    ]


HEADERS = [
    "signal",
    "point",
    "threshold",
    "recall [95% CI]",
    "false alarms [95% CI]",
    "precision",
    "TP",
    "FN",
    "FP",
    "TN",
]


def tune(request: TuneRequest, out: TextIO | None = None) -> dict:
    out = out or sys.stdout  # looked up per call: sys.stdout may be replaced (capture, redirection)
    from ...policy import load_policy

    base = load_policy(request.policy)
    data = labelled_data.load(request.data, progress=request.progress)
    signals = list(request.signals) or sorted(data.scores)
    unknown = [s for s in signals if s not in data.scores]
    if unknown:
        raise TuneRefusal(f"no labelled examples for {', '.join(unknown)} in {request.data}")
    if not signals:
        raise TuneRefusal(f"{request.data} labels no signal")
    chosen, refusals = {}, []
    for signal in signals:
        try:
            chosen[signal] = choose_point(
                data.scores[signal],
                data.labels[signal],
                request.target_recall,
                max_false_alarm=request.max_false_alarm,
                signal=signal,
            )
        except TuneRefusal as exc:
            refusals.append(str(exc))
    if refusals:
        hint = "" if request.signals else "\n(tune a subset with --signals NAME[,NAME...])"
        raise TuneRefusal("cannot tune as asked; nothing was written:\n" + "\n".join(f"- {r}" for r in refusals) + hint)
    thresholds_now = current_thresholds(base)
    current = {
        s: operating_point(data.scores[s], data.labels[s], thresholds_now[s]) for s in signals if s in thresholds_now
    }
    rows = []
    for signal in signals:
        rows.append(point_row(signal, "chosen", chosen[signal]))
        if signal in current:
            rows.append(point_row(signal, "current", current[signal]))
        rows.extend(
            point_row(signal, label, p)
            for label, p in recall_grid_points(data.scores[signal], data.labels[signal])
            if p.threshold != chosen[signal].threshold
        )
    limit = f", false alarms <= {request.max_false_alarm:g}" if request.max_false_alarm is not None else ""
    table = Table(
        f"Operating points (target recall {request.target_recall:g}{limit})",
        HEADERS,
        rows,
        note="Flagged = score >= threshold. 95% Wilson intervals. 'current' = the base policy's threshold "
        "now; 'chosen' = the highest threshold reaching the target (fewest false alarms).",
    )
    print(text_table(table), file=out)
    print(f"  note: {table.note}", file=out)
    header = [
        f"couchguard tune: thresholds chosen on {request.data.name} ({data.lines} labelled conversations)",
        f"target recall {request.target_recall:g}{limit}; base policy {request.policy}",
        "thresholds only apply where the base policy's rules use the policy threshold (not 'at_least')",
    ]
    path = override.write_override(
        request.out,
        base=request.policy,
        base_name=base.name,
        name=request.name,
        thresholds={s: p.threshold for s, p in chosen.items()},
        header=header,
    )
    print(
        f"\noverride policy: {path} (extends {override.extends_reference(request.policy, path)}; validated)", file=out
    )
    report_dir = request.report_dir or request.out.with_name(f"{request.out.stem}-report")
    page = report.write(
        report_dir,
        headline=f"thresholds for {', '.join(signals)} at recall >= {request.target_recall:g}{limit}",
        meta={
            "policy": request.policy,
            "data": str(request.data),
            "conversations": data.lines,
            "scored by": "couchguard classifiers" if data.scored_by_model else "pre-computed scores",
        },
        tables=[table],
        data=data,
        chosen=chosen,
        current=current,
        notes=header,
    )
    print(f"report: {page.resolve()}", file=out)
    return {
        "thresholds": {s: p.threshold for s, p in chosen.items()},
        "chosen": {s: p.as_dict() for s, p in chosen.items()},
        "current": {s: p.as_dict() for s, p in current.items()},
        "override": str(path),
        "report": str(page),
    }
